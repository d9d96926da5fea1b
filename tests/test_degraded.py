"""Degraded answers (retrieval/degraded.py) as properties: with the embedder's server gone, a
filtered hybrid query never returns a hit outside the filter's candidates and returns exactly
what a healthy context's keyword-only retrieval of the same candidates returns; with the
vector store's server gone, the chunk texts the graph holds are ranked by BM25 (checked against
a reference written here), bounded, and refused beyond the bound."""

from __future__ import annotations

import math
import re
import socket
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import GraphRetriever, HybridRetriever, VectorRetriever, retrieve
from trails.context import Context
from trails.errors import EndpointUnavailableError, InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph
from trails.resilience import Resilience
from trails.retrieval import degraded
from trails.vector.stores.sqlite_vec import SqliteVecStore

pytest.importorskip("openai")
from trails.testing.servers.openai import OpenAICompatibleServer
from trails.vector.embedders.openai import OpenAIEmbedder

pytestmark = pytest.mark.timeout(300)

WORDS = ["rails", "routing", "graph", "court", "law", "ruby", "vector", "search", "tax",
         "triples", "gems", "rulings"]
N_DOCS = 24


def text_of(i: int) -> str:
    # Deterministic, uneven word counts, so BM25 has lengths and frequencies to tell apart.
    words = [WORDS[(i * 7 + j * j) % len(WORDS)] for j in range(3 + i % 9)]
    return " ".join(words).capitalize() + ". " + f"Document number {i} ends here."


def doc(i: int) -> str:
    return f"trails://local/doc/d{i}"


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed: connections refused


@pytest.fixture(scope="module")
def served():
    """A context embedded through a live OpenAI-compatible server, and an embedder of the
    same identity whose server is gone."""
    with OpenAICompatibleServer(api_key="test") as server:
        live = OpenAIEmbedder(api_key="test", base_url=server.base_url, dim=64, max_retries=0)
        ctx = Context(OxigraphGraph(), SqliteVecStore(":memory:", dim=64), live)
        ingest_all([Document(id=f"d{i}", source=f"d{i}.md", text=text_of(i))
                    for i in range(N_DOCS)], ctx=ctx)
        dead = OpenAIEmbedder(api_key="test", base_url=dead_url(), dim=64, max_retries=0)
        yield ctx, dead
        ctx.close()


def keyword_only(rankings):
    """A fusion that keeps the keyword ranking alone: a healthy keyword-only retrieval."""
    return next(ranking.hits for ranking in rankings if ranking.name == "keyword")


def values_filter(docs: list[int]) -> str:
    return "SELECT ?iri WHERE { VALUES ?iri { " + " ".join(f"<{doc(i)}>" for i in docs) + " } }"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.integers(0, N_DOCS - 1), min_size=0, max_size=N_DOCS, unique=True),
       words=st.lists(st.sampled_from([*WORDS, "number", "absent"]), min_size=1, max_size=4),
       k=st.integers(1, 12))
def test_the_keyword_fallback_ranks_only_the_candidates_as_a_healthy_keyword_retrieval(
        served, docs, words, k):
    ctx, dead = served
    query = " ".join(words)
    sparql = values_filter(docs) if docs else "SELECT ?iri WHERE { ?iri a <urn:nothing> }"
    found = retrieve(query, ctx, k=k, sparql_filter=sparql, embedder=dead)
    if docs:  # an empty filter needs no embedding: nothing to rank, nothing degraded
        assert len(found.degraded) == 1 and found.degraded[0].startswith("embedder unreachable")
    assert {h.document for h in found} <= {doc(i) for i in docs}
    healthy = retrieve(query, ctx, k=k, sparql_filter=sparql, fusion=keyword_only)
    assert healthy.degraded == ()
    assert [(h.iri, h.score) for h in found] == [(h.iri, h.score) for h in healthy]


@pytest.mark.parametrize("mode, sparql", [("hybrid", values_filter([1, 2])), ("vector", None)])
def test_skip_answers_empty_and_says_why_in_every_mode(served, mode, sparql):
    """The plugin design's ``on_error: skip``: no hits, never an exception, and the answer
    says which part failed (a silent empty answer would read as "nothing matched")."""
    ctx, dead = served
    found = retrieve("rails", ctx, mode=mode, sparql_filter=sparql, embedder=dead,
                     fallback="skip")
    assert list(found) == [] and found.plan == "skipped"
    assert len(found.degraded) == 1 and found.degraded[0].startswith("embedder unreachable")
    assert any("skipped" in note for note in found.notes)


def test_an_unknown_fallback_is_refused_by_name(served):
    ctx, _ = served
    with pytest.raises(InvalidArgumentError, match="fallback"):
        retrieve("rails", ctx, fallback="vector")


# -- the vector store's server is gone: BM25 over the graph's chunk texts -------------------


def reference_bm25(query: str, texts: dict[str, str]) -> list[tuple[str, float]]:
    """Okapi BM25 (k1 1.2, b 0.75, Lucene's idf), written out again for comparison."""
    tokens = {c: re.findall(r"[^\W_]+", t.casefold()) for c, t in texts.items()}
    average = sum(map(len, tokens.values())) / len(tokens)
    terms = [w for w in dict.fromkeys(re.findall(r"[^\W_]+", query.casefold()))
             if w not in {"the", "a", "of"}] or re.findall(r"[^\W_]+", query.casefold())
    scores: dict[str, float] = {}
    for term in terms:
        n = sum(term in words for words in tokens.values())
        if not n:
            continue
        idf = math.log(1 + (len(tokens) - n + 0.5) / (n + 0.5))
        for chunk, words in tokens.items():
            tf = Counter(words)[term]
            if tf:
                scores[chunk] = scores.get(chunk, 0.0) + idf * tf * 2.2 / (
                    tf + 1.2 * (0.25 + 0.75 * len(words) / average))
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def with_store_down(texts: list[str]) -> Context:
    """A context on a Qdrant store whose client then points at a server that is gone (there
    is no Qdrant server in the suite: the store's own client is swapped for one on a dead
    port, wrapped as the store wraps it)."""
    qdrant = pytest.importorskip("qdrant_client")
    from trails.vector.embedders.mock import MockEmbedder
    from trails.vector.stores.qdrant import QdrantStore
    from trails.vector.stores.qdrant.faults import GuardedClient

    ctx = Context(OxigraphGraph(), QdrantStore(dim=16), MockEmbedder(dim=16))
    ingest_all([Document(id=f"d{i}", source=f"d{i}.md", text=text) for i, text in enumerate(texts)],
               ctx=ctx)
    url = dead_url().removesuffix("/v1")
    ctx.vectors._guarded = GuardedClient(
        qdrant.QdrantClient(url=url, check_compatibility=False, timeout=1), url,
        Resilience(attempts=1))
    return ctx


@pytest.fixture
def store_down():
    ctx = with_store_down([text_of(i) for i in range(12)])
    yield ctx
    ctx.kg.close()


def long_text(i: int) -> str:
    """Some 2,000 characters: the default chunker makes several chunks of it."""
    return " ".join(text_of(i * 40 + j) for j in range(40))


def chunks_of(ctx: Context, docs: list[int]) -> int:
    return len(graph_texts(ctx, docs))


def graph_texts(ctx: Context, docs: list[int]) -> dict[str, str]:
    rows = ctx.kg.query("SELECT ?c ?t WHERE { ?c schema:isPartOf ?d ; schema:text ?t "
                        "VALUES ?d { " + " ".join(f"<{doc(i)}>" for i in docs) + " } }").raw
    return {row["c"].value: row["t"].value for row in rows}


@pytest.mark.parametrize("query", ["rails routing", "court law rulings", "number", "absent"])
def test_with_the_store_down_a_filter_is_ranked_by_bm25_over_the_graph_texts(store_down, query):
    docs = [1, 2, 5, 8, 11]
    found = retrieve(query, store_down, k=4, sparql_filter=values_filter(docs))
    assert found.degraded[0].startswith("vector store unreachable: Qdrant at http://127.0.0.1")
    expected = reference_bm25(query, graph_texts(store_down, docs))[:4]
    assert [h.iri for h in found] == [chunk for chunk, _ in expected]
    assert [h.score for h in found] == pytest.approx([score for _, score in expected])
    assert all(h.document in {doc(i) for i in docs} for h in found)
    assert all(h.snippet for h in found)


def test_with_the_store_down_an_unfiltered_query_is_answered_only_in_a_small_context(
        store_down, monkeypatch):
    found = retrieve("rails", store_down, k=3)
    expected = reference_bm25("rails", graph_texts(store_down, list(range(12))))[:3]
    assert [h.iri for h in found] == [chunk for chunk, _ in expected] and found.degraded
    monkeypatch.setattr(degraded, "GRAPH_KEYWORD_LIMIT", 11)
    with pytest.raises(EndpointUnavailableError, match="bounded to 11 candidates.*12 chunks"):
        retrieve("rails", store_down, k=3)
    with pytest.raises(EndpointUnavailableError, match="bounded to 11 candidates.*12 candidates"):
        retrieve("rails", store_down, k=3, sparql_filter=values_filter(list(range(12))))
    assert retrieve("rails", store_down, k=3, sparql_filter=values_filter([1, 3])).degraded


# -- a filter of documents is counted in chunks, and bounded by them --------------------------


def test_a_degraded_answer_counts_a_document_filters_candidates_in_chunks(served):
    """A healthy answer counts the chunks its filter selects; the keyword fallback counted the
    filter's IRIs, documents here, so the same filter reported fewer candidates degraded."""
    ctx, dead = served
    ingest_all([Document(id=f"long{i}", source=f"long{i}.md", text=long_text(i))
                for i in range(3)], ctx=ctx)
    try:
        sparql = ("SELECT ?iri WHERE { VALUES ?iri { " + " ".join(
            f"<trails://local/doc/long{i}>" for i in range(3)) + " } }")
        chunks = len(ctx.kg.query("SELECT ?c WHERE { ?c schema:isPartOf ?d . VALUES ?d { "
                                  + " ".join(f"<trails://local/doc/long{i}>" for i in range(3))
                                  + " } }").raw)
        assert chunks > 3  # several chunks a document
        healthy = retrieve("rails", ctx, sparql_filter=sparql)
        degraded_answer = retrieve("rails", ctx, sparql_filter=sparql, embedder=dead)
        assert degraded_answer.degraded
        assert healthy.candidates == degraded_answer.candidates == chunks
    finally:
        for i in range(3):
            ctx.delete_document(f"trails://local/doc/long{i}")


def test_with_the_store_down_documents_are_counted_and_bounded_by_their_chunks(monkeypatch):
    ctx = with_store_down([long_text(i) for i in range(3)])
    try:
        chunks = chunks_of(ctx, [0, 1])
        assert chunks > 2
        found = retrieve("rails", ctx, k=3, sparql_filter=values_filter([0, 1]))
        assert found.degraded and found.candidates == chunks
        # Two documents are under a bound of 3, but their chunks are not: the read is refused.
        monkeypatch.setattr(degraded, "GRAPH_KEYWORD_LIMIT", 3)
        with pytest.raises(EndpointUnavailableError,
                           match=f"bounded to 3 candidates.*at least {chunks} chunks"):
            retrieve("rails", ctx, k=3, sparql_filter=values_filter([0, 1]))
    finally:
        ctx.kg.close()


# -- a retriever is a saved request: it takes fallback (and why) as retrieve() does ---------


@pytest.mark.parametrize("make", [
    lambda ctx, dead: VectorRetriever(Context(ctx.kg, ctx.vectors, dead), fallback="skip"),
    lambda ctx, dead: HybridRetriever(Context(ctx.kg, ctx.vectors, dead), fallback="skip",
                                      sparql_filter=values_filter([1, 2])),
], ids=["vector", "hybrid"])
def test_a_retriever_saves_its_fallback(served, make):
    ctx, dead = served
    found = make(ctx, dead).retrieve("rails")
    assert list(found) == [] and found.plan == "skipped"
    assert len(found.degraded) == 1 and found.degraded[0].startswith("embedder unreachable")


def test_a_retriever_refuses_a_fallback_as_retrieve_does(served):
    ctx, _ = served
    with pytest.raises(InvalidArgumentError) as retrieved:
        retrieve("rails", ctx, fallback="vector")
    for make in (VectorRetriever, HybridRetriever):
        with pytest.raises(InvalidArgumentError) as saved:
            make(ctx, fallback="vector")
        assert str(saved.value) == str(retrieved.value)


def test_a_retriever_saves_why(served):
    """``why=True`` gives each hit of a filtered search the solution that admitted it, from a
    retriever as from retrieve(); a why that is no bool is refused at construction."""
    ctx, _ = served
    sparql = values_filter([1, 2, 3])
    for made in (HybridRetriever(ctx, sparql_filter=sparql, why=True),
                 GraphRetriever(ctx, sparql, why=True)):
        hits = made.retrieve("rails")
        assert hits and all(hit.admitted_by == {"iri": f"<{hit.document or hit.iri}>"}
                           for hit in hits)
    with pytest.raises(InvalidArgumentError, match="why must be True, False or None"):
        HybridRetriever(ctx, why="yes")
