"""SqliteVecStore specifics that the backend-neutral contract suite does not cover."""

from __future__ import annotations

import contextlib
import json
import sys

import numpy as np
import pytest

from trails.errors import ConfigurationError, InvalidArgumentError, MissingExtraError
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


PATCHES = [  # a metadata-only update that changes what a keyword or scoped search finds
    {"text": "dune eagle"},  # the keyword text itself
    {"text": None},  # text removed: the snippet is ranked instead
    {"snippet": "fjord fjord", "text": None},
    {"scope": "secret"},  # the row moves to another scope
    {"scope": "secret", "text": "eagle", "topic": 3},
    {"topic": 3},  # nothing keyword search reads
]


def assert_same_searches(patched, fresh) -> None:
    """Keyword, vector and metadata searches of the PATCHES rows answer alike on both stores."""
    for scopes in (None, ["public"], ["secret"]):
        for words in ("apple", "boat", "camel", "dune", "eagle", "fjord", "apple eagle"):
            assert ([(h.id, h.score, h.metadata) for h in
                     patched.keyword_search(words, k=10, scopes=scopes)]
                    == [(h.id, h.score, h.metadata) for h in
                        fresh.keyword_search(words, k=10, scopes=scopes)]), (words, scopes)
        assert ([(h.id, h.score) for h in patched.search([1, 1], k=10, scopes=scopes)]
                == [(h.id, h.score) for h in fresh.search([1, 1], k=10, scopes=scopes)])
    assert patched.find({"topic": 3}, limit=5) == fresh.find({"topic": 3}, limit=5)


@pytest.mark.parametrize("pending", [False, True])
@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: json.dumps(p))
def test_update_payload_reindexes_what_keyword_and_scoped_searches_read(tmp_path, patch, pending):
    """After ``update_payload`` every search answers as on a store that was given the patched
    metadata in the first place (the same hits, scores and scopes, keyword text included), and
    staged rows stay staged until they are published."""
    before = {"a": {"doc_iri": "d1", "scope": "public", "text": "apple boat", "snippet": "camel"},
              "b": {"doc_iri": "d1", "scope": "public", "text": "apple", "snippet": "dune"},
              "c": {"doc_iri": "d2", "scope": "public", "text": "apple eagle", "snippet": "x"}}
    before = {i: {**m, "version": "v1"} for i, m in before.items()}
    after = {i: {k: v for k, v in ({**m, **patch} if m["doc_iri"] == "d1" else m).items()
                 if v is not None} for i, m in before.items()}
    vectors = np.eye(3)[:, :2] + 0.5
    with SqliteVecStore(tmp_path / "p.db", dim=2) as patched, \
            SqliteVecStore(tmp_path / "f.db", dim=2) as fresh:
        for store, rows in ((patched, before), (fresh, after)):
            store.add_many(list(rows), vectors, list(rows.values()), pending=pending)
            if store is patched:
                assert patched.update_payload("d1", patch) == 2
            if pending:
                store.publish([DocumentVersion("d1", "v1", "public", "h1", 2),
                               DocumentVersion("d2", "v1", "public", "h2", 1)])
        assert_same_searches(patched, fresh)


def test_update_payload_refuses_to_change_which_document_a_row_is(tmp_path):
    with SqliteVecStore(tmp_path / "v.db", dim=2) as store:
        store.add_many(["a"], [[1.0, 0.0]], [{"doc_iri": "d1", "version": "v1", "text": "x"}])
        for field in ("doc_iri", "version"):
            with pytest.raises(InvalidArgumentError, match=field):
                store.update_payload("d1", {field: "other"})
        assert store.metadata(["a"])["a"]["doc_iri"] == "d1"
