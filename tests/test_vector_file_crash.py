"""Kills and random histories against SqliteVecStore's vector files.

- A writer process (forked from a pre-imported parent: tests/killing.py) is killed (SIGKILL)
  at random moments, and at chosen ones: halfway through writing the slots, after the slots
  are flushed but before the transaction commits, and with the rows written but not committed.
  After each kill the store opens (read-only and writable) with every committed row's vector
  intact and no uncommitted row visible, and the next writer appends over the garbage the
  kill left.
- A property test: random sequences of add / stage / publish / delete / reopen keep every
  search (no filter, ``ids=`` with chunk ids and document IRIs, scopes) equal to brute force
  over a plain Python model.
"""

from __future__ import annotations

import random
import signal
import time
import zlib
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import killing
from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore

DIM = 8

WRITER = r"""
import os, signal, sys, zlib
import numpy as np
from trails.vector.stores.sqlite_vec import SqliteVecStore, vector_file
from trails.vector.stores.sqlite_vec.keyword import Fts5Index

path, start, moment = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def vector(name):
    return np.random.default_rng(zlib.crc32(name.encode())).standard_normal(8)

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if moment != "random":
    append, write = vector_file.VectorFiles.append, Fts5Index.write
    def dying_append(self, first, unit, keys):
        if moment == "mid-append":  # half the slots on disk, then gone
            append(self, first, unit[: len(unit) // 2], keys[: len(keys) // 2])
            die()
        append(self, first, unit, keys)
        if moment == "before-commit":  # the slots flushed, no row names them yet
            die()
    def dying_write(self, rowids, texts, pending):
        write(self, rowids, texts, pending)
        if moment == "mid-commit":  # the rows written, the transaction not committed
            die()
    vector_file.VectorFiles.append = dying_append
    Fts5Index.write = dying_write

store = SqliteVecStore(path, dim=8)
print("ready", flush=True)
for n in range(start, start + 100000):
    ids = [f"b{n}-{i}" for i in range(20)]
    store.add_many(ids, [vector(i) for i in ids], [{"doc_iri": f"d{n}", "text": f"batch {n}"}] * 20)
    print(f"added {n}", flush=True)
    if n % 3 == 2:
        store.delete_many([f"b{n - 1}-{i}" for i in range(0, 20, 2)])
        print(f"deleted {n - 1}", flush=True)
"""


def vector(name: str) -> np.ndarray:
    return np.random.default_rng(zlib.crc32(name.encode())).standard_normal(DIM)


def run_writer(path: Path, start: int, moment: str, kill_after: float) -> list[str]:
    """Start a writer at batch ``start``; kill it after ``kill_after`` s (random moments) or
    let it kill itself; the lines it printed (each one a committed step)."""
    worker = killing.start(WRITER, [path, start, moment])
    assert worker.stdout.readline().strip() == "ready"
    if moment == "random":
        time.sleep(kill_after)
        worker.kill()
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == -signal.SIGKILL, err
    return out.split()


def apply(lines: list[str], model: set[str]) -> int:
    """Apply the committed steps to the model of live ids; the next batch number."""
    last = -1
    for step, n in zip(lines[::2], map(int, lines[1::2])):
        if step == "added":
            model.update(f"b{n}-{i}" for i in range(20))
            last = n
        else:
            model.difference_update(f"b{n}-{i}" for i in range(0, 20, 2))
    return last + 1


def check(path: Path, model: set[str], in_flight: list[set[str]]) -> set[str]:
    """The store shows ``model`` (or ``model`` with the step in flight done, when it committed
    before the kill, which printing it could not tell), every vector intact; its live ids."""
    for read_only in (True, False):
        with SqliteVecStore(path, read_only=read_only) as store:
            live = set(store.all_ids())
            assert live in [model, *in_flight], (len(live), len(model))
            assert store.count() == len(live)
            stored = store.get(sorted(live))
            for row in stored:
                expected = vector(row.id)
                assert np.allclose(row.vector, expected / np.linalg.norm(expected), atol=1e-6)
            for id in random.Random(len(live)).sample(sorted(live), min(25, len(live))):
                hit = store.search(vector(id), k=1)[0]
                assert hit.id == id and abs(hit.score - 1.0) < 1e-6
    return live


def in_flight_steps(model: set[str], start: int) -> list[set[str]]:
    """The states one more step (the one the kill interrupted) can leave."""
    added = model | {f"b{start}-{i}" for i in range(20)}
    if (start - 1) % 3 != 2:  # the writer deletes after adding batches 2, 5, 8, ...
        return [added]
    return [added, model - {f"b{start - 2}-{i}" for i in range(0, 20, 2)}]


def test_killed_writers_leave_every_committed_vector_and_nothing_else(tmp_path):
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=DIM):
        pass
    model: set[str] = set()
    start = 0
    rng = random.Random(20261123)
    # Each chosen moment twice (the second writer appends over the first one's garbage), then
    # random moments: the chosen ones are where a torn write can happen; the random ones catch
    # what they miss.
    moments = ["mid-append", "before-commit", "mid-commit"] * 2 + ["random"] * 10
    for moment in moments:
        lines = run_writer(path, start, moment, rng.uniform(0.0, 0.6))
        start = max(start, apply(lines, model))
        if moment == "random":
            live = check(path, model, in_flight_steps(model, start))
            if live != model:  # the interrupted step had committed
                start = max(start, start + (len(live) > len(model)))
                model = live
        else:  # killed inside its first add, before the commit: nothing of it is visible
            assert lines == []
            check(path, model, [])
    f32 = Path(f"{path}.f32")
    assert f32.stat().st_size >= 32 * len(model)


COMPACTING_WRITER = r"""
import os, signal, sys, zlib
import numpy as np
from trails.vector.stores.sqlite_vec import SqliteVecStore, compaction, core, vector_file

path, moment = sys.argv[1], sys.argv[2]
compaction.GARBAGE_FLOOR = 30

def vector(name):
    return np.random.default_rng(zlib.crc32(name.encode())).standard_normal(8)

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if moment == "before-switch":  # the next generation written and flushed, not committed
    compact = core.compact
    def dying_compact(*args):
        compact(*args)
        die()
    core.compact = dying_compact
elif moment == "after-switch":  # committed, the old generation not yet deleted
    vector_file.VectorFiles.remove = lambda self: die()

store = SqliteVecStore(path, dim=8)
print("ready", flush=True)
for n in range(100000):  # the same four batches again and again: garbage, then compactions
    ids = [f"r{n % 4}-{i}" for i in range(20)]
    store.add_many(ids, [vector(i) for i in ids])
    print(f"added {n % 4}", flush=True)
"""


def test_killed_compactions_leave_every_committed_vector(tmp_path):
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=DIM):
        pass
    model: set[str] = set()
    rng = random.Random(7)
    for moment in ["before-switch", "after-switch", "random", "random", "before-switch",
                   "random", "after-switch", "random", "random", "random"]:
        worker = killing.start(COMPACTING_WRITER, [path, moment])
        assert worker.stdout.readline().strip() == "ready"
        if moment == "random":
            time.sleep(rng.uniform(0.2, 1.0))
            worker.kill()
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == -signal.SIGKILL, err
        for batch in out.split()[1::2]:
            model.update(f"r{batch}-{i}" for i in range(20))
        possible = [model | {f"r{b}-{i}" for i in range(20)} for b in range(4)]
        live = check(path, model, possible)
        model = live
        generations = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".f32")
        assert len(generations) <= 2, generations  # at most one generation left behind
    assert len(model) == 80
    assert not Path(f"{path}.f32").exists()  # compacted at least once


# -- random histories against a model ----------------------------------------------------------

DOCS, CHUNKS, VERSIONS, SCOPES = ["d0", "d1", "d2"], 3, ["v1", "v2"], ["default", "s1"]
operation = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(DOCS), st.integers(0, CHUNKS - 1),
              st.sampled_from(VERSIONS), st.sampled_from(SCOPES), st.booleans(),
              st.integers(0, 2**32 - 1)),
    st.tuples(st.just("publish"), st.sampled_from(DOCS), st.sampled_from(VERSIONS)),
    st.tuples(st.just("delete"), st.sampled_from(DOCS), st.integers(0, CHUNKS - 1),
              st.sampled_from(VERSIONS)),
    st.tuples(st.just("reopen")),
)


def expected(model: dict, query: np.ndarray, k: int, ids: set[str] | None,
             scopes: list[str] | None) -> list[str]:
    q = query / np.linalg.norm(query)
    scored = []
    for id, (vector, doc, scope, _version, pending) in model.items():
        if pending or (scopes is not None and scope not in scopes):
            continue
        if ids is not None and id not in ids and doc not in ids:
            continue
        scored.append((-float(vector @ q / np.linalg.norm(vector)), id))
    return [id for _, id in sorted(scored)[:k]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(operation, min_size=1, max_size=25), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_random_histories_search_like_brute_force(tmp_path, history, seed, data):
    path = tmp_path / f"p{seed}-{len(history)}.db"
    for suffix in ("", ".f32", ".keys", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    store = SqliteVecStore(path, dim=DIM)
    model: dict[str, tuple[np.ndarray, str, str, str, bool]] = {}
    rng = np.random.default_rng(seed)
    try:
        for step in history:
            if step[0] == "add":
                _, doc, chunk, version, scope, pending, vseed = step
                id = f"{doc}/{version}/c{chunk}"
                v = np.random.default_rng(vseed).standard_normal(DIM)
                store.add_many([id], [v], [{"doc_iri": doc, "version": version, "scope": scope}],
                               pending=pending)
                model[id] = (v, doc, scope, version, pending)
            elif step[0] == "publish":
                _, doc, version = step
                store.publish([DocumentVersion(doc, version, "default", "h", 1)])
                for id in [i for i, r in model.items() if r[1] == doc and r[3] != version]:
                    del model[id]
                for id, r in list(model.items()):
                    if r[1] == doc:
                        model[id] = (*r[:4], False)
            elif step[0] == "delete":
                _, doc, chunk, version = step
                store.delete_many([f"{doc}/{version}/c{chunk}"])
                model.pop(f"{doc}/{version}/c{chunk}", None)
            else:
                store.close()
                store = SqliteVecStore(path)
            query = rng.standard_normal(DIM)
            everything = sorted(model) + DOCS + ["nothing"]
            named = data.draw(st.lists(st.sampled_from(everything), max_size=6))
            scopes = data.draw(st.sampled_from([None, ["s1"], ["default", "s1"]]))
            for ids in (None, tuple(named), named):
                want = expected(model, query, 4, None if ids is None else set(ids), scopes)
                hits = store.search(query, k=4, ids=ids, scopes=scopes)
                assert [h.id for h in hits] == want
            assert store.count() == sum(not r[4] for r in model.values())
            with SqliteVecStore(path, read_only=True) as reader:  # another process's view
                assert [h.id for h in reader.search(query, k=4)] == expected(
                    model, query, 4, None, None)
    finally:
        store.close()
