"""The guard study's arithmetic (``studies/_guard*.py``): its fast nDCG@10 must equal
max-pooling plus ir-measures (trec_eval) on any rankings, the self-hit rule must drop exactly
the query's own document and recompute both qualities without it, and the fitting and
separation helpers must give the values worked out by hand."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from trails.evaluation import max_pool, score_run
from trails.rank.fusion import Ranking, auto

sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "studies"))
import _guard as g
import _guard_fit as fit
from _guard_collect import QueryRankings
from _guard_features import _endorsement
from _guard_report import auc

pytest.importorskip("ir_measures")

DOCS = [f"d{i}" for i in range(8)]
DOC_OF = {f"t:doc/{d}": d for d in DOCS}


def chunk(doc: str, part: int) -> str:
    return f"t:doc/{doc}/v/1/c/{part}"


@st.composite
def query(draw: st.DrawFn) -> tuple[QueryRankings, dict[str, int]]:
    """Two rankings over chunks of DOCS with distinct scores, and graded qrels."""
    chunks = [chunk(d, p) for d in DOCS for p in range(2)]

    def ranking(name: str, top: float) -> Ranking:
        listed = draw(st.lists(st.sampled_from(chunks), min_size=1, max_size=12, unique=True))
        scores = sorted(draw(st.lists(st.floats(0.01, top), min_size=len(listed),
                                      max_size=len(listed), unique=True)), reverse=True)
        return Ranking(name, list(zip(listed, scores)), quality=scores[0])

    qrels = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1))
    lists = QueryRankings(ranking("vector", 1.0), ranking("keyword", 30.0), idf_sum=10.0,
                          term_idfs=[1.0], words=3)
    return lists, qrels


def trec_ndcg(hits: list[tuple[str, float]], qrels: dict[str, int]) -> float:
    run = {"q": max_pool(hits, DOC_OF)}
    return score_run(run, {"q": qrels}, ("nDCG@10",))[0]["nDCG@10"]


@settings(max_examples=60, deadline=None)
@given(query())
def test_fast_ndcg_equals_pooling_and_trec_eval(case):
    lists, qrels = case
    p = g.prepare("q", lists, qrels, DOC_OF, self_hits=False)
    assert g.single(p, "vector") == pytest.approx(trec_ndcg(lists.vector.hits, qrels), abs=1e-9)
    assert g.single(p, "keyword") == pytest.approx(trec_ndcg(lists.keyword.hits, qrels), abs=1e-9)
    fused = auto(p.rankings)  # with the query evidence retrieve gives the keyword ranking
    ours = g.fused(p, *g.auto_weights(p, auto))
    assert ours == pytest.approx(trec_ndcg(fused, qrels), abs=1e-9)


def test_self_hit_rule_drops_the_query_document_and_recomputes_qualities():
    vector = Ranking("vector", [(chunk("d1", 0), 0.99), (chunk("d2", 0), 0.61),
                                (chunk("d1", 1), 0.60), (chunk("d3", 0), 0.40)], quality=0.99)
    keyword = Ranking("keyword", [(chunk("d1", 1), 40.0), (chunk("d3", 0), 6.0)], quality=4.0)
    lists = QueryRankings(vector, keyword, idf_sum=10.0, term_idfs=[2.0, 8.0], words=2)
    kept = g.drop_self(lists, "d1", lambda c: DOC_OF.get(c.split("/v/", 1)[0]))
    assert [c for c, _ in kept[0].hits] == [chunk("d2", 0), chunk("d3", 0)]
    assert kept[0].quality == 0.61
    assert [c for c, _ in kept[1].hits] == [chunk("d3", 0)]
    assert kept[1].quality == pytest.approx(0.6)  # 6 / the query's BM25 weight of 10
    untouched = g.drop_self(lists, "d7", lambda c: DOC_OF.get(c.split("/v/", 1)[0]))
    assert untouched == [vector, keyword._replace(query={"terms": 2.0, "weight": 10.0})]
    assert kept[1].query == {"terms": 2.0, "weight": 10.0}  # the query's, as retrieve gives it


def test_self_hit_rule_changes_the_score_as_ignoring_identical_ids_does():
    # d1 is the query's own document and relevant to nothing: after the rule d2 is first.
    vector = Ranking("vector", [(chunk("d1", 0), 0.99), (chunk("d2", 0), 0.6)], quality=0.99)
    keyword = Ranking("keyword", [(chunk("d1", 0), 9.0)], quality=0.9)
    lists = QueryRankings(vector, keyword, idf_sum=10.0, term_idfs=[1.0], words=1)
    p = g.prepare("d1", lists, {"d2": 1}, DOC_OF, self_hits=True)
    assert g.single(p, "vector") == pytest.approx(1.0)
    assert g.single(p, "keyword") == 0.0
    kept = g.prepare("d1", lists, {"d2": 1}, DOC_OF, self_hits=False)
    assert g.single(kept, "vector") == pytest.approx(1 / np.log2(3))


def test_interpolation_is_exact_on_the_grid_and_linear_between():
    curve = np.array([np.linspace(0, 1, len(fit.GRID))[::-1], np.arange(len(fit.GRID)) % 2])
    assert fit.interpolate(curve, np.array([0.0, 0.05])).tolist() == [1.0, 1.0]
    assert fit.interpolate(curve, np.array([1.0, 0.025])) == pytest.approx([0.0, 0.5])


def test_endorsement_reads_the_other_rankings_scores_of_the_top_by_hand():
    words = Ranking("keyword", [("a", 8.0), ("b", 4.0), ("z", 1.0)])
    meaning = Ranking("vector", [("b", 0.8), ("c", 0.6), ("d", 0.4), ("e", 0.2)])
    # a, z: missing from the longer list, so below its last (0.2 / 0.8); b: 0.8 / 0.8.
    assert _endorsement(words, meaning) == pytest.approx((0.25 + 1.0 + 0.25) / 3)
    # c, d, e: missing from the shorter list, which lists every chunk it matches: 0.
    assert _endorsement(meaning, words, depth=4) == pytest.approx((0.5 + 0 + 0 + 0) / 4)
    assert _endorsement(Ranking("keyword", []), meaning) == 0.0


def test_sentence_rescoring_averages_a_chunks_cosine_with_its_best_sentences_and_resorts():
    import _guard_sentences as gs

    # Chunk "a" has sentences at rows 0-1, chunk "b" one sentence at row 2 (unit vectors).
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    starts = np.array([0, 2, 3])
    ranking = Ranking("vector", [("b", 0.7), ("a", 0.5)], quality=0.7)
    query = np.array([0.0, 2.0])  # not unit: rescore normalises it
    out = gs.rescore(ranking, {"a": 0, "b": 1}, starts, vectors, query)
    # a: (0.5 + max(0, 1)) / 2 = 0.75; b: (0.7 + 0.8) / 2 = 0.75; ties by id, a first.
    assert out.hits == [("a", pytest.approx(0.75)), ("b", pytest.approx(0.75))]
    assert out.quality == pytest.approx(0.75)
    query = np.array([1.0, 0.0])  # a: (0.5 + 1) / 2 = 0.75; b: (0.7 + 0.6) / 2 = 0.65
    out = gs.rescore(ranking, {"a": 0, "b": 1}, starts, vectors, query)
    assert [c for c, _ in out.hits] == ["a", "b"] and out.hits[1][1] == pytest.approx(0.65)
    assert out.quality == pytest.approx(0.75)  # the new best, not the old 0.7


def test_auc_by_hand():
    positive = np.array([True, True, False, False])
    assert auc(np.array([3.0, 4.0, 1.0, 2.0]), positive) == 1.0
    assert auc(np.array([1.0, 2.0, 3.0, 4.0]), positive) == 0.0
    assert auc(np.array([1.0, 1.0, 1.0, 1.0]), positive) == 0.5
    assert auc(np.array([2.0, 1.0, 1.0, 0.0]), positive) == 0.875  # one tie of four pairs


def test_bootstrap_interval_of_a_constant_gap_is_that_gap():
    mean, low, high = g.bootstrap_gap(np.full(50, 0.7), np.full(50, 0.5))
    assert (mean, low, high) == pytest.approx((0.2, 0.2, 0.2))


def test_logistic_ramp_passes_through_the_ramp_and_keeps_relative_evidence():
    soft = g.SoftRampAuto()
    low, high = soft.quality_ramps["vector"]
    middle = Ranking("vector", [("a", 1.0)], quality=(low + high) / 2)
    assert soft._confidence(middle) == pytest.approx(0.5)
    assert soft._confidence(Ranking("vector", [], quality=low)) == pytest.approx(0.119, abs=1e-3)
    assert soft._confidence(Ranking("vector", [], quality=high)) == pytest.approx(0.881, abs=1e-3)
    # Both qualities under their ramps (clipped ramps: both confidence 0, the prior decides):
    # the keyword ranking, nearer its ramp, must get the larger weight.
    vector = Ranking("vector", [("x", 0.21), ("y", 0.20)], quality=0.21)
    keyword = Ranking("keyword", [("y", 3.0), ("z", 2.0)], quality=0.18)
    assert auto.explain([vector, keyword])["confidence"] == {"vector": 0.0, "keyword": 0.0}
    weights = soft.explain([vector, keyword])["weights"]
    assert weights["keyword"] > weights["vector"]


def test_noisy_vectors_are_the_ones_derived_store_keeps(tmp_path):
    from _guard_collect import _noisy, _vectors
    from _lab import derived_store

    from trails.vector.stores.sqlite_vec import SqliteVecStore

    rng = np.random.default_rng(7)
    store = SqliteVecStore(":memory:", dim=8)
    ids = [f"c{i:04d}" for i in range(2500)]  # more than one batch of 2000
    store.add_many(ids, rng.standard_normal((2500, 8)).astype(np.float32),
                   [{"text": "t"}] * 2500)
    kept_ids, matrix = _vectors(store)
    damaged = derived_store(store, vector_noise=4.0)
    theirs_ids, theirs = _vectors(damaged)
    assert kept_ids == theirs_ids == sorted(ids)
    np.testing.assert_allclose(_noisy(matrix, 4.0), theirs, atol=1e-5)


def test_study_names_carry_the_backend_and_default_to_the_engines():
    import _guard_collect as gc

    assert gc.split_name("scifact") == ("scifact", gc.DEFAULT_BACKEND)
    assert gc.split_name("scifact@torch") == ("scifact", "torch")
    assert gc.split_name("scifact+sentences") == ("scifact", gc.DEFAULT_BACKEND)
    assert gc.split_name("scifact@torch+sentences") == ("scifact", "torch")
    # What a default context runs the model on, on a CPU with onnxruntime installed.
    from trails.vector.embedders.sentence_transformer.backends import AUTO_CPU_BACKEND
    assert gc.DEFAULT_BACKEND == AUTO_CPU_BACKEND


def test_leaving_a_set_out_leaves_out_its_collections_on_every_backend(monkeypatch):
    """scifact@torch's training queries are scifact's: a fit that tests on scifact must not
    have seen them on the other backend."""
    import _guard_report as gr

    rng = np.random.default_rng(0)

    def cell(name: str, split: str) -> gr.Cell:
        queries = [f"{name}-{split}-{i}" for i in range(4)]
        return gr.Cell(name, split, "clean", queries, {}, rng.random((4, len(gr.NAMES))),
                       rng.random((4, len(fit.GRID))))

    pools: list[set[str]] = []
    real_pool = gr.pool

    def tracking_pool(chosen: list[gr.Cell]) -> fit.Pool:
        pools.append({c.name for c in chosen})
        return real_pool(chosen)

    def no_fit(pool, names, columns, seed=0, rule=False):  # the fit itself is not under test
        return fit.Guard([names[c] for c in columns], np.zeros(len(columns)),
                         np.ones(len(columns)), np.zeros(len(columns) + 1))

    monkeypatch.setattr(gr, "pool", tracking_pool)
    monkeypatch.setattr(gr.fit, "fit", no_fit)
    tuning = [cell("scifact", "train"), cell("scifact@torch", "train"), cell("nfcorpus", "dev")]
    tests = [cell("scifact", "test"), cell("scifact@torch", "test"), cell("nfcorpus", "test")]
    gr.cross_validate(tests, tuning)
    # Left out in turn: nfcorpus, then scifact (scifact@torch reuses that fit), then none.
    assert pools == [{"scifact", "scifact@torch"}, {"nfcorpus"},
                     {"scifact", "scifact@torch", "nfcorpus"}]
    label = "learned: ADR 22's evidence (query terms, score drops)"
    assert all(label in c.extra and label + gr.ALL_TUNING in c.extra for c in tests)
