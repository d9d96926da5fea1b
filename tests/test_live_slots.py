"""The live slots kept beside a store file (``<store>.live``, ADR 0053).

The contract: the file may save a new process the pass over every live row, never change what
it sees. After any sequence of writes, a file a reader would take holds exactly the slots and
rowids the rows say are live (read with SQL, the path the file replaces); a file of another
state, cut short, flipped or forged is refused, and the reader's answers equal those of a
reader that never had the file.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore, compaction, live_slots
from trails.vector.stores.sqlite_vec.live_slots import live_path, read_live, read_rows, stamp_of

DIM = 4


def vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)) + 0.01


def from_rows(path) -> tuple[list[int], list[int]]:
    """The live slots and rowids as SQL reads them, in a connection of its own."""
    with SqliteVecStore(path, read_only=True) as store, store.snapshot():
        slots, rowids = read_rows(store._db, store.path, store._index.slots,
                                  "WHERE i.pending = 0")
    order = np.argsort(slots)
    return slots[order].tolist(), rowids[order].tolist()


def from_file(path) -> tuple[list[int], list[int]] | None:
    """What a new reader would take from the file, or None when it would read the rows."""
    with SqliteVecStore(path, read_only=True) as store, store.snapshot():
        kept = read_live(store.path, stamp_of(store._meta), store._index.slots)
    return None if kept is None else (kept[0].tolist(), kept[1].tolist())


def answers(path, query: np.ndarray) -> list[tuple[str, float]]:
    with SqliteVecStore(path, read_only=True) as store:
        return [(h.id, h.score) for h in store.search(query, k=50)]


def rows_only(monkeypatch):
    """Readers opened inside the block never take the file."""
    monkeypatch.setattr(live_slots, "read_live", lambda *a, **k: None)
    from trails.vector.stores.sqlite_vec import core
    monkeypatch.setattr(core, "read_live", lambda *a, **k: None)


# One step of a writer: appends; versions staged (left pending) and published later; rows
# written again under their ids; deletes of a row or a document; a metadata patch; a new
# writer object (its index read from the file or the rows).
step = st.one_of(
    st.tuples(st.just("add"), st.integers(1, 12)),
    st.tuples(st.just("stage"), st.integers(1, 6)),
    st.tuples(st.just("publish"), st.integers(0, 40)),
    st.tuples(st.just("rewrite"), st.integers(0, 40)),
    st.tuples(st.just("delete"), st.integers(0, 40)),
    st.tuples(st.just("delete document"), st.integers(0, 40)),
    st.tuples(st.just("patch"), st.integers(0, 40)),
    st.tuples(st.just("reopen"), st.integers(0, 0)),
)


def generation(path) -> str:
    with SqliteVecStore(path, read_only=True) as store:
        return store._meta("vector_generation") or "0"


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_the_kept_file_holds_what_the_rows_say(tmp_path_factory, monkeypatch, steps):
    monkeypatch.setattr(compaction, "GARBAGE_FLOOR", 8)  # compactions happen here too
    path = tmp_path_factory.mktemp("live") / "v.db"
    store = SqliteVecStore(path, dim=DIM)
    ids: list[str] = []
    documents: list[str] = []
    staged: list[DocumentVersion] = []
    committed = expected = False
    for n, (kind, size) in enumerate(steps):
        before = generation(path)
        wrote = True
        if kind == "add":
            new = [f"r{n}-{i}" for i in range(size)]
            store.add_many(new, vectors(size, n), [{"doc_iri": f"d{n}", "text": "a b"}
                                                   for _ in new])
            ids += new
            documents.append(f"d{n}")
        elif kind == "stage":
            new = [f"s{n}-{i}" for i in range(size)]
            store.add_many(new, vectors(size, n), [{"doc_iri": f"doc{n}", "version": "1"}
                                                   for _ in new], pending=True)
            staged.append(DocumentVersion(f"doc{n}", "1", "default", "h", size))
        elif kind == "publish" and staged:
            store.publish([staged.pop(size % len(staged))])
        elif kind == "rewrite" and ids:
            again = ids[size % len(ids)]
            store.add_many([again], vectors(1, 100 + n), [{"doc_iri": "again"}])
        elif kind == "delete" and ids:
            store.delete(ids.pop(size % len(ids)))
        elif kind == "delete document" and documents:
            store.delete_document(documents.pop(size % len(documents)))
        elif kind == "patch" and documents:
            store.update_payload(documents[size % len(documents)], {"text": f"patched {n}"})
        elif kind == "reopen":
            store.close()
            store = SqliteVecStore(path)
            wrote = False
        else:
            wrote = False
        if wrote:  # a compaction removes the file; the next commit keeps one again
            expected = generation(path) == before
        committed = committed or wrote
        if committed:
            kept = from_file(path)
            assert kept is not None or not expected, "every commit but a compaction keeps it"
            assert kept in (None, from_rows(path))
    store.close()


def test_a_new_reader_takes_the_file_and_answers_as_from_the_rows(tmp_path, monkeypatch):
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=DIM) as store:
        store.add_many([f"a{i}" for i in range(30)], vectors(30, 1),
                       [{"doc_iri": f"d{i % 3}"} for i in range(30)])
        store.delete("a7")
    query = vectors(1, 9)[0]
    with monkeypatch.context() as patched:  # the rows are never read: the file answers
        patched.setattr(live_slots, "read_rows", _no_rows)
        from trails.vector.stores.sqlite_vec import core
        patched.setattr(core, "read_rows", _no_rows)
        taken = answers(path, query)
    with monkeypatch.context() as patched:
        rows_only(patched)
        assert answers(path, query) == taken
    assert "a7" not in [id for id, _ in taken] and len(taken) == 29


def _no_rows(*args, **kwargs):
    raise AssertionError("the live slots were read from the rows")


def _forge(path, runs: list[tuple[int, int, int]], **head) -> None:
    """A live file with a true checksum over ``runs`` and the head fields given."""
    body = np.asarray(runs, dtype="<i8").reshape(-1, 3).tobytes()
    raw = json.dumps({**head, "runs": len(runs), "crc": zlib.crc32(body)}).encode()
    with open(live_path(str(path)), "wb") as out:
        out.write(b"TRAILS-LIVE----1" + struct.pack("<I", len(raw)) + raw + body)


FORGED = {  # runs with a true checksum that keep_live never writes
    "overlapping": [(0, 10, 1), (5, 10, 11)], "past-the-slots": [(0, 16, 1)],
    "out of order": [(10, 5, 11), (0, 10, 1)], "an empty run": [(0, 0, 1), (0, 15, 1)],
    "a slot below 0": [(-1, 16, 1)], "rowid 0": [(0, 15, 0)],
}


@pytest.mark.parametrize("damage", ["stale", "flipped", "cut", "empty", "foreign", *FORGED])
def test_a_file_of_another_state_or_damaged_is_refused(tmp_path, damage):
    path = tmp_path / "v.db"
    store = SqliteVecStore(path, dim=DIM)
    store.add_many([f"a{i}" for i in range(10)], vectors(10, 1), [{} for _ in range(10)])
    old = Path(live_path(str(path))).read_bytes()
    store.add_many([f"b{i}" for i in range(5)], vectors(5, 2), [{} for _ in range(5)])
    store.close()
    with SqliteVecStore(path, read_only=True) as reader, reader.snapshot():
        now = stamp_of(reader._meta)
    data = Path(live_path(str(path))).read_bytes()
    if damage == "stale":  # the first commit's file back beside the second commit's rows
        data = old
    elif damage == "flipped":
        data = data[:-3] + bytes([data[-3] ^ 1]) + data[-2:]
    elif damage == "cut":
        data = data[:-5]
    elif damage == "empty":
        data = b""
    elif damage == "foreign":
        data = b"not a live file at all"
    if damage in FORGED:
        _forge(path, FORGED[damage], **now)
    else:
        Path(live_path(str(path))).write_bytes(data)
    assert from_file(path) is None
    if damage in FORGED:  # the same forgery with runs keep_live could write is taken
        _forge(path, [(0, 4, 1), (4, 11, 5)], **now)
        assert from_file(path) == (list(range(15)), list(range(1, 16)))
    expected = [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(5)]
    with SqliteVecStore(path, read_only=True) as reader:
        assert sorted(h.id for h in reader.search(vectors(1, 3)[0], k=50)) == sorted(expected)


def test_a_commit_that_fails_after_the_file_is_written_is_not_seen(tmp_path, monkeypatch):
    """The file is written before COMMIT; a commit that then fails leaves a file naming a
    revision that never committed, which no reader takes."""
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=DIM) as store:
        store.add_many(["a", "b"], vectors(2, 1), [{}, {}])
    real = live_slots.keep_live
    from trails.vector.stores.sqlite_vec import core

    def keep_then_fail(*args, **kwargs):
        real(*args, **kwargs)
        raise OSError("disk full at commit")

    store = SqliteVecStore(path)
    monkeypatch.setattr(core, "keep_live", keep_then_fail)
    with pytest.raises(OSError):  # a delete: the slot count stays, only the revision differs
        store.delete("a")
    monkeypatch.setattr(core, "keep_live", real)
    assert from_file(path) is None  # the file names the rolled-back revision
    with SqliteVecStore(path, read_only=True) as reader:
        assert sorted(h.id for h in reader.search(vectors(1, 3)[0], k=10)) == ["a", "b"]
    store.add_many(["e"], vectors(1, 4), [{}])  # the next commit keeps it again
    assert from_file(path) == from_rows(path) == ([0, 1, 2], [1, 2, 3])
    store.close()


def test_a_compaction_leaves_no_file_of_the_old_slots(tmp_path, monkeypatch):
    monkeypatch.setattr(compaction, "GARBAGE_FLOOR", 10)
    path = tmp_path / "v.db"
    store = SqliteVecStore(path, dim=DIM)
    ids = [f"a{i}" for i in range(20)]
    store.add_many(ids, vectors(20, 1), [{} for _ in ids])
    for round in range(3):  # rewrites make more garbage than rows: a compaction runs
        store.add_many(ids, vectors(20, 10 + round), [{} for _ in ids])
    assert os.path.exists(f"{path}.1.f32")  # compacted into the next generation
    assert from_file(path) in (None, from_rows(path))
    query = vectors(1, 5)[0]
    taken = answers(path, query)
    with monkeypatch.context() as patched:
        rows_only(patched)
        assert answers(path, query) == taken
    store.add_many(["z"], vectors(1, 6), [{}])  # a commit after it keeps the new slots
    assert from_file(path) == from_rows(path)
    store.close()


def test_rows_written_again_under_their_ids_many_times_keep_no_file(tmp_path):
    """Each id written again takes a new slot and keeps its rowid, breaking the runs; past
    an eighth of the live slots in runs, the file is not worth keeping."""
    path = tmp_path / "v.db"
    store = SqliteVecStore(path, dim=DIM)
    ids = [f"a{i}" for i in range(400)]
    store.add_many(ids, vectors(400, 1), [{} for _ in ids])
    assert from_file(path) is not None
    for n, id in enumerate(ids[::2]):  # every other row, one at a time
        store.add_many([id], vectors(1, 100 + n), [{}])
    assert not os.path.exists(live_path(str(path)))
    assert from_rows(path)[0] == sorted(from_rows(path)[0]) and len(from_rows(path)[0]) == 400
    store.close()


def test_a_folder_that_cannot_take_the_file_costs_no_commit(tmp_path, monkeypatch):
    path = tmp_path / "v.db"
    store = SqliteVecStore(path, dim=DIM)

    def refuse(*args, **kwargs):
        raise PermissionError("read-only folder")

    monkeypatch.setattr(live_slots, "open", refuse, raising=False)
    store.add_many(["a", "b"], vectors(2, 1), [{}, {}])  # commits all the same
    monkeypatch.undo()
    assert from_file(path) is None
    with SqliteVecStore(path, read_only=True) as reader:
        assert reader.count() == 2
    store.close()


def test_no_file_is_kept_for_a_state_the_index_does_not_hold(tmp_path):
    """In a compaction's transaction the index still reads the old files: a stamp naming
    other vector files, or another slot count, keeps no file."""
    path = tmp_path / "v.db"
    store = SqliteVecStore(path, dim=DIM)
    store.add_many(["a", "b"], vectors(2, 1), [{}, {}])
    with store.snapshot():
        stamp = stamp_of(store._meta)
    for other in ({"vector_file": "0" * 32}, {"slots": stamp["slots"] + 1}):
        live_slots.keep_live(store.path, {**stamp, **other}, store._files, store._index)
        assert not os.path.exists(live_path(store.path))
    live_slots.keep_live(store.path, stamp, store._files, store._index)
    assert from_file(path) == from_rows(path) == ([0, 1], [1, 2])
    store.close()
