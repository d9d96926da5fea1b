"""Recording beside folding, in threads and in processes: no record is lost or doubled, and
recording never waits for the graph's writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from trails.audit import SearchRecord
from trails.audit import log as log_module
from trails.audit.log import AuditLog
from trails.audit.records import started_now
from trails.context import Context
from trails.testing import MockEmbedder

COUNT = ("SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE { GRAPH <urn:trails:audit> { "
         "?r a prov:Activity } }")


def record(run_id: str, caller: str = "t") -> SearchRecord:
    now = started_now()
    return SearchRecord(run_id=run_id, caller=caller, started=now, ended=now,
                        query_sha256="0" * 64, query=run_id, scopes=["default"])


def test_threads_recording_while_another_folds_lose_and_double_nothing(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        stop = threading.Event()
        folded_once = threading.Event()
        folded = []

        def fold() -> None:
            while not stop.is_set():
                folded.append(ctx.audit.fold())
                folded_once.set()

        def append(thread: int) -> None:
            for n in range(150):
                if n == 75:
                    # Half-way, a fold has finished while every writer still has records to
                    # append (however slowly the machine runs the two threads).
                    assert folded_once.wait(timeout=120)
                assert ctx.audit.record(record(f"{thread:02d}{n:030d}"))

        folder = threading.Thread(target=fold)
        folder.start()
        writers = [threading.Thread(target=append, args=(t,)) for t in range(4)]
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        stop.set()
        folder.join()
        ctx.audit.fold()
        assert ctx.kg.query(COUNT).rows[0]["n"] == 600
        assert folded  # it folded during the appends
        assert ctx.audit.pending() == []
        assert ctx.audit.failures == 0


READER = r"""
import sys
sys.path[:0] = [sys.argv[3]]
from test_audit_concurrency import record
from trails.context import Context
with Context.open(sys.argv[1], read_only=True) as ctx:
    for n in range(int(sys.argv[2])):
        assert ctx.audit.record(record(f"p{n:031d}", caller="reader-process"))
print("done", flush=True)
"""


def test_a_reader_process_records_while_the_writer_folds(tmp_path):
    directory = tmp_path / "kb"
    Context.open(directory, embedder=MockEmbedder(dim=8)).close()
    with Context.open(directory, embedder=MockEmbedder(dim=8)) as writer:
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(directory), "400", str(Path(__file__).parent)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        folds = 0
        while reader.poll() is None:  # the writer folds as fast as it can meanwhile
            writer.audit.fold()
            folds += 1
            time.sleep(0.001)
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0 and out.strip() == "done", err[-2000:]
        writer.audit.fold()
        assert writer.kg.query(COUNT).rows[0]["n"] == 400
        callers = writer.kg.query(
            "SELECT DISTINCT ?l WHERE { GRAPH <urn:trails:audit> { ?a rdfs:label ?l } }")
        assert callers.column("l") == ["reader-process"]
        assert folds > 1
    assert not [p for p in (directory / "audit").iterdir() if p.stat().st_size]


def test_a_fold_that_failed_keeps_its_records_for_the_next(tmp_path, monkeypatch):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        for n in range(3):
            ctx.audit.record(record(f"{n:032d}"))

        def full_disk(quads) -> None:
            raise OSError("IO error: No space left on device")

        monkeypatch.setattr(ctx.kg, "extend", full_disk)
        try:
            ctx.audit.fold()
        except OSError:
            pass
        monkeypatch.undo()
        assert len(ctx.audit.pending()) == 3
        assert ctx.audit.fold() == 3
        assert ctx.kg.query(COUNT).rows[0]["n"] == 3


def test_recording_never_waits_for_a_fold_that_is_writing_the_graph(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        assert ctx.audit.record(record("a" * 32))
        writing, release = threading.Event(), threading.Event()
        extend = ctx.kg.extend

        def slow_extend(quads):  # the fold holds here, in the middle of its graph write
            writing.set()
            assert release.wait(30)
            extend(quads)

        ctx.kg.extend = slow_extend
        folder = threading.Thread(target=ctx.audit.fold)
        folder.start()
        assert writing.wait(30)
        appended = threading.Thread(target=lambda: ctx.audit.record(record("b" * 32)))
        appended.start()
        appended.join(10)
        blocked = appended.is_alive()
        release.set()
        folder.join(30)
        appended.join(30)
        ctx.kg.extend = extend
        assert not blocked, "a search's record waited for the fold's graph write"
        # Nothing lost: the record made during the fold is pending, then folded.
        assert [r.run_id for r in ctx.audit.pending()] == ["b" * 32]
        ctx.audit.fold()
        assert ctx.kg.query(COUNT).rows[0]["n"] == 2
        assert ctx.audit.pending() == []


def test_a_record_whose_new_file_a_fold_takes_again_and_again_is_still_kept(tmp_path,
                                                                              monkeypatch):
    """A fold looping beside appenders can take the file an appender has just opened before
    the appender holds its lock, several times running when the appending thread waits for
    the interpreter under load. Each time the appender opens a new file; the record must be
    kept however often that happens (three attempts ran out under load: the record was lost)."""
    from trails.audit import log as audit_log

    real, taken = audit_log._taken, []

    def taken_by_a_fold(descriptor: int, path: Path) -> bool:
        if len(taken) < 10:  # as a fold that took the file between the open and the lock
            taken.append(descriptor)
            return True
        return real(descriptor, path)

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        monkeypatch.setattr(audit_log, "_taken", taken_by_a_fold)
        assert ctx.audit.record(record("1" * 32))
        monkeypatch.undo()
        assert len(taken) == 10 and ctx.audit.failures == 0
        assert [r.run_id for r in ctx.audit.pending()] == ["1" * 32]
        ctx.audit.fold()
        assert ctx.kg.query(COUNT).rows[0]["n"] == 1


def _in_a_forked_child(action) -> int:
    """Run ``action`` in a forked child; its exit status (124 when it hung past 20 s)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            action()
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return 124


def test_a_forked_child_records_in_a_file_of_its_own(tmp_path):
    """A child forked from a process that had recorded kept appending to the parent's file
    through the parent's open file: the two shared one lock, so one's unlock let a fold in
    while the other was still appending, and its record was read before it was written,
    then deleted with the file."""
    log = AuditLog(tmp_path / "audit")
    log.append(record("parent-1"))
    assert _in_a_forked_child(lambda: log.append(record("child-1"))) == 0
    log.append(record("parent-2"))
    files = {path.name.split("-")[0]: path.read_text() for path in (tmp_path / "audit").iterdir()}
    assert len(files) == 2 and str(os.getpid()) in files
    child = next(text for name, text in files.items() if name != str(os.getpid()))
    assert "child-1" in child and "parent" not in child
    assert sorted(r.run_id for r in log.pending()) == ["child-1", "parent-1", "parent-2"]


def test_a_child_forked_while_another_thread_records_can_still_record(tmp_path):
    """Forked while another thread of the parent held the log's lock (mid-append), the child
    inherited the lock held by a thread it does not have: its first record waited forever."""
    log = AuditLog(tmp_path / "audit")
    log.append(record("parent-1"))
    appending, forked = threading.Event(), threading.Event()
    real_append = log_module._append_whole

    def slow_append(descriptor: int, line: bytes) -> None:
        appending.set()
        forked.wait(20)
        real_append(descriptor, line)

    log_module._append_whole = slow_append
    try:
        other = threading.Thread(target=log.append, args=(record("parent-2"),))
        other.start()
        assert appending.wait(20)
        try:
            log_module._append_whole = real_append  # the child appends as usual
            status = _in_a_forked_child(lambda: log.append(record("child-1")))
        finally:
            forked.set()
            other.join(20)
    finally:
        log_module._append_whole = real_append
    assert status == 0, "the child's record hung (124) or failed"
    assert sorted(r.run_id for r in log.pending()) == ["child-1", "parent-1", "parent-2"]


def test_a_fold_sealing_a_new_file_before_its_appender_made_it_writable_loses_nothing(
        tmp_path, monkeypatch):
    """An appender opens a new file and then makes it writable (whatever the umask). A fold
    that renamed and sealed the file in between had its seal undone by that: the appender
    found the file unsealed, appended after the fold had read it, and the fold deleted the
    line with the file (two records of 600 lost under load). The appender must see the file
    was taken whatever its mode says."""
    audit_log = AuditLog(tmp_path / "audit")
    audit_log.append(record("0" * 32))
    with audit_log.folding("rejected.txt") as first:  # the next append opens a new file
        assert [r.run_id for r in first] == ["0" * 32]
    real_fchmod, folded = os.fchmod, []

    def a_fold_between(descriptor: int, mode: int) -> None:
        if mode == 0o600 and not folded:  # the appender's, right after its open
            folding = audit_log.folding("rejected.txt")
            folded.append((folding, folding.__enter__()))  # renamed, sealed, read
        real_fchmod(descriptor, mode)

    monkeypatch.setattr(os, "fchmod", a_fold_between)
    audit_log.append(record("1" * 32))
    monkeypatch.undo()
    (folding, read), = folded
    assert read == []  # the fold took the new file before the line was in it
    folding.__exit__(None, None, None)  # the fold has written the graph: it deletes the file
    assert [r.run_id for r in audit_log.pending()] == ["1" * 32]


def test_a_log_opened_by_a_relative_path_keeps_its_file_after_a_change_of_directory(
        tmp_path, monkeypatch):
    """The appender knows its file by its name; a relative name would point elsewhere once
    the working directory changed, and the records would scatter into another folder."""
    (tmp_path / "home").mkdir(), (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "home")
    audit_log = AuditLog("audit")
    audit_log.append(record("0" * 32))
    monkeypatch.chdir(tmp_path / "elsewhere")
    audit_log.append(record("1" * 32))
    assert not (tmp_path / "elsewhere" / "audit").exists()
    files = list((tmp_path / "home" / "audit").iterdir())
    assert len(files) == 1 and len(files[0].read_bytes().splitlines()) == 2
    assert [r.run_id for r in audit_log.pending()] == ["0" * 32, "1" * 32]
