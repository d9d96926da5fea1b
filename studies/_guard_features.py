"""Per-query evidence a guard could read, from the two rankings alone (no qrels).

Every feature is computed after the self-hit rule (``_guard.prepare``), from what a live
``retrieve`` call also has: the two chunk rankings with their scores and qualities, the
query text's length, and its terms' IDFs in the store.
"""

from __future__ import annotations

import math

import numpy as np
from _guard import Prepared

from trails.rank.fusion import Ranking, evidence

FEATURES = {
    "vector_quality": "best cosine (the shipped vector quality)",
    "keyword_quality": "best BM25 over the query's BM25 weight (the shipped keyword quality)",
    "keyword_quality_top5": "best BM25 over the summed IDF of the query's 5 rarest terms "
                            "(coverage that does not fall with query length)",
    "agreement20": "share of the top-20 chunks both rankings list (the shipped agreement)",
    "doc_overlap10": "share of the top-10 documents both rankings list",
    "vector_top_in_keyword10": "the vector ranking's best document is in keyword's top 10",
    "keyword_top_in_vector10": "the keyword ranking's best document is in vector's top 10",
    "vector_drop10": "(cosine 1 - cosine 10) / cosine 1: how far the vector top stands out",
    "keyword_drop10": "(BM25 1 - BM25 10) / BM25 1: how far the keyword top stands out",
    "vector_margin": "cosine 1 - mean cosine of ranks 2..20, over their spread (a z-score)",
    "keyword_margin": "BM25 1 - mean BM25 of ranks 2..20, over their spread (a z-score)",
    "keyword_listed": "share of the 300 keyword slots filled (few: few documents match)",
    "log_words": "log of the query's word count",
    "log_terms": "log of the query's distinct non-stopword terms",
    "mean_idf": "mean IDF of the query's terms",
    "idf_per_term": "the query's BM25 weight (keyword_idf_sum) over its term count: mean_idf "
                    "as one store call gives it (the shipped guard reads this one)",
    "max_idf": "largest IDF of a query term",
    "min_idf": "smallest IDF of a query term",
    "rare_share": "share of query terms with IDF above 5 (rare words, names)",
    "keyword_endorsed": "mean cosine over the best cosine of keyword's top 5 chunks: does "
                        "the meaning vouch for the words' top",
    "vector_endorsed": "mean BM25 over the best BM25 of vector's top 5 chunks: do the words "
                       "vouch for the meaning's top",
}


def features(p: Prepared) -> dict[str, float]:
    """The evidence of one query, named as :data:`FEATURES`."""
    vector, keyword = p.rankings
    v = np.array([s for _, s in vector.hits])
    k = np.array([s for _, s in keyword.hits])
    v_docs, k_docs = _top_docs(p, "vector", 10), _top_docs(p, "keyword", 10)
    idfs = np.array(p.raw.term_idfs or [0.0])
    # The guard's own evidence, as retrieve computes it (public: trails.rank.fusion.evidence).
    shipped = evidence(p.rankings) or dict.fromkeys(("agreement", "vector_drop", "keyword_drop"), 0.0)
    return {
        "vector_quality": float(vector.quality or 0.0),
        "keyword_quality": float(keyword.quality or 0.0),
        "keyword_quality_top5": _top_terms_quality(keyword, p.raw.term_idfs, 5),
        "agreement20": shipped["agreement"],
        "doc_overlap10": len(set(v_docs) & set(k_docs)) / 10,
        "vector_top_in_keyword10": float(bool(v_docs) and v_docs[0] in k_docs),
        "keyword_top_in_vector10": float(bool(k_docs) and k_docs[0] in v_docs),
        "vector_drop10": shipped["vector_drop"],
        "keyword_drop10": shipped["keyword_drop"],
        "vector_margin": _margin(v),
        "keyword_margin": _margin(k),
        "keyword_listed": len(k) / 300,
        "log_words": math.log1p(p.raw.words),
        "log_terms": math.log1p(len(p.raw.term_idfs)),
        "mean_idf": float(idfs.mean()),
        "idf_per_term": p.raw.idf_sum / len(p.raw.term_idfs) if p.raw.term_idfs else 0.0,
        "max_idf": float(idfs.max()),
        "min_idf": float(idfs.min()),
        "rare_share": float((idfs > 5).mean()),
        "keyword_endorsed": _endorsement(keyword, vector),
        "vector_endorsed": _endorsement(vector, keyword),
    }


def _endorsement(ranking: Ranking, other: Ranking, depth: int = 5) -> float:
    """The mean score over the best that ``other`` gives ``ranking``'s top ``depth`` hits: how
    far the other ranking vouches for this one's top. A hit ``other`` does not list scores 0
    when ``other`` lists fewer hits (it listed every one it matches), else ``other``'s lowest
    listed score (the hit ranks below all of them). Both lists are 300 deep, as in retrieve.

    >>> words = Ranking("keyword", [("a", 8.0), ("b", 4.0)])
    >>> meaning = Ranking("vector", [("b", 0.8), ("c", 0.6), ("d", 0.4)])
    >>> _endorsement(words, meaning)  # a: unlisted in the longer list, its floor 0.5
    0.75
    >>> _endorsement(meaning, words)  # c, d: unlisted in the shorter list, 0
    0.16666666666666666
    """
    if not ranking.hits:
        return 0.0
    scored = dict(zip((doc for doc, _ in other.hits), _over_best(other.hits)))
    floor = min(scored.values()) if scored and len(other.hits) >= len(ranking.hits) else 0.0
    top = ranking.hits[:depth]
    return sum(scored.get(doc, floor) for doc, _ in top) / len(top)


def _over_best(hits: list[tuple[str, float]]) -> list[float]:
    """Scores over the best, floored at 0 (all 0 when the best is not positive)."""
    best = max((score for _, score in hits), default=0.0)
    return [max(0.0, score / best) if best > 0 else 0.0 for _, score in hits]


def _top_terms_quality(keyword: Ranking, idfs: list[float], n: int) -> float:
    weight = sum(sorted(idfs, reverse=True)[:n])
    return keyword.hits[0][1] / weight if keyword.hits and weight > 0 else 0.0


def _top_docs(p: Prepared, name: str, n: int) -> list[int]:
    listed = np.flatnonzero(p.present[name] & (p.doc >= 0))
    order = listed[np.argsort(-p.by_best[name][listed], kind="stable")]
    return list(dict.fromkeys(int(d) for d in p.doc[order]))[:n]


def _margin(scores: np.ndarray) -> float:
    rest = scores[1:20]
    if len(rest) < 2 or rest.std() == 0:
        return 0.0
    return float((scores[0] - rest.mean()) / rest.std())
