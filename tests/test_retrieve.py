"""retrieve(): the three modes, fusion, result attributes, and the checks before ranking."""

from __future__ import annotations

import datetime as dt
import hashlib
import math

import pytest

from trails import retrieve
from trails.errors import (
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    InvalidArgumentError,
    SparqlError,
)
from trails.kg import IRI
from trails.records import RetrievalResult
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.sqlite_vec import SqliteVecStore

CHUNKS = {
    # iri: (text, document, position)
    "trails://app/Chunk/1": ("Rails is a web framework written in Ruby", "trails://app/Doc/a", 1),
    "trails://app/Chunk/2": ("Ruby gems are installed with bundler", "trails://app/Doc/a", 2),
    "trails://app/Chunk/3": ("Rails routing maps URLs to controllers", "trails://app/Doc/b", 1),
    "trails://app/Chunk/4": ("Elephants are grey and very large", "trails://app/Doc/c", 1),
    "trails://app/Chunk/5": ("Graph databases store triples", "trails://app/Doc/c", 2),
    "trails://app/Chunk/6": ("Vectors and embeddings power search", "trails://app/Doc/b", 2),
}
CREATED = {"trails://app/Doc/a": "2024-05-01", "trails://app/Doc/b": "2023-01-10",
           "trails://app/Doc/c": "2024-11-30"}
QUERY = "rails ruby framework"


def cosine(a, b) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


@pytest.fixture
def corpus(ctx):
    ids = list(CHUNKS)
    ctx.vectors.add_many(
        ids,
        ctx.embedder.embed_many([CHUNKS[i][0] for i in ids]),
        [{"doc_iri": CHUNKS[i][1], "snippet": CHUNKS[i][0]} for i in ids],
    )
    triples = [
        f"<{i}> a trails:Chunk ; schema:isPartOf <{doc}> ; trails:position {pos} ."
        for i, (_, doc, pos) in CHUNKS.items()
    ] + [
        f'<{doc}> a schema:CreativeWork ; schema:dateCreated "{date}"^^xsd:date .'
        for doc, date in CREATED.items()
    ] + ['<trails://app/Doc/empty> a schema:CreativeWork ; schema:dateCreated "2025-01-01"^^xsd:date .']
    ctx.kg.update("INSERT DATA { " + "\n".join(triples) + " }")
    return ctx


def brute_force(ctx, candidates, k) -> list[tuple[str, float]]:
    """Top-k by cosine of the stored vectors against an independently made query vector."""
    query = MockEmbedder(dim=ctx.embedder.dim, seed=0).embed(QUERY)
    stored = {s.id: s.vector for s in ctx.vectors.get(list(candidates))}
    scored = sorted(((i, cosine(v, query)) for i, v in stored.items()),
                    key=lambda pair: (-pair[1], pair[0]))
    return scored[:k]


def assert_matches(result, expected):
    assert [h.iri for h in result] == [i for i, _ in expected]
    assert [h.score for h in result] == pytest.approx([s for _, s in expected], abs=1e-9)


# -- modes -------------------------------------------------------------------------------


def test_vector_mode_ranks_every_chunk_exactly(corpus):
    result = retrieve(QUERY, corpus, mode="vector", k=4)
    assert isinstance(result, RetrievalResult)
    assert_matches(result, brute_force(corpus, CHUNKS, 4))
    assert (result.mode, result.plan, result.candidates, result.exhaustive) == (
        "vector", "full-scan", None, True)
    for rank, hit in enumerate(result, start=1):
        assert hit.snippet == CHUNKS[hit.iri][0]
        assert hit.metadata == {"doc_iri": CHUNKS[hit.iri][1], "snippet": CHUNKS[hit.iri][0]}
        assert hit.components == {"vector": hit.score, "vector_rank": rank}
    # The chunk sharing three words with the query comes first.
    assert result[0].iri == "trails://app/Chunk/1"


def test_k_larger_than_the_corpus_returns_everything_and_k_zero_is_refused(corpus):
    assert len(retrieve(QUERY, corpus, mode="vector", k=50)) == len(CHUNKS)
    with pytest.raises(InvalidArgumentError, match="k must be an int from 1"):
        retrieve(QUERY, corpus, mode="vector", k=0)


def test_graph_mode_returns_the_filter_order_without_scores(corpus):
    batches = corpus.embedder.batches
    result = retrieve(
        QUERY, corpus, mode="graph", k=4,
        sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk ; trails:position ?p } "
                      "ORDER BY DESC(?p) ?iri",
    )
    assert [h.iri for h in result] == ["trails://app/Chunk/2", "trails://app/Chunk/5",
                                       "trails://app/Chunk/6", "trails://app/Chunk/1"]
    assert all(h.score is None for h in result)
    assert [h.snippet for h in result] == [CHUNKS[h.iri][0] for h in result]
    assert (result.mode, result.plan, result.candidates, result.exhaustive) == (
        "graph", "graph-order", 6, True)
    assert corpus.embedder.batches == batches  # graph mode never embeds


def test_graph_mode_needs_a_filter(corpus):
    with pytest.raises(ValueError, match="sparql_filter"):
        retrieve(QUERY, corpus, mode="graph")


CHUNKS_SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
                "FILTER(?d >= ?since) }")
DOCS_SINCE = ("SELECT ?iri WHERE { ?iri a schema:CreativeWork ; schema:dateCreated ?d "
              "FILTER(?d >= ?since) }")


@pytest.mark.parametrize("sparql_filter", [CHUNKS_SINCE, DOCS_SINCE],
                         ids=["chunk-iris", "document-iris"])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_hybrid_ranks_only_the_candidates_exactly(corpus, sparql_filter, k):
    since = dt.date(2024, 1, 1)
    candidates = [i for i, (_, doc, _) in CHUNKS.items() if CREATED[doc] >= since.isoformat()]
    assert len(candidates) == 4  # docs a and c
    result = retrieve(QUERY, corpus, mode="hybrid", k=k, sparql_filter=sparql_filter, fusion=None,
                      bindings={"since": since})
    assert_matches(result, brute_force(corpus, candidates, k))
    assert len(result) == min(k, 4)
    assert (result.mode, result.candidates, result.exhaustive) == ("hybrid", 4, True)
    assert result.plan in ("gather", "masked-scan")


def test_hybrid_with_an_iri_binding(corpus):
    result = retrieve(QUERY, corpus, k=10,
                      sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?doc }",
                      bindings={"doc": IRI("trails://app/Doc/b")})
    assert sorted(h.iri for h in result) == ["trails://app/Chunk/3", "trails://app/Chunk/6"]


def test_hybrid_without_a_filter_or_fusion_is_vector_mode(corpus):
    hybrid = retrieve(QUERY, corpus, k=5, fusion=None)
    vector = retrieve(QUERY, corpus, mode="vector", k=5)
    assert [(h.iri, h.score) for h in hybrid] == [(h.iri, h.score) for h in vector]
    assert hybrid.candidates is None and hybrid.mode == "hybrid"
    fused = retrieve(QUERY, corpus, k=5)  # the default: vector and keyword, fused by auto
    assert fused.rankings == ("vector", "keyword") and fused.candidates is None


# -- bad arguments -----------------------------------------------------------------------


def test_an_unknown_mode_lists_the_valid_ones(corpus):
    with pytest.raises(ValueError) as error:
        retrieve(QUERY, corpus, mode="semantic")
    message = str(error.value)
    assert all(repr(m) in message for m in ("vector", "graph", "hybrid"))
    assert "semantic" in message


@pytest.mark.parametrize("kwargs, word", [
    ({"fusion": "max"}, "rrf"),
    ({"k": -1}, "k"),
    ({"k": "3"}, "k"),
    ({"bindings": {"since": 1}}, "sparql_filter"),
])
def test_other_bad_arguments_are_value_errors(corpus, kwargs, word):
    with pytest.raises(ValueError, match=word):
        retrieve(QUERY, corpus, **kwargs)


# -- empty results -----------------------------------------------------------------------


def test_a_filter_matching_nothing_is_a_valid_empty_result(corpus):
    result = retrieve(QUERY, corpus, sparql_filter=CHUNKS_SINCE,
                      bindings={"since": dt.date(2030, 1, 1)})
    assert isinstance(result, RetrievalResult)
    assert list(result) == []
    assert (result.plan, result.candidates, result.exhaustive) == ("empty-filter", 0, True)
    assert "0 hits" in result.explain()


def test_a_filter_matching_only_iris_without_vectors_gives_no_hits(corpus):
    result = retrieve(QUERY, corpus, sparql_filter=DOCS_SINCE,
                      bindings={"since": dt.date(2025, 1, 1)})  # only Doc/empty
    assert list(result) == []
    assert result.candidates == 0 and result.exhaustive is True


@pytest.mark.parametrize("mode", ["hybrid", "graph"])
@pytest.mark.parametrize("projected", [
    "SELECT ?p WHERE { ?c trails:position ?p }",                 # the chunks' positions
    "SELECT ?n WHERE { ?c a trails:Chunk BIND(STRLEN('x') AS ?n) }",  # numbers
    "SELECT ?b WHERE { ?c a trails:Chunk BIND(BNODE() AS ?b) }",  # blank nodes
])
def test_a_filter_whose_values_are_no_iris_is_an_error_not_an_empty_answer(
        corpus, mode, projected):
    """The filter matched, but what it selects can never be a candidate: the wrong variable
    projected. Answering "nothing matched" would hide the mistake."""
    with pytest.raises(SparqlError, match=r"none is an IRI.*chunk or document IRIs"):
        retrieve(QUERY, corpus, mode=mode, sparql_filter=projected)


def test_a_filter_whose_variable_is_left_unbound_is_still_an_empty_answer(corpus):
    result = retrieve(QUERY, corpus, sparql_filter=(
        "SELECT ?iri WHERE { OPTIONAL { ?iri a trails:NoSuchClass } }"))
    assert list(result) == [] and result.candidates == 0


# -- fusion ------------------------------------------------------------------------------


def test_rrf_with_one_ranking_keeps_the_vector_order(corpus):
    plain = retrieve(QUERY, corpus, mode="vector", k=5)
    fused = retrieve(QUERY, corpus, mode="vector", k=5, fusion="rrf")
    assert [h.iri for h in fused] == [h.iri for h in plain]
    rrf_by_hand = [1 / 61, 1 / 62, 1 / 63, 1 / 64, 1 / 65]
    for i, (hit, base) in enumerate(zip(fused, plain)):
        assert hit.components["vector"] == base.score
        assert hit.components["vector_rank"] == i + 1
        assert hit.components["rrf"] == pytest.approx(rrf_by_hand[i], rel=1e-15)
        assert hit.score == hit.components["rrf"]


def test_a_callable_fusion_is_used(corpus):
    calls = []

    def worst_first(rankings):
        calls.append(rankings)
        (vector,) = rankings
        return [(doc, float(i)) for i, (doc, _) in enumerate(reversed(vector.hits))]

    plain = retrieve(QUERY, corpus, mode="vector", k=len(CHUNKS))
    fused = retrieve(QUERY, corpus, mode="vector", k=3, fusion=worst_first)
    assert len(calls) == 1 and [r.name for r in calls[0]] == ["vector"]
    assert [h.iri for h in fused] == [h.iri for h in reversed(plain)][:3]
    assert [h.score for h in fused] == [0.0, 1.0, 2.0]
    assert [h.components["fused"] for h in fused] == [0.0, 1.0, 2.0]
    assert fused[0].components["vector_rank"] == len(CHUNKS)


# -- embedder and store must agree; retrieval never writes ------------------------------


def test_an_embedder_of_another_dimension_is_refused(corpus):
    with pytest.raises(DimensionMismatchError, match="32"):
        retrieve(QUERY, corpus, embedder=MockEmbedder(dim=32))
    small = SqliteVecStore(dim=32)
    with pytest.raises(DimensionMismatchError, match="32"):
        retrieve(QUERY, corpus, vector_store=small)


def test_a_store_built_with_another_embedder_is_refused(corpus):
    with pytest.raises(EmbeddingModelMismatchError, match="seed=1"):
        retrieve(QUERY, corpus, embedder=MockEmbedder(dim=64, seed=1))
    # Another instance of the same embedder is the same model.
    assert len(retrieve(QUERY, corpus, embedder=MockEmbedder(dim=64, seed=0))) == 6


def test_retrieve_never_writes_to_the_context_store(corpus):
    identity, count = corpus.vectors.embedder_identity, corpus.vectors.count()
    for kwargs in ({"mode": "vector"}, {"fusion": "rrf"},
                   {"sparql_filter": CHUNKS_SINCE, "bindings": {"since": dt.date(2024, 1, 1)}},
                   {"mode": "graph", "sparql_filter": DOCS_SINCE,
                    "bindings": {"since": dt.date(2020, 1, 1)}}):
        retrieve(QUERY, corpus, **kwargs)
    assert corpus.vectors.embedder_identity == identity
    assert corpus.vectors.count() == count


def test_retrieve_never_writes_to_an_unbound_store_file(tmp_path):
    path = tmp_path / "vectors.db"
    embedder = MockEmbedder(dim=16)
    with SqliteVecStore(path, dim=16) as writer:
        writer.add_many(["a", "b"], embedder.embed_many(["rails", "elephant"]))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    store = SqliteVecStore(path)
    for kwargs in ({"mode": "vector"}, {"mode": "hybrid"}, {"fusion": "rrf"}):
        assert retrieve("rails", vector_store=store, embedder=embedder, **kwargs)[0].iri == "a"
    assert store.embedder_identity is None  # checked, never recorded
    assert store.count() == 2
    store.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
