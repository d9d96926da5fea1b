"""What a test author relies on: ``isolated_kernel()`` owns its thread's process-wide state,
gives it all back even when its context fails to close, and the same search answers the same,
whatever order the documents came in and whatever the process's hash seed."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from trails import _state, retrieve
from trails.errors import ConfigurationError
from trails.ingest import Document, ingest_all
from trails.testing import fresh_context, isolated_kernel

RIVER = [Document("a", "a.md", "River deltas and old maps."),
         Document("b", "b.md", "Salt water at the river mouth.")]


def _in_a_thread(work):
    """What ``work()`` returned or raised, run in another thread."""
    outcome: dict[str, object] = {}

    def run():
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    return outcome


def _enter_and_search():
    with isolated_kernel():
        return len(retrieve("river", mode="vector"))


def test_a_kernel_in_another_thread_is_refused_and_leaves_this_one_as_it_was():
    # Each thread's kernel swapped the one default context, environment and temporary
    # directory: the other thread's searches answered from an empty context, silently.
    with isolated_kernel() as ctx:
        ingest_all(RIVER, ctx=ctx)
        home = os.environ["TRAILS_HOME"]
        outcome = _in_a_thread(_enter_and_search)
        error = outcome.get("error")
        assert isinstance(error, ConfigurationError), outcome
        assert "another thread" in str(error) and "fresh_context()" in str(error)
        assert _state.default_context is ctx
        assert os.environ["TRAILS_HOME"] == home
        assert tempfile.gettempdir() == home and os.path.isdir(home)
        assert [hit.document for hit in retrieve("river", mode="vector")] == [
            "trails://local/doc/a", "trails://local/doc/b"]


def test_threads_inside_one_kernel_share_its_default_context():
    with isolated_kernel() as ctx:
        ingest_all(RIVER, ctx=ctx)
        outcome = _in_a_thread(lambda: [hit.document for hit in retrieve("salt", mode="vector")])
    assert outcome == {"value": ["trails://local/doc/b", "trails://local/doc/a"]}


def test_threads_each_with_a_fresh_context_answer_alike():
    def search():
        with fresh_context() as ctx:
            ingest_all(RIVER, ctx=ctx)
            return [(hit.document, hit.score) for hit in retrieve("river", ctx, k=2)]

    with ThreadPoolExecutor(4) as pool:
        answers = [json.dumps(answer) for answer in pool.map(lambda _: search(), range(8))]
    assert len(set(answers)) == 1
    assert json.loads(answers[0])[0][0] == "trails://local/doc/a"


def test_a_kernel_whose_context_fails_to_close_still_gives_everything_back(monkeypatch):
    # The restoring came after ctx.close() in one finally: a close that raised left the
    # kernel's default context, TRAILS_HOME and temporary directory in every later test.
    monkeypatch.setenv("TRAILS_CALLER", "outside")
    before = (_state.default_context, tempfile.tempdir)
    closes = []

    def failing_close():
        closes.append(True)
        raise RuntimeError("close failed")

    try:
        with isolated_kernel() as ctx:
            home = os.environ["TRAILS_HOME"]
            real_close = ctx.close
            monkeypatch.setattr(ctx, "close", failing_close)
    except RuntimeError as exc:
        assert str(exc) == "close failed"
    else:
        raise AssertionError("the failing close was swallowed")
    real_close()
    assert closes == [True]
    assert (_state.default_context, tempfile.tempdir) == before
    assert os.environ["TRAILS_CALLER"] == "outside"
    assert os.environ.get("TRAILS_HOME") != home and not os.path.exists(home)
    with isolated_kernel():  # the kernel is free again in this thread
        pass


def test_a_closed_context_says_so_in_its_repr():
    ctx = fresh_context()
    assert repr(ctx) == "<Context memory embedder=trails-mock-bow:seed=0 (dim=64, normalized=True)>"
    ctx.close()
    assert repr(ctx) == ("<Context memory closed embedder=trails-mock-bow:seed=0 (dim=64, "
                         "normalized=True)>")


WORDS = ["river", "delta", "map", "salt", "water", "tide", "ocean", "old"]


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)
                      .map(" ".join), min_size=2, max_size=8),
       copies=st.integers(1, 3), data=st.data())
def test_a_search_does_not_depend_on_the_order_documents_came_in(texts, copies, data):
    # Copies of one text tie on every score: the order between them must still be fixed.
    documents = [Document(f"d{i}-{c}", f"d{i}-{c}.md", text)
                 for i, text in enumerate(texts) for c in range(copies)]
    order = data.draw(st.permutations(documents))
    answers = []
    for corpus in (documents, order):
        with fresh_context() as ctx:
            ingest_all(corpus, ctx=ctx)
            answers.append([[(hit.iri, hit.score, hit.components)
                             for hit in retrieve(query, ctx, mode=mode, k=len(documents))]
                            for mode in ("vector", "hybrid") for query in ("river map", "tide")])
    assert answers[0] == answers[1]
    for hits in answers[0]:  # scores never rise; equal ones are in IRI order
        for (iri, score, _), (next_iri, next_score, _) in itertools.pairwise(hits):
            assert score > next_score or (score == next_score and iri < next_iri)


SEARCH = """
import itertools
import json
from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.testing import fresh_context
words = "river delta map graph old new salt water tide ocean".split()
docs = [Document(f"d{i:02d}", f"d{i}.md", " ".join(words[(i * j) % 10] for j in range(1, 6)))
        for i in range(30)] + [Document(f"dup{i}", "dup.md", "River deltas.") for i in range(4)]
with fresh_context() as ctx:
    ingest_all(docs, ctx=ctx)
    out = []
    for mode in ("vector", "hybrid"):
        result = retrieve("river deltas maps", ctx, mode=mode, k=12)
        answer = result.to_dict()
        answer.pop("run_id")
        out.append([answer, result.explain(), [repr(hit.score) for hit in result]])
print(json.dumps(out, sort_keys=True, default=str))
"""


def test_the_same_search_answers_byte_for_byte_across_processes_with_other_hash_seeds():
    answers = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed,
               "PYTHONPATH": os.pathsep.join([str(ROOT / "python"),
                                              os.environ.get("PYTHONPATH", "")])}
        run = subprocess.run([sys.executable, "-c", SEARCH], env=env, capture_output=True,
                             text=True, timeout=120, check=False)
        assert run.returncode == 0, run.stderr
        answers.add(run.stdout)
    assert len(answers) == 1
    assert '"trails://local/doc/dup0/' in answers.pop()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files in /proc")
def test_a_hundred_contexts_and_kernels_leave_no_file_thread_or_directory_behind():
    def one_of_each():
        for make in (fresh_context, isolated_kernel):
            with make() as ctx:
                ingest_all(RIVER, ctx=ctx)
                assert len(retrieve("river", ctx, mode="hybrid", k=2)) == 2

    one_of_each()  # what the first use loads once (modules, the mock's vocabulary) is loaded
    files, threads = len(os.listdir("/proc/self/fd")), threading.active_count()
    temporary = set(os.listdir(tempfile.gettempdir()))
    for _ in range(100):
        one_of_each()
    assert (len(os.listdir("/proc/self/fd")), threading.active_count()) == (files, threads)
    assert set(os.listdir(tempfile.gettempdir())) == temporary
