"""Fusion: rrf and weighted on hand-built lists, and retrieve() fusing vector and keyword."""

from __future__ import annotations

import functools
import math

import pytest

from trails import retrieve
from trails.rank.fusion import AUTO_WEIGHTS, Ranking, auto, rrf, weighted
from trails.vector.sqlite_vec import SqliteVecStore

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


def test_auto_is_weighted_rrf():
    assert auto([VECTOR, KEYWORD]) == rrf([VECTOR, KEYWORD], weights=AUTO_WEIGHTS)


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
        expected = {"rrf": hit.score}
        if hit.iri in v:
            expected |= {"vector_rank": v[hit.iri][0], "vector": v[hit.iri][1]}
        if hit.iri in kw:
            expected |= {"keyword_rank": kw[hit.iri][0], "keyword": kw[hit.iri][1]}
        assert hit.components == expected
        assert hit.score == pytest.approx(sum(1 / (60 + hit.components[f"{n}_rank"])
                                              for n in ("vector", "keyword")
                                              if f"{n}_rank" in hit.components), rel=1e-15)
        assert hit.metadata["text"] == TEXTS[hit.iri]
    # Only three chunks contain a query word: the others rank by vector alone.
    assert len(keyword) == 3 and {h.id for h in keyword} == {"trails://k/1", "trails://k/2",
                                                           "trails://k/3"}


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


def test_vector_mode_and_no_fusion_never_rank_keywords(corpus):
    plain = retrieve(QUERY, corpus, mode="hybrid", k=6)
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


def test_fusion_with_a_noisy_keyword_ranking(ctx):
    """The vector ranking is right and the keyword text is noise: the relevant chunk's
    indexed text lacks the query words, three irrelevant chunks' texts are stuffed with them.

    Recorded behaviour: ``fusion=None`` (vector only) keeps the relevant chunk first; plain
    RRF (and ``auto`` while its weights are equal) lets every irrelevant chunk that both
    rankings list high enough overtake it, exactly as the RRF arithmetic says; it stays in the
    top 5. A fused list can fall below the stronger single signal: tuning ``auto`` on training
    qrels (ADR 0009) is what guards the default hybrid against that.
    """
    relevant = "trails://n/good"
    chunks = {relevant: ("rails ruby web framework", "lorem ipsum dolor sit amet")}
    for i in range(3):
        chunks[f"trails://n/spam{i}"] = (f"elephant zoo animal {i}", "rails ruby framework " * 3)
    for i in range(20):
        chunks[f"trails://n/other{i:02}"] = (f"graph triple store {i}", f"unrelated words {i}")
    ids = list(chunks)
    ctx.vectors.add_many(ids, ctx.embedder.embed_many([chunks[i][0] for i in ids]),
                         [{"text": chunks[i][1]} for i in ids])
    query = "rails ruby framework"

    vector_only = retrieve(query, ctx, k=5)
    assert vector_only[0].iri == relevant
    fused = retrieve(query, ctx, k=5, fusion="rrf")
    position = [h.iri for h in fused].index(relevant) + 1
    ranks = {h.iri: h.components for h in fused}
    overtaking = [i for i, c in ranks.items() if i != relevant and c["rrf"] > 1 / 61]
    assert position == len(overtaking) + 1 and position > 1
    assert all(i.startswith("trails://n/spam") for i in overtaking)
    assert ranks[relevant] == {"vector": vector_only[0].score, "vector_rank": 1, "rrf": 1 / 61}
    assert [h.iri for h in retrieve(query, ctx, k=5, fusion="auto")] == [h.iri for h in fused] \
        or AUTO_WEIGHTS != {"vector": 1.0, "keyword": 1.0}
