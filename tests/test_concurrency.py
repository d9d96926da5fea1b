"""Readers beside a writer: every answer shows whole document versions, and nothing vanishes.

ADR 0005 promises that a reader never sees part of a document version. These tests hold the
read path to it under real concurrency and at the exact moments that could tear it:

- a stress run: one writer process re-ingesting the same documents with changing text (each
  revision's number is in its text) and compacting its graph, and reader processes running
  hybrid, vector, keyword, filtered and graph-mode reads (some reopening their read-only context
  all the time, some sharing one context between threads), counting torn answers (two versions
  of one document, or a version cut short), documents missing from a filter's answer, and
  errors: all must stay 0;
- the interleavings found by analysis, made to happen deterministically in one process: a
  writer committing a whole new version between ``retrieve``'s pinned snapshot and its graph
  filter (the graph newer than the snapshot), a read-only graph left behind by its writer, a
  writer committing between a reader's two keyword statements, and one between a matrix
  reload's row read and its version read;
- threads sharing one store object with a writer thread.

Every test that needs no SQLite internals runs on each store with these promises:
SqliteVecStore, and PgVectorStore against the real PostgreSQL test server (``store_kind``;
a context on PostgreSQL keeps its graph in its directory as any other).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import killing
from trails import retrieve
from trails.context import Context
from trails.errors import ContextDamagedError, StorageError
from trails.ingest import Document, SentenceChunker, ingest_all
from trails.kg import OxigraphGraph, opening
from trails.retrieval.consistency import READ_ATTEMPTS
from trails.testing import MockEmbedder
from trails.vector.stores.base import VectorStore
from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore, core

DIM = 32
DOCS = 6
PARTS = 3  # sentences per document, one chunk each
CHUNKER = SentenceChunker(max_chars=60, overlap=0)
CHUNK_FILTER = ('SELECT ?c WHERE { ?c schema:isPartOf ?d . ?d meta:topic "t0" }')
DOC_FILTER = 'SELECT ?d WHERE { ?d a trails:Document ; meta:topic "t1" }'
REVISION = re.compile(r"revision (\d+)")


def documents(revision: int, ids: range = range(DOCS)) -> list[Document]:
    """Every document at ``revision``: PARTS sentences, each naming the revision."""
    return [Document(id=f"d{i}", source=f"mem:d{i}", metadata={"topic": f"t{i % 2}"},
                     text=" ".join(f"Document {i} revision {revision} part {p} lighthouse."
                                   for p in range(PARTS)))
            for i in ids]


def doc_iri(i: int) -> str:
    return f"trails://local/doc/d{i}"


STORES = ["sqlite-vec", "pgvector"]


@pytest.fixture(params=STORES)
def store_kind(request) -> str:
    return str(request.param)


def new_store(kind: str, directory: Path, dim: int) -> VectorStore | None:
    """A new store of ``kind`` for a context in ``directory`` (None: the context's default,
    SqliteVecStore in the directory); PgVectorStore in a new schema of the test server."""
    if kind == "sqlite-vec":
        return None
    from pg_support import pg_server
    from trails.vector.stores.pgvector import PgVectorStore

    return PgVectorStore(pg_server().new_schema(), dim=dim)


def second_handle(store: VectorStore) -> VectorStore:
    """Another object (another connection) on the same stored vectors, as a second process
    would open them."""
    if isinstance(store, SqliteVecStore):
        return SqliteVecStore(store.path)
    from trails.vector.stores.pgvector import PgVectorStore

    assert isinstance(store, PgVectorStore)
    return PgVectorStore(store.dsn, table=store.table)


def make_context(directory: Path, kind: str = "sqlite-vec") -> None:
    with Context.open(directory, embedder=MockEmbedder(dim=DIM),
                      vectors=new_store(kind, directory, DIM)) as ctx:
        ingest_all(documents(0), ctx=ctx, chunker=CHUNKER)


def problems(hits: list, expected_docs: set[str]) -> tuple[int, int]:
    """(torn, missing) for one answer: a document shown in two versions (by version id or by
    the revision in its text) or with fewer chunks than a version has; an expected document
    absent."""
    versions, revisions, counts = defaultdict(set), defaultdict(set), defaultdict(int)
    for hit in hits:
        meta = hit.metadata
        versions[meta["doc_iri"]].add(meta["version"])
        revisions[meta["doc_iri"]].update(REVISION.findall(meta.get("text") or hit.snippet))
        counts[meta["doc_iri"]] += 1
    torn = sum(1 for doc in versions
               if len(versions[doc]) > 1 or len(revisions[doc]) > 1 or counts[doc] != PARTS)
    return torn, len(expected_docs - set(versions))


# -- the stress run: real processes ---------------------------------------------------------

# The writer races its readers until it has written ENOUGH_REVISIONS and every reader has
# said (a file beside the done file) that it read three times what its test asks for, or
# for its time box on a machine too slow for that.
ENOUGH_REVISIONS = 12
MIN_READS, MIN_OPENS = 12, 6  # what the stress test asks of each reader, of all reopens
MIN_PER_QUERY_READS = 8  # what the per-query test asks of each reader

WRITER = r"""
import glob, json, sys, time
sys.path[:0] = [sys.argv[4]]
from test_concurrency import CHUNKER, DIM, ENOUGH_REVISIONS, documents
from trails.context import Context
from trails.ingest import ingest_all
from trails.testing import MockEmbedder

directory, seconds, done, readers = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[5])

def enough():
    return (revision >= ENOUGH_REVISIONS
            and len(glob.glob(glob.escape(done) + ".enough-*")) >= readers)

revision, start = 0, time.monotonic()
with Context.open(directory, embedder=MockEmbedder(dim=DIM)) as ctx:
    while time.monotonic() - start < seconds and not enough():
        revision += 1
        if revision % 2:  # one batch: all documents commit at one publish
            ingest_all(documents(revision), ctx=ctx, chunker=CHUNKER)
        else:  # one document at a time: many more commit points
            for doc in documents(revision):
                ingest_all([doc], ctx=ctx, chunker=CHUNKER)
        if revision % 4 == 0:
            ctx.kg.flush()
            ctx.kg.store.optimize()  # compaction: read-only opens race with deleted files
open(done, "w").write("done")
print(json.dumps({"revisions": revision}))
"""

READER = r"""
import json, os, sys, threading, traceback
sys.path[:0] = [sys.argv[4]]
from test_concurrency import (CHUNK_FILTER, DOC_FILTER, DOCS, MIN_OPENS, MIN_READS, doc_iri,
                              problems)
from pathlib import Path
from trails import retrieve
from trails.context import Context

directory, done, style = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
ALL = {doc_iri(i) for i in range(DOCS)}
T0 = {doc_iri(i) for i in range(0, DOCS, 2)}
T1 = {doc_iri(i) for i in range(1, DOCS, 2)}
totals = {"reads": 0, "torn": 0, "missing": 0, "errors": [], "opens": 1, "kinds": {}}
lock = threading.Lock()

def one(ctx, kind):
    if kind == "vector":
        return retrieve("lighthouse part", ctx, mode="vector", k=100), ALL
    if kind == "hybrid":
        return retrieve("lighthouse part", ctx, k=100), ALL
    if kind == "keyword":
        with ctx.vectors.snapshot():
            return ctx.vectors.keyword_search("lighthouse", k=100), ALL
    if kind == "chunk-filter":
        return retrieve("lighthouse", ctx, k=100, sparql_filter=CHUNK_FILTER), T0
    if kind == "doc-filter":
        return retrieve("lighthouse", ctx, k=100, sparql_filter=DOC_FILTER), T1
    return retrieve("x", ctx, mode="graph", k=100, sparql_filter=CHUNK_FILTER), T0

KINDS = ["vector", "hybrid", "keyword", "chunk-filter", "doc-filter", "graph"]

def run(ctx, reopen):
    n = 0
    while not done.exists():
        kind = KINDS[n % len(KINDS)]
        n += 1
        try:
            if reopen and n % 6 == 0:
                ctx.close()
                ctx = Context.open(directory, read_only=True)
                with lock:
                    totals["opens"] += 1
            hits, expected = one(ctx, kind)
            torn, missing = problems(list(hits), expected)
            with lock:
                totals["reads"] += 1
                totals["torn"] += torn
                totals["missing"] += missing
                totals["kinds"][kind] = totals["kinds"].get(kind, 0) + 1
                if (totals["reads"] == 3 * MIN_READS
                        and (reopen is False or totals["opens"] > MIN_OPENS)):
                    Path(f"{done}.enough-{os.getpid()}").touch()
                if torn or missing:
                    totals["errors"].append(f"{kind} ({style}): torn={torn} missing={missing} "
                                            f"{getattr(hits, 'notes', '')}")
        except Exception as exc:
            with lock:
                totals["errors"].append(f"{kind}: {type(exc).__name__}: {exc}"[:500])
    return ctx

ctx = Context.open(directory, read_only=True)
if style == "threads":  # two threads share one context (one store object, one graph)
    workers = [threading.Thread(target=run, args=(ctx, False)) for _ in range(2)]
    for w in workers: w.start()
    for w in workers: w.join()
else:
    ctx = run(ctx, True)
ctx.close()
print(json.dumps(totals))
"""


@pytest.fixture
def here() -> str:
    return str(Path(__file__).resolve().parent)


def beside_a_writer(directory: Path, done: Path, here: str, seconds: int,
                    readers: list[tuple[str, ...]]) -> tuple[int, list[dict]]:
    """Run WRITER (for ENOUGH_REVISIONS and until every reader said it read enough, at most
    ``seconds``) and reader processes (each a script and its arguments after the directory and
    the done file) until it is done: its revisions and their totals. Each is a real process,
    forked from tests/killing.py's pre-imported fork server."""
    writer = killing.start(WRITER, [directory, seconds, done, here, len(readers)])
    started = [killing.start(script, [directory, done, *args]) for script, *args in readers]
    try:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err[-3000:]
        revisions = json.loads(out)["revisions"]
        results = []
        for reader in started:
            out, err = reader.communicate(timeout=120)
            assert reader.returncode == 0, err[-3000:]
            results.append(json.loads(out))
    finally:
        done.write_text("done")
        for process in [writer, *started]:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return revisions, results


def test_readers_beside_a_re_ingesting_writer_see_whole_versions_only(tmp_path, here,
                                                                   store_kind):
    directory, done = tmp_path / "ctx", tmp_path / "done"
    make_context(directory, store_kind)
    revisions, results = beside_a_writer(directory, done, here, 14, [
        (READER, style, here) for style in ("reopen", "reopen", "threads")])
    print(f"{revisions} revisions; reads {[r['reads'] for r in results]}, "
          f"opens {[r['opens'] for r in results]}")
    assert revisions >= 4, "the writer committed too few revisions to race with"
    for result in results:
        assert result["errors"] == [], result["errors"][:10]
        assert (result["torn"], result["missing"]) == (0, 0)
        assert result["reads"] >= MIN_READS and len(result["kinds"]) == 6, result
    assert sum(r["opens"] for r in results) >= MIN_OPENS  # read-only opens while it wrote
    with Context.open(directory, read_only=True) as ctx:  # the last revision, whole
        hits = list(retrieve("lighthouse", ctx, mode="vector", k=100))
        assert {REVISION.search(h.metadata["text"]).group(1) for h in hits} == {str(revisions)}
        assert problems(hits, {doc_iri(i) for i in range(DOCS)}) == (0, 0)


GRAPH_WRITER = r"""
import os, sys, time
import pyoxigraph as ox
store = ox.Store(sys.argv[1])
start, n = time.monotonic(), 0
print("ready", flush=True)
# Until the reader has opened often enough (it says so with a file), a minute at most.
while not os.path.exists(sys.argv[2]) and time.monotonic() - start < 60:
    n += 1
    store.update(f'INSERT DATA {{ <https://x/s{n}> <https://x/p> "{"v" * 200}{n}" }}')
    if n % 20 == 0:
        store.flush()
        store.optimize()
"""


def test_read_only_opens_never_fail_while_the_writer_compacts(tmp_path):
    path = tmp_path / "graph"
    OxigraphGraph(path).close()
    stop = tmp_path / "stop"
    writer = killing.start(GRAPH_WRITER, [path, stop])
    try:
        assert writer.stdout.readline().strip() == "ready"
        opens, sizes = 0, []
        while writer.poll() is None:
            graph = OxigraphGraph(path, read_only=True)  # must never raise
            sizes.append(len(graph))
            graph.close()
            opens += 1
            if opens == 12:
                stop.touch()
        assert writer.returncode == 0, writer.communicate(timeout=30)[1][-2000:]
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.communicate()
    assert opens >= 10
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]  # each open saw a later state


def _count_pauses(monkeypatch) -> list[float]:
    pauses: list[float] = []
    monkeypatch.setattr(opening.time, "sleep", pauses.append)
    return pauses


def test_a_file_missing_from_a_store_nobody_writes_is_damage_raised_at_once(tmp_path, monkeypatch):
    """Retrying is for files a moving writer deleted; the same loss in a quiet store is
    damage, and the caller hears so at once, not after the writer's patience runs out."""
    path = tmp_path / "graph"
    kg = OxigraphGraph(path)
    kg.update('INSERT DATA { <https://x/a> <https://x/p> "a" }')
    kg.store.optimize()  # everything into tables
    kg.close()
    for table in path.glob("*.sst"):
        table.unlink()
    pauses = _count_pauses(monkeypatch)
    with pytest.raises(ContextDamagedError, match=r"\.sst"):
        OxigraphGraph(path, read_only=True)
    assert pauses == []


class _AlwaysVanished:
    """A read-only store whose every query meets a file deleted from under it."""

    def query(self, *args, **kwargs):
        raise OSError("IO error: No such file or directory: While open a file for random "
                      "read: g/000042.sst")


def test_a_read_meeting_a_missing_file_in_a_quiet_store_is_not_retried(tmp_path, monkeypatch):
    writer = OxigraphGraph(tmp_path / "g")
    writer.update('INSERT DATA { <https://x/a> <https://x/p> "a" }')
    writer.flush()
    reader = OxigraphGraph(tmp_path / "g", read_only=True)
    reader._store = _AlwaysVanished()
    pauses = _count_pauses(monkeypatch)
    with pytest.raises(StorageError, match="000042.sst"):
        reader.query("SELECT ?s WHERE { ?s ?p ?o }")
    assert pauses == []


def test_a_read_meeting_a_missing_file_while_the_store_moves_opens_a_newer_view(tmp_path):
    writer = OxigraphGraph(tmp_path / "g")
    writer.update('INSERT DATA { <https://x/a> <https://x/p> "a" }')
    writer.flush()
    reader = OxigraphGraph(tmp_path / "g", read_only=True)
    writer.update('INSERT DATA { <https://x/b> <https://x/p> "b" }')
    writer.flush()  # the manifest moves on: files the reader's view lists may go
    reader._store = _AlwaysVanished()
    assert len(reader.query("SELECT ?s WHERE { ?s ?p ?o }").rows) == 2


# -- the torn interleavings, made to happen -------------------------------------------------


@pytest.fixture
def two_handles(tmp_path, store_kind):
    """A context (the reader) and a writer sharing its graph with its own store connection:
    the writer's commits land while the reader holds its snapshot."""
    make_context(tmp_path / "ctx", store_kind)
    reader = Context.open(tmp_path / "ctx")
    writer_store = second_handle(reader.vectors)
    writer = Context(reader.kg, writer_store, reader.embedder)
    yield reader, writer
    writer_store.close()
    reader.close()


def _reingest_around_the_filter(monkeypatch, reader, writer, times: int, *,
                                after: bool) -> list[int]:
    """Make each of the first ``times`` graph filters of ``reader`` let the writer commit a
    whole new revision of d0 (steps 1-4) just before it first reads the graph (so after the
    snapshot was pinned, and after the filter noted the graph's generation), and with
    ``after`` another one just after the filter. The graph is read by its evaluation
    (``select_iris``) or through its columns (``select_tsv``) alike. Returns the revisions
    each filter that read the graph saw."""
    run_module = importlib.import_module("trails.retrieval.retrieve")  # the module, not
    real = run_module.filter_candidates  # the function trails.retrieval exports by its name
    seen: list[int] = []
    revision = [0]
    filtering = {"now": False, "read": False}

    def commit() -> None:
        revision[0] += 1
        filtering["now"] = False  # the writer's own reads of the shared graph are no filter's
        try:
            ingest_all(documents(revision[0], range(1)), ctx=writer, chunker=CHUNKER)
        finally:
            filtering["now"] = True

    def first_read(name):
        read = getattr(reader.kg, name)

        def reading(*args, **kwargs):
            if filtering["now"] and not filtering["read"]:
                filtering["read"] = True
                if len(seen) < times:
                    commit()
                seen.append(revision[0])
            return read(*args, **kwargs)
        return reading

    def filter_candidates(graph, *args, **kwargs):
        assert graph is reader.kg
        filtering.update(now=True, read=False)
        try:
            iris = real(graph, *args, **kwargs)
        finally:
            filtering["now"] = False
        if filtering["read"] and len(seen) <= times and after:
            commit()
            filtering["now"] = False
        return iris

    for name in ("select_iris", "select_tsv"):
        monkeypatch.setattr(reader.kg, name, first_read(name))
    monkeypatch.setattr(run_module, "filter_candidates", filter_candidates)
    return seen


ONE_DOC = "SELECT ?c WHERE { ?c schema:isPartOf ?d . FILTER(?d = <trails://local/doc/d0>) }"
# The same chunks, by a filter that names ?c twice: evaluated over chunks, never over documents
# (ADR 13), so its answer names versions and the chunk-level checks run.
ONE_DOC_CHUNKS = ("SELECT ?c WHERE { ?c schema:isPartOf ?d ; trails:version ?v . "
                  "FILTER(?d = <trails://local/doc/d0>) }")
# The same again, answered by the graph's evaluation rather than its columns (a test of the
# chunks' text is never a column): both reads must be checked alike.
ONE_DOC_TEXTS = ("SELECT ?c WHERE { ?c schema:isPartOf ?d ; schema:text ?t . "
                 "FILTER(?d = <trails://local/doc/d0>) }")


# The chunk-level filters and the path each takes in hybrid mode (graph mode runs as written).
CHUNK_READS = pytest.mark.parametrize("chunks", [(ONE_DOC_CHUNKS, "columns"),
                                                 (ONE_DOC_TEXTS, "chunks-reordered")],
                                      ids=["columns", "graph-read"])


def _answered(result, mode, chunks):
    """``result``, once its filter path is checked to be the one ``chunks`` names."""
    assert mode == "graph" or result.filter_path == chunks[1], result.filter_path
    return result


@CHUNK_READS
@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_a_graph_newer_than_the_snapshot_gets_a_newer_snapshot(two_handles, monkeypatch, mode,
                                                               chunks):
    """The filter sees revision 1 only (steps 1-4 done after the pin): d0 would vanish with
    the snapshot of revision 0; a snapshot pinned after the filter shows revision 1 whole."""
    reader, writer = two_handles
    seen = _reingest_around_the_filter(monkeypatch, reader, writer, times=1, after=False)
    result = _answered(retrieve("lighthouse", reader, mode=mode, k=100,
                                sparql_filter=chunks[0]), mode, chunks)
    assert seen == [1]  # the filter ran once
    assert problems(list(result), {doc_iri(0)}) == (0, 0)
    assert {REVISION.search(h.metadata["text"]).group(1) for h in result} == {"1"}
    assert not result.notes


@CHUNK_READS
@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_a_graph_that_moved_on_again_is_read_again(two_handles, monkeypatch, mode, chunks):
    """Revision 2 commits right after the filter saw revision 1: no snapshot fits that
    filter's answer any more, so the whole read runs again."""
    reader, writer = two_handles
    seen = _reingest_around_the_filter(monkeypatch, reader, writer, times=1, after=True)
    result = _answered(retrieve("lighthouse", reader, mode=mode, k=100,
                                sparql_filter=chunks[0]), mode, chunks)
    assert seen == [1, 2]
    assert problems(list(result), {doc_iri(0)}) == (0, 0)
    assert {REVISION.search(h.metadata["text"]).group(1) for h in result} == {"2"}
    assert not result.notes


@CHUNK_READS
def test_a_graph_that_keeps_moving_gives_the_last_answer_with_a_note(two_handles, monkeypatch,
                                                                     chunks):
    reader, writer = two_handles
    seen = _reingest_around_the_filter(monkeypatch, reader, writer, times=READ_ATTEMPTS,
                                       after=True)
    result = _answered(retrieve("lighthouse", reader, k=100, sparql_filter=chunks[0]),
                       "hybrid", chunks)
    assert len(seen) == READ_ATTEMPTS  # bounded
    assert problems(list(result), set()) == (0, 0)  # never two versions, even then
    assert any("trails://local/doc/d0" in note and "retrieve again" in note
               for note in result.notes)


@pytest.mark.parametrize("after", [False, True])
@pytest.mark.parametrize("moves", [1, 3, READ_ATTEMPTS])
def test_a_filter_over_documents_answers_whole_and_current_while_the_graph_moves(
        two_handles, monkeypatch, moves, after):
    """Evaluated over documents (ONE_DOC is), the answer names no version: a graph that
    changed during the filter's read is read again, and the answer shows the document whole,
    at the last committed version; only when it moved on every attempt is that noted."""
    reader, writer = two_handles
    seen = _reingest_around_the_filter(monkeypatch, reader, writer, times=moves, after=after)
    result = retrieve("lighthouse", reader, k=100, sparql_filter=ONE_DOC)
    commits = moves * (2 if after else 1)
    assert len(seen) == min(moves + 1, READ_ATTEMPTS)
    assert problems(list(result), {doc_iri(0)}) == (0, 0)
    assert {REVISION.search(h.metadata["text"]).group(1) for h in result} == {str(commits)}
    assert bool(result.notes) == (moves == READ_ATTEMPTS)


def test_a_filter_that_skips_the_live_version_is_no_tear(two_handles, monkeypatch):
    """The graph still holds the live version's chunks: the filter simply did not select
    them (an old version's leftovers match), so there is nothing to read again."""
    reader, _ = two_handles
    stale = "trails://local/doc/d0/v/0000000000000000/c/0"
    reader.kg.update(f'INSERT DATA {{ <{stale}> schema:isPartOf <trails://local/doc/d0> ; '
                     'trails:version "0000000000000000" ; trails:mark 1 }')
    seen = _reingest_around_the_filter(monkeypatch, reader, reader, times=0, after=False)
    # (a chunk's own predicate in the filter keeps it over chunks, read from the columns)
    result = retrieve("lighthouse", reader, k=10,
                      sparql_filter="SELECT ?c WHERE { ?c trails:mark 1 ; trails:version ?v }")
    assert seen == [0] and list(result) == [] and not result.notes


def test_a_read_only_graph_left_behind_by_its_writer_is_refreshed(tmp_path, store_kind):
    make_context(tmp_path / "ctx", store_kind)
    with Context.open(tmp_path / "ctx") as writer, \
            Context.open(tmp_path / "ctx", read_only=True) as reader:
        ingest_all(documents(7), ctx=writer, chunker=CHUNKER)  # after the reader opened
        hits = list(retrieve("lighthouse", reader, k=100, sparql_filter=CHUNK_FILTER))
        assert problems(hits, {doc_iri(i) for i in range(0, DOCS, 2)}) == (0, 0)
        assert {REVISION.search(h.metadata["text"]).group(1) for h in hits} == {"7"}


def test_keyword_search_reads_one_state_when_rows_go_between_its_statements(tmp_path):
    path = tmp_path / "v.db"
    writer = SqliteVecStore(path, dim=2)
    writer.add_many([f"r{i}" for i in range(40)], np.eye(2)[[i % 2 for i in range(40)]],
                    [{"text": f"apple {i}", "doc_iri": f"d{i}"} for i in range(40)])
    reader = SqliteVecStore(path, read_only=True)
    real = reader._db.execute
    deleted = []

    def execute(sql, params=()):  # the writer deletes rows between the reader's statements
        rows = real(sql, params)
        if " FROM items WHERE " in sql and not deleted:  # its first read of the rows
            deleted.append(writer.delete_many([f"r{i}" for i in range(0, 40, 2)]))
        return rows

    reader._db.execute = execute
    ids = [f"r{i}" for i in range(40)]
    hits = reader.keyword_search("apple", k=50, ids=ids)  # raised KeyError before
    assert deleted == [20]
    assert sorted(h.id for h in hits) == sorted(ids)  # the state it started in, whole
    assert all(h.metadata["text"].startswith("apple") for h in hits)
    after = reader.keyword_search("apple", k=50, ids=ids)
    assert sorted(h.id for h in after) == sorted(f"r{i}" for i in range(1, 40, 2))
    reader.close()
    writer.close()


@pytest.mark.parametrize("kept", [True, False], ids=["live-file", "rows"])
def test_a_commit_during_a_matrix_reload_is_never_missed(tmp_path, monkeypatch, kept):
    """The reload reads the data version and the live slots (from the file kept for the
    state, or from the rows) in one read transaction: a commit landing between the two cannot
    leave the matrix stale for good."""
    path = tmp_path / "v.db"
    writer = SqliteVecStore(path, dim=2)
    writer.add("a", [1.0, 0.0])
    reader = SqliteVecStore(path, read_only=True)
    writer.add("b", [0.0, 1.0])  # the reader reloads at its next read
    if kept:  # both reloads take the file: the rows are never read
        monkeypatch.setattr(core, "read_rows", _rows_read)
    else:
        os.remove(f"{path}.live")
    real = reader._index_rows
    landed = []

    def index_rows(where, params=(), stamp=None):
        real(where, params, stamp)
        if not landed:  # between the row read and the end of the reload
            writer.add("c", [1.0, 1.0])
            landed.append(True)

    reader._index_rows = index_rows
    assert sorted(h.id for h in reader.search([1.0, 0.0], k=10)) == ["a", "b"]
    assert landed
    assert sorted(h.id for h in reader.search([1.0, 0.0], k=10)) == ["a", "b", "c"]
    reader.close()
    writer.close()


def _rows_read(*args, **kwargs):
    raise AssertionError("the live slots were read from the rows, not the kept file")


def test_threads_sharing_a_store_with_a_writer_thread_see_whole_versions(tmp_path, store_kind):
    store = new_store(store_kind, tmp_path, 4) or SqliteVecStore(tmp_path / "v.db", dim=4)
    docs, chunks, stop = 5, 3, threading.Event()
    rng = np.random.default_rng(0)

    def publish(revision: int) -> None:
        ids, metas = [], []
        for d in range(docs):
            for c in range(chunks):
                ids.append(f"doc{d}/v/{revision}/c/{c}")
                metas.append({"doc_iri": f"doc{d}", "version": str(revision),
                              "text": f"beacon revision {revision}"})
        store.add_many(ids, rng.random((len(ids), 4)) + 0.1, metas, pending=True)
        store.publish([DocumentVersion(f"doc{d}", str(revision), "default", "h", chunks)
                       for d in range(docs)])

    publish(0)
    failures: list[str] = []
    reads = [0]

    def read() -> None:
        while not stop.is_set():
            try:
                with store.snapshot():
                    answers = [store.search([1, 1, 1, 1], k=100),
                               store.keyword_search("beacon", k=100),
                               store.search([1, 0, 0, 1], k=100, ids=[f"doc{d}" for d in range(docs)])]
                for hits in answers:
                    versions = defaultdict(list)
                    for hit in hits:
                        versions[hit.metadata["doc_iri"]].append(hit.metadata["version"])
                    if len(versions) != docs or any(len(set(v)) != 1 or len(v) != chunks
                                                    for v in versions.values()):
                        failures.append(repr(dict(versions)))
                reads[0] += 1
            except Exception as exc:  # noqa: BLE001 - counted, then asserted empty
                failures.append(f"{type(exc).__name__}: {exc}")

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    try:
        for revision in range(1, 40):
            publish(revision)
            time.sleep(0.001)
    finally:
        stop.set()
        for thread in readers:
            thread.join(timeout=60)
    assert failures == []
    assert reads[0] >= 3
    store.close()


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moves=st.lists(st.tuples(st.sets(st.integers(0, 2)), st.sets(st.integers(0, 2))),
                      max_size=READ_ATTEMPTS + 1),
       mode=st.sampled_from(["hybrid", "graph"]))
def test_any_interleaving_of_commits_and_a_read_gives_whole_versions(tmp_path_factory, moves,
                                                                     mode, store_kind):
    """Whatever documents a writer commits just before and just after each of a read's graph
    filters, the answer holds whole versions; a document is missing only with a note."""
    directory = tmp_path_factory.mktemp("ctx")
    with Context.open(directory, embedder=MockEmbedder(dim=DIM),
                      vectors=new_store(store_kind, directory, DIM)) as reader:
        ingest_all(documents(0, range(3)), ctx=reader, chunker=CHUNKER)
        writer = Context(reader.kg, second_handle(reader.vectors), reader.embedder)
        real, calls, revision = reader.kg.select_iris, [0], [0]

        def commit(docs: set[int]) -> None:
            if docs:
                revision[0] += 1
                ingest_all(documents(revision[0], sorted(docs)), ctx=writer, chunker=CHUNKER)

        def select_iris(*args, **kwargs):
            before, after = moves[calls[0]] if calls[0] < len(moves) else (set(), set())
            calls[0] += 1
            commit(before)
            iris = real(*args, **kwargs)
            commit(after)
            return iris

        reader.kg.select_iris = select_iris  # type: ignore[method-assign]
        result = retrieve("lighthouse", reader, mode=mode, k=100,
                          sparql_filter="SELECT ?c WHERE { ?c schema:isPartOf ?d }")
        writer.vectors.close()
        torn, missing = problems(list(result), {doc_iri(i) for i in range(3)})
        assert torn == 0
        assert missing == 0 or any("retrieve again" in note for note in result.notes)
        assert calls[0] <= READ_ATTEMPTS


# -- readers that open the context for each query ------------------------------------------

# Where a writer can stand in ADR 0005's four steps when a reader opens or reads.
STEPS = ["staged", "chunk triples", "published", "committed"]


class _Paused(Exception):
    """The writer stops here (as a process does between two steps when another is scheduled)."""


def _write_until(monkeypatch, ctx: Context, revision: int, step: str | None,
                 ids: range) -> None:
    """Ingest ``ids`` at ``revision`` through ADR 0005's ``step`` and stop there (None:
    write nothing)."""
    if step is None:
        return
    from trails.ingest import writer

    stop = STEPS.index(step)
    real = writer.VersionWriter
    stage, add, clean = real._stage_vectors, real._add_chunk_triples, real.clean_graph

    def staged(self, docs):
        stage(self, docs)
        if stop == 0:
            raise _Paused

    def added(self, docs):
        add(self, docs)
        if stop == 1:
            raise _Paused

    def cleaned(self, docs):
        if stop == 2:
            raise _Paused
        clean(self, docs)

    with monkeypatch.context() as patch:
        patch.setattr(real, "_stage_vectors", staged)
        patch.setattr(real, "_add_chunk_triples", added)
        patch.setattr(real, "clean_graph", cleaned)
        try:
            ingest_all(documents(revision, ids), ctx=ctx, chunker=CHUNKER)
        except _Paused:
            pass


READS = {  # what each kind of read must show whole: (mode, filter, query, documents)
    "vector": ("vector", None, "lighthouse part", range(DOCS)),
    "hybrid, chunk filter": ("hybrid", CHUNK_FILTER, "lighthouse", range(0, DOCS, 2)),
    "hybrid, document filter": ("hybrid", DOC_FILTER, "lighthouse", range(1, DOCS, 2)),
    "graph, chunk filter": ("graph", CHUNK_FILTER, "x", range(0, DOCS, 2)),
}


@pytest.mark.parametrize("opened", [None, *STEPS], ids=lambda s: f"opened at {s}")
@pytest.mark.parametrize("read", STEPS, ids=lambda s: f"read at {s}")
def test_a_read_only_open_beside_a_writer_between_any_two_steps_sees_whole_versions(
        tmp_path, monkeypatch, opened, read, store_kind):
    """A read-only context takes its graph view when it opens and its store snapshot when it
    reads; the writer may stand at any of the four steps at either moment (an earlier
    revision cut off where the reader opened, the next one where it reads; one batch of every
    document, or one document). Every answer holds whole versions of every document."""
    for ids in (range(DOCS), range(1)):
        directory = tmp_path / f"ctx{len(ids)}"
        make_context(directory, store_kind)
        with Context.open(directory) as writer:
            _write_until(monkeypatch, writer, 1, opened, ids)
            with Context.open(directory, read_only=True) as reader:
                _write_until(monkeypatch, writer, 2, read, ids)
                for kind, (mode, sparql, query, docs) in READS.items():
                    hits = retrieve(query, reader, mode=mode, k=100, sparql_filter=sparql)
                    assert problems(list(hits), {doc_iri(i) for i in docs}) == (0, 0), (
                        kind, len(ids), [h.iri for h in hits], hits.notes)


PER_QUERY_READER = r"""
import json, os, sys
sys.path[:0] = [sys.argv[3]]
from pathlib import Path
from test_concurrency import MIN_PER_QUERY_READS, READS, doc_iri, problems
from trails import retrieve
from trails.context import Context

directory, done = sys.argv[1], Path(sys.argv[2])
totals = {"reads": 0, "torn": 0, "missing": 0, "errors": []}
kinds = list(READS)
while not done.exists():
    kind = kinds[totals["reads"] % len(kinds)]
    mode, sparql, query, docs = READS[kind]
    try:
        with Context.open(directory, read_only=True, audit=False) as ctx:  # one open per query
            hits = retrieve(query, ctx, mode=mode, k=100, sparql_filter=sparql)
        torn, missing = problems(list(hits), {doc_iri(i) for i in docs})
        totals["torn"] += torn
        totals["missing"] += missing
        if torn or missing:
            totals["errors"].append(f"{kind}: torn={torn} missing={missing} "
                                    f"{[h.iri for h in hits]} {hits.notes}")
    except Exception as exc:
        totals["errors"].append(f"{kind}: {type(exc).__name__}: {exc}"[:500])
    totals["reads"] += 1
    if totals["reads"] == 3 * MIN_PER_QUERY_READS:  # three times what the test asks: enough
        Path(f"{done}.enough-{os.getpid()}").touch()
print(json.dumps(totals))
"""


def test_readers_opening_the_context_for_each_query_see_whole_versions(tmp_path, here,
                                                                       store_kind):
    """Bounded: a re-ingesting, compacting writer for a few seconds, two readers opening a
    read-only context for every query (graph view and store snapshot taken anew each time)."""
    directory, done = tmp_path / "ctx", tmp_path / "done"
    make_context(directory, store_kind)
    revisions, results = beside_a_writer(directory, done, here, 8,
                                         [(PER_QUERY_READER, here)] * 2)
    print(f"{revisions} revisions; reads {[r['reads'] for r in results]}")
    for result in results:
        assert result["errors"] == [], result["errors"][:10]
        assert (result["torn"], result["missing"]) == (0, 0)
        assert result["reads"] >= MIN_PER_QUERY_READS, result
