"""trails.integrations.langchain: a LangChain retriever over trails retrievers, checked by
LangChain's own standard retriever tests and against the corpus it was given."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# langchain-tests brings pytest-asyncio, which runs the suite's async test.
pytest.importorskip("langchain_tests")
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from integration_corpus import DOCS, LONG, ingest_corpus
from trails import GraphRetriever, HybridRetriever, VectorRetriever
from trails.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from trails.ingest import ingest_all
from trails.ingest.minting import doc_iri
from trails.integrations.langchain import TrailsRetriever
from trails.testing import fresh_context
from trails.testing.strategies import filter_cases

KEYS = {"iri", "score", "components", "document", "source", "title", "date", "run_id"}


@pytest.fixture
def corpus(ctx):
    ingest_corpus(ctx)
    return ctx


# LangChain's standard suite builds its retrievers from constructor parameters, outside any
# fixture: one shared in-memory context serves it (nothing else writes to it).
_shared: list = []


def _shared_context():
    if not _shared:
        ctx = fresh_context()
        ingest_corpus(ctx)
        _shared.append(ctx)
    return _shared[0]


# The suite has an async test, which pytest-asyncio runs when marked (its strict mode); the
# suite forbids overriding its tests, so the mark is on the class (and its sync tests do not
# need the warning that says they do not use it).
@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:The test <Function .* is marked with '@pytest.mark.asyncio'")
class TestLangChainStandardRetrieverSuite(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self):
        return TrailsRetriever

    @property
    def retriever_constructor_params(self):
        return {"retriever": HybridRetriever(_shared_context(), k=4)}

    @property
    def retriever_query_example(self):
        return "graph river vector"


def test_each_document_is_a_chunk_with_its_provenance(corpus):
    documents = TrailsRetriever(retriever=HybridRetriever(corpus, k=len(DOCS))).invoke("graph")
    assert len(documents) == len(DOCS)
    by_source = {d.metadata["source"]: d for d in documents}
    assert set(by_source) == {f"notes/{name}.md" for name in DOCS}
    for name, (title, date, text) in DOCS.items():
        document = by_source[f"notes/{name}.md"]
        assert isinstance(document, Document) and set(document.metadata) >= KEYS
        assert document.page_content == text  # the whole chunk, not the snippet
        assert document.metadata["title"] == title
        assert document.metadata["date"] == (None if date is None else date.isoformat())
        assert document.metadata["document"] == doc_iri(corpus.base_iri, name)
        assert document.id == document.metadata["iri"]
        assert document.metadata["iri"].startswith(doc_iri(corpus.base_iri, name) + "/")
    assert len(by_source["notes/long.md"].page_content) == len(LONG) > 280


def test_scores_and_components_are_the_engine_s(corpus):
    engine = HybridRetriever(corpus, k=3)
    documents = TrailsRetriever(retriever=engine).invoke("graph river")
    hits = engine.retrieve("graph river")
    assert [d.metadata["iri"] for d in documents] == [h.iri for h in hits]
    assert [d.metadata["score"] for d in documents] == [h.score for h in hits]
    assert [d.metadata["components"] for d in documents] == [h.components for h in hits]
    assert documents[0].metadata["score"] >= documents[-1].metadata["score"]


def test_k_on_the_adapter_or_the_call_replaces_the_retriever_s(corpus):
    wrapped = VectorRetriever(corpus, k=1)
    assert len(TrailsRetriever(retriever=wrapped).invoke("graph")) == 1
    assert len(TrailsRetriever(retriever=wrapped, k=4).invoke("graph")) == 4
    assert len(TrailsRetriever(retriever=wrapped, k=4).invoke("graph", k=2)) == 2


def test_a_retriever_without_k_is_cut_to_k(corpus):
    class Plain:  # a user's retriever: only retrieve(), always five hits
        def retrieve(self, query, messages=None):
            return VectorRetriever(corpus, k=5).retrieve(query)

    assert len(TrailsRetriever(retriever=Plain(), k=2).invoke("graph")) == 2
    assert len(TrailsRetriever(retriever=Plain()).invoke("graph")) == 5


class _Plain:
    """A user's retriever: only retrieve(), always five hits, no k of its own."""

    def __init__(self, ctx):
        self.ctx = ctx

    def retrieve(self, query, messages=None):
        return VectorRetriever(self.ctx, k=5).retrieve(query)


@pytest.mark.parametrize("k", [0, -1, 2.7, True, "3"])
@pytest.mark.parametrize("wrapped", ["trails", "plain"])
def test_a_k_that_is_no_positive_int_is_refused_sync_and_async(corpus, wrapped, k):
    # A retriever without a k of its own is cut to k: -1 would silently drop the last hit.
    retriever = VectorRetriever(corpus, k=4) if wrapped == "trails" else _Plain(corpus)
    adapter = TrailsRetriever(retriever=retriever)
    with pytest.raises(InvalidArgumentError, match="k must be an int from 1"):
        adapter.invoke("graph", k=k)
    with pytest.raises(InvalidArgumentError, match="k must be an int from 1"):
        asyncio.run(adapter.ainvoke("graph", k=k))
    with pytest.raises(InvalidArgumentError, match="k must be an int from 1"):
        TrailsRetriever(retriever=retriever, k=k)


@pytest.mark.parametrize("argument, named", [
    ({"sparql_filter": "SELECT ?iri WHERE { ?iri a <https://example.org/Nothing> }"},
     "sparql_filter"),
    ({"scope": "no-such-scope"}, "scope"), ({"top_k": 1}, "top_k"),
    ({"bindings": {"x": 1}, "k": 2}, "bindings")])
def test_a_call_argument_other_than_k_is_refused_not_dropped(corpus, argument, named):
    # A dropped filter or scope would answer with every chunk of the corpus, as if it had
    # matched; the call is refused by the argument's name instead, sync and async.
    adapter = TrailsRetriever(retriever=HybridRetriever(corpus, k=len(DOCS)))
    with pytest.raises(InvalidArgumentError, match=f"not {named}: give a filter"):
        adapter.invoke("graph", **argument)
    with pytest.raises(InvalidArgumentError, match=f"not {named}: give a filter"):
        asyncio.run(adapter.ainvoke("graph", **argument))
    assert len(adapter.invoke("graph", verbose=False)) == len(DOCS)  # LangChain's own flag


@pytest.mark.parametrize("argument, named", [
    ({"sparql_filter": "SELECT ?iri WHERE { ?iri a <https://example.org/Nothing> }"},
     "sparql_filter"),
    ({"scope": "no-such-scope"}, "scope"), ({"search_kwargs": {"k": 1}}, "search_kwargs"),
    ({"bindings": {"x": 1}, "k": 2}, "bindings")])
def test_a_constructor_argument_the_adapter_has_not_is_refused_not_dropped(corpus, argument,
                                                                          named):
    """TrailsRetriever(retriever=..., sparql_filter=...) was built, the filter ignored: every
    chunk came back, as if it had matched (as a call's argument, it was already refused)."""
    with pytest.raises(InvalidArgumentError, match=f"not {named}: give a filter"):
        TrailsRetriever(retriever=HybridRetriever(corpus, k=len(DOCS)), **argument)
    tagged = TrailsRetriever(retriever=HybridRetriever(corpus, k=len(DOCS)), k=2,
                             tags=["t"], metadata={"m": 1})  # LangChain's own fields
    assert len(tagged.invoke("graph")) == 2


def test_a_context_given_by_another_name_says_to_wrap_a_retriever(ctx):
    """TrailsRetriever(ctx=ctx) was pydantic's 'retriever: Field required'."""
    with pytest.raises(InvalidArgumentError, match=r"not ctx: .*HybridRetriever\(ctx"):
        TrailsRetriever(ctx=ctx)


@pytest.mark.parametrize("wrapped", ["ctx", None, "a string"])
def test_wrapping_what_cannot_retrieve_is_refused_with_what_to_wrap(ctx, wrapped):
    wrapped = ctx if wrapped == "ctx" else wrapped
    with pytest.raises(InvalidArgumentTypeError, match="an object with retrieve") as refused:
        TrailsRetriever(retriever=wrapped)
    assert ("HybridRetriever(ctx)" in str(refused.value)) == (wrapped is ctx)


def test_graph_mode_documents_have_no_score(corpus):
    retriever = GraphRetriever(corpus, sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }")
    documents = TrailsRetriever(retriever=retriever).invoke("anything")
    assert len(documents) == len(DOCS) and {d.metadata["score"] for d in documents} == {None}


def test_the_run_id_names_the_search_in_the_audit_trail(trails_dir):
    ingest_corpus(trails_dir)
    documents = TrailsRetriever(retriever=HybridRetriever(trails_dir, k=3)).invoke("rails")
    run_ids = {d.metadata["run_id"] for d in documents}
    assert len(run_ids) == 1 and None not in run_ids
    record = trails_dir.audit.get(run_ids.pop())
    assert [h.iri for h in record.hits] == [d.metadata["iri"] for d in documents]


def test_an_engine_error_reaches_the_caller_unchanged():
    # A search on a closed context fails in the engine: the same error reaches the adapter's
    # caller, sync and async, with the engine's message.
    closed = fresh_context()
    retriever = TrailsRetriever(retriever=HybridRetriever(closed))
    closed.close()
    with pytest.raises(ConfigurationError, match="in memory is closed, and what it held went with it"):
        retriever.invoke("anything")
    with pytest.raises(ConfigurationError, match="in memory is closed, and what it held went with it"):
        asyncio.run(retriever.ainvoke("anything"))


@dataclasses.dataclass(frozen=True)
class _Recording:
    """A trails retriever that notes the thread each search ran on."""

    inner: HybridRetriever
    threads: list[int]
    k: int = 10

    def retrieve(self, query, messages=None):
        self.threads.append(threading.get_ident())
        return dataclasses.replace(self.inner, k=self.k).retrieve(query)


def test_ainvoke_in_a_running_loop_searches_off_the_loop_thread(corpus):
    threads: list[int] = []
    retriever = TrailsRetriever(retriever=_Recording(HybridRetriever(corpus), threads))

    async def main():
        loop_thread = threading.get_ident()
        together = await asyncio.gather(retriever.ainvoke("graph", k=2),
                                        retriever.ainvoke("rails", k=3))
        return loop_thread, together

    loop_thread, (first, second) = asyncio.run(main())
    assert (len(first), len(second)) == (2, 3)
    assert len(threads) == 2 and loop_thread not in threads
    assert [d.metadata["iri"] for d in second] == [
        d.metadata["iri"] for d in retriever.invoke("rails", k=3)]


def test_ainvoke_uses_the_retriever_s_own_aretrieve(corpus):
    calls = []

    @dataclasses.dataclass(frozen=True)
    class Native:
        k: int = 10

        def retrieve(self, query, messages=None):
            raise AssertionError("the sync path ran")

        async def aretrieve(self, query, messages=None):
            calls.append((query, self.k))
            return HybridRetriever(corpus, k=self.k).retrieve(query)

    documents = asyncio.run(TrailsRetriever(retriever=Native()).ainvoke("tea", k=2))
    assert calls == [("tea", 2)] and len(documents) == 2


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=filter_cases(max_size=8), k=st.integers(1, 12))
def test_documents_are_the_filtered_chunks_best_first(case, k):
    with fresh_context() as ctx:
        ingest_all(case.documents, ctx=ctx)
        engine = HybridRetriever(ctx, sparql_filter=case.sparql_filter,
                                 bindings=dict(case.bindings), k=100)
        everything = TrailsRetriever(retriever=engine).invoke("graph river")
        top = TrailsRetriever(retriever=engine).invoke("graph river", k=k)
    assert {d.metadata["document"] for d in everything} == case.expected, case.description
    assert [d.id for d in top] == [d.id for d in everything][:k]
    scores = [d.metadata["score"] for d in everything]
    assert scores == sorted(scores, reverse=True)
