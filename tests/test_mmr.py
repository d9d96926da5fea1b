"""MMR: the pure selection on hand-built vectors, a reference check, and the retrieve step."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.ingest import ingest_all
from trails.ingest.document import Document
from trails.rank import MMR, mmr
from trails.records import RetrievalHit
from trails.testing import fresh_context
from trails.vector.embedders.mock import MockEmbedder

# Unit vectors: cos with the query (1, 0, 0) is the first coordinate.
A, B, C, D = (1.0, 0.0, 0.0), (0.8, 0.6, 0.0), (0.6, 0.0, 0.8), (0.0, 1.0, 0.0)
QUERY = (1.0, 0.0, 0.0)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def test_lambda_0_3_by_hand():
    # step 1: gains 0.3*rel = .3 .24 .18 0 -> A
    # step 2: B .24-.7*.8=-.32, C .18-.7*.6=-.24, D 0-.7*0=0 -> D
    # step 3: B .24-.7*max(.8,.6)=-.32, C .18-.7*max(.6,0)=-.24 -> C; step 4: B
    chosen = mmr(QUERY, [A, B, C, D], lambda_=0.3)
    assert chosen.order == [0, 3, 2, 1]
    assert chosen.values == pytest.approx([0.3, 0.0, -0.24, -0.32])


def test_lambda_0_7_keeps_relevance_order_by_hand():
    # step 2: B .56-.3*.8=.32, C .42-.3*.6=.24, D 0 -> B; step 3: C .42-.3*.6=.24, D -.3*.6 -> C
    chosen = mmr(QUERY, [A, B, C, D], lambda_=0.7)
    assert chosen.order == [0, 1, 2, 3]
    assert chosen.values == pytest.approx([0.7, 0.32, 0.24, -0.18])


def test_lambda_extremes():
    assert mmr(QUERY, [D, C, B, A], lambda_=1.0).order == [3, 2, 1, 0]  # relevance only
    # diversity only: all gains 0 first, the lowest index wins the tie
    assert mmr(QUERY, [A, B, C, D], lambda_=0.0).order == [0, 3, 2, 1]


def test_scores_replace_query_cosine_and_ties_go_to_the_lower_index():
    assert mmr(QUERY, [A, B, C, D], scores=[0, 0, 0, 1], lambda_=1.0).order == [3, 0, 1, 2]


def test_opposite_counts_as_unrelated():
    # cos(up, down) = -1 would be a bonus of 1 - lambda; it counts as 0, so values never rise
    up, down = (0.0, 1.0, 0.0), (0.0, -1.0, 0.0)
    assert mmr((0.0, 0.0, 1.0), [up, down], lambda_=0.0).values == [0.0, 0.0]
    assert mmr((0.0, 0.6, 0.8), [up, down], lambda_=0.5).values == pytest.approx([0.3, -0.3])


def test_k_and_unnormalised_vectors():
    scaled = [tuple(5 * x for x in v) for v in (A, B, C, D)]
    assert mmr((3.0, 0.0, 0.0), scaled, lambda_=0.3, k=2).order == [0, 3]
    assert mmr(QUERY, [A, B], k=0).order == []
    assert mmr(QUERY, [], k=3).order == []


def test_bad_arguments():
    with pytest.raises(ValueError, match="lambda_"):
        mmr(QUERY, [A], lambda_=1.5)
    with pytest.raises(ValueError, match="one score per vector"):
        mmr(QUERY, [A, B], scores=[1.0])
    with pytest.raises(ValueError, match="lambda_"):
        MMR(lambda_=-0.1)
    with pytest.raises(ValueError, match="top_n"):
        MMR(top_n=0)
    with pytest.raises(ValueError, match="relevance"):
        MMR(relevance="bm25")


def _naive_gain(i, chosen, vectors, query, lambda_):
    def cos(a, b):
        return math.fsum(x * y for x, y in zip(a, b)) / (
            math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))
    penalty = max([0.0] + [cos(vectors[i], vectors[j]) for j in chosen])  # negative counts as 0
    return lambda_ * cos(vectors[i], query) - (1 - lambda_) * penalty


vector = st.lists(st.integers(-3, 3), min_size=3, max_size=3).filter(any).map(
    lambda v: tuple(float(x) for x in v))


@SETTINGS
@given(st.lists(vector, min_size=1, max_size=7), vector, st.floats(0, 1))
def test_each_pick_is_a_best_gain_against_a_plain_reference(vectors, query, lambda_):
    chosen = mmr(query, vectors, lambda_=lambda_)
    assert sorted(chosen.order) == list(range(len(vectors)))  # a permutation
    assert all(a >= b - 1e-9 for a, b in zip(chosen.values, chosen.values[1:]))  # non-increasing
    for step, (pick, value) in enumerate(zip(chosen.order, chosen.values)):
        prefix = chosen.order[:step]
        gains = [_naive_gain(i, prefix, vectors, query, lambda_)
                 for i in range(len(vectors)) if i not in prefix]
        assert value == pytest.approx(_naive_gain(pick, prefix, vectors, query, lambda_), abs=1e-9)
        assert value >= max(gains) - 1e-9


# --- the step, on a real graph and store ---------------------------------------------------

TEXTS = {"d1": "banana cherry apple", "d2": "banana cherry apple", "d3": "grape melon kiwi",
         "d4": "banana plum"}
ASKED = "banana cherry"


@pytest.fixture
def corpus(ctx):
    ingest_all([Document(i, "mem", t) for i, t in TEXTS.items()], ctx=ctx)
    return ctx


def _reference_order(ctx, hits, lambda_, embed=None):
    """MMR recomputed by hand from independently made vectors of the chunk texts."""
    embed = embed or MockEmbedder(dim=ctx.embedder.dim, seed=0)
    vectors = [embed.embed(h.snippet) for h in hits]
    query = embed.embed(ASKED)
    chosen: list[int] = []
    while len(chosen) < len(hits):
        rest = [i for i in range(len(hits)) if i not in chosen]
        chosen.append(max(rest, key=lambda i: (_naive_gain(i, chosen, vectors, query, lambda_),
                                                -i)))
    return [hits[i].iri for i in chosen]


def test_step_demotes_a_duplicate(corpus):
    plain = retrieve(ASKED, corpus, mode="vector", k=4)
    assert [h.snippet for h in plain[:2]] == [TEXTS["d1"]] * 2  # the duplicates lead
    diverse = retrieve(ASKED, corpus, mode="vector", k=4, steps=[MMR(lambda_=0.5)])
    assert diverse[0].iri == plain[0].iri
    assert diverse[1].snippet != TEXTS["d1"]  # the duplicate moved down
    assert [h.iri for h in diverse] == _reference_order(corpus, list(plain), 0.5)
    assert [h.components["mmr_rank"] for h in diverse] == [1, 2, 3, 4]
    assert all(h.score == h.components["mmr"] for h in diverse)
    assert [h.components["vector"] for h in diverse] != [h.components["vector"] for h in plain]


def test_lambda_one_keeps_the_vector_order(corpus):
    plain = retrieve(ASKED, corpus, mode="vector", k=4)
    same = retrieve(ASKED, corpus, mode="vector", k=4, steps=[MMR(lambda_=1.0)])
    assert [h.iri for h in same] == [h.iri for h in plain]
    assert [h.score for h in same] == pytest.approx([h.score for h in plain])


def test_top_n_and_hits_without_vectors_keep_their_place(corpus):
    plain = list(retrieve(ASKED, corpus, mode="vector", k=4))
    stray = RetrievalHit("trails://local/nowhere", 0.99, "stray")
    hits = [plain[0], plain[1], stray, plain[2], plain[3]]
    out = MMR(lambda_=0.5, top_n=3)(ASKED, hits, corpus)
    # No vector / beyond top_n: same order, below the re-scored hits and never above them.
    assert [h.iri for h in out[2:]] == [stray.iri, plain[2].iri, plain[3].iri]
    assert out[2].score == out[1].score  # the stray's 0.99 is capped at the last MMR value
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))
    assert [h.iri for h in out[:2]] == [plain[0].iri, plain[1].iri]
    assert out[1].components["mmr"] < out[0].components["mmr"]


def test_step_needs_a_context_and_scores(corpus):
    hits = list(retrieve(ASKED, corpus, mode="vector", k=2))
    with pytest.raises(Exception, match="ctx"):
        MMR()(ASKED, hits, None)
    with pytest.raises(ValueError, match="score=None"):
        MMR()(ASKED, [RetrievalHit(hits[0].iri, None, "")], corpus)


@SETTINGS
@given(st.permutations(range(4)), st.floats(0, 1), st.sampled_from(["cosine", "score"]))
def test_step_is_a_sorted_permutation(corpus, order, lambda_, relevance):
    plain = list(retrieve(ASKED, corpus, mode="vector", k=4))
    hits = [plain[i] for i in order]
    before = (corpus.vectors.count(), len(corpus.kg))
    out = MMR(lambda_=lambda_, relevance=relevance)(ASKED, hits, corpus)
    assert sorted(h.iri for h in out) == sorted(h.iri for h in hits)
    assert all(a.score >= b.score - 1e-12 for a, b in itertools.pairwise(out))
    assert (corpus.vectors.count(), len(corpus.kg)) == before


# --- rows named by metadata["iri"] under another id (the trails.vector design's sketch) ----

EX = "https://example.org/"


def _fill_by_back_reference(store, embed):
    """The corpus's texts as rows ``vec-N`` that name their chunk only in metadata["iri"]."""
    for n, text in enumerate(TEXTS.values()):
        store.add(f"vec-{n}", embed.embed(text), {"iri": f"{EX}chunk/{n}", "snippet": text})


def _check_diversified(hits, plain, embed):
    assert sorted(h.iri for h in hits) == [f"{EX}chunk/{n}" for n in range(len(TEXTS))]
    assert [h.components["mmr_rank"] for h in hits] == [1, 2, 3, 4]  # every hit had a vector
    assert [h.iri for h in hits] == _reference_order(None, plain, 0.5, embed)
    assert [h.iri for h in hits] != [h.iri for h in plain]  # the duplicate moved down


def test_step_finds_the_vectors_of_rows_named_by_metadata_iri(ctx):
    _fill_by_back_reference(ctx.vectors, MockEmbedder(dim=ctx.embedder.dim, seed=0))
    plain = list(retrieve(ASKED, ctx, mode="vector", k=4))
    assert all(h.iri.startswith(EX) for h in plain)
    hits = MMR(lambda_=0.5)(ASKED, plain, ctx)
    _check_diversified(hits, plain, MockEmbedder(dim=ctx.embedder.dim, seed=0))


def test_step_of_a_retrieve_over_a_given_store_reads_that_store_on_every_backend(
        store_factory):
    """``retrieve(vector_store=..., embedder=...)``: the step reads the vectors of the store
    the answer came from, and embeds the query with the embedder it was ranked with."""
    embed = MockEmbedder(dim=16, seed=3)
    store = store_factory.new(16)
    try:
        store.delete_many(store.all_ids())
        _fill_by_back_reference(store, embed)
        ctx = fresh_context(dim=8)  # its own store is empty, its embedder of another size
        plain = list(retrieve(ASKED, ctx, mode="vector", k=4, vector_store=store,
                              embedder=embed))
        hits = retrieve(ASKED, ctx, mode="vector", k=4, vector_store=store, embedder=embed,
                        steps=[MMR(lambda_=0.5)])
        _check_diversified(list(hits), plain, MockEmbedder(dim=16, seed=3))
    finally:
        store.close()


def test_the_same_iri_in_two_scopes_is_diversified_with_each_scopes_own_vector(ctx):
    iri, other = f"{EX}chunk/shared", f"{EX}chunk/other"
    ctx.vectors.add("vec-a", [1.0, 0.0, 0.0] + [0.0] * 61, {"iri": iri})
    ctx.vectors.add("vec-b", [0.0, 1.0, 0.0] + [0.0] * 61, {"iri": iri, "scope": "legal"})
    ctx.vectors.add("vec-c", [0.6, 0.0, 0.8] + [0.0] * 61, {"iri": other})

    class Along:  # the query lies along the first axis: cosine = first coordinate
        def embed(self, text):
            return [1.0] + [0.0] * 63

    hits = [RetrievalHit(iri, 0.9, "", {"scope": "legal"}), RetrievalHit(other, 0.8, ""),
            RetrievalHit(iri, 0.7, "", {})]
    parts = type("Parts", (), {"vectors": ctx.vectors, "embedder": Along(), "kg": ctx.kg})()
    out = MMR(lambda_=1.0)(ASKED, hits, parts)
    # λ = 1: each hit's value is the cosine of its own scope's vector with the query.
    assert [(h.iri, h.metadata.get("scope")) for h in out] == [
        (iri, None), (other, None), (iri, "legal")]
    assert [h.score for h in out] == pytest.approx([1.0, 0.6, 0.0])


def test_a_chunk_equal_to_the_query_is_as_relevant_as_it_is_redundant():
    """The query equal to row 3: after it is chosen every other row's marginal value is 0 in
    exact arithmetic (λ·cos(q, i) − (1−λ)·cos(3, i) with λ = ½), so the documented tie rule
    picks the lowest index next. Two matrix products rounded differently decided it."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        vectors = np.abs(rng.standard_normal((4, 8))).astype(np.float32).astype(np.float64)
        chosen = mmr(vectors[3].copy(), vectors, lambda_=0.5, k=2)
        assert chosen.order == [3, 0] and chosen.values[1] == 0.0, chosen
