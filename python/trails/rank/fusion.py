"""Fusion: pure functions from several ranked lists to one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

__all__ = ["FusionFn", "RRF_CONSTANT", "Ranking", "rrf"]

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
