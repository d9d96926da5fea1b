"""SqliteVecStore's vector files (``<store>.f32``, ``<store>.keys``): damage is refused by name,
a committed slot never changes under a snapshot, a full disk commits nothing, hash collisions
never admit a row, an older store is upgraded, and a repeated candidate tuple is looked up
once. Kills and the model-based property test: tests/test_vector_file_crash.py."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from _cli import run_trails
from old_stores import make_old_store
from trails.context import Context
from trails.errors import ContextDamagedError, InvalidArgumentTypeError, StorageError
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder
from trails.vector.stores.sqlite_vec import (
    DocumentVersion,
    SqliteVecStore,
    compaction,
    schema,
    slot_index,
    vector_file,
)
from trails.vector.stores.sqlite_vec.driver import Database, open_database
from trails.vector.stores.sqlite_vec.keyword import Fts5Index
from trails.vector.stores.sqlite_vec.vector_file import HEADER, KEY_DTYPE

DIM = 8


def vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM))


def brute_force(rows: dict[str, np.ndarray], query: np.ndarray, k: int) -> list[str]:
    """The ids of the top ``k`` by float64 cosine, ties by id (independent of the store)."""
    q = query / np.linalg.norm(query)
    scored = [(-float(v @ q / np.linalg.norm(v)), id) for id, v in rows.items()]
    return [id for _, id in sorted(scored)[:k]]


@pytest.fixture
def built(tmp_path) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path / "v.db"
    data = vectors(60)
    rows = {f"c{i:02d}": data[i] for i in range(60)}
    with SqliteVecStore(path, dim=DIM) as store:
        store.add_many(list(rows), data, [{"doc_iri": f"d{i % 6}", "text": f"row {i}"}
                                          for i in range(60)])
    return path, rows


# -- the files on disk -------------------------------------------------------------------------

def test_vectors_live_in_the_files_not_in_sqlite(built):
    path, rows = built
    with SqliteVecStore(path) as store:
        tables = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master")}
        assert "vec_items" not in tables  # stored once: not also in a vec0 table
        assert store._meta("vector_slots") == "60"
    f32 = Path(f"{path}.f32")
    assert f32.stat().st_size == HEADER + 60 * 4 * DIM
    on_disk = np.frombuffer(f32.read_bytes()[HEADER:], dtype="<f4").reshape(60, DIM)
    for i, vector in enumerate(rows.values()):
        assert np.allclose(on_disk[i], vector / np.linalg.norm(vector), atol=1e-6)


def test_opening_and_searching_read_no_row_into_python(tmp_path, monkeypatch):
    """Open, a first search and a search over document IRIs read a handful of SQL rows,
    however many the store holds (the live slots come as one aggregate, names by hash)."""
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=DIM) as store:
        store.add_many([f"c{i}" for i in range(3000)], vectors(3000),
                       [{"doc_iri": f"d{i // 10}"} for i in range(3000)])
    fetched: list[int] = []
    real = Database.execute

    def counted(self, sql, params=()):
        rows = real(self, sql, params)
        fetched.append(len(rows))
        return rows

    monkeypatch.setattr(Database, "execute", counted)
    for read_only in (True, False):
        fetched.clear()
        with SqliteVecStore(path, read_only=read_only) as store:
            store.search(vectors(1, seed=1)[0], k=5)
            hits = store.search(vectors(1, seed=1)[0], k=5, ids=("d7", "d123", "c2999"))
        assert sum(fetched) < 40, fetched
        assert {h.id for h in hits} <= {f"c{i}" for i in [*range(70, 80), *range(1230, 1240), 2999]}


def test_a_store_opened_but_not_yet_read_tells_its_count(built):
    path, _ = built
    with SqliteVecStore(path, read_only=True) as store:
        assert "count=60" in repr(store)
    damage(path, "f32", "missing")
    with SqliteVecStore(path, read_only=True) as store:
        assert "damaged" in repr(store)


def damage(path: Path, kind: str, how: str) -> Path:
    target = Path(f"{path}.{kind}")
    data = target.read_bytes()
    if how == "truncated":
        target.write_bytes(data[: HEADER + (len(data) - HEADER) // 2])
    elif how == "header":
        target.write_bytes(b"\xff" * 16 + data[16:])
    elif how == "missing":
        target.unlink()
    elif how == "empty":
        target.write_bytes(b"")
    return target


@pytest.mark.parametrize("how", ["truncated", "header", "missing", "empty"])
@pytest.mark.parametrize("kind", ["f32", "keys"])
@pytest.mark.parametrize("read_only", [False, True])
def test_a_damaged_vector_file_is_a_damaged_store_naming_it(built, kind, how, read_only):
    path, _ = built
    target = damage(path, kind, how)
    with pytest.raises(ContextDamagedError) as caught, \
            SqliteVecStore(path, read_only=read_only) as store:
        store.search(np.ones(DIM), k=3)
    assert str(target) in str(caught.value)
    assert type(caught.value).__module__ == "trails.errors"


def test_a_changed_vector_is_caught_by_its_checksum(built):
    path, rows = built
    f32 = Path(f"{path}.f32")
    data = bytearray(f32.read_bytes())
    slot = 17
    start = HEADER + slot * 4 * DIM
    data[start : start + 4] = np.float32(0.5).tobytes()  # one component of one vector
    f32.write_bytes(bytes(data))
    with SqliteVecStore(path, read_only=True) as store:
        with pytest.raises(ContextDamagedError, match="checksum") as caught:
            store.search(rows["c17"], k=1)  # the damaged row is the best match
        assert str(f32) in str(caught.value)
        with pytest.raises(ContextDamagedError):
            store.get(["c17"])
        assert [r.id for r in store.get(["c03"])] == ["c03"]  # the others read fine


def test_a_store_file_beside_another_stores_vector_files_is_refused(tmp_path, built):
    path, _ = built
    other = tmp_path / "other.db"
    with SqliteVecStore(other, dim=DIM) as store:
        store.add_many(["x"], vectors(1, seed=5))
    os.replace(other, path)  # the store file alone, beside the first store's vector files
    with pytest.raises(ContextDamagedError, match="header") as caught, \
            SqliteVecStore(path) as store:
        store.search(np.ones(DIM), k=1)
    assert f"{path}.f32" in str(caught.value)


def test_the_command_line_exits_3_naming_a_truncated_vector_file(tmp_path):
    directory = tmp_path / "ctx"
    with Context.open(directory, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(id=f"d{i}", source=f"mem:d{i}",
                             text=f"Lighthouses guide ships past the rocks, number {i}.")
                    for i in range(3)], ctx=ctx)
    target = damage(directory / "vectors.db", "f32", "truncated")
    result = run_trails("--db", directory, "query", "ships")
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(target) in lines[0] and "truncated" in lines[0], lines


# -- append-only: a snapshot never sees a vector change ---------------------------------------

def test_a_snapshot_keeps_reading_the_vectors_it_saw_while_a_writer_replaces_them(built):
    path, rows = built
    reader, writer = SqliteVecStore(path, read_only=True), SqliteVecStore(path)
    f32 = Path(f"{path}.f32")
    before = f32.read_bytes()
    with reader.snapshot():
        seen = {r.id: r.vector for r in reader.get(list(rows))}
        first = reader.search(rows["c05"], k=5)
        fresh = vectors(60, seed=9)
        writer.add_many(list(rows), fresh)  # every id gets a new vector
        writer.delete_many(["c05"])
        assert {r.id: r.vector for r in reader.get(list(rows))} == seen
        assert reader.search(rows["c05"], k=5) == first
    assert f32.read_bytes()[: len(before)] == before  # appended after, nothing overwritten
    assert reader.get(["c05"]) == []
    assert [h.id for h in reader.search(fresh[7], k=1)] == ["c07"]
    reader.close()
    writer.close()


# -- a full disk --------------------------------------------------------------------------------

FSIZE_WRITE = r"""
import resource, signal, sys
import numpy as np
from trails.errors import StorageError
from trails.vector.stores.sqlite_vec import SqliteVecStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
store = SqliteVecStore(sys.argv[1])
limit, n = int(sys.argv[2]), int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    store.add_many([f"big{i}" for i in range(n)], np.ones((n, 8)) + np.eye(8)[np.arange(n) % 8])
except StorageError as error:
    print("StorageError", error)
"""


def test_a_full_disk_while_appending_is_a_storage_error_and_commits_nothing(built):
    path, rows = built
    f32 = Path(f"{path}.f32")
    size = max(os.path.getsize(p) for p in (path, f32, Path(f"{path}.keys")))
    # Enough rows that their vectors alone (32 bytes each) run past the limit.
    limit, n = size + 4096, (size + 4096) // 32 + 1000
    done = subprocess.run([sys.executable, "-c", FSIZE_WRITE, str(path), str(limit), str(n)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("StorageError"), done.stdout
    assert str(f32) in done.stdout and "full" in done.stdout
    with SqliteVecStore(path) as store:
        assert store.count() == 60 and not store.get(["big0", f"big{n - 1}"])
        assert [h.id for h in store.search(rows["c11"], k=1)] == ["c11"]
        store.add_many(["after"], vectors(1, seed=3))  # the garbage slots are reused
        assert store.count() == 61
        assert [h.id for h in store.search(vectors(1, seed=3)[0], k=1)] == ["after"]


def test_a_write_failing_after_its_append_leaves_the_index_with_the_file(built, monkeypatch):
    """The slots a failed transaction appended are garbage: invisible, and overwritten by the
    next write, whose rows the lookups then find (and the failed ones never)."""
    path, rows = built
    store = SqliteVecStore(path)
    assert len(store.search(rows["c00"], k=5, ids=("c00", "d1"))) == 5  # lookups built
    failing = vectors(20, seed=30)

    def fail(*args):
        raise StorageError("the disk is full (simulated)")

    with monkeypatch.context() as patched:
        patched.setattr(Fts5Index, "write", fail)
        with pytest.raises(StorageError):
            store.add_many([f"x{i}" for i in range(20)], failing,
                           [{"doc_iri": "dx"}] * 20)
    assert store.count() == 60 and store.search(failing[3], k=1)[0].id != "x3"
    assert store.search(failing[3], k=5, ids=("x3", "dx")) == []
    after = vectors(20, seed=31)
    store.add_many([f"y{i}" for i in range(20)], after, [{"doc_iri": "dy"}] * 20)
    assert store._meta("vector_slots") == "80"  # the garbage slots were written over
    assert [h.id for h in store.search(after[3], k=1, ids=("y3", "x3"))] == ["y3"]
    assert len(store.search(after[3], k=50, ids=("dy", "dx"))) == 20
    store.close()


# -- hashes only shortlist --------------------------------------------------------------------

def test_colliding_hashes_never_admit_a_row(monkeypatch, tmp_path):
    """With a hash of four values nearly every name collides with others: ids= searches must
    still rank exactly the rows named (chunk ids or document IRIs), as brute force does."""
    def weak(names):
        return np.fromiter(((zlib.crc32(n.encode()) & 3) + 1 if n is not None else 0
                            for n in names), dtype=np.uint64)

    monkeypatch.setattr(vector_file, "key_hashes", weak)
    monkeypatch.setattr(slot_index, "key_hashes", weak)
    data = vectors(40, seed=2)
    rows = {f"c{i:02d}": data[i] for i in range(40)}
    docs = {id: f"d{i % 5}" for i, id in enumerate(rows)}
    store = SqliteVecStore(tmp_path / "v.db", dim=DIM)
    store.add_many(list(rows), data, [{"doc_iri": docs[id]} for id in rows])
    rng = np.random.default_rng(4)
    for _ in range(30):
        query = rng.standard_normal(DIM)
        named = list(rng.choice(list(rows), 5, replace=False)) + ["d3", "unknown"]
        wanted = {id: v for id, v in rows.items() if id in named or docs[id] in named}
        hits = store.search(query, k=8, ids=tuple(named))
        assert [h.id for h in hits] == brute_force(wanted, query, 8)
        assert sorted(store.expand_ids(named)) == sorted(wanted)
    store.close()


def test_names_that_are_not_strings_are_refused_by_search_and_name_nothing_inside(built):
    """A caller's mistake is an error naming it, never a silent empty answer; the engine's
    own expansion of a filter's answer (expand_ids) skips what cannot name a row."""
    path, rows = built
    with SqliteVecStore(path, read_only=True) as store:
        for ids in ((1, None, b"c02", "c01", 2.5), [7]):
            with pytest.raises(InvalidArgumentTypeError, match="ids"):
                store.search(rows["c01"], k=5, ids=ids)
        assert store.expand_ids([1, b"c02", "c01", "d5"]) == ["c01", *[f"c{i:02d}" for i in
                                                                       range(5, 60, 6)]]


# -- upgrading a store whose vectors are in vec0 ------------------------------------------------

def test_a_schema_3_store_moves_its_vectors_out_of_vec0_once(tmp_path):
    data = vectors(30, seed=6)
    rows = [(f"c{i:02d}", data[i], {"doc_iri": f"d{i % 3}", "scope": "s" if i % 2 else None,
                                    "text": f"row {i} harbour"}) for i in range(30)]
    old = tmp_path / "old.db"
    make_old_store(old, DIM, 3, rows)
    fresh = SqliteVecStore(tmp_path / "fresh.db", dim=DIM)
    fresh.add_many([r[0] for r in rows], data, [r[2] for r in rows])
    store = SqliteVecStore(old)
    assert store._meta("schema") == str(len(schema.MIGRATIONS)) == "7"
    assert "vec_items" not in {r[0] for r in store._db.execute("SELECT name FROM sqlite_master")}
    rng = np.random.default_rng(1)
    for _ in range(10):
        query = rng.standard_normal(DIM)
        for kwargs in ({}, {"scopes": ["s"]}, {"ids": ["d1", "c04"]}):
            assert store.search(query, k=7, **kwargs) == fresh.search(query, k=7, **kwargs)
    assert store.keyword_search("harbour", k=30) == fresh.keyword_search("harbour", k=30)
    store.close()
    with SqliteVecStore(old, read_only=True) as again:
        assert again.search(data[4], k=3) == fresh.search(data[4], k=3)
    fresh.close()


def test_a_new_store_file_has_8_kib_pages_and_an_older_one_keeps_its_own(tmp_path):
    """A row holds a chunk's text (~1 KB): 4 KiB pages leave a fifth of each page empty."""
    with SqliteVecStore(tmp_path / "new.db", dim=DIM) as store:
        store.add_many(["a"], vectors(1), [{"doc_iri": "d", "text": "harbour " * 120}])
    page = open_database(str(tmp_path / "new.db")).execute("PRAGMA page_size")[0][0]
    assert page == 8192
    data = vectors(4, seed=2)
    rows = [(f"c{i}", data[i], {"doc_iri": "d", "text": f"row {i} harbour"}) for i in range(4)]
    make_old_store(tmp_path / "old.db", DIM, 3, rows)  # SQLite's default page, 4 KiB
    with SqliteVecStore(tmp_path / "old.db") as old:
        old.add_many(["c9"], vectors(1, seed=3), [{"doc_iri": "e", "text": "more harbour"}])
        assert old._db.execute("PRAGMA page_size")[0][0] == 4096
        assert [h.id for h in old.keyword_search("harbour", k=9)] == ["c9", "c0", "c1", "c2",
                                                                      "c3"]


# -- the memo of candidate tuples ---------------------------------------------------------------

def test_the_same_ids_tuple_is_looked_up_once_per_state_and_scopes(built, monkeypatch):
    path, rows = built
    store = SqliteVecStore(path)
    calls: list[int] = []
    real = slot_index.SlotIndex.rows_for

    def counted(self, names, scopes=None):
        calls.append(len(names))
        return real(self, names, scopes)

    monkeypatch.setattr(slot_index.SlotIndex, "rows_for", counted)
    chosen = tuple(list(rows)[:20]) + ("d5",)
    query = vectors(1, seed=8)[0]
    first = store.search(query, k=5, ids=chosen)
    assert store.search(query, k=5, ids=chosen) == first
    store.keyword_search("row", k=5, ids=chosen)  # a hybrid query's second ranking
    assert len(calls) == 1
    store.search(query, k=5, ids=chosen, scopes=["default"])  # other scopes: another entry
    assert len(calls) == 2
    store.search(query, k=5, ids=list(chosen))  # a list can change: never remembered
    store.search(query, k=5, ids=list(chosen))
    assert len(calls) == 4
    store.delete_many(["c00"])  # a new state: looked up again, and right
    hits = store.search(query, k=60, ids=chosen)
    assert len(calls) == 5
    assert "c00" not in {h.id for h in hits}
    assert {h.id for h in hits} == {id for id in chosen[:20] if id != "c00"} | {
        f"c{i:02d}" for i in range(60) if i % 6 == 5}
    for n in range(6):  # only a few are kept
        store.search(query, k=1, ids=tuple(list(rows)[n : n + 3]))
    store.search(query, k=5, ids=chosen)
    assert len(calls) == 12
    store.close()


def test_keys_record_the_scope_and_document_of_every_slot(built):
    path, _ = built
    keys = np.frombuffer(Path(f"{path}.keys").read_bytes()[HEADER:], dtype=KEY_DTYPE)
    assert len(keys) == 60
    assert len(set(keys["id"].tolist())) == 60
    assert len(set(keys["doc"].tolist())) == 6
    with SqliteVecStore(path) as store:
        store.add_many(["p"], vectors(1, seed=7), [{"doc_iri": "dp", "version": "2"}],
                       pending=True)
        assert store.search(vectors(1, seed=7)[0], k=1)[0].id != "p"  # staged: invisible
        store.publish([DocumentVersion("dp", "2", "default", "h", 1)])
        assert store.search(vectors(1, seed=7)[0], k=1)[0].id == "p"


# -- compaction ---------------------------------------------------------------------------------

def generation_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir()
                  if p.name.endswith((".f32", ".keys")) and p.name.startswith(path.name))


def test_garbage_is_compacted_into_the_next_generation_and_the_old_files_go(built, monkeypatch):
    path, rows = built
    monkeypatch.setattr(compaction, "GARBAGE_FLOOR", 10)
    store = SqliteVecStore(path)
    reader = SqliteVecStore(path, read_only=True)
    store.add_many(["staged"], vectors(1, seed=40), [{"doc_iri": "ds", "version": "2"}],
                   pending=True)
    current = dict(rows)
    with reader.snapshot():
        before = reader.search(rows["c09"], k=60)
        for round in range(2):  # 120 replaced slots: more garbage than the 61 rows
            fresh = vectors(60, seed=100 + round)
            store.add_many(list(rows), fresh, [{"doc_iri": f"d{i % 6}"} for i in range(60)])
            current = dict(zip(rows, fresh))
        assert generation_files(path) == ["v.db.1.f32", "v.db.1.keys"]
        assert reader.search(rows["c09"], k=60) == before  # its snapshot reads the old map
    assert store._meta("vector_slots") == "61"  # the rows, staged one included
    assert Path(f"{path}.1.f32").stat().st_size == HEADER + 61 * 4 * DIM
    query = vectors(1, seed=41)[0]
    for view in (store, reader):
        assert [h.id for h in view.search(query, k=10)] == brute_force(current, query, 10)
        hits = view.search(query, k=10, ids=("d2", "c01"))
        assert [h.id for h in hits] == brute_force(
            {id: v for id, v in current.items() if id == "c01" or int(id[1:]) % 6 == 2}, query, 10)
    store.publish([DocumentVersion("ds", "2", "default", "h", 1)])  # the staged row survived
    assert [h.id for h in reader.search(vectors(1, seed=40)[0], k=1)] == ["staged"]
    reader.close()
    store.close()
    with SqliteVecStore(path, read_only=True) as again:
        assert again.count() == 61


def test_a_compaction_deletes_generations_that_killed_writers_left_behind(built, monkeypatch):
    """A writer killed just after a switch leaves the old files; one killed before its switch
    leaves a next generation nobody committed. The next compaction deletes both kinds, so
    however the kills fall at most one generation beside the live one is ever on disk."""
    path, rows = built
    monkeypatch.setattr(compaction, "GARBAGE_FLOOR", 10)
    store = SqliteVecStore(path)
    store.add_many(list(rows), vectors(60, seed=7))
    store.add_many(list(rows), vectors(60, seed=8))  # compacted: generation 1 is live
    assert generation_files(path) == ["v.db.1.f32", "v.db.1.keys"]
    for stale in ("v.db.f32", "v.db.keys", "v.db.2.f32", "v.db.2.keys", "v.db.7.f32"):
        (path.parent / stale).write_bytes(b"left by a killed writer")
    store.add_many(list(rows), vectors(60, seed=9))
    store.add_many(list(rows), vectors(60, seed=10))  # compacted again: generation 2
    assert generation_files(path) == ["v.db.2.f32", "v.db.2.keys"]
    query = vectors(1, seed=11)[0]
    assert [h.id for h in store.search(query, k=5)] == brute_force(
        dict(zip(rows, vectors(60, seed=10))), query, 5)
    store.close()


def test_a_reader_whose_snapshot_names_deleted_files_reads_again(built, monkeypatch):
    path, rows = built
    monkeypatch.setattr(compaction, "GARBAGE_FLOOR", 10)
    writer = SqliteVecStore(path)
    writer.add_many(list(rows), vectors(60, seed=7))  # garbage: 60 of 120 slots
    reader = SqliteVecStore(path, read_only=True)
    real = vector_file.VectorFiles.attach
    compacted = []

    def attach(self, file_id, slots):
        if not compacted:  # the reader's snapshot is pinned: now the writer compacts
            writer.add_many(list(rows), vectors(60, seed=8))
            compacted.append(generation_files(path))
        return real(self, file_id, slots)

    monkeypatch.setattr(vector_file.VectorFiles, "attach", attach)
    hits = reader.search(vectors(60, seed=8)[5], k=1)
    assert compacted == [["v.db.1.f32", "v.db.1.keys"]]
    assert [h.id for h in hits] == ["c05"]  # the fresh snapshot: after the compaction
    reader.close()
    writer.close()
