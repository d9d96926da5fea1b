"""trails.integrations.llamaindex: a LlamaIndex retriever over trails retrievers, checked
against the corpus it was given."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest

pytest.importorskip("llama_index.core")
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from integration_corpus import DOCS, LONG, ingest_corpus
from trails import GraphRetriever, HybridRetriever, VectorRetriever
from trails.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from trails.ingest.minting import doc_iri
from trails.integrations.llamaindex import TrailsLlamaRetriever
from trails.testing import fresh_context

KEYS = {"iri", "score", "components", "document", "source", "title", "date", "run_id"}


@pytest.fixture
def corpus(ctx):
    ingest_corpus(ctx)
    return ctx


def test_it_is_a_llamaindex_retriever_of_scored_text_nodes(corpus):
    retriever = TrailsLlamaRetriever(HybridRetriever(corpus, k=len(DOCS)))
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve("graph")
    assert len(nodes) == len(DOCS)
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    by_source = {n.node.metadata["source"]: n for n in nodes}
    for name, (title, date, text) in DOCS.items():
        node = by_source[f"notes/{name}.md"]
        assert set(node.node.metadata) >= KEYS
        assert node.node.text == text  # the whole chunk, not the snippet
        assert node.node.metadata["title"] == title
        assert node.node.metadata["date"] == (None if date is None else date.isoformat())
        assert node.node.metadata["document"] == doc_iri(corpus.base_iri, name)
        assert node.node.id_ == node.node.metadata["iri"]
        assert node.score == node.node.metadata["score"]
    assert len(by_source["notes/long.md"].node.text) == len(LONG) > 280


def test_scores_are_the_engine_s_in_its_order(corpus):
    engine = HybridRetriever(corpus, k=3)
    nodes = TrailsLlamaRetriever(engine).retrieve("graph river")
    hits = engine.retrieve("graph river")
    assert [(n.node.id_, n.score) for n in nodes] == [(h.iri, h.score) for h in hits]
    assert [n.node.metadata["components"] for n in nodes] == [h.components for h in hits]


def test_what_a_model_sees_keeps_title_source_and_date_only(corpus):
    (node,) = TrailsLlamaRetriever(HybridRetriever(corpus, k=1)).retrieve("rails ruby")
    shown = node.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "Ruby on Rails is a web framework." in shown
    assert "title: Rails" in shown and "source: notes/rails.md" in shown
    assert node.node.metadata["iri"] not in shown and "components" not in shown


def test_similarity_top_k_replaces_the_retriever_s_k(corpus):
    wrapped = VectorRetriever(corpus, k=1)
    assert len(TrailsLlamaRetriever(wrapped).retrieve("graph")) == 1
    assert len(TrailsLlamaRetriever(wrapped, similarity_top_k=4).retrieve("graph")) == 4


@pytest.mark.parametrize("k", [0, -1, 2.7, True, "3"])
def test_a_similarity_top_k_that_is_no_positive_int_is_refused_by_name(corpus, k):
    with pytest.raises(InvalidArgumentError, match="similarity_top_k must be an int from 1"):
        TrailsLlamaRetriever(VectorRetriever(corpus, k=4), similarity_top_k=k)


@pytest.mark.parametrize("wrapped", ["ctx", None, "a string"])
def test_wrapping_what_cannot_retrieve_is_refused_with_what_to_wrap(ctx, wrapped):
    wrapped = ctx if wrapped == "ctx" else wrapped
    with pytest.raises(InvalidArgumentTypeError, match="an object with retrieve") as refused:
        TrailsLlamaRetriever(wrapped)
    assert ("HybridRetriever(ctx)" in str(refused.value)) == (wrapped is ctx)


def test_graph_mode_nodes_have_no_score(corpus):
    retriever = GraphRetriever(corpus, sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }")
    nodes = TrailsLlamaRetriever(retriever).retrieve("anything")
    assert len(nodes) == len(DOCS) and {n.score for n in nodes} == {None}


def test_the_run_id_names_the_search_in_the_audit_trail(trails_dir):
    ingest_corpus(trails_dir)
    nodes = TrailsLlamaRetriever(HybridRetriever(trails_dir, k=2)).retrieve("tea")
    (run_id,) = {n.node.metadata["run_id"] for n in nodes}
    assert [h.iri for h in trails_dir.audit.get(run_id).hits] == [n.node.id_ for n in nodes]


def test_aretrieve_in_a_running_loop_searches_off_the_loop_thread(corpus):
    threads: list[int] = []

    @dataclasses.dataclass(frozen=True)
    class Recording:
        k: int = 10

        def retrieve(self, query, messages=None):
            threads.append(threading.get_ident())
            return HybridRetriever(corpus, k=self.k).retrieve(query)

    async def main():
        retriever = TrailsLlamaRetriever(Recording(), similarity_top_k=2)
        return threading.get_ident(), await asyncio.gather(retriever.aretrieve("graph"),
                                                           retriever.aretrieve("tea"))

    loop_thread, (first, second) = asyncio.run(main())
    assert (len(first), len(second)) == (2, 2)
    assert len(threads) == 2 and loop_thread not in threads


def test_an_engine_error_reaches_the_caller_unchanged():
    closed = fresh_context()
    retriever = TrailsLlamaRetriever(HybridRetriever(closed))
    closed.close()
    with pytest.raises(ConfigurationError, match="in memory is closed, and what it held went with it"):
        retriever.retrieve("anything")
    with pytest.raises(ConfigurationError, match="in memory is closed, and what it held went with it"):
        asyncio.run(retriever.aretrieve("anything"))


def test_two_rows_standing_for_one_chunk_are_two_nodes(corpus):
    """A row added under its own id with ``metadata["iri"]`` naming an ingested chunk is a
    second hit for that IRI: LlamaIndex keeps one node per ``id_``, so the second node gets
    the IRI and its place among the IRI's hits (``<iri> (2)``) and is not dropped."""
    retriever = VectorRetriever(corpus, k=len(DOCS) + 1)
    chunk = retriever.retrieve("graph")[0].iri
    corpus.vectors.add("user-row", corpus.embedder.embed("graph"),
                       {"iri": chunk, "text": "a note on the chunk"})
    hits = retriever.retrieve("graph")
    nodes = TrailsLlamaRetriever(retriever).retrieve("graph")
    assert [n.node.metadata["iri"] for n in nodes] == [h.iri for h in hits]
    assert [n.node.text for n in nodes].count("a note on the chunk") == 1
    ids = [n.node.id_ for n in nodes]
    assert len(set(ids)) == len(ids) and chunk in ids and f"{chunk} (2)" in ids


@pytest.mark.parametrize(("given", "meant"), [("top_k", "similarity_top_k"),
                                              ("k", "similarity_top_k"),
                                              ("similarity_topk", "similarity_top_k")])
def test_a_wrong_name_for_the_number_of_hits_names_similarity_top_k(corpus, given, meant):
    # Python's "__init__() got an unexpected keyword argument 'top_k'" was no TrailsError.
    with pytest.raises(InvalidArgumentTypeError) as caught:
        TrailsLlamaRetriever(VectorRetriever(corpus), **{given: 3})
    assert str(caught.value) == (f"TrailsLlamaRetriever() takes no argument {given}: "
                                 f"did you mean {meant}=...?")
