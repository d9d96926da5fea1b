"""``min_score``: a threshold on the final score, for retrieve(), every retriever and the CLI."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest import ingest_all
from trails.ingest.document import Document
from trails.retrieval.retrievers import (
    CompositeRetriever,
    GraphRetriever,
    HybridRetriever,
    RerankedRetriever,
    VectorRetriever,
)
from trails.testing import fresh_context

TEXTS = [
    "Rails is released under the MIT licence.",
    "Ruby gems carry their own licences, listed one by one.",
    "Elephants are large mammals that live in herds.",
    "The licence of a gem is written in its gemspec file.",
    "Herds of elephants walk long distances for water.",
    "A mammal feeds its young with milk.",
    "Rails and Ruby: a framework and a language.",
    "Water is scarce in the dry season.",
]
CHUNKS = "SELECT ?c WHERE { ?c a trails:Chunk }"


@pytest.fixture(scope="module")
def corpus():
    from trails.testing import isolated_kernel

    with isolated_kernel(), fresh_context(dim=32) as ctx:
        ingest_all([Document(f"d{i}", f"d{i}.txt", text) for i, text in enumerate(TEXTS)],
                         ctx=ctx)
        yield ctx


SETTINGS = st.sampled_from([("vector", None), ("hybrid", None), ("hybrid", "auto"),
                            ("hybrid", "rrf"), ("hybrid", "weighted")])


@settings(max_examples=80, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(query=st.sampled_from(["licence", "elephants water", "ruby rails", "milk", "zzz"]),
       setting=SETTINGS, k=st.integers(1, 10),
       threshold=st.one_of(st.floats(-1.5, 1.5, allow_nan=False), st.floats(0, 0.05)))
def test_the_result_is_the_prefix_of_the_unfiltered_list_scoring_at_least_min_score(
        corpus, query, setting, k, threshold):
    mode, fusion = setting
    unfiltered = retrieve(query, corpus, mode=mode, k=k, fusion=fusion)
    filtered = retrieve(query, corpus, mode=mode, k=k, fusion=fusion, min_score=threshold)
    assert all(h.score >= threshold for h in filtered)
    expected = []
    for hit in unfiltered:  # the longest prefix at or above the threshold
        if hit.score < threshold:
            break
        expected.append(hit.iri)
    assert [h.iri for h in filtered] == expected
    dropped = len(unfiltered) - len(filtered)
    notes = [n for n in filtered.notes if n.startswith("min_score")]
    expected_note = (f"min_score {threshold:g} dropped {dropped} of {len(unfiltered)} hits "
                     "(scores below it); lower it to see more")
    assert notes == ([expected_note] if dropped else [])


def test_a_threshold_above_every_score_returns_nothing_and_says_why(corpus):
    result = retrieve("licence", corpus, mode="vector", k=5, min_score=1.5)
    assert list(result) == []
    assert "dropped 5 of 5 hits" in result.explain()


def test_min_score_applies_after_the_steps(corpus):
    def halve(query, hits, ctx):
        from dataclasses import replace

        return [replace(h, score=h.score / 2) for h in hits]

    plain = retrieve("licence", corpus, mode="hybrid", fusion=None, k=8)
    best = plain[0].score
    # Above every halved score, below the best raw one: the step's scores are compared.
    result = retrieve("licence", corpus, mode="hybrid", fusion=None, k=8, steps=[halve],
                      min_score=best * 0.75)
    assert best > best * 0.75 and list(result) == []


@pytest.mark.parametrize("bad, error", [
    (math.nan, InvalidArgumentError), ("0.5", InvalidArgumentTypeError),
    (True, InvalidArgumentTypeError), ([0.5], InvalidArgumentTypeError),
    (10**400, InvalidArgumentError)])
def test_a_bad_min_score_is_refused_naming_it(corpus, bad, error):
    with pytest.raises(error, match="min_score"):
        retrieve("licence", corpus, mode="vector", min_score=bad)
    with pytest.raises(error, match="min_score"):
        VectorRetriever(corpus, min_score=bad)


def test_graph_mode_has_no_scores_and_refuses_min_score(corpus):
    with pytest.raises(InvalidArgumentError, match="mode='graph'.*no score"):
        retrieve("licence", corpus, mode="graph", sparql_filter=CHUNKS, min_score=0.1)
    with pytest.raises(InvalidArgumentError, match="no score"):
        GraphRetriever(corpus, CHUNKS, min_score=0.1)
    assert len(retrieve("licence", corpus, mode="graph", sparql_filter=CHUNKS, k=3)) == 3


def test_every_retriever_applies_its_min_score(corpus):
    vector = VectorRetriever(corpus, k=8)
    scores = [h.score for h in vector.retrieve("licence")]
    cut = sorted(scores)[len(scores) // 2]  # about half the hits are below it
    below = sum(s < cut for s in scores)
    assert 0 < below < len(scores)
    retrievers = [
        VectorRetriever(corpus, k=8, min_score=cut),
        HybridRetriever(corpus, k=8, fusion=None, min_score=cut),
        RerankedRetriever(vector, steps=[lambda q, hits, ctx: hits], min_score=cut),
    ]
    for retriever in retrievers:
        result = retriever.retrieve("licence")
        assert len(result) == len(scores) - below, retriever
        assert all(h.score >= cut for h in result)
        assert any(n.startswith(f"min_score {cut:g} dropped {below} ") for n in result.notes)
    fused = CompositeRetriever([vector], k=8).retrieve("licence")
    rrf_cut = fused[2].score  # RRF scores: 1/61, 1/62, ... a rank, not a relevance
    composite = CompositeRetriever([vector], k=8, min_score=rrf_cut).retrieve("licence")
    assert [h.iri for h in composite] == [h.iri for h in fused[:3]]
