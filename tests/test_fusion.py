"""Fusion: rrf and weighted on hand-built lists, and retrieve() fusing vector and keyword."""

from __future__ import annotations

import dataclasses
import functools
import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.rank.fusion import AutoFusion, Ranking, auto, rrf, weighted
from trails.rank.keyword import keyword_terms
from trails.vector.stores.sqlite_vec import SqliteVecStore

VECTOR = Ranking("vector", [("x", 0.9), ("y", 0.8), ("z", 0.1)])
KEYWORD = Ranking("keyword", [("z", 5.0), ("w", 3.0), ("x", 1.0)])


# -- rrf ---------------------------------------------------------------------------------


def test_rrf_by_hand():
    fused = rrf([VECTOR, KEYWORD])
    # x: ranks 1 and 3; z: 3 and 1 (an exact tie, broken by id); y: 2; w: 2 (tie again).
    assert fused == [("x", 1 / 61 + 1 / 63), ("z", 1 / 63 + 1 / 61), ("w", 1 / 62), ("y", 1 / 62)]


def test_rrf_weights_and_constant_by_hand():
    fused = rrf([VECTOR, KEYWORD], weights={"keyword": 2.0})
    assert [d for d, _ in fused] == ["z", "x", "w", "y"]
    assert dict(fused) == pytest.approx({"z": 1 / 63 + 2 / 61, "x": 1 / 61 + 2 / 63,
                                         "w": 2 / 62, "y": 1 / 62}, rel=1e-15)
    assert rrf([VECTOR, KEYWORD], constant=0) == [("x", 1 + 1 / 3), ("z", 1 / 3 + 1),
                                                  ("w", 1 / 2), ("y", 1 / 2)]
    assert functools.partial(rrf, constant=0)([VECTOR]) == [("x", 1.0), ("y", 0.5), ("z", 1 / 3)]
    with pytest.raises(ValueError, match="constant"):
        rrf([VECTOR], constant=-1)


# -- auto ------------------------------------------------------------------------------

# Settings fixed here, so the arithmetic below does not move when `auto` is re-tuned.
HAND = AutoFusion(weights={"vector": 0.6, "keyword": 0.4},
                  quality_ramps={"vector": (0.25, 0.45), "keyword": (0.2, 0.8)},
                  agreement_depth=20, agreement_floor=0.3, sharpen=2.0)


def test_auto_by_hand_when_both_rankings_are_confident_and_agree():
    vector = Ranking("vector", [("x", 0.8), ("y", 0.6), ("z", 0.4)], quality=0.8)
    keyword = Ranking("keyword", [("y", 10.0), ("x", 5.0)], quality=1.0)
    why = HAND.explain([vector, keyword])
    # Both above their ramps: confidence 1 each, shares 1/2; {x, y} shared of min(3, 2): 1.0.
    assert why["confidence"] == {"vector": 1.0, "keyword": 1.0}
    assert why["agreement"] == 1.0 and why["power"] == 1.0
    assert why["weights"] == pytest.approx({"vector": 0.3, "keyword": 0.2})
    # score / best score, weighted: x 0.3 + 0.2 * 0.5, y 0.3 * 0.75 + 0.2, z 0.3 * 0.5.
    fused = HAND([vector, keyword])
    assert [d for d, _ in fused] == ["y", "x", "z"]
    assert dict(fused) == pytest.approx({"x": 0.4, "y": 0.425, "z": 0.15}, rel=1e-12)


def test_auto_ramps_and_sharpening_by_hand():
    # keyword quality 0.35 on the ramp (0.2, 0.8): confidence 0.25; vector 0.45: 1.
    vector = Ranking("vector", [(f"v{i}", 0.45 - i / 100) for i in range(20)], quality=0.45)
    keyword = Ranking("keyword", [(f"k{i}", 9.0 - i / 10) for i in range(20)], quality=0.35)
    why = HAND.explain([vector, keyword])
    assert why["confidence"] == pytest.approx({"vector": 1.0, "keyword": 0.25})
    # No id in common: agreement 0, so weight x share (0.6 x 0.8, 0.4 x 0.2) is raised to
    # the power 1 + 2 = 3.
    assert why["agreement"] == 0.0 and why["power"] == pytest.approx(3.0)
    assert why["weights"] == pytest.approx({"vector": 0.48**3, "keyword": 0.08**3})


def test_auto_passes_a_single_ranking_through():
    assert auto([VECTOR]) == VECTOR.hits
    assert auto([Ranking("keyword", [])]) == []


def test_auto_without_qualities_is_a_fixed_weighted_fusion():
    # No quality: confidence 1 each; agreement: {x, z} of min(3, 3) = 2/3 > floor, power 1.
    fused = HAND([VECTOR, KEYWORD])
    expected = {"x": 0.3 + 0.2 * 0.2, "y": 0.3 * 0.8 / 0.9, "z": 0.3 / 9 + 0.2,
                "w": 0.2 * 0.6}
    assert dict(fused) == pytest.approx(expected, rel=1e-12)
    assert [d for d, _ in fused] == sorted(expected, key=lambda d: -expected[d])


ids = st.sampled_from([f"d{i}" for i in range(30)])
scores = st.floats(min_value=0.0, max_value=50.0, allow_nan=False, allow_subnormal=False)


ANY_QUALITY = st.none() | st.floats(0, 2)


@st.composite
def rankings(draw, name: str, quality=ANY_QUALITY):
    chosen = draw(st.lists(ids, unique=True, max_size=25))
    values = sorted(draw(st.lists(scores, min_size=len(chosen), max_size=len(chosen))),
                    reverse=True)
    return Ranking(name, list(zip(chosen, values)), quality=draw(quality))


# That any two rankings fuse ordered, on one scale and whatever their order, is
# tests/test_guard.py's property (with the queries the guard reads).


@settings(max_examples=200, deadline=None)
@given(rankings("vector", quality=st.floats(0.5, 1.0)),
       rankings("keyword", quality=st.floats(0.0, 0.2)))
def test_a_ranking_with_no_confidence_cannot_change_the_order(vector, keyword):
    """Keyword quality at or under its ramp's low end: the fused order is the vector order
    (ties by id), and documents only the keyword ranking lists come after, at 0."""
    fused = HAND([vector, keyword])
    if not vector.hits or vector.hits[0][1] <= 0:
        return  # nothing for the vector ranking to order
    positive = [d for d, s in sorted(vector.hits, key=lambda p: (-p[1], p[0])) if s > 0]
    assert [d for d, _ in fused[: len(positive)]] == positive
    assert all(s == 0 for d, s in fused[len(positive):])


def test_auto_settings_are_configurable():
    keyword_only = AutoFusion(weights={"vector": 0.0, "keyword": 1.0})
    assert [d for d, _ in keyword_only([VECTOR, KEYWORD])][:2] == ["z", "w"]
    with pytest.raises(TypeError):
        AutoFusion().weights["vector"] = 1.0  # a shared instance cannot be changed by accident
    with pytest.raises(dataclasses.FrozenInstanceError):
        auto.bias = 1.0  # type: ignore[misc]
    tuned = AutoFusion(quality_ramps={"vector": (0.5, 0.9)}, sharpen=4.0)
    assert pickle.loads(pickle.dumps(tuned)) == tuned  # e.g. for a process pool
    assert pickle.loads(pickle.dumps(auto)) == auto


# -- weighted ----------------------------------------------------------------------------


def test_weighted_minmax_by_hand():
    # vector: x 1, y (0.8-0.1)/0.8 = 0.875, z 0; keyword: z 1, w 0.5, x 0; absent = 0.
    fused = weighted([VECTOR, KEYWORD])
    assert [d for d, _ in fused] == ["x", "z", "y", "w"]
    assert dict(fused) == pytest.approx({"x": 1.0, "z": 1.0, "y": 0.875, "w": 0.5}, rel=1e-12)
    halved = weighted([VECTOR, KEYWORD], weights={"vector": 0.5})
    assert [d for d, _ in halved] == ["z", "w", "x", "y"]  # w and x tie at 0.5: by id
    assert dict(halved) == pytest.approx({"z": 1.0, "w": 0.5, "x": 0.5, "y": 0.4375}, rel=1e-12)


def test_weighted_zscore_by_hand():
    sv = math.sqrt((0.3**2 + 0.2**2 + 0.5**2) / 3)  # vector: mean 0.6
    sk = math.sqrt(8 / 3)  # keyword: mean 3

    def scaled(s, mean, sd):  # mean - 3 sd -> 0, mean + 3 sd -> 1
        return (s - mean + 3 * sd) / (6 * sd)

    zv = {d: scaled(s, 0.6, sv) for d, s in VECTOR.hits}
    zk = {d: scaled(s, 3.0, sk) for d, s in KEYWORD.hits}
    expected = {"x": zv["x"] + zk["x"], "y": zv["y"], "z": zv["z"] + zk["z"], "w": zk["w"]}
    fused = weighted([VECTOR, KEYWORD], normalize="zscore")
    assert [d for d, _ in fused] == ["z", "x", "y", "w"]
    assert dict(fused) == pytest.approx(expected, rel=1e-12)
    assert dict(fused)["w"] == pytest.approx(0.5, rel=1e-12)  # the keyword mean


def test_weighted_edge_cases():
    assert weighted([]) == []
    assert weighted([Ranking("vector", [])]) == []
    assert weighted([Ranking("keyword", [("a", 3.0), ("b", 3.0)])]) == [("a", 1.0), ("b", 1.0)]
    assert weighted([Ranking("v", [("a", 2.0)])], normalize="zscore") == [("a", 1.0)]
    # An outlier: 3-sigma scaling keeps the others apart, and clips it at 1.
    spread = weighted([Ranking("v", [("a", 100.0)] + [(f"b{i}", float(i)) for i in range(19)])],
                      normalize="zscore")
    assert spread[0] == ("a", 1.0) and 0 < spread[-1][1] < spread[-2][1]
    with pytest.raises(ValueError, match="minmax"):
        weighted([VECTOR], normalize="rank")


# -- retrieve() fuses the vector and keyword rankings -------------------------------------

TEXTS = {
    "trails://k/1": "Rails is a web framework written in Ruby",
    "trails://k/2": "Ruby gems are installed with bundler",
    "trails://k/3": "Rails routing maps URLs to controllers",
    "trails://k/4": "Elephants are grey and very large",
    "trails://k/5": "Graph databases store triples",
    "trails://k/6": "Vectors and embeddings power search",
}
QUERY = "ruby rails routing"


@pytest.fixture
def corpus(ctx):
    ids = list(TEXTS)
    ctx.vectors.add_many(ids, ctx.embedder.embed_many([TEXTS[i] for i in ids]),
                         [{"text": TEXTS[i], "doc_iri": f"trails://k/doc{int(i[-1]) % 2}"}
                          for i in ids])
    ctx.kg.update("INSERT DATA { " + " ".join(
        f"<{i}> a trails:Chunk ; trails:position {n} ." for n, i in enumerate(ids)) + " }")
    return ctx


def expected_rrf(ctx, query, k, ids=None):
    vector = ctx.vectors.search(ctx.embedder.embed(query), 100, ids, scopes=["default"])
    keyword = ctx.vectors.keyword_search(query, 100, ids, scopes=["default"])
    return vector, keyword, rrf([Ranking("vector", [(h.id, h.score) for h in vector]),
                                 Ranking("keyword", [(h.id, h.score) for h in keyword])])[:k]


def test_hybrid_rrf_fuses_vector_and_keyword_with_components(corpus):
    result = retrieve(QUERY, corpus, mode="hybrid", k=4, fusion="rrf")
    vector, keyword, fused = expected_rrf(corpus, QUERY, 4)
    assert [(h.iri, h.score) for h in result] == fused
    assert result.rankings == ("vector", "keyword") and result.notes == ()
    assert "fused vector+keyword" in result.explain()
    v = {h.id: (rank, h.score) for rank, h in enumerate(vector, 1)}
    kw = {h.id: (rank, h.score) for rank, h in enumerate(keyword, 1)}
    for hit in result:
        # The rrf score by hand: 1 / (60 + rank) summed over the store's own two rankings.
        ranks = [ranking[hit.iri][0] for ranking in (v, kw) if hit.iri in ranking]
        expected = {"rrf": pytest.approx(sum(1 / (60 + rank) for rank in ranks), rel=1e-15)}
        if hit.iri in v:
            expected |= {"vector_rank": v[hit.iri][0], "vector": v[hit.iri][1]}
        if hit.iri in kw:
            expected |= {"keyword_rank": kw[hit.iri][0], "keyword": kw[hit.iri][1]}
        assert hit.components == expected
        assert hit.score == hit.components["rrf"]
        assert hit.metadata["text"] == TEXTS[hit.iri]
    # Only three chunks contain a query word: the others rank by vector alone.
    assert len(keyword) == 3 and {h.id for h in keyword} == {"trails://k/1", "trails://k/2",
                                                           "trails://k/3"}


@pytest.mark.parametrize("ids", [None, ["trails://k/1", "trails://k/3", "trails://k/4",
                                         "trails://k/5"]])
def test_default_hybrid_is_auto_over_the_exact_rankings(corpus, ids):
    """retrieve()'s default fusion is auto over the exact vector and keyword rankings of the
    candidates, with the qualities it documents (the best cosine, and the best BM25 score
    over the query's IDF sum) and the query's term count and IDF sum."""
    values = " ".join(f"<{i}>" for i in ids or ())
    flt = None if ids is None else f"SELECT ?c WHERE {{ VALUES ?c {{ {values} }} }}"
    result = retrieve(QUERY, corpus, k=4, sparql_filter=flt)
    vector = corpus.vectors.search(corpus.embedder.embed(QUERY), 300, ids, scopes=["default"])
    keyword = corpus.vectors.keyword_search(QUERY, 300, ids, scopes=["default"])
    weight = corpus.vectors.keyword_idf_sum(QUERY)
    rankings = [Ranking("vector", [(h.id, h.score) for h in vector], quality=vector[0].score),
                Ranking("keyword", [(h.id, h.score) for h in keyword],
                        quality=keyword[0].score / weight,
                        query={"terms": float(len(keyword_terms(QUERY))), "weight": weight})]
    assert [(h.iri, h.score) for h in result] == auto(rankings)[:4]
    assert result.fusion_weights == auto.explain(rankings)["weights"]
    assert all(ids is None or h.iri in ids for h in result)


def test_keyword_ranking_is_restricted_to_the_filter_candidates(corpus):
    flt = "SELECT ?c WHERE { ?c a trails:Chunk ; trails:position ?p FILTER(?p >= 2) }"
    result = retrieve(QUERY, corpus, mode="hybrid", k=6, fusion="rrf", sparql_filter=flt)
    allowed = list(TEXTS)[2:]
    assert {h.iri for h in result} == set(allowed)
    _, keyword, fused = expected_rrf(corpus, QUERY, 6, allowed)
    assert [h.id for h in keyword] == ["trails://k/3"]
    assert [(h.iri, h.score) for h in result] == fused


@pytest.mark.parametrize("fusion, key", [("weighted", "weighted"), ("auto", "auto"),
                                          (functools.partial(rrf, constant=1), "fused")])
def test_other_fusions_name_their_score(corpus, fusion, key):
    result = retrieve(QUERY, corpus, mode="hybrid", k=3, fusion=fusion)
    assert len(result) == 3
    assert all(h.components[key] == h.score for h in result)
    assert all("keyword_rank" in h.components or "vector_rank" in h.components for h in result)


def test_hybrid_fuses_by_default_with_auto(corpus):
    default = retrieve(QUERY, corpus, k=6)
    explicit = retrieve(QUERY, corpus, mode="hybrid", k=6, fusion="auto")
    assert default.rankings == ("vector", "keyword") and default == explicit
    assert all(h.components["auto"] == h.score for h in default)
    assert set(default.fusion_weights) == {"vector", "keyword"}
    assert "weights vector" in default.explain()
    # vector mode: one ranking, cosine scores, no fusion weights
    plain = retrieve(QUERY, corpus, mode="vector", k=6)
    assert plain.rankings == () and not plain.fusion_weights and result_has_no_keyword(plain)


def test_vector_mode_and_no_fusion_never_rank_keywords(corpus):
    plain = retrieve(QUERY, corpus, mode="hybrid", k=6, fusion=None)
    assert result_has_no_keyword(plain) and plain.rankings == ()
    assert [h.score for h in plain] == sorted((h.score for h in plain), reverse=True)
    fused = retrieve(QUERY, corpus, mode="vector", k=6, fusion="rrf")
    assert result_has_no_keyword(fused) and fused.rankings == ("vector",)


def result_has_no_keyword(result) -> bool:
    return all("keyword" not in h.components for h in result)


class NoKeywordStore(SqliteVecStore):
    keyword_search = None  # a store without a keyword index


def test_a_store_without_keywords_fuses_the_vector_ranking_alone_with_a_note(ctx):
    store = NoKeywordStore(dim=ctx.embedder.dim)
    ids = list(TEXTS)
    store.add_many(ids, ctx.embedder.embed_many([TEXTS[i] for i in ids]))
    result = retrieve(QUERY, vector_store=store, embedder=ctx.embedder, k=3, fusion="rrf")
    assert result.rankings == ("vector",)
    assert result.notes and "keyword ranking skipped" in result.notes[0]
    assert "keyword ranking skipped" in result.explain()
    assert [h.components["rrf"] for h in result] == [1 / 61, 1 / 62, 1 / 63]


# -- one poor ranking: keyword text that is noise ----------------------------------------


def add_chunks(ctx, chunks: dict[str, tuple[str, str]]) -> None:
    """Chunks whose vector is embedded from one text and whose keyword text is another."""
    ids = list(chunks)
    ctx.vectors.add_many(ids, ctx.embedder.embed_many([chunks[i][0] for i in ids]),
                         [{"text": chunks[i][1]} for i in ids])


def test_fusion_with_a_noisy_keyword_ranking(ctx):
    """The vector ranking is right and the keyword text is noise: the relevant chunk's
    indexed text lacks the query words, three irrelevant chunks' texts are stuffed with them.

    Recorded behaviour: ``fusion=None`` (vector only) keeps the relevant chunk first; plain
    RRF lets every irrelevant chunk that both rankings list high enough overtake it, exactly
    as the RRF arithmetic says; it stays in the top 5. Text stuffed with the query's words
    looks like a perfect keyword match, so no fusion can tell it from one (``auto`` included):
    the guard below is for keyword text that matches little of the query.
    """
    relevant = "trails://n/good"
    add_chunks(ctx, {
        relevant: ("rails ruby web framework", "lorem ipsum dolor sit amet"),
        **{f"trails://n/spam{i}": (f"elephant zoo animal {i}", "rails ruby framework " * 3)
           for i in range(3)},
        **{f"trails://n/other{i:02}": (f"graph triple store {i}", f"unrelated words {i}")
           for i in range(20)}})
    query = "rails ruby framework"

    vector_only = retrieve(query, ctx, k=5, fusion=None)
    assert vector_only[0].iri == relevant
    fused = retrieve(query, ctx, k=5, fusion="rrf")
    position = [h.iri for h in fused].index(relevant) + 1
    ranks = {h.iri: h.components for h in fused}
    overtaking = [i for i, c in ranks.items() if i != relevant and c["rrf"] > 1 / 61]
    assert position == len(overtaking) + 1 and position > 1
    assert all(i.startswith("trails://n/spam") for i in overtaking)
    assert ranks[relevant] == {"vector": vector_only[0].score, "vector_rank": 1, "rrf": 1 / 61}


def test_auto_keeps_the_vector_order_when_the_keyword_text_matches_little(ctx):
    """The keyword index holds noise (as OCR or typos make it): the relevant chunk's text lost
    the query's words, and two irrelevant chunks keep one of them. RRF lets both overtake the
    relevant chunk; ``auto`` sees that the best keyword match covers a third of the query's
    BM25 weight, gives the keyword ranking little weight and keeps the vector order on top."""
    relevant = "trails://n/good"
    add_chunks(ctx, {
        relevant: ("rails ruby web framework", "lorem ipsum dolor sit amet"),
        **{f"trails://n/junk{i}": (f"elephant zoo animal {i}", f"rails qwzx vbnm {i}")
           for i in range(2)},
        **{f"trails://n/other{i:02}": (f"graph triple store {i}", f"plkj hgfd {i}")
           for i in range(25)}})
    query = "rails ruby framework"
    vector_only = [h.iri for h in retrieve(query, ctx, k=3, fusion=None)]
    assert vector_only[0] == relevant
    by_rrf = [h.iri for h in retrieve(query, ctx, k=3, fusion="rrf")]
    assert by_rrf[:2] == ["trails://n/junk0", "trails://n/junk1"] or \
        by_rrf[:2] == ["trails://n/junk1", "trails://n/junk0"]
    fused = retrieve(query, ctx, k=3)
    assert [h.iri for h in fused] == vector_only
    quality = ctx.vectors.keyword_search(query, 1)[0].score / ctx.vectors.keyword_idf_sum(query)
    assert 0.2 < quality < 0.5
    assert fused.fusion_weights["keyword"] < fused.fusion_weights["vector"] / 4
