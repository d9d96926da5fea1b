"""Progress that tells the truth: the total is counted before work starts and is the number
of documents the run then sees; the rate and the time left are the plain arithmetic of what
was done; Ctrl-C during ``trails ingest`` (a real SIGINT to a real process) ends with a
summary that matches what the context then holds, and exit code 130."""

from __future__ import annotations

import io
import itertools
import json
import os
import pty
import signal
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import run_trails
from trails.context import Context
from trails.errors import InvalidArgumentError
from trails.ingest import (
    BatchEmbedded,
    Document,
    DocumentFailed,
    DocumentIngested,
    DocumentSkipped,
    pipeline,
    progress,
)
from trails.ingest.loaders import FileLoader
from trails.ingest.progress import (
    ProgressSnapshot,
    ProgressTracker,
    count_documents,
    html_bar,
    ingest_with_progress,
)
from trails.testing import MockEmbedder

# -- the total -------------------------------------------------------------------------------

# A file in a generated tree: where, what kind, and for JSON Lines its lines (blank or not).
_names = st.text(alphabet="abcdefgh", min_size=1, max_size=6)
_entries = st.lists(st.tuples(
    st.sampled_from(["", "sub/", "sub/deeper/", ".hidden/"]), _names,
    st.sampled_from([".md", ".txt", ".html", ".jsonl", ".ttl", ".bin", ".md.hidden"]),
    st.lists(st.booleans(), max_size=6)), max_size=12)


def _write_tree(root: Path, entries) -> None:
    for folder, name, suffix, lines in entries:
        path = root / folder / (("." + name) if suffix == ".md.hidden" else name + suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        if suffix == ".jsonl":
            path.write_text("".join(
                (json.dumps({"text": f"record {i}"}) if filled else "   ") + "\n"
                for i, filled in enumerate(lines)))
        else:
            path.write_text(f"Text of {name}.\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_entries, st.sampled_from([None, ["*.md"], ["sub/*"]]))
def test_the_count_is_what_the_loader_then_yields(entries, exclude):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _write_tree(root, entries)
        loader = FileLoader(root, exclude=exclude)
        yielded = [item for item in loader.load() if not getattr(item, "skipped", False)]
        assert loader.count() == len(yielded)
        assert count_documents(str(root), exclude=exclude) == len(yielded)


def test_streams_have_no_total_and_lists_their_length():
    assert count_documents(iter([])) is None
    assert count_documents([object(), object()]) == 2


# -- the arithmetic ------------------------------------------------------------------------------


def test_rate_and_time_left_worked_by_hand():
    snapshot = ProgressSnapshot(total=10, done=3, chunks=40, elapsed=6.0)
    assert snapshot.fraction == 0.3
    assert snapshot.chunks_per_second == pytest.approx(40 / 6)
    assert snapshot.eta == pytest.approx(14.0)  # 2 s a document, 7 to go
    assert snapshot.text() == "3/10 documents, 40 chunks embedded, 6.7 chunks/s, 0:00:14 left"
    assert ProgressSnapshot(None, 5, 9, 3.0).text() == (
        "5 documents, 9 chunks embedded, 3.0 chunks/s")
    assert ProgressSnapshot(10, 0, 0, 0.0).eta is None  # nothing done: no honest estimate
    assert ProgressSnapshot(4000, 1, 1, 3600.0).text().endswith("3999:00:00 left")


_events = st.lists(st.one_of(
    st.builds(DocumentIngested, st.just("i"), st.just("s"), st.integers(0, 5)),
    st.builds(DocumentSkipped, st.just("i"), st.just("s")),
    st.builds(DocumentFailed, st.just("s"), st.just("r")),
    st.builds(BatchEmbedded, st.integers(1, 64), st.integers(0, 500), st.floats(0, 1))),
    max_size=40)


@given(_events, st.integers(0, 50), st.lists(st.floats(0, 100), min_size=1, max_size=40))
def test_the_tracker_never_shows_more_done_than_its_total(events, total, steps):
    now = [0.0]
    tracker = ProgressTracker(total, clock=lambda: now[0])
    embedded = 0
    for event, step in zip(events, steps * 40):
        now[0] += step
        tracker.record(event)
        embedded += event.chunks if isinstance(event, BatchEmbedded) else 0
        snapshot = tracker.snapshot()
        assert snapshot.done <= snapshot.total  # a total that was short grows with the run
        assert 0.0 <= snapshot.fraction <= 1.0
        assert snapshot.chunks == embedded
        assert snapshot.eta is None or snapshot.eta >= 0
    finished = sum(not isinstance(e, BatchEmbedded) for e in events)
    assert tracker.done == finished and tracker.total == max(total, finished)


def _bursty_run(total: int, burst: int, every: float, step: float = 0.5):
    """A steady run (``burst`` documents finishing together every ``every`` seconds) on a fake
    clock, sampled every ``step`` seconds: the (moment, eta) pairs a display would show."""
    now = [0.0]
    tracker = ProgressTracker(total, clock=lambda: now[0])
    shown = []
    while tracker.done < total:
        now[0] = round(now[0] + step, 6)
        if now[0] % every == 0:
            for _ in range(min(burst, total - tracker.done)):
                tracker.record(DocumentSkipped("i", "s"))
        shown.append((now[0], tracker.snapshot().eta))
    return shown


@pytest.mark.parametrize(("burst", "every"), [(1, 1.0), (5, 5.0), (20, 10.0), (3, 1.5)])
def test_the_time_left_of_a_steady_run_counts_down_without_jumps(burst, every):
    shown = [(moment, eta) for moment, eta in _bursty_run(200, burst, every) if eta is not None]
    assert len(shown) > 10
    for (before, was), (after, now) in itertools.pairwise(shown):
        # A second later the run has a second less to go: never more than a second off
        # (today's estimate from documents done so far swung by a burst's worth each time).
        assert abs(now - (was - (after - before))) <= 1.0 + 1e-9, (before, was, after, now)
    # And it is the truth: the run ends at 200 documents over burst/every a second.
    moment, eta = shown[len(shown) // 2]
    assert eta == pytest.approx(200 * every / burst - moment, abs=every + 1)


@given(st.lists(st.tuples(st.floats(0.01, 20), st.integers(0, 6)), min_size=1, max_size=60))
def test_between_documents_finishing_the_time_left_only_counts_down(steps):
    now = [0.0]
    tracker = ProgressTracker(1000, clock=lambda: now[0])
    previous = None
    for step, finished in steps:
        now[0] += step
        for _ in range(finished):
            tracker.record(DocumentSkipped("i", "s"))
        eta = tracker.snapshot().eta
        if finished == 0 and previous is not None and eta is not None:
            assert eta == pytest.approx(max(0.0, previous - step))
        assert eta is None or eta >= 0
        previous = eta


def test_the_rate_follows_a_run_that_speeds_up_within_the_window():
    now = [0.0]
    tracker = ProgressTracker(1000, clock=lambda: now[0], window=30.0)
    for _ in range(100):  # 1 document a second for 100 s
        now[0] += 1.0
        tracker.record(DocumentSkipped("i", "s"))
    for _ in range(400):  # then 10 a second for 40 s
        now[0] += 0.1
        tracker.record(DocumentSkipped("i", "s"))
    # 500 left at 10 a second: 50 s (the run's average since the start would say ~140 s).
    assert tracker.snapshot().eta == pytest.approx(50.0, rel=0.05)


def test_the_html_bar_is_escaped_and_as_wide_as_the_fraction():
    bar = html_bar(ProgressSnapshot(8, 2, 5, 1.0), title="<notes>")
    assert "&lt;notes&gt;" in bar and "<notes>" not in bar
    assert "width:25.0%" in bar and 'aria-valuenow="2"' in bar and 'aria-valuemax="8"' in bar


# -- ingest_with_progress ------------------------------------------------------------------------


def test_ingest_with_progress_shows_the_true_total_from_the_first_line(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(7):
        (folder / f"n{i}.md").write_text(f"Note {i} about trains. It has two sentences.")
    (folder / "more.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    lines = io.StringIO()
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        stats = ingest_with_progress(folder, ctx=ctx, display="text", stream=lines, every=0)
        assert stats.ingested == 9 == ctx.stats()["documents"]
    shown = lines.getvalue().splitlines()
    assert shown[0].startswith("ingest: 0/9 documents")  # the total before any work
    assert shown[-1].startswith(f"ingest: 9/9 documents, {stats.chunks} chunks embedded")
    with pytest.raises(InvalidArgumentError, match="display"):
        ingest_with_progress(folder, ctx=ctx, display="fancy")


def test_an_interrupted_ingest_with_progress_ends_on_what_was_committed(tmp_path, monkeypatch):
    """A notebook's stop button raises KeyboardInterrupt inside the run: it goes on up, the
    documents committed before it stay, and the display's last line counts them."""
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 64)  # commits inside a run of 200 chunks

    def documents():
        for i in range(200):
            yield Document(id=f"d{i}", source=f"d{i}", text=f"Record {i} on rails.")
        raise KeyboardInterrupt  # the interrupt arrives while the run waits for more

    lines = io.StringIO()
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        with pytest.raises(KeyboardInterrupt):
            ingest_with_progress(documents(), ctx=ctx, display="text", stream=lines,
                                 every=0, batch_size=16)
        committed = ctx.stats()["documents"]
        assert 0 < committed <= 200 and ctx.verify().ok
    last = lines.getvalue().splitlines()[-1]
    assert last.startswith(f"ingest: interrupted: {committed} documents (")
    assert "run the same ingest again" in last


def test_the_html_bar_shows_its_note_escaped():
    markup = html_bar(ProgressSnapshot(total=4, done=2, chunks=5, elapsed=1.0),
                      note="interrupted: <b>2</b> committed")
    assert "interrupted: &lt;b&gt;2&lt;/b&gt; committed" in markup and "<b>" not in markup


def test_outside_a_kernel_asking_for_one_imports_no_ipython(monkeypatch):
    # Where IPython was not imported no kernel runs; asking imported it (dozens of modules)
    # in every script that ingests with progress, only to learn that.
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    imported = []
    monkeypatch.setattr(progress, "require",
                        lambda name, *_: imported.append(name) or pytest.fail(name))
    assert progress.in_notebook() is False
    assert imported == [] and "IPython" not in sys.modules


@pytest.mark.parametrize(("config", "expected"), [({"IPKernelApp": {}}, True), ({}, False),
                                                   (None, False)])
def test_a_kernel_is_an_ipython_shell_an_ipkernel_app_runs(monkeypatch, config, expected):
    shell = None if config is None else types.SimpleNamespace(config=config)
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert progress.in_notebook() is expected


# -- Ctrl-C --------------------------------------------------------------------------------------

# Enough that Ctrl-C, sent as soon as the first commit shows, lands part way (a run commits
# at least every COMMIT_SECONDS, 5 s, and these records take ~2 ms each: ~20 s in all), and
# few enough that the run that finishes the work afterwards is not the suite's slowest step.
RECORDS = 10_000


def _cli(*args: object, **options) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "trails.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


def _committed(db: Path) -> int:
    with Context.open(db, read_only=True) as ctx:
        return ctx.stats()["documents"]


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_during_ingest_sums_up_what_was_committed_and_exits_130(tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps({"id": str(i), "text": f"Record {i} on rails, {i * 7}."})
                           + "\n" for i in range(RECORDS)))
    db = tmp_path / "kb"
    assert run_trails("--db", db, "init", "--model", "mock:16").returncode == 0
    run = _cli("--db", db, "ingest", big)  # a real process: its own SIGINT handling is the point
    try:
        deadline = time.monotonic() + 120  # a bound, not a measurement: commits come in ~5 s
        while _committed(db) == 0:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "nothing committed in two minutes"
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 130, err
    assert "Traceback" not in err
    committed = _committed(db)
    assert 0 < committed < RECORDS  # stopped part way, and kept what it had committed
    assert out.startswith(f"{committed} documents ingested, 0 skipped, 0 failed, ")
    assert f"interrupted: {committed} documents" in err and "run the same command again" in err
    with Context.open(db) as ctx:
        assert ctx.verify().ok  # nothing half written
    rest = run_trails("--db", db, "ingest", big, "--json")
    totals = json.loads(rest.stdout)
    assert (totals["ingested"], totals["skipped"]) == (RECORDS - committed, committed)
    assert _committed(db) == RECORDS


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")
def test_the_terminal_bar_shows_the_counted_total_on_stderr_and_stdout_stays_the_summary(tmp_path):
    """stderr is a terminal (a pty), stdout a pipe: the bar is drawn on stderr with the total
    counted before the run, and stdout holds only the summary."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(5):
        (folder / f"n{i}.md").write_text(f"Note {i}. It is short.")
    (folder / "rows.jsonl").write_text('{"text": "a"}\n\n{"text": "b"}\n{"text": "c"}\n')
    db = tmp_path / "kb"
    assert subprocess.run([sys.executable, "-m", "trails.cli", "--db", str(db), "init",
                           "--model", "mock:16"], capture_output=True, timeout=120,
                          check=False).returncode == 0
    leader, follower = pty.openpty()
    run = subprocess.Popen([sys.executable, "-m", "trails.cli", "--db", str(db), "ingest",
                            str(folder)], stdout=subprocess.PIPE, stderr=follower, text=True,
                           env={**os.environ, "COLUMNS": "160", "TERM": "xterm"})
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    out, _ = run.communicate(timeout=120)
    os.close(leader)
    assert run.returncode == 0
    assert out.startswith("8 documents ingested, 0 skipped, 0 failed, 8 chunks")
    assert out.count("\n") == 1  # the summary alone: the bar went to the terminal
    assert b"8/8 documents, 8 chunks embedded" in drawn
    assert b"chunks/s" in drawn
