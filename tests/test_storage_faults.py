"""Storage faults reach users as trails errors that name the file and the fix, never as raw
apsw, RocksDB (pyoxigraph ``OSError``/``RuntimeError``) or JSON errors:

- a corrupt ``trails.json``, ``vectors.db`` or graph: ContextDamagedError naming the file;
- a full disk (a real tmpfs of a few MB when this runs as root, an ``RLIMIT_FSIZE``
  subprocess otherwise) and a read-only mount: StorageError naming the path;
- after any of these, nothing stays open or locked in the process: once the fault is fixed,
  the next write or open in the same process works;
- a closed store, graph or context says so;
- the command line exits 3 with one line, no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import run_trails
from trails import retrieve
from trails.context import Context
from trails.errors import (
    ConfigurationError,
    ContextDamagedError,
    StorageError,
    TrailsError,
)
from trails.faults import storage_fault
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph
from trails.testing import MockEmbedder, fresh_context
from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore

DIM = 16
TEXT = "Lighthouses guide ships past the rocks at night."


def make_context(directory: Path, docs: int = 2) -> None:
    with Context.open(directory, embedder=MockEmbedder(dim=DIM)) as ctx:
        ingest_all([Document(id=f"d{i}", source=f"mem:d{i}", text=f"{TEXT} Number {i}.")
                    for i in range(docs)], ctx=ctx)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``trails ARGS``, in this process (tests/_cli.py): a failed command must release the
    context here too, as a library call would."""
    return run_trails(*args)


def assert_one_line_exit_3(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 3, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def assert_not_raw(error: BaseException) -> None:
    """A trails error, and none of the databases' own classes (nor JSON's, nor OSError)."""
    assert isinstance(error, TrailsError)
    assert not isinstance(error, (OSError, ValueError, RuntimeError))
    assert type(error).__module__ == "trails.errors"


@pytest.fixture
def context_dir(tmp_path) -> Path:
    directory = tmp_path / "ctx"
    make_context(directory)
    return directory


def reopens(directory: Path) -> None:
    """The context opens for writing in this process and answers: nothing was left locked."""
    with Context.open(directory) as ctx:
        assert len(retrieve(TEXT, ctx, mode="vector", k=5)) > 0


# -- corrupt files ------------------------------------------------------------------------

CONFIGS = {
    "garbage": b"\x00\xff garbage \x13",
    "truncated": b'{"format": 2, "base_iri": "trails://lo',
    "a list": b"[1, 2, 3]",
    "a string": b'"trails"',
    "a number": b"42",
    "null": b"null",
    "not utf-8": b'{"format": 2, "base_iri": "\xff\xfe"}',
    "empty": b"",
}


@pytest.mark.parametrize("content", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("read_only", [False, True])
def test_a_corrupt_trails_json_is_a_damaged_context(context_dir, content, read_only):
    config = context_dir / "trails.json"
    good = config.read_bytes()
    config.write_bytes(content)
    with pytest.raises(ContextDamagedError) as caught:
        Context.open(context_dir, read_only=read_only)
    assert_not_raw(caught.value)
    assert str(config) in str(caught.value) and "backup" in str(caught.value)
    assert config.read_bytes() == content  # refused, not rewritten
    config.write_bytes(good)
    reopens(context_dir)


def test_the_command_line_exits_3_on_a_corrupt_trails_json(context_dir):
    (context_dir / "trails.json").write_bytes(b"[]")
    assert_one_line_exit_3(cli("--db", str(context_dir), "stats"), "trails.json")


def corrupt_vectors(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif how.startswith("truncated"):
        path.write_bytes(data[: int(len(data) * float(how.split()[1]))])
    elif how == "header":
        path.write_bytes(b"\x00" * 100 + data[100:])
    elif how == "pages":  # from the second page (the file's header says the page size)
        page, middle = int.from_bytes(data[16:18], "big"), len(data) // 2
        path.write_bytes(data[:page] + os.urandom(middle - page) + data[middle:])


VECTOR_DAMAGE = ["garbage", "truncated 0.5", "truncated 0.05", "header", "pages"]


@pytest.mark.parametrize("how", VECTOR_DAMAGE)
@pytest.mark.parametrize("read_only", [False, True])
def test_a_corrupt_vector_store_is_a_damaged_context(context_dir, how, read_only):
    vectors = context_dir / "vectors.db"
    good = vectors.read_bytes()
    for extra in ("-wal", "-shm"):  # the whole file is the damaged one
        Path(f"{vectors}{extra}").unlink(missing_ok=True)
    corrupt_vectors(vectors, how)
    with pytest.raises(ContextDamagedError) as caught, \
            Context.open(context_dir, read_only=read_only) as ctx:
        retrieve(TEXT, ctx, k=5)  # damage deep in the file may show only on a read
    assert_not_raw(caught.value)
    assert str(vectors) in str(caught.value)
    vectors.write_bytes(good)
    reopens(context_dir)  # the graph the failed open had opened was released


def test_the_command_line_exits_3_on_a_corrupt_vector_store(context_dir):
    corrupt_vectors(context_dir / "vectors.db", "garbage")
    assert_one_line_exit_3(cli("--db", str(context_dir), "query", "ships"), "vectors.db")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=64)),
                     min_size=1, max_size=6),
       keep=st.floats(0.05, 1.0))
def test_any_damage_to_a_store_file_is_a_trails_error_or_a_clean_read(tmp_path, cuts, keep):
    """Whatever bytes are overwritten or cut, opening and reading the store either works or
    raises a trails error (never apsw's, numpy's or sqlite-vec's)."""
    path = tmp_path / f"v{abs(hash((tuple(cuts), keep)))}.db"
    with SqliteVecStore(path, dim=4) as store:
        store.add_many([f"id{i}" for i in range(300)], np.random.default_rng(1).random((300, 4)),
                       [{"text": f"word{i} lighthouse", "doc_iri": f"d{i % 7}"} for i in range(300)])
    data = bytearray(path.read_bytes())
    for where, patch in cuts:
        start = int(where * (len(data) - 1))
        data[start : start + len(patch)] = patch
    path.write_bytes(bytes(data[: max(1, int(len(data) * keep))]))
    try:
        with SqliteVecStore(path, read_only=True) as store:
            store.search([1, 0, 0, 0], k=5)
            store.keyword_search("lighthouse", k=5)
            store.metadata(store.all_ids()[:10])
            store.current_versions()
    except TrailsError as error:
        assert_not_raw(error)
    finally:
        path.unlink(missing_ok=True)


def corrupt_graph(graph: Path, how: str) -> None:
    if how == "current":
        (graph / "CURRENT").write_bytes(b"garbage")
    elif how == "manifest":
        for manifest in graph.glob("MANIFEST-*"):
            manifest.write_bytes(os.urandom(manifest.stat().st_size))
    elif how == "tables":
        for table in graph.glob("*.sst"):
            data = table.read_bytes()
            table.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("how", ["current", "manifest", "tables"])
@pytest.mark.parametrize("read_only", [False, True])
def test_a_corrupt_graph_is_a_damaged_context(context_dir, how, read_only):
    graph = context_dir / "graph"
    kg = OxigraphGraph(graph)
    kg.store.optimize()  # everything into tables
    kg.close()
    backup = context_dir.parent / "graph.good"
    shutil.copytree(graph, backup)
    corrupt_graph(graph, how)
    with pytest.raises(ContextDamagedError) as caught:
        Context.open(context_dir, read_only=read_only)
    assert_not_raw(caught.value)
    assert str(graph) in str(caught.value)
    shutil.rmtree(graph)
    shutil.copytree(backup, graph)
    reopens(context_dir)


def test_the_command_line_exits_3_on_a_corrupt_graph(context_dir):
    (context_dir / "graph" / "CURRENT").write_bytes(b"garbage")
    assert_one_line_exit_3(cli("--db", str(context_dir), "stats"), "graph")


# -- a full disk --------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 6 MB (root only); skipped where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); "
                    "the RLIMIT_FSIZE test covers a full disk instead")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """A file taking all but ``leave`` bytes of the disk."""
    stats = os.statvfs(disk)
    filler = disk / "filler"
    filler.write_bytes(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave))
    return filler


def big_documents(start: int, count: int) -> list[Document]:
    return [Document(id=f"big{i}", source=f"mem:big{i}",
                     text=" ".join(f"Sentence {j} of document {i} about tides." for j in range(400)))
            for i in range(start, start + count)]


def test_a_full_disk_during_ingest_is_a_storage_error_and_the_process_recovers(small_disk):
    directory = small_disk / "ctx"
    make_context(directory)
    ctx = Context.open(directory)
    filler = fill(small_disk, leave=150_000)
    try:
        with pytest.raises(StorageError) as caught:
            for n in range(0, 40, 4):
                ingest_all(big_documents(n, 4), ctx=ctx)
        assert_not_raw(caught.value)
        message = str(caught.value)
        assert str(directory) in message and "full" in message and "free" in message
        filler.unlink()  # space again: the same context writes on
        ingest_all([Document(id="after", source="mem:after", text="After the storm.")], ctx=ctx)
        hits = retrieve("After the storm.", ctx, mode="vector", k=1)
        assert hits[0].metadata["doc_iri"] == "trails://local/doc/after"
    finally:
        ctx.close()
    with Context.open(directory) as again:  # and the same process opens it again
        again.verify(repair=True)
        report = again.verify()
        assert not (report.stale_chunks or report.uncommitted_vectors
                    or report.chunks_without_vectors or report.vectors_without_chunks)
        assert len(retrieve(TEXT, again, mode="vector", k=3)) == 3


def test_a_full_disk_in_the_graph_drops_its_store_until_space_returns(small_disk):
    graph = OxigraphGraph(small_disk / "graph")
    filler = fill(small_disk, leave=400_000)
    written = 0
    with pytest.raises(StorageError) as caught:
        for n in range(2000):
            graph.update(f'INSERT DATA {{ <https://x/s{n}> <https://x/p> "{"w" * 2000}" }}')
            written += 1  # an update that returned is kept, even if the flush after it fails
            graph.flush()
    assert_not_raw(caught.value)
    assert str(small_disk / "graph") in str(caught.value) and "full" in str(caught.value)
    filler.unlink()
    graph.update('INSERT DATA { <https://x/after> <https://x/p> "after" }')  # same object
    assert len(graph) == written + 1  # every update before the failing one, and this one
    graph.close()
    again = OxigraphGraph(small_disk / "graph")  # not locked by this process
    assert len(again) == written + 1
    again.close()


def test_a_full_disk_in_the_vector_store_keeps_the_matrix_with_the_file(small_disk):
    store = SqliteVecStore(small_disk / "v.db", dim=64)
    store.add("first", np.ones(64))
    filler = fill(small_disk, leave=60_000)
    rng = np.random.default_rng(0)
    with pytest.raises(StorageError) as caught:
        for n in range(200):
            store.add_many([f"b{n}-{i}" for i in range(200)], rng.random((200, 64)),
                           [{"text": "tide " * 50}] * 200)
    assert_not_raw(caught.value)
    assert str(small_disk / "v.db") in str(caught.value)
    committed = store.count()
    assert len(store.search(np.ones(64), k=100_000)) == committed  # the failed batch: nowhere
    filler.unlink()
    store.add("after", np.ones(64))
    assert store.count() == committed + 1
    store.close()


class _FlushRefused:
    """A graph store whose flush raises ``error`` (RocksDB's words); everything else is the
    real store's. The raising function holds no reference to the store: a kept traceback
    must not keep it (and its lock) alive."""

    def __init__(self, store, error: str) -> None:
        self._store = store

        def flush() -> None:
            raise OSError(error)

        self.flush = flush

    def __getattr__(self, name: str):
        return getattr(self._store, name)


FULL = "IO error: No space left on device: While appending to file: graph/000042.sst"


def test_closing_after_a_refused_flush_keeps_every_write_and_does_not_raise(context_dir):
    """A flush only moves what RocksDB's log already holds into tables: refused for lack of
    space at close, nothing is lost and close() is clean."""
    ctx = Context.open(context_dir)
    ingest_all([Document(id="late", source="mem:late", text="Written before the disk filled.")],
               ctx=ctx)
    ctx.kg._store = _FlushRefused(ctx.kg._store, FULL)
    ctx.close()  # raised the StorageError before
    with Context.open(context_dir) as again:
        assert again.verify().ok
        assert set(again.vectors.current_versions()) == {
            f"trails://local/doc/{name}" for name in ("d0", "d1", "late")}


def test_closing_still_raises_a_flush_that_failed_for_another_reason(context_dir):
    ctx = Context.open(context_dir)
    ctx.kg._store = _FlushRefused(ctx.kg._store, "Corruption: bad block")
    with pytest.raises(ContextDamagedError):
        ctx.close()
    reopens(context_dir)


def documents_of(directory: Path) -> dict[str, str]:
    """Each document's current version, as the store records it."""
    with Context.open(directory, read_only=True) as ctx:
        return {iri: record.version for iri, record in ctx.vectors.current_versions().items()}


@pytest.mark.parametrize("sentences", [40, 400])
@pytest.mark.parametrize("leave", [300_000, 1_500_000, 2_500_000])
def test_a_context_closed_on_a_full_disk_loses_nothing_and_reopens(small_disk, leave,
                                                                   sentences):
    """Whichever write meets the full disk (the store's, the graph's), the context closes
    without raising while the disk is still full, every document committed before keeps its
    version, and once space is back the same process reopens it and repair leaves it clean."""
    directory = small_disk / "ctx"
    make_context(directory)
    ctx = Context.open(directory, audit=False)  # no fold at close: the graph's own flush runs
    filler = fill(small_disk, leave=leave)
    committed: dict[str, str] = {}
    try:
        with pytest.raises(StorageError):
            for n in range(0, 400, 4):
                ingest_all([Document(id=f"big{i}", source=f"mem:big{i}", text=" ".join(
                    f"Sentence {j} of document {i} about tides." for j in range(sentences)))
                    for i in range(n, n + 4)], ctx=ctx)
                committed = {iri: record.version
                             for iri, record in ctx.vectors.current_versions().items()}
    finally:
        ctx.close()  # raised a StorageError from the graph's flush before
    filler.unlink()
    assert committed.items() <= documents_of(directory).items()
    with Context.open(directory) as again:
        again.verify(repair=True)
        assert again.verify().ok
        assert len(retrieve(TEXT, again, mode="vector", k=2)) == 2


def test_verify_after_a_disk_full_command_line_ingest_is_clean_or_repaired(small_disk,
                                                                          tmp_path):
    """The ingest exits 3 naming the full disk; once space is back `trails verify` exits 0
    (consistent) or 2 (what the cut-off ingest staged), `verify --repair` removes that, and
    `verify` then exits 0; every document committed before is kept."""
    directory = small_disk / "ctx"
    make_context(directory)
    before = documents_of(directory)
    sources = tmp_path / "sources"
    sources.mkdir()
    for i in range(30):
        (sources / f"f{i}.txt").write_text(" ".join(
            f"Sentence {j} of document {i} about tides." for j in range(400)))
    filler = fill(small_disk, leave=2_000_000)
    assert_one_line_exit_3(cli("--db", str(directory), "ingest", "-q", str(sources)), "full")
    filler.unlink()
    check = cli("--db", str(directory), "verify")
    assert check.returncode in (0, 2), check.stderr
    if check.returncode == 2:
        repair = cli("--db", str(directory), "verify", "--repair")
        assert repair.returncode == 2 and "repaired" in repair.stdout, repair.stderr
        check = cli("--db", str(directory), "verify")
    assert check.returncode == 0 and "consistent" in check.stdout, (check.stdout, check.stderr)
    assert before.items() <= documents_of(directory).items()


@pytest.mark.parametrize("failing", ["the store's id", "trails.json"])
def test_a_context_whose_creation_failed_part_way_opens_once_the_fault_is_gone(
        tmp_path, monkeypatch, failing):
    """trails.json is written last: a creation that failed before it left parts that record
    the id it chose, and the next open takes that id instead of refusing them as another
    context's."""
    directory = tmp_path / "new"
    full = StorageError("writing failed: the disk is full")

    def refuse(*args, **kwargs):
        raise full

    if failing == "trails.json":
        monkeypatch.setattr("trails.context.write_config", refuse)
    else:
        monkeypatch.setattr(SqliteVecStore, "bind_context", refuse)
    with pytest.raises(StorageError):
        Context.open(directory, embedder=MockEmbedder(dim=DIM))
    monkeypatch.undo()
    make_context(directory)  # raised ContextDamagedError ("belongs to another context")
    reopens(directory)


def test_creating_a_context_on_a_disk_filling_up_fails_cleanly_or_works(small_disk):
    """Wherever the space runs out while a new context is made, the open is a StorageError
    or a context, and once space is back the directory opens as a whole context."""
    failed = 0
    for n, leave in enumerate(range(200_000, 520_000, 40_000)):
        directory = small_disk / f"ctx{n}"
        filler = fill(small_disk, leave=leave)
        try:
            Context.open(directory, embedder=MockEmbedder(dim=DIM)).close()
        except StorageError:
            failed += 1
        finally:
            filler.unlink()
        make_context(directory)
        reopens(directory)
        shutil.rmtree(directory)
    assert failed  # the disk was small enough to fail some creations


def test_an_audit_record_cut_short_by_a_full_disk_leaves_the_log_whole(context_dir, monkeypatch):
    """A full disk writes part of a line, then refuses the rest: the part is taken back, so
    the next record does not join it (and both would be lost to the fold)."""
    from trails.audit import log as audit_log

    with Context.open(context_dir) as ctx:
        retrieve(TEXT, ctx, k=1)
        real = audit_log.os.write
        calls = []

        def cut(descriptor, data):
            calls.append(len(data))
            if len(calls) == 1:
                return real(descriptor, bytes(data)[:7])  # what fitted
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(audit_log.os, "write", cut)
        retrieve(TEXT, ctx, k=1)
        assert ctx.audit.failures == 1
        monkeypatch.undo()
        retrieve(TEXT, ctx, k=1)
        assert len(ctx.audit.pending()) == 2
    with Context.open(context_dir) as again:
        assert len(again.audit.activities(limit=None)) == 2


FSIZE_INGEST = r"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from trails.cli.commands import main
sys.argv = ["trails", "--db", sys.argv[2], "ingest", "-q", sys.argv[3]]
main()
"""


def test_a_file_size_limit_is_a_storage_error_with_exit_3(context_dir, tmp_path):
    """The full disk of any machine: RLIMIT_FSIZE makes every write past a size fail."""
    source = tmp_path / "big.txt"
    source.write_text(" ".join(f"Sentence {j} about tides and harbours." for j in range(30000)))
    largest = max(p.stat().st_size for p in context_dir.rglob("*") if p.is_file())
    result = subprocess.run([sys.executable, "-c", FSIZE_INGEST, str(largest + 20_000),
                             str(context_dir), str(source)], capture_output=True, text=True,
                            timeout=300, check=False)
    assert_one_line_exit_3(result, str(context_dir))
    assert "full" in result.stderr and "free some space" in result.stderr  # not "an I/O error"
    reopens(context_dir)  # the killed-in-the-middle ingest left a context that opens


# -- a read-only mount ----------------------------------------------------------------------


def test_a_read_only_mount_refuses_writers_and_serves_readers(small_disk):
    directory = small_disk / "ctx"
    make_context(directory)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    with pytest.raises(StorageError) as caught:
        Context.open(directory)
    assert_not_raw(caught.value)
    assert str(directory) in str(caught.value) and "read-only" in str(caught.value)
    with Context.open(directory, read_only=True) as ctx:  # readers still read
        assert len(retrieve(TEXT, ctx, k=2)) == 2
    with pytest.raises(StorageError) as caught:
        Context.open(small_disk / "new", embedder=MockEmbedder(dim=DIM))
    assert str(small_disk / "new") in str(caught.value)
    assert_one_line_exit_3(cli("--db", str(directory), "ingest", str(directory / "trails.json")),
                           "read-only")
    query = cli("--db", str(directory), "query", "ships")
    assert query.returncode == 0, query.stderr


def test_the_audit_trail_of_a_read_only_mount_is_listed(small_disk):
    """A snapshot mounted read-only for an audit: `trails audit` (which folds when it may
    write) refused it as read-only, so the trail could not be read there at all."""
    directory = small_disk / "ctx"
    make_context(directory)
    with Context.open(directory, read_only=True) as ctx:  # a reader's record: still pending
        run = retrieve(TEXT, ctx, k=1).run_id
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    listed = cli("--db", str(directory), "audit", "--json")
    assert listed.returncode == 0, listed.stderr
    assert run in [record["run_id"] for record in json.loads(listed.stdout)]
    shown = cli("--db", str(directory), "audit", "show", run)
    assert shown.returncode == 0 and run in shown.stdout, shown.stderr


# -- closed parts say so --------------------------------------------------------------------


def test_a_closed_store_says_so_on_every_call(tmp_path):
    store = SqliteVecStore(tmp_path / "v.db", dim=2)
    store.add("a", [1.0, 0.0], {"text": "x", "doc_iri": "d"})
    store.close()
    store.close()  # twice is fine
    calls = [lambda: store.search([1, 0]), lambda: store.add("b", [0, 1]), store.count,
             lambda: store.keyword_search("x"), store.all_ids, lambda: store.get(["a"]),
             lambda: store.metadata(["a"]), lambda: store.delete("a"), store.current_versions,
             lambda: store.document_rows("d"), store.managed_rows, lambda: store.expand_ids(["d"]),
             lambda: store.publish([DocumentVersion("d", "1", "default", "h", 1)]), store.scopes,
             lambda: store.snapshot().__enter__(), lambda: store.keyword_idf_sum("x")]
    for number, call in enumerate(calls):
        with pytest.raises(ConfigurationError, match="closed"):
            call()
            pytest.fail(f"call {number} did not say the store is closed")
    assert "closed" in repr(store)


def test_a_closed_graph_and_context_say_so(context_dir):
    ctx = Context.open(context_dir)
    ctx.close()
    for call in (lambda: ctx.kg.query("ASK { ?s ?p ?o }"), lambda: len(ctx.kg),
                 lambda: ctx.kg.update("INSERT DATA { <https://x/a> <https://x/b> 1 }"),
                 lambda: retrieve(TEXT, ctx, k=1), lambda: ctx.stats()):
        with pytest.raises(ConfigurationError, match="closed"):
            call()
    assert "closed" in repr(ctx.kg)
    reopens(context_dir)


def test_a_closed_context_in_memory_says_it_cannot_be_opened_again():
    # Its graph and store lived in memory alone: "open it again" was advice that cannot be
    # followed; the message says what it held is gone and how to start anew.
    for ctx in (Context.memory(MockEmbedder(dim=8)), fresh_context()):
        ctx.close()
        for call in (lambda c=ctx: c.kg.query("ASK { ?s ?p ?o }"),
                     lambda c=ctx: retrieve(TEXT, c, k=1), lambda c=ctx: c.vectors.count()):
            with pytest.raises(ConfigurationError) as caught:
                call()
            message = str(caught.value)
            assert "in memory is closed, and what it held went with it" in message
            assert "Context.memory()" in message and "open it" not in message


def test_closing_releases_the_graph_even_when_the_store_fails_to_close(context_dir, monkeypatch):
    ctx = Context.open(context_dir)

    def broken() -> None:
        raise StorageError("the store could not be closed")

    monkeypatch.setattr(ctx.vectors, "close", broken)
    with pytest.raises(StorageError):
        ctx.close()
    monkeypatch.undo()
    reopens(context_dir)


def test_only_storage_faults_are_translated():
    assert storage_fault(ValueError("bad IRI"), "x", "reading") is None
    assert storage_fault(RuntimeError("SPARQL: unknown function"), "x", "reading") is None
    assert isinstance(storage_fault(RuntimeError("Corruption: bad block"), "g", "reading"),
                      ContextDamagedError)
    full = storage_fault(OSError("IO error: No space left on device"), "g", "writing")
    assert type(full) is StorageError and "g" in str(full)


class _RefusingConnection:
    """An apsw connection whose statements fail as SQLite words a write the system refused."""

    def __init__(self, number: int) -> None:
        self.system_errno = number

    def execute(self, sql, params=()):
        import apsw

        raise apsw.IOError("disk I/O error")


@pytest.mark.parametrize("number, words", [(28, "No space left"), (27, "too large"),
                                           (122, "quota")])
def test_a_write_refused_for_space_is_a_full_disk_whatever_sqlite_calls_it(number, words):
    from trails.vector.stores.sqlite_vec.driver import Database

    database = Database(_RefusingConnection(number), "apsw", "kb/vectors.db")
    with pytest.raises(StorageError) as caught:
        database.execute("INSERT INTO items VALUES (1)")
    message = str(caught.value)
    assert "kb/vectors.db" in message and "full" in message and "free some space" in message
    assert words in message


def test_an_io_error_of_another_kind_stays_an_io_error():
    from trails.vector.stores.sqlite_vec.driver import Database

    database = Database(_RefusingConnection(5), "apsw", "kb/vectors.db")  # EIO
    with pytest.raises(StorageError, match="I/O error") as caught:
        database.execute("SELECT 1")
    assert "full" not in str(caught.value)


def _small_store(path: Path) -> None:
    with SqliteVecStore(path, dim=4) as store:
        store.add_many([f"id{i}" for i in range(40)], np.random.default_rng(1).random((40, 4)),
                       [{"text": f"word{i} lighthouse"} for i in range(40)])


def test_a_header_of_no_known_schema_format_is_a_damaged_store(tmp_path):
    """SQLite reads bytes 44-47 as the schema format (1-4): any other is a damaged file, not
    apsw's 'unsupported file format'."""
    path = tmp_path / "v.db"
    _small_store(path)
    data = bytearray(path.read_bytes())
    data[44:48] = (9).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    with pytest.raises(ContextDamagedError, match="corrupt") as caught, \
            SqliteVecStore(path, read_only=True) as store:
        store.search([1, 0, 0, 0], k=5)
    assert_not_raw(caught.value)


@pytest.mark.parametrize("damage", ["reversed", "negative", "short"])
def test_keyword_segment_rows_that_are_not_a_segment_are_a_damaged_store(tmp_path, damage):
    """A segment's rowids are stored ordered and non-negative, one per row: read otherwise
    they would index the wrong rows (numpy wraps a negative index) or fail inside numpy."""
    import apsw

    path = tmp_path / "v.db"
    _small_store(path)
    db = apsw.Connection(str(path))
    segment, blob = next(db.execute("SELECT segment, rowids FROM keyword_segments"))
    rowids = np.frombuffer(blob, dtype="<i8").copy()
    if damage == "reversed":
        rowids = rowids[::-1].copy()
    elif damage == "negative":
        rowids[0] = -5
    else:
        rowids = rowids[:-1]
    db.execute("UPDATE keyword_segments SET rowids = ? WHERE segment = ?",
               (rowids.astype("<i8").tobytes(), segment))
    db.close()
    with pytest.raises(ContextDamagedError, match="keyword index") as caught, \
            SqliteVecStore(path, read_only=True) as store:
        store.keyword_search("lighthouse", k=5)
    assert_not_raw(caught.value)
    assert str(path) in str(caught.value)


def test_a_full_disk_hint_names_no_operation_the_caller_did_not_run():
    """The same hint serves a fold, a deletion and a load: it said "an interrupted ingest
    finishes on the next run" to all of them."""
    from trails.faults import storage_fault

    error = storage_fault(OSError("IO error: No space left on device"), "kb/graph",
                          "folding the audit trail into")
    assert error is not None and "ingest" not in str(error)
    assert "free some space" in str(error) and "trails verify" in str(error)



def test_a_live_vector_slot_without_its_row_is_a_damaged_store(tmp_path, monkeypatch):
    # A damaged page of vectors.db can leave an index listing a live slot whose row the table
    # no longer gives back (found by the property above): the search met a bare KeyError.
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=4) as store:
        store.add_many([f"id{i}" for i in range(30)], np.random.default_rng(1).random((30, 4)),
                       [{"text": f"word{i}"} for i in range(30)])
    names = SqliteVecStore._names

    def lost_one(self, slots):
        return dict(list(names(self, slots).items())[1:])

    monkeypatch.setattr(SqliteVecStore, "_names", lost_one)
    with SqliteVecStore(path, read_only=True) as store, pytest.raises(ContextDamagedError,
                                                                       match="no row"):
        store.search([1, 0, 0, 0], k=5)
