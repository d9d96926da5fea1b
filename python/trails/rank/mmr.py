"""Maximal marginal relevance (Carbonell & Goldstein, 1998): relevant and not redundant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from trails.errors import InvalidArgumentError
from trails.rank._steps import (
    H,
    below,
    check_scored,
    check_setting,
    key,
    need_ctx,
    rescored,
    scope_of,
)
from trails.vector.stores.rows import rows_standing_for

if TYPE_CHECKING:
    from trails.parts import ContextParts

__all__ = ["MMR", "Selection", "mmr"]
Relevance = Literal["cosine", "score"]


class Selection(NamedTuple):
    """What :func:`mmr` chose: indices in the order chosen, and each one's marginal value."""

    order: list[int]
    values: list[float]


def mmr(
    query_vec: Sequence[float] | np.ndarray,
    vectors: Sequence[Sequence[float]] | np.ndarray,
    scores: Sequence[float] | np.ndarray | None = None,
    lambda_: float = 0.5,
    k: int | None = None,
) -> Selection:
    """Greedy MMR: repeatedly take ``argmax λ·rel(i) − (1−λ)·max_{j chosen} cos(i, j)``.

    ``rel`` is ``scores`` when given, else the cosine of each vector with ``query_vec``.
    The first pick has no redundancy term, and a negative similarity counts as 0 (opposite
    is not more diverse than unrelated), so values never increase along the order. Ties go
    to the lower index. ``λ = 1`` is plain relevance order, ``λ = 0`` pure diversity.

    >>> mmr([1, 0], [[1, 0], [1, 0], [0, 1]], lambda_=0.3, k=2).order
    [0, 2]
    """
    check_setting("lambda_", lambda_, at_least=0, at_most=1)
    raw = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    n = 0 if raw.size == 0 else len(raw)
    k = n if k is None else max(0, min(k, n))
    matrix = _unit(raw)
    if scores is None:
        relevance = np.zeros(0)
        if n:
            # The query normalised as one more row, and every cosine the same sum: a chunk
            # equal to the query is then exactly as relevant as it is redundant, and ties
            # in exact arithmetic stay ties (two matrix products round differently).
            both = _unit(np.vstack([raw, np.asarray(query_vec, dtype=np.float64)[None, :]]))
            matrix, relevance = both[:n], _cosines(both[:n], both[n])
    else:
        relevance = np.asarray(scores, dtype=np.float64)
        if relevance.shape != (n,):
            raise InvalidArgumentError(f"scores needs one score per vector: {n} vectors, "
                                       f"{relevance.size} scores")
    redundancy = np.zeros(n)  # no redundancy before the first pick, never below 0
    chosen = np.zeros(n, dtype=bool)
    order: list[int] = []
    gains: list[float] = []
    for _ in range(k):
        gain = np.where(chosen, -np.inf, lambda_ * relevance - (1.0 - lambda_) * redundancy)
        best = int(np.argmax(gain))  # first maximum: the lower index wins ties
        order.append(best)
        gains.append(float(gain[best]))
        chosen[best] = True
        redundancy = np.maximum(redundancy, _cosines(matrix, matrix[best]))
    return Selection(order, gains)


def _cosines(matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Each row's dot product with ``unit``, summed alike for every row and every vector."""
    dots: np.ndarray = (matrix * unit).sum(axis=1)
    return dots


def _unit(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    unit: np.ndarray = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return unit


class MMR:
    """A retrieve step that reorders the best ``top_n`` hits by maximal marginal relevance.

    Each hit's stored vector is that of the live row of its scope standing for its IRI (the
    row's ``metadata["iri"]``, else its id: :func:`~trails.vector.stores.rows.rows_standing_for`)
    and the query vector comes from ``ctx.embedder``. The chosen hits get their marginal value as score (component ``mmr``,
    and ``mmr_rank`` from 1), so scores still fall along the list; the original score stays
    in the other components. Hits beyond ``top_n`` and hits without a stored vector keep
    their order below them, each scored no higher than the last chosen hit.

    Args:
        lambda_: 1.0 is relevance only, 0.0 diversity only.
        top_n: how many of the best hits to reorder (None: all the step is given).
        relevance: ``"cosine"`` (query-chunk cosine, on the same scale as the redundancy
            term) or ``"score"`` (the hits' scores, min-max scaled to [0, 1], e.g. after a
            cross-encoder).
    """

    def __init__(self, lambda_: float = 0.5, top_n: int | None = None,
                 relevance: Relevance = "cosine") -> None:
        check_setting("lambda_", lambda_, at_least=0, at_most=1)
        if top_n is not None:
            check_setting("top_n", top_n, integer=True, at_least=1)
        if relevance not in ("cosine", "score"):
            raise InvalidArgumentError(
                f"relevance must be 'cosine' or 'score', got {relevance!r}")
        self.lambda_, self.top_n, self.relevance = lambda_, top_n, relevance

    def __call__(self, query: str, hits: Sequence[H], ctx: ContextParts | None = None) -> list[H]:
        ctx = need_ctx(ctx, "MMR")
        check_scored(hits, "MMR")
        n = len(hits) if self.top_n is None else min(self.top_n, len(hits))
        stored = {(scope_of(row), iri): row.vector
                  for iri, row in rows_standing_for(ctx.vectors, (h.iri for h in hits[:n]))}
        moving = [i for i in range(n) if key(hits[i]) in stored]
        if not moving:
            return list(hits)
        movable = [hits[i] for i in moving]
        moved = set(moving)
        rest = [h for i, h in enumerate(hits) if i not in moved]
        vectors = [stored[key(h)] for h in movable]
        scores = _scaled([h.score for h in movable]) if self.relevance == "score" else None
        chosen = mmr(ctx.embedder.embed(query), vectors, scores, self.lambda_)
        ranked = [rescored(movable[i], value, mmr=value, mmr_rank=rank)
                  for rank, (i, value) in enumerate(zip(chosen.order, chosen.values), 1)]
        return below(ranked, rest)

    def __repr__(self) -> str:
        return f"MMR(lambda_={self.lambda_}, top_n={self.top_n}, relevance={self.relevance!r})"


def _scaled(scores: list[Any]) -> np.ndarray:
    array = np.asarray(scores, dtype=np.float64)
    spread = array.max() - array.min()
    return np.ones_like(array) if spread == 0 else (array - array.min()) / spread
