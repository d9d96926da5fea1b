"""The Retriever contract, checked for every retriever in the project.

Each retriever below (plain, hybrid, fused, with steps, with a rewriter, graph, reranked,
composite, composite of composites) runs every invariant: read-only, stable, sorted, one score
scale, empty results valid, errors raise, messages are context, no per-call options, immutable.
Steps and the rewriter are simple local callables: the contract is about the retrievers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import inspect
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyoxigraph as ox
import pytest

from trails import retrieve
from trails.errors import InvalidArgumentError, SparqlError, UnknownScopeError, UnsafeFilterError
from trails.ingest import Document, ingest_all
from trails.ingest.chunkers import SentenceChunker
from trails.rank.fusion import rrf
from trails.records import RetrievalHit
from trails.retrieval.retrievers import (
    CompositeRetriever,
    GraphRetriever,
    HybridRetriever,
    RerankedRetriever,
    Retriever,
    VectorRetriever,
)
from trails.testing import fresh_context

DOCS = [
    ("rails", "2024-05-01", "default", ("Rails is a web framework written in Ruby. Rails routing "
                                        "maps URLs to controllers. Active Record maps tables.")),
    ("gems", "2023-01-10", "default", ("Ruby gems are installed with bundler. A Gemfile lists the "
                                       "gems of an application. Bundler resolves versions.")),
    ("graphs", "2024-11-30", "default", ("Graph databases store triples. SPARQL queries match "
                                         "graph patterns. Rails can talk to a graph database.")),
    ("elephants", "2022-06-15", "default", ("Elephants are grey and very large. Elephants "
                                            "remember water holes.")),
    ("vectors", "2025-02-02", "default", ("Vectors and embeddings power semantic search. Cosine "
                                          "similarity compares embeddings.")),
    ("memo", "2024-08-08", "legal", ("This legal memo covers Rails licensing. Ruby gems carry "
                                     "their own licences.")),
]
QUERIES = ["rails routing", "ruby gems bundler", "graph database", "elephants remember",
           "semantic search embeddings", "zebra"]
MESSAGES = [{"role": "user", "content": "tell me about bundler"},
            {"role": "assistant", "content": "Bundler installs gems."}]
SINCE = dt.date(2023, 6, 1)
CHUNKS_SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
                "FILTER(?d >= ?since) }")
DOCS_SINCE = ("SELECT ?iri WHERE { ?iri a trails:Document ; schema:dateCreated ?d "
              "FILTER(?d >= ?since) }")
BY_POSITION = ("SELECT ?iri WHERE { ?iri a trails:Chunk ; schema:position ?p ; "
               "schema:isPartOf ?doc } ORDER BY ?p ?doc ?iri")
BY_MEANING = ("SELECT ?iri WHERE { ?iri a trails:Chunk } "
              "ORDER BY DESC(trails:similarity(?iri, ?q)) ?iri")
CLOSE = "SELECT ?iri WHERE { ?iri a trails:Chunk FILTER(trails:similarity(?iri, ?q) > 0) }"
RRF_TOP = 1 / 61


# -- local steps and rewriter ----------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w.strip(".,").lower() for w in text.split()}


def keyword_boost(query: str, hits: list[RetrievalHit], ctx: Any) -> list[RetrievalHit]:
    """Rescore: cosine plus half the share of query words in the snippet; scale [-1, 1.5]."""
    words = _words(query)

    def boosted(hit: RetrievalHit) -> RetrievalHit:
        share = len(words & _words(hit.snippet)) / len(words) if words else 0.0
        score = hit.score + 0.5 * share
        return dataclasses.replace(hit, score=score, components={**hit.components,
                                                                 "boost": score})

    return sorted(map(boosted, hits), key=lambda h: (-h.score, h.iri))


def drop_short(query: str, hits: list[RetrievalHit], ctx: Any) -> list[RetrievalHit]:
    """Filter: keep hits whose snippet has at least five words (order and scores kept)."""
    return [h for h in hits if len(h.snippet.split()) >= 5]


class LastUserTurn:
    """A deterministic rewriter: the query followed by the last user turn."""

    def rewrite(self, query: str, messages: list[dict[str, str]]) -> str:
        users = [m["content"] for m in messages if m["role"] == "user"]
        return f"{query} {users[-1]}" if users else query


# -- the retrievers under contract ---------------------------------------------------------


class Spec(NamedTuple):
    name: str
    make: Callable[[Any], Retriever]
    scale: str            # "cosine", "fused" (auto, in [0, 1]), "rrf", "boosted" or "none"
    rankings: int = 1     # for "rrf": how many lists were fused
    rewriter: Any = None  # the rewriter the retriever applies to messages, if any


def vector(ctx, k=5):
    return VectorRetriever(ctx, k=k)


def hybrid(ctx, k=5):
    return HybridRetriever(ctx, k=k, sparql_filter=CHUNKS_SINCE, bindings={"since": SINCE})


def hybrid_rrf(ctx, k=5):
    return HybridRetriever(ctx, k=k, sparql_filter=DOCS_SINCE, bindings={"since": SINCE},
                           fusion="rrf")


def by_meaning(ctx, k=5):
    return GraphRetriever(ctx, BY_MEANING, k=k, query_variable="q")


def reranked(ctx, k=5):
    return RerankedRetriever(VectorRetriever(ctx, k=20), keyword_boost, k=k)


SPECS = [
    Spec("vector", vector, "cosine"),
    Spec("vector-scopes", lambda ctx: VectorRetriever(ctx, 5, ["default", "legal"]), "cosine"),
    Spec("hybrid", hybrid, "fused"),  # the default fusion, auto
    Spec("hybrid-unfiltered", lambda ctx: HybridRetriever(ctx, k=4), "fused"),
    Spec("hybrid-vector-only", lambda ctx: HybridRetriever(ctx, k=4, fusion=None), "cosine"),
    Spec("hybrid-similarity-filter",
         lambda ctx: HybridRetriever(ctx, k=5, sparql_filter=CLOSE, query_variable="q"), "fused"),
    Spec("hybrid-rrf", hybrid_rrf, "rrf", 2),  # hybrid fuses the vector and keyword rankings
    Spec("hybrid-steps", lambda ctx: HybridRetriever(ctx, k=5, steps=(drop_short, keyword_boost)),
         "boosted"),
    Spec("hybrid-rewriter", lambda ctx: HybridRetriever(ctx, k=5, rewriter=LastUserTurn()),
         "fused", rewriter=LastUserTurn()),
    Spec("graph", lambda ctx: GraphRetriever(ctx, BY_POSITION, k=5), "none"),
    Spec("graph-by-meaning", by_meaning, "none"),
    Spec("reranked", reranked, "boosted"),
    Spec("composite", lambda ctx: CompositeRetriever(
        [vector(ctx, 10), GraphRetriever(ctx, BY_POSITION, k=10)], k=5), "rrf", 2),
    Spec("composite-of-composites", lambda ctx: CompositeRetriever([
        CompositeRetriever([vector(ctx, 10), hybrid(ctx, 10)], k=10),
        CompositeRetriever([by_meaning(ctx, 10), reranked(ctx, 10), hybrid_rrf(ctx, 10)], k=10),
    ], k=6), "rrf", 2),
]


@pytest.fixture(scope="module")
def corpus():
    ctx = fresh_context()
    chunker = SentenceChunker(max_chars=80, overlap=0)
    for scope in ("default", "legal"):
        documents = [Document(id=name, source=f"{name}.md", text=text, metadata={"date": date})
                     for name, date, in_scope, text in DOCS if in_scope == scope]
        stats = ingest_all(documents, ctx=ctx, scope=scope, chunker=chunker)
        assert stats.ingested == len(documents)
    yield ctx
    ctx.close()


@pytest.fixture(params=SPECS, ids=lambda spec: spec.name)
def spec(request):
    return request.param


@pytest.fixture
def retriever(spec, corpus):
    return spec.make(corpus)


def pairs(hits) -> list[tuple[str, float | None]]:
    return [(h.iri, h.score) for h in hits]


# -- the invariants ----------------------------------------------------------------------


def test_it_is_a_retriever(retriever):
    assert isinstance(retriever, Retriever)


def test_no_per_call_options(retriever):
    parameters = inspect.signature(retriever.retrieve).parameters
    assert list(parameters) == ["query", "messages"]
    assert parameters["messages"].default is None
    assert parameters["query"].default is inspect.Parameter.empty
    with pytest.raises(TypeError):
        retriever.retrieve("rails", k=3)  # type: ignore[call-arg]


def test_configuration_is_fixed_at_construction(retriever):
    for item in dataclasses.fields(retriever):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(retriever, item.name, getattr(retriever, item.name))
    bindings = getattr(retriever, "bindings", None)
    if bindings is not None:
        with pytest.raises(TypeError):
            bindings["since"] = dt.date(1900, 1, 1)  # type: ignore[index]


def snapshot(ctx) -> tuple[Any, ...]:
    """Counts and a hash of every store row (ids, vectors, metadata, versions) and graph quad."""
    store = ctx.vectors
    ids = sorted(store.all_ids()) + sorted(store.pending_ids())
    rows = hashlib.sha256()
    for stored in store.get(ids):
        rows.update(stored.id.encode())
        rows.update(np.asarray(stored.vector, dtype="<f4").tobytes())
        rows.update(repr(sorted(stored.metadata.items())).encode())
    rows.update(repr(sorted(store.managed_rows())).encode())
    rows.update(repr(sorted(store.current_versions().items())).encode())
    quads = sorted(ctx.kg.store.dump(format=ox.RdfFormat.N_QUADS).splitlines())
    return (store.count(), len(ids), rows.hexdigest(), len(ctx.kg),
            hashlib.sha256(b"\n".join(quads)).hexdigest(), store.embedder_identity)


@pytest.mark.parametrize("empty", ["", "  \n"])
def test_an_empty_question_is_refused_where_it_would_rank(spec, retriever, empty):
    if spec.scale == "none":  # graph order: the filter's matches, no question needed
        assert isinstance(retriever.retrieve(empty), list)
        return
    with pytest.raises(InvalidArgumentError, match="query is empty; mode='(vector|hybrid)'"):
        retriever.retrieve(empty)
    if spec.rewriter is not None:  # the question may come from the conversation
        assert retriever.retrieve(empty, MESSAGES)


def test_read_only(retriever, corpus):
    before = snapshot(corpus)
    assert before[0] > len(DOCS) and before[3] > 0
    for _ in range(3):
        for query in QUERIES:
            retriever.retrieve(query)
            retriever.retrieve(query, MESSAGES)
    assert snapshot(corpus) == before


def test_ids_and_scores_are_stable_across_calls_and_instances(spec, retriever, corpus):
    first = {q: pairs(retriever.retrieve(q)) for q in QUERIES}
    again = spec.make(corpus)
    for _ in range(2):
        for query in QUERIES:
            assert pairs(retriever.retrieve(query)) == first[query]
            assert pairs(again.retrieve(query)) == first[query]
    assert any(first.values())  # the corpus answers something


def test_scores_are_sorted_descending(retriever):
    for query in QUERIES:
        scores = [h.score for h in retriever.retrieve(query)]
        if any(s is not None for s in scores):
            assert all(s is not None for s in scores)
            assert scores == sorted(scores, reverse=True)


def test_one_score_scale(spec, retriever, corpus):
    for query in QUERIES:
        hits = retriever.retrieve(query)
        scores = [h.score for h in hits]
        if spec.scale == "none":
            assert scores == [None] * len(hits)
            continue
        assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
        if spec.scale == "cosine":
            assert all(-1.0 <= s <= 1.0 for s in scores)
            assert_true_cosines(corpus, query, hits)
        elif spec.scale == "fused":  # sum of weights x best-normalised scores, weights sum <= 1
            assert all(0.0 <= s <= 1.0 for s in scores)
        elif spec.scale == "rrf":
            assert all(0.0 < s <= spec.rankings * RRF_TOP + 1e-15 for s in scores)
        else:  # boosted: cosine plus at most 0.5
            assert all(-1.0 <= s <= 1.5 for s in scores)


def assert_true_cosines(ctx, query: str, hits) -> None:
    """Each cosine score is the cosine of the chunk's stored vector with the query."""
    q = np.asarray(ctx.embedder.embed(query), dtype=np.float64)
    q /= np.linalg.norm(q)
    stored = {s.id: np.asarray(s.vector, dtype=np.float64) for s in ctx.vectors.get(
        [h.iri for h in hits])}
    for hit in hits:
        v = stored[hit.iri]
        assert hit.score == pytest.approx(float(v @ q / np.linalg.norm(v)), abs=1e-6)


def test_empty_results_are_valid(spec):
    with fresh_context() as empty:
        retriever = spec.make(empty)
        if "scopes" in spec.name:  # a scope that holds nothing is a mistake, not "no match"
            with pytest.raises(UnknownScopeError, match="'legal'.*exist: default"):
                retriever.retrieve(QUERIES[0])
            return
        for query in QUERIES:
            result = retriever.retrieve(query)
            assert isinstance(result, list) and list(result) == []
            assert list(retriever.retrieve(query, MESSAGES)) == []


def test_results_are_hits_with_distinct_ids_at_most_k(retriever):
    limit = retriever.k
    for query in QUERIES:
        hits = retriever.retrieve(query)
        assert len(hits) <= limit
        assert len({h.iri for h in hits}) == len(hits)
        for hit in hits:
            assert isinstance(hit, RetrievalHit)
            assert isinstance(hit.iri, str) and isinstance(hit.snippet, str) and hit.snippet
            assert isinstance(hit.metadata, dict)


def test_messages_are_context_not_the_query(spec, retriever):
    for query in QUERIES:
        with_messages = pairs(retriever.retrieve(query, MESSAGES))
        if spec.rewriter is None:
            assert with_messages == pairs(retriever.retrieve(query))
        else:
            standalone = spec.rewriter.rewrite(query, MESSAGES)
            assert with_messages == pairs(retriever.retrieve(standalone))
        assert pairs(retriever.retrieve(query, [])) == pairs(retriever.retrieve(query))


@pytest.mark.parametrize("query, messages, error", [
    (None, None, TypeError),
    (42, None, TypeError),
    (["rails"], None, TypeError),
    ("rails", "not a list of messages", TypeError),
    ("rails", [{"role": "user"}], ValueError),
    ("rails", [{"role": "user", "content": 7}], TypeError),
])
def test_errors_raise_instead_of_returning_sentinels(retriever, query, messages, error):
    with pytest.raises(error):
        retriever.retrieve(query, messages)


# -- misconfiguration fails at construction ---------------------------------------------------


@pytest.mark.parametrize("make, error", [
    (lambda c: VectorRetriever(c, k=-1), ValueError),
    (lambda c: VectorRetriever(c, k=True), ValueError),
    (lambda c: VectorRetriever(c, scope="bad scope!"), ValueError),
    (lambda c: VectorRetriever(c, rewriter="not a rewriter"), TypeError),
    (lambda c: HybridRetriever(c, sparql_filter="SELECT ?iri WHERE { ?iri ?p"), SparqlError),
    (lambda c: HybridRetriever(c, sparql_filter="DELETE WHERE { ?s ?p ?o }"), UnsafeFilterError),
    (lambda c: HybridRetriever(c, sparql_filter="SELECT ?a ?b WHERE { ?a ?p ?b }"),
     UnsafeFilterError),
    (lambda c: HybridRetriever(c, sparql_filter="SELECT ?i WHERE { ?i ?p ?o } "
                                                "ORDER BY <https://x/unknown>(?i)"), SparqlError),
    (lambda c: HybridRetriever(c, bindings={"since": SINCE}), ValueError),
    (lambda c: HybridRetriever(c, sparql_filter=CHUNKS_SINCE, bindings={"until": SINCE}),
     ValueError),
    (lambda c: HybridRetriever(c, sparql_filter=CHUNKS_SINCE, query_variable="q"), ValueError),
    (lambda c: HybridRetriever(c, sparql_filter=CLOSE, query_variable="q", bindings={"q": "x"}),
     ValueError),
    (lambda c: HybridRetriever(c, query_variable="q"), ValueError),
    (lambda c: HybridRetriever(c, fusion="max"), ValueError),
    (lambda c: HybridRetriever(c, fusion=3), TypeError),
    (lambda c: HybridRetriever(c, steps=[keyword_boost, "rerank"]), TypeError),
    (lambda c: GraphRetriever(c, None), ValueError),
    (lambda c: GraphRetriever(c, "ASK { ?s ?p ?o }"), UnsafeFilterError),
    (lambda c: RerankedRetriever(VectorRetriever(c), []), ValueError),
    (lambda c: RerankedRetriever("not a retriever", keyword_boost), TypeError),
    (lambda c: RerankedRetriever(VectorRetriever(c), keyword_boost, k=-2), ValueError),
    (lambda c: CompositeRetriever([]), ValueError),
    (lambda c: CompositeRetriever([VectorRetriever(c), object()]), TypeError),
    (lambda c: CompositeRetriever([VectorRetriever(c)], fusion="rrf"), TypeError),
    (lambda c: CompositeRetriever([VectorRetriever(c)], k=-1), ValueError),
])
def test_misconfiguration_fails_at_construction(ctx, make, error):
    with pytest.raises(error):
        make(ctx)


def test_a_remote_graph_refuses_a_similarity_filter_at_construction(ctx):
    pytest.importorskip("httpx")
    from trails.context import Context
    from trails.kg.remote import SparqlEndpointGraph

    kg = SparqlEndpointGraph("http://127.0.0.1:9/query", timeout=0.5)
    remote = Context(kg, ctx.vectors, ctx.embedder)
    with pytest.raises(SparqlError):
        HybridRetriever(remote, sparql_filter=CLOSE, query_variable="q")
    kg.close()


def test_bindings_are_copied_at_construction(corpus):
    bindings = {"since": SINCE}
    retriever = HybridRetriever(corpus, k=10, sparql_filter=CHUNKS_SINCE, bindings=bindings)
    before = pairs(retriever.retrieve("rails"))
    bindings["since"] = dt.date(2030, 1, 1)
    assert pairs(retriever.retrieve("rails")) == before != []


def test_the_default_context_is_pinned_at_construction(corpus, ctx):
    retriever = VectorRetriever(None)  # the isolated kernel's (empty) default context
    assert retriever.ctx is ctx
    assert list(retriever.retrieve("rails")) == []


# -- steps that break the contract raise ------------------------------------------------------


def reversed_scores(query, hits, ctx):
    return list(reversed(hits))  # reorders without rescoring


def duplicated(query, hits, ctx):
    return hits[:1] + hits


def half_scored(query, hits, ctx):
    return [dataclasses.replace(h, score=None) if i else h for i, h in enumerate(hits)]


@pytest.mark.parametrize("step, word", [
    (reversed_scores, "out of score order"),
    (duplicated, "twice"),
    (half_scored, "finite score"),
])
@pytest.mark.parametrize("wrap", ["hybrid", "reranked", "retrieve", "graph"])
def test_a_step_that_breaks_the_contract_raises(corpus, step, word, wrap):
    """Whoever runs the step, retrieve() itself included: a list whose scores and order
    disagree, or that holds a hit twice, is refused naming the step."""
    if wrap == "graph" and step is not duplicated:
        pytest.skip("graph hits have no scores to disagree with their order")
    run = {
        "hybrid": lambda: HybridRetriever(corpus, k=5, steps=[step]).retrieve("rails routing"),
        "reranked": lambda: RerankedRetriever(VectorRetriever(corpus, k=5), step).retrieve(
            "rails routing"),
        "retrieve": lambda: retrieve("rails routing", corpus, k=5, steps=[step]),
        "graph": lambda: retrieve("rails routing", corpus, k=5, steps=[step], mode="graph",
                                  sparql_filter="SELECT ?iri WHERE { ?iri schema:text ?t }"),
    }[wrap]
    with pytest.raises(InvalidArgumentError, match=f"step {step.__name__} .*{word}"):
        run()


def test_steps_get_the_query_the_hits_and_the_context(corpus):
    seen = []

    def spy(query, hits, ctx):
        seen.append((query, len(hits), ctx))
        return hits

    RerankedRetriever(VectorRetriever(corpus, k=7), spy).retrieve("rails")
    HybridRetriever(corpus, k=3, steps=[spy]).retrieve("gems")
    default_scope = [s for s in corpus.vectors.get(corpus.vectors.all_ids())
                     if s.metadata["scope"] == "default"]
    assert seen == [("rails", 7, corpus), ("gems", len(default_scope), corpus)]


# -- composites ------------------------------------------------------------------------------


class Fixed:
    """A hand-built retriever: the same hits for every query."""

    def __init__(self, *hits: tuple[str, float | None]) -> None:
        self.hits = [RetrievalHit(i, s, f"text of {i}", {"from": "fixed"}) for i, s in hits]
        self.k = len(hits)

    def retrieve(self, query, messages=None):
        return list(self.hits)


class Failing:
    def retrieve(self, query, messages=None):
        raise RuntimeError("the inner retriever failed")


def test_a_composite_fuses_by_hand_checked_rrf():
    a = Fixed(("x", 0.9), ("y", 0.8), ("z", 0.1))
    b = Fixed(("y", None), ("w", None))
    result = CompositeRetriever([a, b], k=3).retrieve("anything")
    assert [h.iri for h in result] == ["y", "x", "w"]
    y, x, w = result
    assert y.score == pytest.approx(1 / 62 + 1 / 61)
    assert y.components == {"rrf": y.score, "r0_rank": 2, "r0": 0.8, "r1_rank": 1}
    assert x.components == {"rrf": 1 / 61, "r0_rank": 1, "r0": 0.9}
    assert w.score == pytest.approx(1 / 62) and w.snippet == "text of w"
    assert (result.mode, result.plan) == ("composite", "rrf")


def test_a_composite_with_another_fusion_names_it():
    def by_constant_zero(rankings):
        return rrf(rankings, constant=0)

    result = CompositeRetriever([Fixed(("x", 1.0), ("y", 0.5))], fusion=by_constant_zero,
                                k=5).retrieve("q")
    assert [(h.iri, h.score) for h in result] == [("x", 1.0), ("y", 0.5)]
    assert result.plan == "fused" and "fused" in result[0].components


def test_a_composite_raises_when_any_retriever_fails(corpus):
    composite = CompositeRetriever([VectorRetriever(corpus), Failing()])
    with pytest.raises(RuntimeError, match="inner retriever failed"):
        composite.retrieve("rails")
    nested = CompositeRetriever([CompositeRetriever([composite]), VectorRetriever(corpus)])
    with pytest.raises(RuntimeError, match="inner retriever failed"):
        nested.retrieve("rails")


def test_a_composite_passes_messages_to_every_retriever(corpus):
    seen = []

    class Spy(Fixed):
        def retrieve(self, query, messages=None):
            seen.append((query, messages))
            return super().retrieve(query, messages)

    CompositeRetriever([Spy(("x", 1.0)), CompositeRetriever([Spy(("y", 1.0))])]).retrieve(
        "q", MESSAGES)
    assert seen == [("q", MESSAGES), ("q", MESSAGES)]


# -- awaited inside a running event loop ------------------------------------------------------


def test_aretrieve_in_a_running_loop_gives_what_retrieve_gives(retriever):
    """Every query three times over, all awaited at once in one loop: each answer is the one
    the blocking call gives (a library that started its own loop would raise here)."""
    expected = {(q, m is None): pairs(retriever.retrieve(q, m))
                for q in QUERIES for m in (None, MESSAGES)}
    calls = [(q, m) for _ in range(3) for q in QUERIES for m in (None, MESSAGES)]

    async def all_at_once():
        return await asyncio.gather(*(retriever.aretrieve(q, m) for q, m in calls))

    answers = asyncio.run(all_at_once())
    for (query, messages), hits in zip(calls, answers, strict=True):
        assert pairs(hits) == expected[query, messages is None]


@pytest.mark.parametrize("query, messages, error", [
    (None, None, TypeError),
    ("rails", [{"role": "user"}], ValueError),
])
def test_aretrieve_raises_what_retrieve_raises(retriever, query, messages, error):
    async def awaited():
        return await retriever.aretrieve(query, messages)

    with pytest.raises(error):
        asyncio.run(awaited())
