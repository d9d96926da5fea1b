"""An ingest run prepares documents in a thread of its own while the last ones commit
(``trails.ingest.ahead``, ``trails.ingest.commits``; ADR 0036, fourth amendment).

What must hold: the same events in the same order and the same stores as a run without the
thread; every write on the caller's thread; an early stop, an exception or Ctrl-C leaves no
thread behind and loses nothing committed."""

from __future__ import annotations

import contextvars
import dataclasses
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails.context import Context
from trails.errors import ConfigurationError, InvalidArgumentTypeError, StorageError
from trails.ingest import (
    BatchEmbedded,
    Document,
    DocumentIngested,
    DocumentStarted,
    ingest,
    ingest_all,
    pipeline,
)
from trails.ingest.ahead import read_ahead
from trails.ingest.writer import VersionWriter
from trails.testing import MockEmbedder

AHEAD = "trails-ingest-ahead"


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == AHEAD and t.is_alive()]


# -- read_ahead on its own --------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(), max_size=60), st.integers(min_value=1, max_value=8))
def test_read_ahead_hands_over_every_item_in_order(items, limit):
    assert list(read_ahead(iter(items), limit)) == items
    assert not _ahead_threads()


@pytest.mark.parametrize("error", [ValueError("bad row 3"), KeyboardInterrupt()])
def test_an_exception_comes_after_the_items_made_before_it(error):
    def made():
        yield from (1, 2, 3)
        raise error

    got = []
    with pytest.raises(type(error)) as raised:
        got.extend(read_ahead(made(), 2))
    assert got == [1, 2, 3]
    assert raised.value is error
    assert not _ahead_threads()


def test_the_thread_runs_ahead_while_the_consumer_works_but_no_further_than_its_limit():
    made: list[int] = []
    fifth = threading.Event()

    def numbers():
        for n in range(100):
            made.append(n)
            if n == 5:
                fifth.set()
            yield n

    items = read_ahead(numbers(), 4)
    assert next(items) == 0
    # The consumer has taken one item; the thread goes on making more on its own.
    assert fifth.wait(timeout=10)
    time.sleep(0.2)  # were it unbounded, it would reach 100 by now
    assert len(made) <= 1 + 4 + 1  # taken, queued, and one waiting to be queued
    items.close()
    assert not _ahead_threads()


def test_an_early_stop_closes_the_iterator_in_its_thread_and_waits_for_it():
    closed: list[str] = []

    def numbers():
        try:
            yield from range(1000)
        finally:
            closed.append(threading.current_thread().name)

    items = read_ahead(numbers(), 3)
    assert [next(items) for _ in range(5)] == [0, 1, 2, 3, 4]
    items.close()
    assert closed == [AHEAD]  # closed there, and before close() returned
    assert not _ahead_threads()


def test_the_thread_sees_the_callers_context_variables():
    who = contextvars.ContextVar("who", default="nobody")
    who.set("analyst")

    def seen():
        yield who.get()

    assert list(read_ahead(seen(), 1)) == ["analyst"]


# -- in an ingest run -------------------------------------------------------------------


def _documents(count: int, start: int = 0, tag: str = "") -> list[Document]:
    return [Document(id=f"d{i}", source=f"d{i}", metadata={"tag": tag} if tag else {},
                     text=" ".join(f"Record {i} sentence {j} about rails{tag}." for j in range(i % 4)))
            for i in range(start, start + count)]


class _Failing(MockEmbedder):
    """The mock, failing every batch that holds a text with ``words``."""

    def __init__(self, words: str) -> None:
        super().__init__(dim=8)
        self.words = words

    def embed_batch(self, texts):
        if any(self.words in t for t in texts):
            raise RuntimeError(f"cannot embed {self.words!r}")
        return super().embed_batch(texts)


def _run(path, monkeypatch, ahead: bool, rounds):
    """Every event of each round's ingest (time spent left out), the store's rows and the
    graph, as N-Quads lines."""
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 7)  # several commits per round, by chunks
    monkeypatch.setattr(pipeline, "COMMIT_SECONDS", 1e9)  # never by time: that depends on load
    events = []
    with Context.open(path, embedder=_Failing("Record 13 ")) as ctx:
        for documents in rounds:
            events.append([dataclasses.replace(e, seconds=0.0) if isinstance(e, BatchEmbedded)
                           else e for e in ingest(documents, ctx=ctx, batch_size=3,
                                                  prepare_ahead=ahead)])
        rows = sorted(ctx.vectors.all_ids())
        graph = sorted(ctx.kg.dump(format="nq").splitlines())
    return events, rows, graph


@settings(max_examples=6, deadline=None)
@given(st.integers(min_value=1, max_value=25), st.integers(min_value=0, max_value=25))
def test_a_run_read_ahead_gives_the_same_events_and_stores_as_one_without(tmp_path_factory,
                                                                         first, second):
    # Round 1: new documents (every fourth without text, so without chunks; "Record 13"
    # fails to embed). Round 2: the first ones again unchanged (skipped), the rest with new
    # metadata only, new documents, and one of those twice (failed before any write).
    half = first // 2
    rounds = [
        _documents(first),
        _documents(half)
        + [Document(id=d.id, source=d.source, text=d.text, metadata={"note": "changed"})
           for d in _documents(first - half, start=half)]
        + _documents(second, start=first) + _documents(1, start=first),
    ]
    with pytest.MonkeyPatch.context() as monkeypatch:
        without = _run(tmp_path_factory.mktemp("sync") / "kb", monkeypatch, False, rounds)
        with_thread = _run(tmp_path_factory.mktemp("ahead") / "kb", monkeypatch, True, rounds)
    assert with_thread == without
    assert not _ahead_threads()


def test_every_write_happens_on_the_callers_thread_and_embedding_on_the_other(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 5)
    writes: list[str] = []
    embeds: list[str] = []
    def watched(write):
        def wrapper(*args, **kwargs):
            writes.append(threading.current_thread().name)
            return write(*args, **kwargs)
        return wrapper

    class Watched(MockEmbedder):
        def embed_batch(self, texts):
            embeds.append(threading.current_thread().name)
            return super().embed_batch(texts)

    for name in ("commit", "update_metadata", "finish_graph"):
        monkeypatch.setattr(VersionWriter, name, watched(getattr(VersionWriter, name)))
    with Context.open(tmp_path / "kb", embedder=Watched(dim=8)) as ctx:
        for name in ("add_many", "publish", "delete_document", "update_payload"):
            monkeypatch.setattr(ctx.vectors, name, watched(getattr(ctx.vectors, name)))
        for name in ("update", "load_nquads"):
            monkeypatch.setattr(ctx.kg, name, watched(getattr(ctx.kg, name)))
        assert ingest_all(_documents(30), ctx=ctx, batch_size=2).ingested == 30
        changed = [Document(id=d.id, source=d.source, text=d.text, metadata={"note": "n"})
                   for d in _documents(30)]
        assert ingest_all(changed, ctx=ctx).metadata_updated == 30
    caller = threading.current_thread().name
    assert len(writes) > 60 and set(writes) == {caller}
    assert embeds and set(embeds) == {AHEAD}


def test_stopping_where_new_work_begins_counts_every_document_committed(tmp_path, monkeypatch):
    # What `trails ingest` does on Ctrl-C: stop at the next DocumentStarted or BatchEmbedded.
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 10)
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        events = ingest(_documents(200), ctx=ctx, batch_size=4)
        counted = set()
        for event in events:
            if counted and isinstance(event, (DocumentStarted, BatchEmbedded)):
                break
            if isinstance(event, DocumentIngested):
                counted.add(event.doc_iri)
        events.close()
        assert not _ahead_threads()
        committed = set(ctx.vectors.current_versions())
        assert counted and committed == counted
        assert len(committed) < 200


def test_a_failed_commit_stops_the_run_and_its_thread_and_keeps_what_was_committed(
        tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 6)
    original = VersionWriter.commit
    calls: list[int] = []

    def commit(self, documents):
        calls.append(len(documents))
        if len(calls) == 3:
            raise StorageError("disk full (injected)")
        return original(self, documents)

    monkeypatch.setattr(VersionWriter, "commit", commit)
    ingested: list[str] = []
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        with pytest.raises(StorageError, match="injected"):
            for event in ingest(_documents(100), ctx=ctx, batch_size=2):
                if isinstance(event, DocumentIngested):
                    ingested.append(event.doc_iri)
        assert not _ahead_threads()
        assert set(ctx.vectors.current_versions()) == set(ingested)
        assert len(ingested) == calls[0] + calls[1]


def test_ctrl_c_in_the_embedder_reaches_the_caller_and_keeps_what_was_committed(
        tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 4)

    class Interrupted(MockEmbedder):
        def embed_batch(self, texts):
            if any("Record 41 " in t for t in texts):
                raise KeyboardInterrupt
            return super().embed_batch(texts)

    ingested: list[str] = []
    with Context.open(tmp_path / "kb", embedder=Interrupted(dim=8)) as ctx:
        with pytest.raises(KeyboardInterrupt):
            for event in ingest(_documents(80), ctx=ctx, batch_size=2):
                if isinstance(event, DocumentIngested):
                    ingested.append(event.doc_iri)
        assert not _ahead_threads()
        assert ingested and set(ctx.vectors.current_versions()) == set(ingested)
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        stats = ingest_all(_documents(80), ctx=ctx)
        assert stats.skipped == len(ingested) and stats.ingested == 80 - len(ingested)


@pytest.mark.parametrize("limit", [0, -3])
def test_read_ahead_refuses_a_limit_below_one(limit):
    with pytest.raises(ValueError, match="at least 1"):
        next(read_ahead(iter([1]), limit))


def test_read_ahead_holds_at_most_its_budget_of_weight_or_one_heavier_item():
    made: list[int] = []
    weights = [3, 3, 3, 9, 1, 1, 1, 1]

    def items():
        for w in weights:
            made.append(w)
            yield w

    ahead = read_ahead(items(), 100, weight=lambda w: w, budget=6)
    assert next(ahead) == 3
    time.sleep(0.3)  # time to run ahead as far as it may
    # Taken: 3. Queued: 3, 3 (6 of 6); the 9 waits, having been made, for room.
    assert made == [3, 3, 3, 9]
    assert [next(ahead) for _ in range(3)] == [3, 3, 9]
    time.sleep(0.3)
    assert made == weights  # the 9 went alone once the queue was empty; the 1s fit
    assert list(ahead) == [1, 1, 1, 1]


def test_a_run_holds_about_two_commits_of_embedded_chunks_however_slow_its_commits(
        tmp_path, monkeypatch):
    # Commits 50 times slower than embedding: without a bound in chunks the thread would
    # embed the whole corpus (~500 chunks) while the first commits write.
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 20)
    monkeypatch.setattr(pipeline, "COMMIT_SECONDS", 1e9)
    embedded, committed, held = [0], [0], []
    original = VersionWriter.commit

    def slow_commit(self, documents):
        time.sleep(0.05)
        original(self, documents)
        committed[0] += sum(len(d.chunks) for d in documents)

    class Counting(MockEmbedder):
        def embed_batch(self, texts):
            held.append(embedded[0] - committed[0])
            embedded[0] += len(texts)
            return super().embed_batch(texts)

    monkeypatch.setattr(VersionWriter, "commit", slow_commit)
    documents = [Document(id=f"d{i}", source=f"d{i}",
                          text=" ".join(f"Record {i} part {j} on rails." for j in range(3)))
                 for i in range(170)]
    with Context.open(tmp_path / "kb", embedder=Counting(dim=8)) as ctx:
        chunker = _OneSentence()
        assert ingest_all(documents, ctx=ctx, batch_size=4, chunker=chunker).ingested == 170
    assert embedded[0] == 510
    # Ready for a commit (< 20, plus the documents that crossed it), queued (20, or one
    # heavier item), being handed over, and the documents being embedded: ~70 at most.
    assert max(held) <= 80


class _OneSentence:
    """A chunk per sentence (three chunks a document here)."""

    fingerprint = "one-sentence/1"

    def chunk(self, document):
        from trails.ingest.document import Chunk
        chunks, start = [], 0
        for position, part in enumerate(document.text.split(". ")):
            end = start + len(part)
            chunks.append(Chunk(document.text[start:end], start, end, position))
            start = end + 2
        return chunks


def test_closing_a_run_mid_embedding_waits_for_the_thread_and_leaves_none(tmp_path):
    class Slow(MockEmbedder):
        def embed_batch(self, texts):
            time.sleep(0.3)
            return super().embed_batch(texts)

    with Context.open(tmp_path / "kb", embedder=Slow(dim=8)) as ctx:
        events = ingest(_documents(40), ctx=ctx, batch_size=2)
        assert isinstance(next(events), DocumentStarted)
        events.close()  # the thread is embedding (or about to)
        assert not _ahead_threads()
        assert ctx.vectors.current_versions() == {}  # nothing was committed, nothing half
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        assert ctx.verify().ok
        assert ingest_all(_documents(40), ctx=ctx).ingested == 40


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ahead", [True, False])
def test_ingesting_inside_a_read_snapshot_is_refused_not_a_hang(tmp_path, ahead):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all(_documents(3), ctx=ctx)
        with ctx.vectors.snapshot(), pytest.raises(ConfigurationError, match="snapshot"):
            ingest_all(_documents(6), ctx=ctx, prepare_ahead=ahead)
        assert len(ctx.vectors.current_versions()) == 3  # nothing written


def test_prepare_ahead_must_be_a_bool(tmp_path):
    with (Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx,
          pytest.raises(InvalidArgumentTypeError, match="prepare_ahead")):
        ingest_all(_documents(3), ctx=ctx, prepare_ahead="yes")
