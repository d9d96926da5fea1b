"""Fusion: pure functions from several ranked lists to one."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, NamedTuple

__all__ = ["AUTO_WEIGHTS", "RRF_CONSTANT", "FusionFn", "Ranking", "auto", "rrf", "weighted"]

# Cormack, Clarke & Buettcher (SIGIR 2009). Note qdrant-client defaults to 2; we do not.
RRF_CONSTANT = 60


class Ranking(NamedTuple):
    """One ranker's output: ``(id, score)`` pairs, best first, under a name like ``"vector"``."""

    name: str
    hits: list[tuple[str, float]]


# A fusion takes the rankings and returns (id, fused score) pairs, best first.
FusionFn = Callable[[Sequence[Ranking]], list[tuple[str, float]]]


def rrf(
    rankings: Sequence[Ranking],
    *,
    constant: float = RRF_CONSTANT,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: ``score(d) = sum_r w_r / (constant + rank_r(d))``, ranks from 1.

    Ties are broken by id so the output is deterministic.

    >>> a = Ranking("vector", [("x", 0.9), ("y", 0.8)])
    >>> b = Ranking("keyword", [("y", 7.0), ("z", 3.0)])
    >>> [doc for doc, _ in rrf([a, b])]
    ['y', 'x', 'z']
    """
    if constant < 0:
        raise ValueError(f"the RRF constant must be >= 0, got {constant}")
    fused: dict[str, float] = {}
    for ranking in rankings:
        weight = 1.0 if weights is None else float(weights.get(ranking.name, 1.0))
        for rank, (doc, _score) in enumerate(ranking.hits, start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (constant + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def weighted(
    rankings: Sequence[Ranking],
    *,
    weights: Mapping[str, float] | None = None,
    normalize: Literal["minmax", "zscore"] = "minmax",
) -> list[tuple[str, float]]:
    """Score fusion: ``score(d) = sum_r w_r * norm_r(d)``, each ranking's scores mapped to [0, 1].

    ``minmax`` maps a ranking's best listed score to 1 and its worst to 0; ``zscore`` maps
    ``mean - 3 sd`` to 0 and ``mean + 3 sd`` to 1, clipped (the distribution-based score fusion
    of Qdrant's ``dbsf``), so one outlier does not squash the rest. A ranking whose scores are
    all equal gives each listed hit 1. A document a ranking did not list gets 0 from it.
    Ties are broken by id.

    >>> a = Ranking("vector", [("x", 0.9), ("y", 0.5), ("z", 0.1)])
    >>> b = Ranking("keyword", [("z", 12.0), ("y", 2.0)])
    >>> weighted([a, b])
    [('x', 1.0), ('z', 1.0), ('y', 0.5)]
    """
    if normalize not in ("minmax", "zscore"):
        raise ValueError(f"normalize must be 'minmax' or 'zscore', got {normalize!r}")
    fused: dict[str, float] = {}
    for ranking in rankings:
        weight = 1.0 if weights is None else float(weights.get(ranking.name, 1.0))
        scores = [float(score) for _doc, score in ranking.hits]
        normed = _minmax(scores) if normalize == "minmax" else _zscore(scores)
        for (doc, _score), value in zip(ranking.hits, normed):
            fused[doc] = fused.get(doc, 0.0) + weight * value
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def _minmax(scores: list[float]) -> list[float]:
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    if high == low:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def _zscore(scores: list[float]) -> list[float]:
    if not scores:
        return []
    mean = math.fsum(scores) / len(scores)
    sd = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    if sd == 0:
        return [1.0] * len(scores)
    return [min(1.0, max(0.0, (s - mean + 3 * sd) / (6 * sd))) for s in scores]


# The weights of ``fusion="auto"``, the recommended hybrid: RRF (constant RRF_CONSTANT) with a
# weight per ranking. Tuned on training qrels only (SciFact / NFCorpus train); see adr/0009.
AUTO_WEIGHTS: dict[str, float] = {"vector": 1.0, "keyword": 1.0}


def auto(rankings: Sequence[Ranking]) -> list[tuple[str, float]]:
    """The recommended hybrid fusion (``retrieve(..., fusion="auto")``): weighted RRF with
    :data:`AUTO_WEIGHTS` and :data:`RRF_CONSTANT`.

    >>> a = Ranking("vector", [("x", 0.9), ("y", 0.8)])
    >>> b = Ranking("keyword", [("y", 7.0), ("z", 3.0)])
    >>> [doc for doc, _ in auto([a, b])]
    ['y', 'x', 'z']
    """
    return rrf(rankings, constant=RRF_CONSTANT, weights=AUTO_WEIGHTS)
