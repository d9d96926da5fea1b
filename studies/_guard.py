"""The guard study's arithmetic, from cached rankings only (studies/guard_study.py).

Each query's two chunk rankings become one array per normalisation over the union of their
chunks (:class:`Prepared`), so a fusion of the form ``a * f(vector) + b * g(keyword)``,
max-pooled to documents and scored by nDCG@10, costs a few numpy operations: a strategy is
scored on thousands of queries in seconds.

- **Self-hit rule** (ArguAna, as BEIR's and MTEB's ``ignore_identical_ids``): a chunk of the
  document whose id is the query's id is dropped from both rankings *before* fusion and the
  rankings' qualities are recomputed without it, as if the query were not in the corpus.
  Dropping it only when scoring would leave it as the best hit of both rankings, so every
  score-over-best normalisation and quality would read the query's copy of itself.
- nDCG@10 is trec_eval's ``ndcg_cut.10`` (gain = graded relevance, log2 discount, ideal from
  every judged document), checked against ir-measures by ``guard_study.py check``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from _guard_collect import QueryRankings

from trails.rank.fusion import RRF_CONSTANT, AutoFusion, Ranking

DISCOUNT = 1.0 / np.log2(np.arange(2, 12))  # ranks 1..10


# The reference evaluation (max-pooling, then ir-measures) ranks documents of equal score in
# ascending document id; found by the property test in tests/test_guard_study.py, where a
# ranking weighted 0 leaves all its documents tied at 0.
TIES_DESCENDING = False


@dataclass
class Prepared:
    """One query, ready to fuse: arrays over the union of both rankings' chunks."""

    query_id: str
    doc: np.ndarray  # document index per chunk (-1: unknown document)
    gains: np.ndarray  # graded relevance per document index
    ideal: float  # ideal DCG@10
    present: dict[str, np.ndarray]  # "vector"/"keyword": chunk listed by that ranking
    by_best: dict[str, np.ndarray]  # score over best, floored at 0 (AutoFusion's)
    minmax: dict[str, np.ndarray]
    rrf: dict[str, np.ndarray]  # 1 / (60 + rank)
    rankings: list[Ranking]  # after the self-hit rule, qualities recomputed
    raw: QueryRankings


def query_evidence(lists: QueryRankings) -> dict[str, float]:
    """What ``retrieve`` gives the keyword ranking of the query (the guard reads it), from the
    collected terms; rankings cached before the field existed lack it."""
    return {"terms": float(len(lists.term_idfs)), "weight": float(lists.idf_sum)}


def drop_self(lists: QueryRankings, query_id: str, doc_of_chunk: Callable[[str], str | None]
              ) -> list[Ranking]:
    """Both rankings without the query's own document, qualities recomputed (self-hit rule).

    The vector quality is the best remaining cosine; the keyword quality the best remaining
    BM25 score over the query's BM25 weight (``keyword_quality``'s definition)."""
    about = query_evidence(lists)
    out = []
    for ranking in (lists.vector, lists.keyword):
        query = about if ranking.name == "keyword" else None
        hits = [(c, s) for c, s in ranking.hits if doc_of_chunk(c) != query_id]
        if len(hits) == len(ranking.hits):
            out.append(ranking._replace(query=query))
            continue
        if ranking.name == "vector":
            quality = hits[0][1] if hits else None
        elif ranking.quality is None:
            quality = None
        else:
            quality = hits[0][1] / lists.idf_sum if hits and lists.idf_sum > 0 else 0.0
        out.append(Ranking(ranking.name, hits, quality=quality, query=query))
    return out


def prepare(query_id: str, lists: QueryRankings, qrels: Mapping[str, int],
            doc_of: Mapping[str, str], self_hits: bool) -> Prepared:
    """The arrays of one query; ``self_hits``: the data set's queries are documents too."""
    def doc_of_chunk(chunk: str) -> str | None:
        return doc_of.get(chunk.split("/v/", 1)[0])

    rankings = (drop_self(lists, query_id, doc_of_chunk) if self_hits
                else [lists.vector, lists.keyword._replace(query=query_evidence(lists))])
    chunks: dict[str, int] = {}
    for ranking in rankings:
        for chunk, _ in ranking.hits:
            chunks.setdefault(chunk, len(chunks))
    # Document indices in the order the reference evaluation breaks score ties by (document
    # id), so that a stable sort on the pooled scores ranks ties as it does.
    names = {chunk: doc_of_chunk(chunk) for chunk in chunks}
    docs = {name: i for i, name in enumerate(sorted({n for n in names.values() if n is not None},
                                                    reverse=TIES_DESCENDING))}
    doc = np.full(len(chunks), -1, dtype=np.int64)
    for chunk, i in chunks.items():
        name = names[chunk]
        if name is not None:
            doc[i] = docs[name]
    gains = np.array([float(qrels.get(d, 0)) for d in docs] or [0.0])
    ideal_gains = sorted((float(g) for g in qrels.values() if g > 0), reverse=True)[:10]
    ideal = float(np.sum(np.array(ideal_gains) * DISCOUNT[:len(ideal_gains)]))
    present, by_best, minmax, rrf = {}, {}, {}, {}
    for ranking in rankings:
        idx = np.array([chunks[c] for c, _ in ranking.hits], dtype=np.int64)
        scores = np.array([float(s) for _, s in ranking.hits])
        mask = np.zeros(len(chunks), dtype=bool)
        mask[idx] = True
        present[ranking.name] = mask
        by_best[ranking.name] = _spread(idx, _by_best(scores), len(chunks))
        low, high = (scores.min(), scores.max()) if len(scores) else (0.0, 0.0)
        normed = (scores - low) / (high - low) if high > low else np.ones_like(scores)
        minmax[ranking.name] = _spread(idx, normed, len(chunks))
        rrf[ranking.name] = _spread(idx, 1.0 / (RRF_CONSTANT + np.arange(1, len(idx) + 1)),
                                    len(chunks))
    return Prepared(query_id, doc, gains, ideal, present, by_best, minmax, rrf,
                    rankings, lists)


def _by_best(scores: np.ndarray) -> np.ndarray:
    best = scores.max() if len(scores) else 0.0
    if best <= 0 or not math.isfinite(best):
        low = scores.min() if len(scores) else 0.0
        return (scores - low) / (best - low) if best > low else np.ones_like(scores)
    return np.maximum(scores / best, 0.0)


def _spread(idx: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size)
    out[idx] = values
    return out


def ndcg10(p: Prepared, chunk_scores: np.ndarray, listed: np.ndarray | None = None) -> float:
    """nDCG@10 of the documents ranked by their best chunk's score (max-pooling).

    ``listed``: only these chunks take part (a single ranking's own list)."""
    if p.ideal <= 0:
        return 0.0
    keep = p.doc >= 0 if listed is None else (p.doc >= 0) & listed
    if not keep.any():
        return 0.0
    docs, scores = p.doc[keep], chunk_scores[keep]
    best = np.full(int(p.doc.max()) + 1, -np.inf)
    np.maximum.at(best, docs, scores)
    candidates = np.flatnonzero(np.isfinite(best))
    order = candidates[np.argsort(-best[candidates], kind="stable")][:10]
    return float(np.sum(p.gains[order] * DISCOUNT[:len(order)]) / p.ideal)


def single(p: Prepared, name: str) -> float:
    return ndcg10(p, p.by_best[name], p.present[name])


def fused(p: Prepared, w_vector: float, w_keyword: float, norm: str = "by_best") -> float:
    arrays = getattr(p, norm)
    return ndcg10(p, w_vector * arrays["vector"] + w_keyword * arrays["keyword"])


def auto_weights(p: Prepared, fusion: AutoFusion) -> tuple[float, float]:
    weights = fusion.explain(p.rankings)["weights"]
    return float(weights["vector"]), float(weights["keyword"])


def keyword_weight_grid(p: Prepared, grid: Sequence[float]) -> np.ndarray:
    """nDCG@10 of by-best score fusion with keyword share w (vector 1 - w), per w."""
    return np.array([fused(p, 1.0 - w, w) for w in grid])


def bootstrap_gap(a: np.ndarray, b: np.ndarray, resamples: int = 2000,
                  seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``a - b`` over the queries and its paired bootstrap 95% interval."""
    gaps = np.asarray(a) - np.asarray(b)
    rng = np.random.default_rng(seed)
    means = gaps[rng.integers(0, len(gaps), (resamples, len(gaps)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(gaps.mean()), float(low), float(high)


class SoftRampAuto(AutoFusion):
    """The shipped auto with each clipped-linear quality ramp replaced by a logistic one
    through the same points (mid-ramp 0.5; ramp ends about 0.12 and 0.88): no new constant.

    Why: with clipped ramps a query whose two qualities are both below their ramps gets
    confidence 0 for both, the shares fall back to even and the prior weight (vector) decides
    even when the vector ranking is the broken one; a logistic ramp keeps the *relative*
    evidence (how far below its ramp each quality is)."""

    def _confidence(self, ranking: Ranking) -> float:
        ramp = self.quality_ramps.get(ranking.name)
        if ranking.quality is None or ramp is None:
            return 1.0
        if not math.isfinite(ranking.quality):
            return 1.0 if ranking.quality > 0 else 0.0
        low, high = ramp
        x = 4.0 * (ranking.quality - (low + high) / 2) / (high - low)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


soft_auto = SoftRampAuto()
