"""The guard behind ``fusion="auto"`` (trails.rank.fusion.GuardedFusion): its evidence and
share by hand, its fallback, the direction of the shipped fit, and robustness to any input."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails.rank import _guard_fit
from trails.rank.fusion import (
    EVIDENCE,
    REACH,
    AutoFusion,
    GuardedFusion,
    Ranking,
    auto,
    evidence,
)

VECTOR = Ranking("vector", [("x", 0.8), ("y", 0.6), ("z", 0.4)], quality=0.8)
KEYWORD = Ranking("keyword", [("z", 12.0), ("x", 6.0), ("w", 3.0)], quality=0.75,
                  query={"terms": 3.0, "weight": 16.0})


def test_the_evidence_by_hand():
    found = evidence([VECTOR, KEYWORD])
    assert found == pytest.approx({
        "vector_quality": 0.8,
        "keyword_quality": 0.75,
        "agreement": 2 / 3,  # {x, z} of the smaller top list (3)
        "log_terms": math.log(4.0),
        "idf_per_term": 16.0 / 3,
        "vector_drop": (0.8 - 0.4) / 0.8,  # fewer than 10 hits: the last one
        "keyword_drop": (12.0 - 3.0) / 12.0,
    }, rel=1e-12)
    assert list(found) == list(EVIDENCE)


def test_the_share_and_the_fused_scores_by_hand():
    # Only the vector quality counts, at slope -2 around 0.5: share = 1 / (1 + e^(2 * 0.3)).
    guard = GuardedFusion(center=(0.5,) + (0.0,) * 6, scale=(1.0,) * 7,
                          coefficients=(-2.0,) + (0.0,) * 6, bias=0.0)
    share = 1 / (1 + math.exp(0.6))
    assert guard.explain([VECTOR, KEYWORD])["share"] == pytest.approx(share, rel=1e-12)
    expected = {"x": (1 - share) * 1.0 + share * 0.5,
                "y": (1 - share) * 0.75,
                "z": (1 - share) * 0.5 + share * 1.0,
                "w": share * 0.25}
    fused = guard([VECTOR, KEYWORD])
    assert dict(fused) == pytest.approx(expected, rel=1e-12)
    assert [d for d, _ in fused] == sorted(expected, key=lambda d: -expected[d])
    assert guard.explain([KEYWORD, VECTOR])["weights"] == pytest.approx(
        {"vector": 1 - share, "keyword": share})


@pytest.mark.parametrize("rankings", [
    [VECTOR, KEYWORD._replace(query=None)],  # a store that cannot weigh the query
    [VECTOR, KEYWORD._replace(quality=None)],
    [VECTOR, KEYWORD, Ranking("graph", [("y", 1.0)])],  # three rankings
    [VECTOR, KEYWORD._replace(name="sparse")],  # names the fit knows nothing of
])
def test_rankings_it_has_no_fit_for_fuse_with_the_ramp_guard(rankings):
    assert evidence(rankings) is None
    assert auto(rankings) == AutoFusion()(rankings)
    assert auto.explain(rankings) == AutoFusion().explain(rankings)


def test_a_single_ranking_passes_through():
    assert auto([VECTOR]) == VECTOR.hits
    assert auto([Ranking("keyword", [], quality=0.0, query={"terms": 1.0, "weight": 2.0})]) == []


def test_a_guard_with_the_wrong_number_of_numbers_is_refused():
    with pytest.raises(ValueError, match="needs 7 centers"):
        GuardedFusion(center=(0.0,) * 6)


def test_the_shipped_fit_is_complete_and_leans_the_guard_s_way():
    assert len(_guard_fit.CENTER) == len(_guard_fit.SCALE) == len(_guard_fit.COEFFICIENTS) \
        == len(EVIDENCE)
    assert all(s > 0 for s in _guard_fit.SCALE)
    weight = dict(zip(EVIDENCE, _guard_fit.COEFFICIENTS))
    # A better vector match takes weight from keyword; a better keyword match gives it.
    assert weight["vector_quality"] < 0 < weight["keyword_quality"]


EVIDENCE_VALUES = st.floats(-5, 50, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({n: EVIDENCE_VALUES for n in EVIDENCE}),
       st.floats(0, 1), st.floats(0, 1))
def test_the_shipped_share_falls_with_vector_quality_and_rises_with_keyword_quality(
        found, lower, higher):
    lower, higher = sorted((lower, higher))
    assert auto.share({**found, "vector_quality": higher}) <= \
        auto.share({**found, "vector_quality": lower})
    assert auto.share({**found, "keyword_quality": higher}) >= \
        auto.share({**found, "keyword_quality": lower})
    assert 0.0 <= auto.share(found) <= 1.0


ids = st.sampled_from([f"d{i}" for i in range(30)])
# Scores as stores give them, with the odd value a custom ranker might: negatives, infinities.
scores = st.floats(min_value=-5.0, max_value=50.0, allow_nan=False) | st.just(math.inf)


@st.composite
def rankings(draw, name: str):
    chosen = draw(st.lists(ids, unique=True, max_size=25))
    values = sorted(draw(st.lists(scores, min_size=len(chosen), max_size=len(chosen))),
                    reverse=True)
    quality = draw(st.none() | st.floats(allow_nan=True) | st.floats(0, 2))
    query = ({"terms": float(draw(st.integers(0, 300))), "weight": draw(st.floats(0, 1e4))}
             if name == "keyword" else None)
    return Ranking(name, list(zip(chosen, values)), quality=quality, query=query)


@settings(max_examples=100, deadline=None)  # a pure function of two small rankings
@given(rankings("vector"), rankings("keyword"))
def test_any_two_rankings_fuse_ordered_on_one_scale_and_order_free(vector, keyword):
    fused = auto([vector, keyword])
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    assert all(0.0 <= s <= 1.0 for _, s in fused)
    assert fused == auto([keyword, vector])
    assert {d for d, _ in fused} == {d for d, _ in vector.hits} | {d for d, _ in keyword.hits}
    for (a, sa), (b, sb) in itertools.pairwise(fused):
        assert sa > sb or a < b  # ties by id
    weights = auto.explain([vector, keyword])["weights"]
    assert all(math.isfinite(w) and w >= 0 for w in weights.values())


def test_evidence_far_outside_the_fit_counts_no_more_than_its_reach():
    # A scope where every row holds the query's words: IDF mass near 0, keyword quality huge.
    center = dict(zip(EVIDENCE, _guard_fit.CENTER))
    scale = dict(zip(EVIDENCE, _guard_fit.SCALE))
    at_reach = {**center, "keyword_quality": center["keyword_quality"]
                + REACH * scale["keyword_quality"]}
    assert auto.share({**center, "keyword_quality": 1e6}) == auto.share(at_reach) < 0.99
