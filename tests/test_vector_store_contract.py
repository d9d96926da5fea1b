"""The VectorStore contract, run against every backend in tests/stores.py.

Expected scores come from an independent reference: exactly rounded float64 dot products
(``math.fsum``) of the vectors the test itself built or the store returned.
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.errors import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidVectorError,
    TrailsError,
)
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.base import (
    BackReferences,
    BaseVectorStore,
    KeywordIndex,
    KeywordWeights,
    VectorHit,
    VectorStore,
    VersionedStore,
)
from trails.vector.stores.records import DocumentIris, DocumentVersion

DIM = 8


def cosine(a, b) -> float:
    a, b = [float(x) for x in a], [float(x) for x in b]
    dot = math.fsum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def basis(i: int, dim: int = DIM) -> list[float]:
    v = [0.0] * dim
    v[i] = 1.0
    return v


def random_vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim))


def ids_of(hits) -> list[str]:
    return [h.id for h in hits]


def filled(factory, n: int = 20, seed: int = 0):
    """A store with ``n`` random vectors ``v00..``; returns (store, {id: input vector})."""
    store = factory.new(DIM)
    vectors = random_vectors(n, seed)
    ids = [f"v{i:02d}" for i in range(n)]
    store.add_many(ids, vectors, [{"n": i} for i in range(n)])
    return store, dict(zip(ids, vectors))


def brute_force(store, query, k: int, ids=None) -> list[tuple[str, float]]:
    """Top-k by cosine over the store's own stored vectors, ties by id."""
    stored = store.get(ids if ids is not None else [f"v{i:02d}" for i in range(store.count())])
    scored = sorted(((s.id, cosine(s.vector, query)) for s in stored), key=lambda p: (-p[1], p[0]))
    return scored[:k]


# -- shape of the API --------------------------------------------------------------------


def test_store_satisfies_the_protocol_and_reports_dim(store_factory):
    store = store_factory.new(DIM)
    assert isinstance(store, VectorStore)
    assert store.dim == DIM
    assert store.count() == 0
    assert store.search(basis(0), k=5) == []


def test_store_declares_its_capabilities(store_factory):
    """Every backend has versioned commits and a keyword index; SqliteVecStore and
    PgVectorStore weigh a query (QdrantStore's BM25 statistics are its own)."""
    store = store_factory.new(DIM)
    assert isinstance(store, VersionedStore) and isinstance(store, KeywordIndex)
    assert isinstance(store, KeywordWeights) is store_factory.name.startswith(
        ("sqlite-vec", "pgvector"))


def test_add_then_get_returns_the_unit_vector_and_metadata(store_factory):
    store = store_factory.new(3)
    store.add("a", [3.0, 4.0, 0.0], {"doc_iri": "d", "snippet": "hello", "n": 2})
    assert store.count() == 1
    (got,) = store.get(["a"])
    assert got.id == "a"
    assert got.vector == pytest.approx([0.6, 0.8, 0.0], abs=1e-7)
    assert got.metadata == {"doc_iri": "d", "snippet": "hello", "n": 2}


def test_add_without_metadata_stores_empty_metadata(store_factory):
    store = store_factory.new(DIM)
    store.add("a", basis(1))
    (hit,) = store.search(basis(1), k=1)
    assert hit == VectorHit("a", pytest.approx(1.0, abs=1e-12), {})


def test_add_upserts_vector_and_metadata(store_factory):
    store = store_factory.new(DIM)
    store.add("a", basis(0), {"version": 1})
    store.add("b", basis(2), {"version": 1})
    store.add("a", basis(1), {"version": 2})
    assert store.count() == 2
    (got,) = store.get(["a"])
    assert got.vector == pytest.approx(basis(1))
    assert got.metadata == {"version": 2}
    assert ids_of(store.search(basis(1), k=1)) == ["a"]
    assert store.search(basis(0), k=3)[0].score == pytest.approx(0.0, abs=1e-12)


def test_upsert_moves_a_chunk_to_its_new_document(store_factory):
    store = store_factory.new(DIM)
    store.add("c1", basis(0), {"doc_iri": "doc:1"})
    store.add("c1", basis(0), {"doc_iri": "doc:2"})
    assert store.search(basis(0), k=5, ids=["doc:1"]) == []
    assert ids_of(store.search(basis(0), k=5, ids=["doc:2"])) == ["c1"]
    assert store.delete_where({"doc_iri": "doc:1"}) == 0
    assert store.count() == 1


def test_add_many_lengths_must_agree(store_factory):
    store = store_factory.new(DIM)
    with pytest.raises(ValueError, match="metadata"):
        store.add_many(["a", "b"], [basis(0), basis(1)], [{}])
    with pytest.raises(ValueError, match="vectors"):
        store.add_many(["a", "b"], [basis(0)])
    with pytest.raises(ValueError, match="unique"):
        store.add_many(["a", "a"], [basis(0), basis(1)])
    assert store.count() == 0


BAD_VECTORS = [
    pytest.param([float("nan")] + [1.0] * (DIM - 1), InvalidVectorError, id="nan"),
    pytest.param([float("inf")] + [1.0] * (DIM - 1), InvalidVectorError, id="inf"),
    pytest.param([-float("inf")] + [0.0] * (DIM - 1), InvalidVectorError, id="-inf"),
    pytest.param([0.0] * DIM, InvalidVectorError, id="zero"),
    # An int no float holds raised an OverflowError, no TrailsError.
    pytest.param([10**400] + [1.0] * (DIM - 1), InvalidVectorError, id="int-beyond-float"),
    pytest.param([1.0] * (DIM + 1), DimensionMismatchError, id="too-long"),
    pytest.param([1.0] * (DIM - 1), DimensionMismatchError, id="too-short"),
]


@pytest.mark.parametrize("bad, error", BAD_VECTORS)
def test_add_many_with_one_bad_vector_stores_nothing(store_factory, bad, error):
    store = store_factory.new(DIM)
    store.add_many(["old1", "old2"], [basis(0), basis(1)], [{"v": 1}, {"v": 1}])
    good = random_vectors(3, seed=1)
    with pytest.raises(error):
        store.add_many(
            ["new1", "old1", "new2", "new3"],
            [good[0], basis(5), bad, good[2]],
            [{"v": 2}] * 4,
        )
    assert store.count() == 2
    assert store.get(["new1", "new2", "new3"]) == []
    old1, old2 = store.get(["old1", "old2"])
    assert old1.vector == pytest.approx(basis(0)) and old1.metadata == {"v": 1}
    assert old2.vector == pytest.approx(basis(1)) and old2.metadata == {"v": 1}
    assert ids_of(store.search(basis(0), k=5)) == ["old1", "old2"]


@pytest.mark.parametrize("bad", [[float("nan")] + [1.0] * (DIM - 1), [0.0] * DIM,
                                 [10**400] + [1.0] * (DIM - 1)])
def test_a_bad_query_vector_is_refused_as_a_search_not_a_write(store_factory, bad):
    # A query vector that is all zeros or holds NaN (an embedder's failure, say) was refused
    # with "nothing was stored", though nothing was being stored.
    store = store_factory.new(DIM)
    store.add("a", basis(0))
    with pytest.raises(InvalidVectorError, match="the search was not run") as refused:
        store.search(bad, k=1)
    assert "stored" not in str(refused.value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), [1, -float("inf")],
                                 {"deep": {"x": float("nan")}}])
def test_metadata_json_cannot_hold_is_refused_and_nothing_is_stored(store_factory, bad):
    """A NaN or an infinity in metadata has no JSON form (and would never match ``find``):
    every store refuses it by the row's id, as pgvector must, and keeps what it held."""
    store = store_factory.new(DIM)
    store.add_many(["old1", "old2"], [basis(0), basis(1)], [{"v": 1, "doc_iri": "d"}, {"v": 1}])
    with pytest.raises(InvalidArgumentError, match="'new2'.*(NaN|infinity)"):
        store.add_many(["new1", "old1", "new2"], random_vectors(3, seed=2),
                       [{"v": 2}, {"v": 2}, {"v": bad}])
    with pytest.raises(InvalidArgumentError, match="NaN|infinity"):
        store.add("new3", basis(2), {"v": bad})
    if isinstance(store, VersionedStore):
        with pytest.raises(InvalidArgumentError, match="NaN|infinity"):
            store.update_payload("d", {"v": bad})
    assert store.count() == 2 and store.get(["new1", "new2", "new3"]) == []
    assert [row.metadata["v"] for row in store.get(["old1", "old2"])] == [1, 1]


def test_values_without_a_json_form_are_kept_the_same_way_in_every_process(store_factory):
    """A set was kept as its str, members in hash order (another order in the next process,
    so a lookup by it found nothing), and a datetime as its str, with a space where ISO 8601
    has a T (the graph writes it as an xsd:dateTime)."""
    store = store_factory.new(DIM)
    when = datetime.datetime(2024, 1, 2, 3, 4,
                             tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    tags = {f"tag{i}" for i in range(20)}
    store.add("a", basis(0), {"tags": tags, "frozen": frozenset({3, 1, 2}), "when": when,
                              "day": datetime.date(2024, 5, 1), "at": datetime.time(9, 30),
                              "price": Decimal("1.10")})
    [row] = store.get(["a"])
    assert row.metadata["tags"] == sorted(tags) and row.metadata["frozen"] == [1, 2, 3]
    assert row.metadata["when"] == "2024-01-02T03:04:00+02:00"
    assert (row.metadata["day"], row.metadata["at"], row.metadata["price"]) == (
        "2024-05-01", "09:30:00", "1.10")
    assert [r.id for r in store.find({"when": "2024-01-02T03:04:00+02:00"})] == ["a"]
    assert [r.id for r in store.find({"when": when})] == ["a"]  # a datetime finds itself


@pytest.mark.parametrize("key", ["text", "snippet"])
@pytest.mark.parametrize("bad", [123, 4.5, True, ["alpha", "beta"], {"x": "gamma"}])
def test_keyword_text_that_is_no_string_is_refused_and_nothing_is_stored(store_factory, key, bad):
    """The text keyword ranking reads must be a string: SQLite indexed another type's JSON
    form ({"x": "gamma"} matched "x") and the other stores nothing, so one row answered a
    keyword query on one backend and never on another."""
    store = store_factory.new(DIM)
    store.add("old", basis(0), {key: "alpha"})
    with pytest.raises(InvalidArgumentTypeError, match=f"metadata\\[2\\]\\['{key}'\\] must be a str"):
        store.add_many(["new1", "old", "new2"], random_vectors(3, seed=2),
                       [{key: "beta"}, {key: "beta"}, {key: bad}])
    with pytest.raises(InvalidArgumentTypeError, match=f"'{key}'.*must be a str"):
        store.add("new3", basis(2), {key: bad})
    store.add("none", basis(3), {key: None})  # None: no text, as if the key were absent
    assert store.count() == 2 and store.get(["new1", "new2", "new3"]) == []
    assert store.get(["old"])[0].metadata[key] == "alpha"


def test_update_payload_checks_its_fields_as_add_does_and_changes_nothing_it_refuses(
        store_factory):
    """Every versioned store refuses what ``add`` refuses (keyword text that is no string, a
    key that is no str) and a change of which document and version a row is: PostgreSQL and
    Qdrant wrote ``doc_iri`` into the rows' metadata, where a lookup then found them under
    another document."""
    store = store_factory.new(DIM)
    if not isinstance(store, VersionedStore):
        pytest.skip("no update_payload")
    store.add_many(["a", "b"], [basis(0), basis(1)],
                   [{"doc_iri": "d", "version": "v1", "text": "alpha"},
                    {"doc_iri": "d", "version": "v1", "text": "beta"}])
    before = {row.id: row.metadata for row in store.get(["a", "b"])}
    for field, error in (("doc_iri", InvalidArgumentError), ("version", InvalidArgumentError),
                         ("text", InvalidArgumentTypeError), ("snippet", InvalidArgumentTypeError)):
        with pytest.raises(error, match=field):
            store.update_payload("d", {field: 5 if error is InvalidArgumentTypeError else "x"})
    with pytest.raises(InvalidArgumentTypeError, match="keys must be str"):
        store.update_payload("d", {1: "x"})
    assert {row.id: row.metadata for row in store.get(["a", "b"])} == before
    assert store.find({"doc_iri": "x"}) == [] and len(store.find({"doc_iri": "d"}, limit=5)) == 2



def test_update_payload_changes_what_search_reads_as_add_would(store_factory):
    """A metadata change reaches everything derived from the metadata: the keyword text (or
    snippet), the scope and the back-reference. QdrantStore wrote the fields into the stored
    metadata only: a new text was lost (``get`` still showed the old one, keyword search
    still found it), and a new scope or ``iri`` changed no search."""
    store = store_factory.new(DIM)
    if not isinstance(store, VersionedStore):
        pytest.skip("no update_payload")
    store.add_many(["a", "b", "c"], [basis(0), basis(1), basis(2)],
                   [{"doc_iri": "d", "version": "v1", "text": "alpha", "scope": "s1"},
                    {"doc_iri": "d", "version": "v1", "snippet": "beta", "scope": "s1"},
                    {"doc_iri": "e", "version": "v1", "text": "alpha", "scope": "s1"}])
    assert store.update_payload("d", {"text": "gamma", "scope": "s2", "iri": "x:d"}) == 2
    assert [row.metadata for row in store.get(["a", "b"])] == [
        {"doc_iri": "d", "version": "v1", "text": "gamma", "scope": "s2", "iri": "x:d"},
        {"doc_iri": "d", "version": "v1", "snippet": "beta", "text": "gamma", "scope": "s2",
         "iri": "x:d"}]
    assert ids_of(store.keyword_search("gamma", k=5)) == ["a", "b"]
    assert ids_of(store.keyword_search("alpha beta", k=5)) == ["c"]
    assert ids_of(store.search(basis(0), k=5, scopes=["s2"])) == ["a", "b"]
    assert ids_of(store.search(basis(0), k=5, scopes=["s1"])) == ["c"]
    assert ids_of(store.keyword_search("gamma", k=5, scopes=["s1"])) == []
    if isinstance(store, BackReferences):
        assert store.has_back_references()
        assert store.rows_named(["x:d"]) == {"a": "x:d", "b": "x:d"}
    assert store.update_payload("d", {"text": None, "scope": None, "iri": None}) == 2
    assert ids_of(store.keyword_search("gamma beta", k=5)) == ["b"]  # its snippet again
    assert ids_of(store.search(basis(0), k=5, scopes=["default"])) == ["a", "b"]
    if isinstance(store, BackReferences):
        assert not store.has_back_references() and store.rows_named(["x:d"]) == {}
    assert store.get(["c"])[0].metadata == {"doc_iri": "e", "version": "v1", "text": "alpha",
                                            "scope": "s1"}


def test_publish_refuses_two_versions_of_one_document_and_changes_nothing(store_factory):
    """Two versions of one document in one ``publish`` recorded the last as current and
    deleted the rows of both, on every store: the document was current with no rows. A
    record that is no DocumentVersion failed with an AttributeError."""
    store = store_factory.new(DIM)
    if not isinstance(store, VersionedStore):
        pytest.skip("no publish")
    store.add_many(["d/v1/0"], [basis(0)], [{"doc_iri": "d", "version": "v1"}], pending=True)
    store.publish([DocumentVersion("d", "v1", "default", "h1", 1)])
    store.add_many(["d/v2/0", "d/v3/0"], [basis(1), basis(2)],
                   [{"doc_iri": "d", "version": "v2"}, {"doc_iri": "d", "version": "v3"}],
                   pending=True)
    with pytest.raises(InvalidArgumentError, match="'d' twice.*'v2'.*'v3'"):
        store.publish([DocumentVersion("d", "v2", "default", "h2", 1),
                       DocumentVersion("e", "v1", "default", "h", 0),
                       DocumentVersion("d", "v3", "default", "h3", 1)])
    for bad in (("d", "v2", "default", "h2", 1), DocumentVersion("d", "v2", "default", "h2", 1)):
        with pytest.raises(InvalidArgumentTypeError, match="DocumentVersion"):
            store.publish(bad if isinstance(bad, DocumentVersion) else [bad])
    with pytest.raises(InvalidArgumentError, match=r"versions\[0\].doc_iri.*2000 bytes"):
        store.publish([DocumentVersion("d" * 2001, "v1", "default", "h", 0)])
    with pytest.raises(InvalidArgumentTypeError, match=r"versions\[0\].scope must be a str"):
        store.publish([DocumentVersion("d", "v2", None, "h2", 1)])
    assert store.all_ids() == ["d/v1/0"] and store.pending_ids() == ["d/v2/0", "d/v3/0"]
    assert store.current_versions() == {"d": DocumentVersion("d", "v1", "default", "h1", 1)}
    version = DocumentVersion("d", "v2", "default", "h2", 1)
    store.publish([version, version])  # the same version twice is one
    assert store.all_ids() == ["d/v2/0"] and store.current_versions() == {"d": version}


@pytest.mark.parametrize("bad, error", BAD_VECTORS)
def test_bad_vectors_raise_the_specific_trails_error(store_factory, bad, error):
    store = store_factory.new(DIM)
    store.add("a", basis(0))
    with pytest.raises(error) as add_error:
        store.add("b", bad)
    with pytest.raises(error) as search_error:
        store.search(bad, k=3)
    for exc in (add_error.value, search_error.value):
        assert isinstance(exc, TrailsError)
        assert str(exc)
    assert store.count() == 1


def test_dimension_error_names_both_dimensions(store_factory):
    store = store_factory.new(DIM)
    with pytest.raises(DimensionMismatchError, match=rf"\b{DIM}\b.*\b3\b"):
        store.add("a", [1.0, 2.0, 3.0])


@pytest.mark.parametrize("dim", ["8", 8.0, True], ids=["str", "float", "bool"])
def test_a_dimension_that_is_no_integer_is_refused_by_name(store_factory, dim):
    # "8" failed deep in the schema (TypeError: '<' not supported between str and int), 8.0
    # in the vector files, and Qdrant took 8.0 as a dimension.
    with pytest.raises(InvalidArgumentTypeError, match="dim must be a positive integer"):
        store_factory.new(dim)


def test_an_embedder_where_its_identity_belongs_is_refused_by_name(store_factory):
    # It failed deep inside: AttributeError: 'MockEmbedder' object has no attribute 'describe'.
    embedder = MockEmbedder(dim=DIM)
    with pytest.raises(InvalidArgumentTypeError, match=r"pass its \.identity"):
        store_factory.new(DIM, embedder=embedder)


def test_ragged_batches_and_non_numbers(store_factory):
    store = store_factory.new(2)
    with pytest.raises(DimensionMismatchError, match="vector 1 has dimension 3"):
        store.add_many(["a", "b"], [[1.0, 2.0], [1.0, 2.0, 3.0]])
    with pytest.raises(InvalidVectorError):
        store.add_many(["a", "b"], [[1.0, 2.0], [1.0, [2.0]]])
    with pytest.raises(InvalidVectorError):
        store.add("a", ["x", "y"])
    assert store.count() == 0


def test_huge_and_tiny_finite_vectors_are_stored_as_unit_vectors(store_factory):
    store = store_factory.new(3)
    store.add("huge", [1e300, 1e300, 0.0])
    store.add("tiny", [0.0, 1e-300, 1e-300])
    huge, tiny = store.get(["huge", "tiny"])
    s = 1 / math.sqrt(2)
    assert huge.vector == pytest.approx([s, s, 0.0], abs=1e-7)
    assert tiny.vector == pytest.approx([0.0, s, s], abs=1e-7)
    (hit,) = store.search([1e308, 1e308, 0.0], k=1)
    assert hit.id == "huge" and hit.score == pytest.approx(1.0, abs=1e-9)


# -- search ------------------------------------------------------------------------------


def test_search_scores_are_cosine_similarities(store_factory):
    store, inputs = filled(store_factory, n=25, seed=3)
    query = random_vectors(1, seed=99)[0] * 7.5  # not unit: the store must normalise it
    hits = store.search(query, k=25)
    assert len(hits) == 25
    stored = {s.id: s.vector for s in store.get(list(inputs))}
    for hit in hits:
        # The stored float32 unit vector: float64 cosine to well within 1e-9 ...
        assert hit.score == pytest.approx(cosine(stored[hit.id], query), abs=1e-9)
        # ... and the input vector's cosine up to float32 rounding.
        assert hit.score == pytest.approx(cosine(inputs[hit.id], query), abs=1e-6)
        assert hit.metadata == {"n": int(hit.id[1:])}


def test_search_is_sorted_descending_with_top_k_of_brute_force(store_factory):
    store, _ = filled(store_factory, n=30, seed=4)
    query = random_vectors(1, seed=5)[0]
    for k in (1, 3, 10, 30, 100):
        hits = store.search(query, k=k)
        expected = brute_force(store, query, k)
        assert ids_of(hits) == [i for i, _ in expected]
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)


def test_hits_read_as_records_and_as_mappings(store_factory):
    """A hit reads as the trails.vector design shows it, ``{id, score, metadata}``, and as the
    record it always was (attributes, position, unpacking)."""
    store = store_factory.new(DIM)
    store.add("trails://app/Chunk/1", basis(0), {"iri": "trails://app/Chunk/1", "snippet": "s"})
    (hit,) = store.search(basis(0), k=1)
    assert hit["id"] == hit.id == hit[0] == "trails://app/Chunk/1"
    assert hit["score"] == hit.score == hit[1] == pytest.approx(1.0)
    assert hit["metadata"] == hit.metadata == hit[2] == {"iri": "trails://app/Chunk/1",
                                                          "snippet": "s"}
    assert dict(hit) == {"id": "trails://app/Chunk/1", "score": hit.score,
                         "metadata": {"iri": "trails://app/Chunk/1", "snippet": "s"}}
    assert list(hit.keys()) == ["id", "score", "metadata"]
    assert list(hit.items()) == [("id", hit.id), ("score", hit.score), ("metadata", hit.metadata)]
    assert list(hit.values()) == [hit.id, hit.score, hit.metadata]
    assert [dict(h) for h in store.search(basis(0), k=1)] == [dict(hit)]  # JSON-ready rows
    assert hit.get("missing") is None and hit.get("id") == "trails://app/Chunk/1"
    id_, score, metadata = hit
    assert (id_, score, metadata) == tuple(hit)
    assert hit[-1] is hit.metadata and hit[:2] == (hit.id, hit.score)
    with pytest.raises(KeyError, match="nothing"):
        hit["nothing"]


def test_search_k_zero_and_default(store_factory):
    store, _ = filled(store_factory, n=15)
    assert store.search(basis(0), k=0) == []
    assert len(store.search(basis(0))) == 10
    with pytest.raises(ValueError):
        store.search(basis(0), k=-1)


def test_exact_ties_are_broken_by_id(store_factory):
    store = store_factory.new(DIM)
    shared = random_vectors(1, seed=7)[0]
    # Inserted out of id order, between other vectors, and at different scales.
    store.add_many(["other1", "t-c"], [random_vectors(1, seed=8)[0], shared])
    store.add_many(["t-a", "other2", "t-d", "t-b"],
                   [shared * 3.0, random_vectors(1, seed=9)[0], shared * 0.5, shared])
    query = shared + 0.3 * random_vectors(1, seed=10)[0]
    hits = store.search(query, k=6)
    tied = [h for h in hits if h.id.startswith("t-")]
    assert [h.id for h in tied] == ["t-a", "t-b", "t-c", "t-d"]
    assert len({h.score for h in tied}) == 1
    # With k cutting through the tie, the lowest ids win.
    assert [h.id for h in store.search(shared, k=2)] == ["t-a", "t-b"]


def test_search_with_ids_restricts_exactly(store_factory):
    store, _inputs = filled(store_factory, n=30, seed=11)
    query = random_vectors(1, seed=12)[0]
    allowed = ["v03", "v17", "v29", "v08", "v03"]  # a duplicate
    hits = store.search(query, k=10, ids=allowed + ["unknown", "v99"])
    expected = brute_force(store, query, 10, ids=sorted(set(allowed)))
    assert ids_of(hits) == [i for i, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-9)
    assert set(ids_of(store.search(query, k=2, ids=allowed))) <= set(allowed)
    assert store.search(query, k=10, ids=[]) == []
    assert store.search(query, k=10, ids=["nobody"]) == []


def test_search_without_metadata_ranks_the_same_and_metadata_fetches_it(store_factory):
    store, _inputs = filled(store_factory, n=30, seed=21)
    query = random_vectors(1, seed=22)[0]
    full, plan = store.search_with_plan(query, 12, ids=["v01", "v05", "v09", "v22"])
    lean, lean_plan = store.search_with_plan(query, 12, ids=["v01", "v05", "v09", "v22"],
                                             with_metadata=False)
    assert [(h.id, h.score) for h in lean] == [(h.id, h.score) for h in full]
    assert lean_plan == plan
    # A store may skip the metadata; what it returns must then be nothing or the truth.
    assert all(h.metadata in ({}, f.metadata) for h, f in zip(lean, full))
    assert store.metadata([h.id for h in full] + ["nobody"]) == {h.id: h.metadata for h in full}
    assert all(h.metadata == {"n": int(h.id[1:])} for h in full)


def test_ids_may_name_documents_whose_chunks_become_candidates(store_factory):
    store = store_factory.new(DIM)
    vectors = random_vectors(9, seed=13)
    ids = [f"doc{d}/c{c}" for d in range(3) for c in range(3)]
    store.add_many(ids, vectors, [{"doc_iri": f"doc{d}"} for d in range(3) for _ in range(3)])
    query = random_vectors(1, seed=14)[0]
    assert sorted(ids_of(store.search(query, k=10, ids=["doc1"]))) == [
        "doc1/c0", "doc1/c1", "doc1/c2"
    ]
    mixed = store.search(query, k=10, ids=["doc2", "doc0/c1", "doc2/c0", "nodoc"])
    assert sorted(ids_of(mixed)) == ["doc0/c1", "doc2/c0", "doc2/c1", "doc2/c2"]
    expected = brute_force(store, query, 10, ids=["doc0/c1", "doc2/c0", "doc2/c1", "doc2/c2"])
    assert ids_of(mixed) == [i for i, _ in expected]
    assert sorted(store.expand_ids(["doc0", "doc1/c2", "missing"])) == [
        "doc0/c0", "doc0/c1", "doc0/c2", "doc1/c2"
    ]


def test_rows_are_named_by_their_metadata_iri_whatever_their_id(store_factory):
    """The trails.vector design's back-reference: ``metadata["iri"]`` names a row's graph
    resource; a row without one is named by its id; a document names its chunks."""
    store = store_factory.new(DIM)
    assert isinstance(store, BackReferences)
    store.add_many(["c1", "c2"], random_vectors(2, seed=30), [{"iri": "c1"}, {}])
    assert not store.has_back_references()  # every id is its IRI: the fast path holds
    store.add_many(["vec-0", "vec-1", "c3", "c4"], random_vectors(4, seed=31),
                   [{"iri": "trails://app/Chunk/1"}, {"iri": "trails://app/Chunk/2",
                                                      "doc_iri": "doc"},
                    {"iri": "c4"}, {"iri": "c3"}])  # c3 and c4 swapped
    assert store.has_back_references()
    assert store.rows_named(["trails://app/Chunk/1", "c1", "c2", "c3", "vec-1", "nobody"]) == {
        "vec-0": "trails://app/Chunk/1", "c1": "c1", "c2": "c2", "c4": "c3"}
    assert store.rows_named(["doc"]) == {"vec-1": "trails://app/Chunk/2"}
    assert store.rows_named(DocumentIris(["doc", "trails://app/Chunk/1"])) == {
        "vec-1": "trails://app/Chunk/2"}
    assert store.rows_named([]) == {}
    store.delete_many(["vec-0", "vec-1", "c3", "c4"])
    assert not store.has_back_references()


def test_find_and_count_compare_metadata_as_typed_json_values(store_factory):
    """The retrieval runtime's metadata-only lookups: typed equality (1 == 1.0, but
    1 != True != "1"), a stored null is not a missing key, ids in order, no vector search."""
    store = store_factory.new(DIM)
    rows = {"e": {"n": 1}, "b": {"n": 1.0}, "d": {"n": True}, "a": {"n": "1"},
            "c": {"n": None, "doc": "x"}, "f": {"doc": "x"}, "g": {"n": [1, {"k": "v"}]},
            "h": {"n": 1, "text": "full text", "doc": "x"}}
    store.add_many(list(rows), random_vectors(len(rows), seed=40), list(rows.values()))
    ids = lambda filters, limit=100: [row.id for row in store.find(filters, limit)]
    assert ids({"n": 1}) == ["b", "e", "h"] == ids({"n": 1.0})
    assert ids({"n": True}) == ["d"] and ids({"n": "1"}) == ["a"] and ids({"n": False}) == []
    assert ids({"n": None}) == ["c"]  # f has no "n": missing is not null
    assert ids({"n": [1.0, {"k": "v"}]}) == ["g"] and ids({"n": [1]}) == []
    assert ids({"n": 1, "doc": "x"}) == ["h"] and ids({"text": "full text"}) == ["h"]
    assert ids({"doc": "x"}, limit=2) == ["c", "f"] and ids({"doc": "x"}) == ["c", "f", "h"]
    assert ids({"n": 1}, limit=1) == ["b"] == [r.id for r in store.find({"n": 1})]
    assert store.find({"n": 1}, limit=0) == []
    (found,) = store.find({"n": True})
    assert found.metadata == {"n": True} and len(found.vector) == DIM
    assert [store.count({"n": v}) for v in (1, True, "1", None, 2)] == [3, 1, 1, 1, 0]
    assert store.count() == store.count(None) == store.count({}) == len(rows)
    # A store of one's own that writes no query gets the same answers from the base class.
    scan = lambda filters, limit=None: BaseVectorStore._matching(store, filters, limit)
    assert scan({"n": 1}) == ["b", "e", "h"] and scan({"n": None}) == ["c"]
    assert scan({"doc": "x"}, 2) == ["c", "f"] and scan({"text": "full text"}) == ["h"]
    store.delete("b")
    assert ids({"n": 1}) == ["e", "h"] and store.count({"n": 1}) == 2


def test_find_refuses_bad_filters_and_limits(store_factory):
    store = store_factory.new(DIM)
    for bad in ({"a.b": 1}, {"x'); --": 1}, {1: 1}, ["n"]):
        with pytest.raises(TrailsError, match="identifier|mapping"):
            store.find(bad)
        with pytest.raises(TrailsError, match="identifier|mapping"):
            store.count(bad)
    for limit in (-1, 1.5, True, "3"):
        with pytest.raises(TrailsError, match="limit"):
            store.find({"n": 1}, limit)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"),
                                   [1, float("nan")], {"k": float("inf")}])
def test_find_and_count_refuse_a_number_json_cannot_hold(store_factory, value):
    """NaN equals nothing and infinity has no JSON form: such a filter is a mistake, named,
    not an empty answer (pgvector, sqlite-vec and Qdrant alike)."""
    store = store_factory.new(DIM)
    store.add("a", basis(0), {"n": 1})
    for lookup in (lambda: store.find({"n": value}, 10), lambda: store.count({"n": value})):
        with pytest.raises(InvalidArgumentError, match="'n'.*(NaN|infinity)"):
            lookup()


def test_find_and_count_compare_integers_beyond_64_bits_exactly(store_factory):
    store = store_factory.new(DIM)
    store.add_many(["a", "b", "c", "d", "e"], random_vectors(5, seed=41),
                   [{"n": 2**70}, {"n": 2**70 + 1}, {"n": -2**64}, {"n": 2**63 - 1},
                    {"n": 2**53 + 1}])
    assert [row.id for row in store.find({"n": 2**53 + 1}, 10)] == ["e"]
    assert store.find({"n": 2**53}, 10) == []
    assert [row.id for row in store.find({"n": 2**70 + 1}, 10)] == ["b"]
    assert [row.id for row in store.find({"n": -2**64}, 10)] == ["c"]
    assert [row.id for row in store.find({"n": 2**63 - 1}, 10)] == ["d"]
    assert store.count({"n": 2**70}) == 1 and store.count({"n": 2**90}) == 0


def test_a_float_and_an_integer_of_the_same_value_are_equal_beyond_2_to_the_53(store_factory):
    """Numbers compare by value, ``2**70 == float(2**70)`` as in Python and JSON: PostgreSQL
    compared the float's shortest decimal (``1.1805916207174113e+21``, not the integer's
    digits) and found nothing, where SQLite and Qdrant found the row."""
    store = store_factory.new(DIM)
    store.add_many(["a", "b", "c", "d"], random_vectors(4, seed=43),
                   [{"n": 2**70}, {"n": float(2**70)}, {"n": 2**60}, {"n": float(2**60)}])
    assert [row.id for row in store.find({"n": float(2**70)}, 10)] == ["a", "b"]
    assert [row.id for row in store.find({"n": 2**70}, 10)] == ["a", "b"]
    assert store.count({"n": float(2**60)}) == 2 and store.count({"n": 2**60}) == 2
    assert store.count({"n": 2**60 + 1}) == 0 and store.count({"n": 2**70 - 1}) == 0
    assert store.count({"n": float(2**70) * (1 + 2**-52)}) == 0
    assert store.delete_where({"n": 2**60}) == 2
    assert store.delete_where({"n": float(2**70)}) == 2 and store.count() == 0


def test_find_never_sees_staged_rows(store_factory):
    store = store_factory.new(DIM)
    if not isinstance(store, VersionedStore):
        pytest.skip("no staged rows without versioned commits")
    store.add_many(["s"], random_vectors(1, seed=41), [{"doc_iri": "d", "version": "1"}],
                   pending=True)
    assert store.find({"doc_iri": "d"}) == [] and store.count({"doc_iri": "d"}) == 0


# -- delete, get, count ------------------------------------------------------------------


def test_delete_returns_whether_it_existed(store_factory):
    store, _ = filled(store_factory, n=5)
    assert store.delete("v02") is True
    assert store.delete("v02") is False
    assert store.delete("never") is False
    assert store.count() == 4
    assert store.get(["v02"]) == []
    assert "v02" not in ids_of(store.search(basis(0), k=10))
    assert "v02" not in ids_of(store.search(basis(0), k=10, ids=["v02", "v01"]))


def test_delete_where_on_doc_iri_and_on_another_key(store_factory):
    store = store_factory.new(DIM)
    vectors = random_vectors(6, seed=15)
    metadata = [
        {"doc_iri": "d1", "lang": "en"},
        {"doc_iri": "d1", "lang": "fr"},
        {"doc_iri": "d2", "lang": "en"},
        {"doc_iri": "d2", "lang": "fr"},
        {"doc_iri": "d3", "lang": "en", "n": 1},
        {"lang": "de"},
    ]
    store.add_many([f"c{i}" for i in range(6)], vectors, metadata)
    assert store.delete_where({"doc_iri": "d1"}) == 2
    assert store.count() == 4
    assert store.search(vectors[0], k=10, ids=["d1"]) == []
    assert store.delete_where({"lang": "en", "doc_iri": "d2"}) == 1
    assert store.delete_where({"lang": "en"}) == 1  # c4
    assert store.delete_where({"n": 1}) == 0
    assert store.delete_where({"lang": "xx"}) == 0
    assert sorted(ids_of(store.search(vectors[0], k=10))) == ["c3", "c5"]
    with pytest.raises(ValueError):
        store.delete_where({})
    with pytest.raises(ValueError):
        store.delete_where({"lang') OR 1=1 --": "x"})
    assert store.count() == 2


# Values no metadata filter compares: no JSON value holds them (anywhere in a list or dict).
NOT_JSON_VALUES = [
    pytest.param({1, 2}, id="set"), pytest.param(frozenset({"a"}), id="frozenset"),
    pytest.param(b"x", id="bytes"), pytest.param(bytearray(b"x"), id="bytearray"),
    pytest.param(object(), id="object"), pytest.param(Decimal("1.5"), id="decimal"),
    pytest.param(1 + 2j, id="complex"), pytest.param({1: "a"}, id="dict-with-int-key"),
    pytest.param([1, [2, {3}]], id="nested-set"), pytest.param({"k": b"x"}, id="dict-of-bytes"),
    pytest.param(int, id="type"),
]
# Values find and count compare as JSON, and delete_where (one scalar per key) refuses.
COMPOUND_VALUES = [pytest.param([1], id="list"), pytest.param((1,), id="tuple"),
                   pytest.param({"a": 1}, id="dict"), pytest.param([[1]], id="nested-list"),
                   pytest.param([], id="empty-list")]
ROWS = {"a": {"n": 1, "doc_iri": "d1"}, "b": {"n": True, "doc_iri": "d1"},
        "c": {"n": "1", "doc_iri": "d2"}, "d": {"n": 1.0, "doc_iri": "d2"},
        "e": {"n": [1], "doc_iri": "d3"}, "f": {"n": {"a": 1}, "doc_iri": "d3"}}


def with_rows(factory):
    store = factory.new(DIM)
    store.add_many(list(ROWS), random_vectors(len(ROWS), seed=16), list(ROWS.values()))
    return store


def assert_untouched(store):
    assert {r.id: r.metadata for r in store.get(list(ROWS))} == ROWS


@pytest.mark.parametrize("value", NOT_JSON_VALUES)
def test_a_filter_value_no_json_value_holds_is_refused_by_every_lookup(store_factory, value):
    """Every store refuses the same values the same way, naming the key and what it takes,
    never answering by a driver's error or by comparing the value's text."""
    store = with_rows(store_factory)
    calls = [lambda: store.find({"n": value}, 10), lambda: store.count({"n": value}),
             lambda: store.delete_where({"n": value}),
             lambda: store.delete_where({"doc_iri": "d1", "n": value})]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match=r"'n'.*str, int, float, bool"):
            call()
    assert_untouched(store)


@pytest.mark.parametrize("value", COMPOUND_VALUES)
def test_delete_where_takes_one_scalar_per_key_and_deletes_nothing_else(store_factory, value):
    store = with_rows(store_factory)
    for filters in ({"n": value}, {"doc_iri": "d3", "n": value}, {"doc_iri": value},
                    {"scope": value}):
        key = "n" if "n" in filters else next(iter(filters))
        with pytest.raises(InvalidArgumentError, match=f"'{key}'.*str"):
            store.delete_where(filters)
    assert_untouched(store)
    assert len(store.find({"n": value}, 10)) == (0 if value in ([], [[1]]) else 1)


@pytest.mark.parametrize("value", [1, 1.5, True, None])
def test_delete_where_takes_a_string_for_doc_iri_and_scope(store_factory, value):
    """``doc_iri`` and ``scope`` hold strings: another value is a mistake (``None`` matches
    nothing), not a lookup of its text."""
    store = with_rows(store_factory)
    store.add("g", basis(0), {"doc_iri": "1", "scope": "1"})
    for key in ("doc_iri", "scope"):
        if value is None:
            assert store.delete_where({key: value}) == 0
            continue
        with pytest.raises(InvalidArgumentError, match=f"'{key}'.*str"):
            store.delete_where({key: value})
    assert store.count() == len(ROWS) + 1


def test_delete_where_compares_scalars_as_typed_json_as_find_does(store_factory):
    """1 == 1.0, but 1 != True != "1" (as ``find``); numpy scalars are the numbers they hold
    and a date is its ISO text, as stored metadata holds it."""
    store = with_rows(store_factory)
    store.add_many(["g", "h"], random_vectors(2, seed=17),
                   [{"day": datetime.date(2026, 1, 2)}, {"m": 3}])
    assert [r.id for r in store.find({"n": np.int64(1)}, 10)] == ["a", "d"]
    assert [r.id for r in store.find({"n": np.bool_(True)}, 10)] == ["b"]
    assert store.count({"n": np.float32(1.0)}) == 2 and store.count({"m": np.int8(3)}) == 1
    assert [r.id for r in store.find({"day": datetime.date(2026, 1, 2)}, 10)] == ["g"]
    assert store.delete_where({"n": True}) == 1
    assert store.delete_where({"n": "1"}) == 1
    assert store.delete_where({"n": np.int64(1)}) == 2
    assert store.delete_where({"m": 3.0}) == 1
    assert store.delete_where({"day": datetime.date(2026, 1, 2)}) == 1
    assert sorted(store.all_ids()) == ["e", "f"]


# Stored values of "n" (row "m" has none), and an independent reference of typed JSON
# equality: booleans, numbers, strings, null, lists and objects are distinct kinds.
STORED_N = {"a": 1, "b": True, "c": "1", "d": 1.0, "e": None, "f": [1], "g": {"a": 1},
            "h": 0, "i": False, "j": "a", "k": [], "l": {}, "n": [1, "a"]}
JSON_SCALARS = (st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["1", "a", ""])
                | st.floats(-2, 2, allow_nan=False).filter(lambda x: x != 0 or str(x) == "0.0"))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=2)
                           | st.dictionaries(st.sampled_from(["a", "k"]), inner, max_size=2),
                           max_leaves=3)
NOT_JSON = (st.sets(st.integers(0, 2), max_size=2) | st.binary(max_size=2)
            | st.builds(object) | st.decimals(allow_nan=False, places=1, max_value=5))


def kind(value):
    if value is None or isinstance(value, (bool, str, list, dict)):
        return type(value)
    return float  # a JSON number, int or float


def same_json(stored, wanted) -> bool:
    if kind(stored) is not kind(wanted):
        return False
    if isinstance(stored, list):
        return len(stored) == len(wanted) and all(map(same_json, stored, wanted))
    if isinstance(stored, dict):
        return stored.keys() == wanted.keys() and all(same_json(stored[k], wanted[k])
                                                      for k in stored)
    return stored == wanted


def holds_no_json(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(holds_no_json(v) for v in value)
    if isinstance(value, dict):
        return any(holds_no_json(v) for v in value.values())
    return kind(value) is float and not isinstance(value, (int, float))


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON_VALUES | NOT_JSON | st.lists(JSON_SCALARS | NOT_JSON, min_size=1, max_size=2))
def test_every_lookup_matches_typed_json_or_refuses_and_deletes_only_matches(store_factory,
                                                                            value):
    """For any value, ``find`` and ``count`` give exactly the rows holding an equal JSON
    value, ``delete_where`` deletes exactly those (a scalar; None matches nothing), and a
    value a lookup does not take is an InvalidArgumentError that changes nothing."""
    store = store_factory.new(DIM)
    rows = {**{id: {"n": n} for id, n in STORED_N.items()}, "m": {"x": 1}}
    store.add_many(list(rows), random_vectors(len(rows), seed=18), list(rows.values()))
    matching = sorted(id for id, n in STORED_N.items() if same_json(n, value))
    if holds_no_json(value):
        for lookup in (lambda: store.find({"n": value}, 100), lambda: store.count({"n": value})):
            with pytest.raises(InvalidArgumentError, match="'n'"):
                lookup()
    else:
        assert [r.id for r in store.find({"n": value}, 100)] == matching
        assert store.count({"n": value}) == len(matching)
    if holds_no_json(value) or isinstance(value, (list, dict)):
        with pytest.raises(InvalidArgumentError, match="'n'"):
            store.delete_where({"n": value})
        assert store.count() == len(rows)
    else:
        assert store.delete_where({"n": value}) == (0 if value is None else len(matching))
        assert sorted(store.all_ids()) == sorted(set(rows) - set(
            [] if value is None else matching))


def test_get_keeps_input_order_and_skips_missing(store_factory):
    store, inputs = filled(store_factory, n=6)
    got = store.get(["v04", "missing", "v01", "v05"])
    assert [g.id for g in got] == ["v04", "v01", "v05"]
    for g in got:
        assert g.vector == pytest.approx(list(inputs[g.id] / np.linalg.norm(inputs[g.id])),
                                         abs=1e-7)
    assert store.get([]) == []


def test_count_follows_adds_upserts_and_deletes(store_factory):
    store = store_factory.new(DIM)
    store.add_many(["a", "b", "c"], [basis(0), basis(1), basis(2)])
    store.add("a", basis(3))
    assert store.count() == 3
    store.delete("b")
    assert store.count() == 2
    assert len(store) == 2


# -- persistence -------------------------------------------------------------------------


def test_reopen_gives_the_same_state(persistent_store_factory):
    factory = persistent_store_factory
    store, inputs = filled(factory, n=12, seed=16)
    store.delete("v03")
    store.add("v04", basis(2), {"doc_iri": "dX"})
    query = random_vectors(1, seed=17)[0]
    before = store.search(query, k=12)
    before_get = store.get(list(inputs))
    store.close()
    again = factory.reopen()
    assert again.dim == DIM
    assert again.count() == 11
    assert again.search(query, k=12) == before
    assert again.get(list(inputs)) == before_get
    assert ids_of(again.search(query, k=5, ids=["dX"])) == ["v04"]


def test_reopen_with_another_dim_raises(persistent_store_factory):
    persistent_store_factory.new(DIM).close()
    with pytest.raises(DimensionMismatchError, match=str(DIM)):
        persistent_store_factory.reopen(dim=DIM + 1)
    assert persistent_store_factory.reopen(dim=DIM).dim == DIM


def test_embedder_identity_is_recorded_and_checked(persistent_store_factory):
    mini = EmbedderIdentity(model="m/mini", dim=DIM, revision="r1")
    store = persistent_store_factory.new(DIM, embedder=mini)
    assert store.embedder_identity == mini
    store.bind_embedder(mini.model_copy(update={"revision": "r2"}))  # a revision is informative
    with pytest.raises(EmbeddingModelMismatchError, match="m/mini"):
        store.bind_embedder(EmbedderIdentity(model="m/other", dim=DIM))
    with pytest.raises(EmbeddingModelMismatchError):
        store.bind_embedder(EmbedderIdentity(model="m/mini", dim=DIM, normalized=False))
    with pytest.raises(DimensionMismatchError):
        store.bind_embedder(EmbedderIdentity(model="m/mini", dim=DIM * 2))
    store.close()
    again = persistent_store_factory.reopen()
    assert again.embedder_identity == mini
    with pytest.raises(EmbeddingModelMismatchError):
        persistent_store_factory.reopen(embedder=EmbedderIdentity(model="m/other", dim=DIM))


def test_bind_embedder_records_on_an_unbound_store(store_factory):
    store = store_factory.new(DIM)
    assert store.embedder_identity is None
    identity = EmbedderIdentity(model="m/x", dim=DIM)
    store.bind_embedder(identity)
    assert store.embedder_identity == identity
    with pytest.raises(EmbeddingModelMismatchError):
        store.bind_embedder(EmbedderIdentity(model="m/y", dim=DIM))


def test_read_only_open_refuses_writes(persistent_store_factory):
    store, inputs = filled(persistent_store_factory, n=4)
    store.close()
    reader = persistent_store_factory.reopen(read_only=True)
    for write in (
        lambda: reader.add("z", basis(0)),
        lambda: reader.add_many(["z"], [basis(0)]),
        lambda: reader.delete("v01"),
        lambda: reader.delete_where({"n": 1}),
    ):
        with pytest.raises(ConfigurationError, match="read-only"):
            write()
    assert reader.count() == 4
    assert ids_of(reader.search(inputs["v02"], k=1)) == ["v02"]


def test_second_connection_sees_the_first_ones_writes(persistent_store_factory):
    first = persistent_store_factory.new(DIM)
    second = persistent_store_factory.reopen()
    first.add_many(["a", "b"], [basis(0), basis(1)], [{"doc_iri": "d"}, {}])
    assert ids_of(second.search(basis(0), k=1)) == ["a"]
    assert ids_of(second.search(basis(1), k=5, ids=["d", "b"])) == ["b", "a"]
    second.add("a", basis(2))
    second.delete("b")
    assert first.count() == 1
    (hit,) = first.search(basis(2), k=5)
    assert hit.id == "a" and hit.score == pytest.approx(1.0, abs=1e-9)
    assert first.search(basis(1), k=5, ids=["b"]) == []
    assert first.search(basis(2), k=5, ids=["d"]) == []  # the upsert dropped its doc_iri


# -- a store of one's own: the VectorStore protocol only ------------------------------------


class OnlyVectors:
    """A user's store that implements exactly :class:`VectorStore` (by delegation)."""

    def __init__(self, inner):
        self._inner = inner

    dim = property(lambda self: self._inner.dim)
    embedder_identity = property(lambda self: self._inner.embedder_identity)

    def bind_embedder(self, identity):
        self._inner.bind_embedder(identity)

    def add(self, id, vector, metadata=None):
        self._inner.add(id, vector, metadata)

    def add_many(self, ids, vectors, metadata=None):
        self._inner.add_many(ids, vectors, metadata)

    def search(self, vector, k=10, ids=None, *, scopes=None):
        return self._inner.search(vector, k, ids, scopes=scopes)

    def search_with_plan(self, vector, k=10, ids=None, *, scopes=None, with_metadata=True):
        return self._inner.search_with_plan(vector, k, ids, scopes=scopes,
                                            with_metadata=with_metadata)

    def expand_ids(self, iris):
        return self._inner.expand_ids(iris)

    def get(self, ids):
        return self._inner.get(ids)

    def metadata(self, ids):
        return self._inner.metadata(ids)

    def all_ids(self):
        return self._inner.all_ids()

    def delete(self, id):
        return self._inner.delete(id)

    def delete_many(self, ids):
        return self._inner.delete_many(ids)

    def delete_where(self, filters):
        return self._inner.delete_where(filters)

    def find(self, filters, limit=1):
        return self._inner.find(filters, limit)

    def count(self, filters=None):
        return self._inner.count(filters)

    def close(self):
        self._inner.close()


def test_a_store_with_only_the_protocol_retrieves_and_refuses_to_ingest(tmp_path):
    from trails import retrieve
    from trails.context import Context
    from trails.ingest import Document, ingest_all
    from trails.kg import OxigraphGraph
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    embedder = MockEmbedder(dim=DIM)
    store = OnlyVectors(SqliteVecStore(dim=DIM, embedder=embedder.identity))
    assert isinstance(store, VectorStore)
    assert not isinstance(store, (VersionedStore, KeywordIndex, KeywordWeights))
    texts = {"a": "rails routing", "b": "ruby gems", "c": "graph queries"}
    store.add_many(list(texts), embedder.embed_many(list(texts.values())),
                   [{"snippet": t} for t in texts.values()])
    with Context(OxigraphGraph(), store, embedder) as ctx:
        result = retrieve("rails routing", ctx, k=2)
        assert result[0].iri == "a" and result.rankings == ("vector",)
        assert result.notes and "keyword ranking skipped" in result.notes[0]
        assert ctx.stats()["documents"] == 0 and ctx.stats()["vectors"] == 3
        with pytest.raises(ConfigurationError, match="versioned commits"):
            ingest_all([Document(id="d", source="mem://d", text="new text")], ctx=ctx)
        with pytest.raises(ConfigurationError, match="versioned commits"):
            ctx.verify()
        assert store.count() == 3  # nothing was written


WRONG_ARGUMENTS = [
    pytest.param(lambda s: s.add("b", basis(1), metadata="x"), "metadata", id="add-metadata-str"),
    pytest.param(lambda s: s.add("b", basis(1), metadata=3), "metadata", id="add-metadata-int"),
    pytest.param(lambda s: s.add("b", basis(1), metadata=[("k", 1)]), "metadata",
                 id="add-metadata-pairs"),
    pytest.param(lambda s: s.add("b", basis(1), metadata={1: "x"}), "metadata keys",
                 id="add-metadata-key"),
    pytest.param(lambda s: s.add(3, basis(1)), "id", id="add-id-int"),
    pytest.param(lambda s: s.add("", basis(1)), "id", id="add-id-empty"),
    pytest.param(lambda s: s.add("b", None), "vector", id="add-vector-none"),
    pytest.param(lambda s: s.add("b", "12345678"), "vector", id="add-vector-str"),
    pytest.param(lambda s: s.add_many("bc", [basis(1), basis(2)]), "ids", id="add_many-ids-str"),
    pytest.param(lambda s: s.add_many(None, [basis(1)]), "ids", id="add_many-ids-none"),
    pytest.param(lambda s: s.add_many([b"b"], [basis(1)]), "ids[0]", id="add_many-id-bytes"),
    pytest.param(lambda s: s.add_many(["b"], [basis(1)], {"k": 1}), "metadata",
                 id="add_many-metadata-dict"),
    pytest.param(lambda s: s.add_many(["b"], [basis(1)], ["x"]), "metadata[0]",
                 id="add_many-metadata-item"),
    pytest.param(lambda s: s.add_many(["b"], [basis(1)], 7), "metadata",
                 id="add_many-metadata-int"),
    pytest.param(lambda s: s.search(basis(0), k="3"), "k", id="search-k-str"),
    pytest.param(lambda s: s.search(basis(0), k=1.5), "k", id="search-k-float"),
    pytest.param(lambda s: s.search(basis(0), k=None), "k", id="search-k-none"),
    pytest.param(lambda s: s.search(basis(0), k=-1), "k", id="search-k-negative"),
    pytest.param(lambda s: s.search(basis(0), ids="a"), "ids", id="search-ids-str"),
    pytest.param(lambda s: s.search(basis(0), ids=5), "ids", id="search-ids-int"),
    pytest.param(lambda s: s.search(basis(0), ids=[5]), "ids[0]", id="search-ids-item"),
    pytest.param(lambda s: s.search(basis(0), scopes="default"), "scopes", id="search-scopes-str"),
    pytest.param(lambda s: s.search(basis(0), scopes=[None]), "scopes[0]",
                 id="search-scopes-item"),
    pytest.param(lambda s: s.search(None), "vector", id="search-vector-none"),
    pytest.param(lambda s: s.get("a"), "ids", id="get-str"),
    pytest.param(lambda s: s.get(None), "ids", id="get-none"),
    pytest.param(lambda s: s.get([1]), "ids[0]", id="get-item"),
    pytest.param(lambda s: s.metadata(None), "ids", id="metadata-none"),
    pytest.param(lambda s: s.delete(5), "id", id="delete-int"),
    pytest.param(lambda s: s.delete(None), "id", id="delete-none"),
    pytest.param(lambda s: s.delete(["a"]), "id", id="delete-list"),
    pytest.param(lambda s: s.delete_many("a"), "ids", id="delete_many-str"),
    pytest.param(lambda s: s.delete_many(None), "ids", id="delete_many-none"),
    pytest.param(lambda s: s.delete_many([5]), "ids[0]", id="delete_many-item"),
    pytest.param(lambda s: s.delete_where("a"), "filters", id="delete_where-str"),
    pytest.param(lambda s: s.delete_where([("doc_iri", "d")]), "filters", id="delete_where-list"),
]


@pytest.mark.parametrize("call, argument", WRONG_ARGUMENTS)
def test_a_wrong_argument_is_an_invalid_argument_error_naming_it(store_factory, call, argument):
    store = store_factory.new(DIM)
    store.add("a", basis(0), {"k": 1})
    with pytest.raises(InvalidArgumentError) as raised:
        call(store)
    assert str(raised.value).startswith(f"{argument} ")
    assert store.count() == 1 and store.get(["a"])[0].metadata == {"k": 1}


KEYWORD_WRONG_ARGUMENTS = [
    pytest.param(lambda s: s.keyword_search(None), "query", id="query-none"),
    pytest.param(lambda s: s.keyword_search(5), "query", id="query-int"),
    pytest.param(lambda s: s.keyword_search("web", k="3"), "k", id="k-str"),
    pytest.param(lambda s: s.keyword_search("web", ids="a"), "ids", id="ids-str"),
    pytest.param(lambda s: s.keyword_search("web", scopes="default"), "scopes", id="scopes-str"),
]


@pytest.mark.parametrize("call, argument", KEYWORD_WRONG_ARGUMENTS)
def test_a_wrong_keyword_search_argument_is_an_invalid_argument_error(store_factory, call,
                                                                      argument):
    store = store_factory.new(DIM)
    if not isinstance(store, KeywordIndex):
        pytest.skip("no keyword index")
    store.add("a", basis(0), {"text": "web"})
    with pytest.raises(InvalidArgumentError) as raised:
        call(store)
    assert str(raised.value).startswith(f"{argument} ")


def test_a_lookup_by_a_string_no_row_holds_finds_nothing_even_with_a_nul(store_factory):
    """Ids, document IRIs, scopes and metadata values a caller passes are data: one holding a
    NUL character (which a PostgreSQL row cannot hold) is simply not found, everywhere a
    store looks strings up; none is an error, none empties the store."""
    store = store_factory.new(DIM)
    store.add_many(["a", "b"], [basis(0), basis(1)],
                   [{"doc_iri": "d", "k": "x", "text": "apple", "scope": "s"}] * 2)
    odd = ["a\x00", "d\x00", "\x00"]
    assert store.get(odd) == [] and store.expand_ids(odd) == []
    assert store.search(basis(0), k=5, ids=odd) == []
    assert store.search(basis(0), k=5, ids=DocumentIris(odd)) == []
    assert store.search(basis(0), k=5, scopes=["s\x00"]) == []
    assert store.keyword_search("apple", k=5, ids=odd) == []
    assert store.keyword_search("apple", k=5, scopes=["s\x00"]) == []
    for value in ("x\x00", ["x\x00"], {"n": "\x00"}):
        assert store.find({"k": value}, limit=5) == [] and store.count({"k": value}) == 0
    assert store.delete_where({"k": "x\x00"}) == 0
    assert store.delete_where({"doc_iri": "d\x00"}) == 0
    assert store.delete_where({"scope": "s\x00"}) == 0
    assert store.delete("a\x00") is False and store.delete_many(odd) == 0
    if isinstance(store, BackReferences):
        assert store.rows_named(odd) == {}
    assert [s.id for s in store.get(["a", "b"])] == ["a", "b"]
    assert ids_of(store.search(basis(0), k=5, ids=["a", "a\x00"])) == ["a"]


def test_document_iris_name_documents_only_in_vector_and_keyword_search(store_factory):
    """A ``DocumentIris`` candidate is a document whose chunks rank, never a vector id: a row
    whose id happens to equal it is left out of both rankings (a plain id list admits it)."""
    store = store_factory.new(DIM)
    store.add_many(["c1", "d2"], [basis(0), basis(1)],
                   [{"doc_iri": "d1", "text": "apple"}, {"doc_iri": "other", "text": "apple"}])
    documents = DocumentIris(["d1", "d2"])
    assert ids_of(store.search(basis(1), k=5, ids=documents)) == ["c1"]
    assert ids_of(store.keyword_search("apple", k=5, ids=documents)) == ["c1"]
    assert ids_of(store.keyword_search("apple", k=5, ids=["d2"])) == ["d2"]
    assert ids_of(store.search(basis(1), k=5, ids=["d2"])) == ["d2"]


def test_expand_ids_names_what_search_would_rank_sorted_by_id(store_factory):
    """``expand_ids`` (the candidates a filter's names stand for) names the rows a search
    with the same names ranks, sorted by id: SqliteVecStore listed them in the order they
    were written, and PgVectorStore and QdrantStore took a row whose id equals a name in a
    ``DocumentIris`` as a candidate, which their searches leave out."""
    store = store_factory.new(DIM)
    store.add_many(["z1", "d2", "a1", "m1"], [basis(0), basis(1), basis(2), basis(3)],
                   [{"doc_iri": "d1"}, {"doc_iri": "other"}, {"doc_iri": "d1"}, {}])
    assert store.expand_ids(["d1"]) == ["a1", "z1"]
    assert store.expand_ids(["m1", "d2", "d1"]) == ["a1", "d2", "m1", "z1"]
    documents = DocumentIris(["d1", "d2"])
    assert store.expand_ids(documents) == ["a1", "z1"]
    assert sorted(ids_of(store.search(basis(0), k=5, ids=documents))) == ["a1", "z1"]


# -- strings at the edges of what a row can hold -------------------------------------------


def random_word(length: int, seed: int) -> str:
    """Letters and digits that do not compress (PostgreSQL compresses a long index entry)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(np.random.default_rng(seed).choice(list(alphabet), length))


def test_a_word_longer_than_an_index_entry_is_ranked_as_any_word(store_factory):
    """A long run of letters and digits (base64, a hash, a minified token) is one word: every
    store indexes it and a query for it finds its row. PostgreSQL refused the whole write (an
    index entry of the keyword index holds ~2,700 bytes)."""
    store = store_factory.new(DIM)
    long, other = random_word(9000, seed=1), random_word(700, seed=2)
    twin = long[:3000] + "x"  # shares a long prefix: a different word all the same
    store.add_many(["a", "b", "c"], [basis(0), basis(1), basis(2)],
                   [{"text": f"alpha {long} {long}"}, {"text": f"alpha {other}"},
                    {"text": "alpha beta"}])
    assert ids_of(store.keyword_search(long, k=5)) == ["a"]
    assert ids_of(store.keyword_search(other.upper(), k=5)) == ["b"]
    assert store.keyword_search(twin, k=5) == []
    assert ids_of(store.keyword_search(f"alpha {long}", k=5))[0] == "a"
    assert sorted(ids_of(store.keyword_search("alpha", k=5))) == ["a", "b", "c"]
    (got,) = store.get(["a"])
    assert got.metadata == {"text": f"alpha {long} {long}"}


def test_ids_document_iris_and_scopes_of_up_to_2000_bytes_are_kept_longer_ones_refused(
        store_factory):
    """One limit on every store, in UTF-8 bytes: PostgreSQL failed with a driver error
    (``ProgramLimitExceeded``) on a long id, document IRI or scope, which the other stores
    kept."""
    store = store_factory.new(DIM)
    name = "urn:" + random_word(1996, seed=3)  # 2000 bytes
    wide = "é" * 1000  # 2000 bytes in 1000 characters
    store.add_many([name, wide], [basis(0), basis(1)],
                   [{"doc_iri": name, "scope": wide, "text": f"alpha {random_word(600, 4)}"},
                    {"doc_iri": wide, "scope": name}])
    assert [s.id for s in store.get([name, wide])] == [name, wide]
    assert ids_of(store.search(basis(0), k=5, ids=[name], scopes=[wide])) == [name]
    assert ids_of(store.keyword_search("alpha", k=5, scopes=[wide])) == [name]
    too_long = [name + "x", wide + "e"]
    for bad in too_long:
        with pytest.raises(InvalidArgumentError, match="2000 bytes"):
            store.add_many(["new", bad], [basis(2), basis(3)])
        for key in ("doc_iri", "scope"):
            with pytest.raises(InvalidArgumentError, match=f"{key}.*2000 bytes"):
                store.add_many(["new", "new2"], [basis(2), basis(3)], [{}, {key: bad}])
        assert store.get([bad]) == [] and store.search(basis(0), k=5, ids=[bad]) == []
    assert store.count() == 2 and store.get(["new", "new2"]) == []


LONE = "\ud800"


@pytest.mark.parametrize("where", ["id", "value", "key", "nested", "text", "snippet",
                                   "doc_iri", "scope"])
def test_a_lone_surrogate_is_refused_by_every_store_and_nothing_is_stored(store_factory, where):
    """Half of a UTF-16 pair (what ``surrogateescape`` decoding leaves in a string) has no
    UTF-8 form: PostgreSQL failed with a driver error, SQLite with a ``UnicodeEncodeError``
    or not at all, Qdrant kept it; now every store refuses it by name."""
    store = store_factory.new(DIM)
    store.add("old", basis(0), {"doc_iri": "d", "text": "apple"})
    ids, metadata = ["new", "new2"], [{}, {}]
    if where == "id":
        ids[1] = "x" + LONE
    elif where == "key":
        metadata[1] = {"k" + LONE: 1}
    elif where == "nested":
        metadata[1] = {"k": [{"deep": "x" + LONE}]}
    else:
        metadata[1] = {"value" if where == "value" else where: "x" + LONE + " apple"}
    with pytest.raises(InvalidArgumentError, match="lone surrogate"):
        store.add_many(ids, [basis(1), basis(2)], metadata)
    if isinstance(store, VersionedStore) and where not in ("id", "doc_iri"):
        with pytest.raises(InvalidArgumentError, match="lone surrogate"):
            store.update_payload("d", metadata[1])
    assert store.count() == 1 and store.get(["new"]) == []
    (old,) = store.get(["old"])
    assert old.metadata == {"doc_iri": "d", "text": "apple"}


def test_a_lookup_by_a_lone_surrogate_finds_nothing_on_every_store(store_factory):
    """As a NUL does: no row holds one, so a lookup is not found rather than an error."""
    store = store_factory.new(DIM)
    store.add_many(["a", "b"], [basis(0), basis(1)],
                   [{"doc_iri": "d", "k": "x", "text": "apple", "scope": "s"}] * 2)
    odd = ["a" + LONE, LONE]
    assert store.get(odd) == [] and store.expand_ids(odd) == []
    assert ids_of(store.search(basis(0), k=5, ids=["a", *odd])) == ["a"]
    assert store.search(basis(0), k=5, ids=DocumentIris(odd)) == []
    assert store.search(basis(0), k=5, scopes=["s" + LONE]) == []
    assert store.keyword_search("apple", k=5, ids=odd) == []
    assert store.keyword_search("apple " + LONE, k=5, scopes=["s" + LONE]) == []
    for value in ("x" + LONE, ["x" + LONE], {"n": LONE}):
        assert store.find({"k": value}, limit=5) == [] and store.count({"k": value}) == 0
    assert store.delete_where({"k": "x" + LONE}) == 0
    assert store.delete_where({"doc_iri": "d" + LONE}) == 0
    assert store.delete_where({"scope": "s" + LONE}) == 0
    assert store.delete_many(odd) == 0
    if isinstance(store, BackReferences):
        assert store.rows_named(odd) == {}
    assert store.count() == 2
