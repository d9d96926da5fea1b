"""SqliteVecStore specifics that the backend-neutral contract suite does not cover."""

from __future__ import annotations

import contextlib
import sys

import numpy as np
import pytest

from trails.errors import ConfigurationError, MissingExtraError
from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore


def test_a_new_store_needs_its_dimension(tmp_path):
    with pytest.raises(ConfigurationError, match="dim"):
        SqliteVecStore(":memory:")
    with pytest.raises(ConfigurationError, match="dim"):
        SqliteVecStore(tmp_path / "v.db")


def test_read_only_needs_an_existing_file(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        SqliteVecStore(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(ConfigurationError):
        SqliteVecStore(":memory:", dim=3, read_only=True)


def test_a_write_racing_with_another_connections_commit_loses_nothing(tmp_path, monkeypatch):
    """Another process commits between our freshness check and our own transaction.

    The store must still load that commit: recording the post-commit data_version without
    reloading would hide the other connection's vector from every later search.
    """
    path = tmp_path / "v.db"
    ours, theirs = SqliteVecStore(path, dim=2), SqliteVecStore(path)
    begin = ours._db.transaction

    @contextlib.contextmanager
    def other_commits_first():
        theirs.add("theirs", [0.0, 1.0])
        with begin():
            yield

    monkeypatch.setattr(ours._db, "transaction", other_commits_first)
    ours.add("ours", [1.0, 0.0])
    monkeypatch.setattr(ours._db, "transaction", begin)
    assert ours.count() == 2
    assert [h.id for h in ours.search([0.0, 1.0], k=5)] == ["theirs", "ours"]
    ours.close()
    theirs.close()


def test_search_with_plan_reports_plan_and_candidates():
    store = SqliteVecStore(dim=4)
    rng = np.random.default_rng(0)
    ids = [f"c{i:03d}" for i in range(200)]
    store.add_many(ids, rng.standard_normal((200, 4)),
                   [{"doc_iri": f"d{i % 10}"} for i in range(200)])
    query = rng.standard_normal(4)
    hits, plan = store.search_with_plan(query, k=5)
    assert (plan.name, plan.candidates, plan.exhaustive) == ("full-scan", 200, True)
    hits, plan = store.search_with_plan(query, k=5, ids=["c007", "missing"])
    assert (plan.name, plan.candidates, plan.exhaustive) == ("gather", 1, True)
    assert [h.id for h in hits] == ["c007"]
    hits, plan = store.search_with_plan(query, k=5, ids=ids + [f"d{i}" for i in range(10)])
    assert (plan.name, plan.candidates, plan.exhaustive) == ("masked-scan", 200, True)
    assert hits == store.search(query, k=5)


def test_sqlite_vec_knn_agrees_with_the_exact_search():
    store = SqliteVecStore(dim=16)
    rng = np.random.default_rng(1)
    store.add_many([f"v{i}" for i in range(50)], rng.standard_normal((50, 16)))
    query = rng.standard_normal(16)
    exact = store.search(query, k=10)
    knn = store.knn_sqlite_vec(query, k=10)
    assert [i for i, _ in knn] == [h.id for h in exact]
    assert [s for _, s in knn] == pytest.approx([h.score for h in exact], abs=1e-5)


def test_context_manager_closes_the_connection(tmp_path):
    with SqliteVecStore(tmp_path / "v.db", dim=2) as store:
        store.add("a", [1.0, 0.0])
    with pytest.raises(Exception):  # noqa: B017 - any driver's "closed" error
        store.count()
    with SqliteVecStore(tmp_path / "v.db") as again:
        assert again.count() == 1


def test_a_snapshot_holds_one_state_for_every_kind_of_read(tmp_path):
    """Inside ``snapshot()`` another connection's commits are invisible to every read (the
    matrix, the keyword index, metadata, version records); after it, all show them."""
    path = tmp_path / "v.db"
    reader, writer = SqliteVecStore(path, dim=2), SqliteVecStore(path)
    writer.add_many(["d/v/1/c/0", "d/v/1/c/1"], [[1, 0], [0, 1]],
                    [{"doc_iri": "d", "version": "1", "text": "old tide"}] * 2, pending=True)
    writer.publish([DocumentVersion("d", "1", "default", "h1", 2)])

    def state() -> tuple:
        return (sorted(h.id for h in reader.search([1, 1], k=10)),
                sorted(h.id for h in reader.keyword_search("tide", k=10)),
                sorted(reader.metadata(["d/v/1/c/0", "d/v/2/c/0"])),
                reader.current_versions()["d"].version, reader.count(),
                reader.expand_ids(["d"]))

    with reader.snapshot():
        before = state()
        writer.add_many(["d/v/2/c/0"], [[1, 1]], [{"doc_iri": "d", "version": "2",
                                                   "text": "new tide"}], pending=True)
        writer.publish([DocumentVersion("d", "2", "default", "h2", 1)])
        with reader.snapshot():  # nested: the same state
            assert state() == before
        with pytest.raises(ConfigurationError, match="snapshot"):
            reader.add("x", [1, 0])  # a write would lose the snapshot
    assert before == (["d/v/1/c/0", "d/v/1/c/1"], ["d/v/1/c/0", "d/v/1/c/1"], ["d/v/1/c/0"],
                      "1", 2, ["d/v/1/c/0", "d/v/1/c/1"])
    assert state() == (["d/v/2/c/0"], ["d/v/2/c/0"], ["d/v/2/c/0"], "2", 1, ["d/v/2/c/0"])
    reader.add("x", [1, 0])  # outside it, writes work again
    reader.close()
    writer.close()


def test_a_store_of_the_current_schema_works_without_the_sqlite_vec_extension(tmp_path, monkeypatch):
    """Vectors live in the vector files (ADR 0014): making, filling, searching and reopening a
    store never loads sqlite-vec (ADR 0044); only what uses vec0 asks for it, by name."""
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # import sqlite_vec now fails
    with SqliteVecStore(tmp_path / "v.db", dim=3) as store:
        store.add_many(["a", "b"], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
                       [{"text": "alpha"}, {"text": "beta"}])
        assert [h.id for h in store.search([1.0, 0.1, 0.0], k=1)] == ["a"]
    with SqliteVecStore(tmp_path / "v.db", read_only=True) as store:
        assert [h.id for h in store.search([0.1, 1.0, 0.0], k=2)] == ["b", "a"]
        with pytest.raises(MissingExtraError, match="pip install"):
            store.knn_sqlite_vec([1.0, 0.0, 0.0], k=1)
