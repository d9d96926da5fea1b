"""Learned guards: a per-query keyword share ``w = sigmoid(theta . z + b)`` over standardised
evidence (``_guard_features``), fused as ``(1 - w) * vector + w * keyword`` (scores over
the best, AutoFusion's normalisation), fitted to maximise mean nDCG@10 on tuning splits.

Each query's nDCG@10 is precomputed at every keyword share of :data:`GRID`, so the objective
is a piecewise-linear interpolation, cheap to evaluate; a handful of parameters is fitted
with Powell's method from a few starts, with a small L2 penalty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

GRID = np.linspace(0.0, 1.0, 21)
L2 = 1e-3


@dataclass
class Pool:
    """Queries to fit or score on: features, nDCG at each grid share, and a group per row
    (data set and variant) so that each group weighs the same in the objective."""

    features: np.ndarray  # (queries, features)
    curve: np.ndarray  # (queries, len(GRID)): nDCG@10 at each keyword share
    group: np.ndarray  # (queries,) group index
    clean: np.ndarray | None = None  # per group: the undamaged cell (for the guard's rule)


@dataclass
class Guard:
    names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    theta: np.ndarray  # weights then bias

    def share(self, features: np.ndarray) -> np.ndarray:
        z = (features - self.mean) / self.scale
        return 1.0 / (1.0 + np.exp(-(z @ self.theta[:-1] + self.theta[-1])))


def interpolate(curve: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Each row's nDCG@10 at its own keyword share (linear between grid points)."""
    position = np.clip(share, 0.0, 1.0) * (len(GRID) - 1)
    low = np.minimum(np.floor(position).astype(int), len(GRID) - 2)
    frac = position - low
    rows = np.arange(len(curve))
    return curve[rows, low] * (1 - frac) + curve[rows, low + 1] * frac


def objective(pool: Pool, share: np.ndarray) -> float:
    """Mean over groups of the group's mean nDCG@10."""
    values = interpolate(pool.curve, share)
    sums = np.bincount(pool.group, weights=values)
    counts = np.bincount(pool.group)
    kept = counts > 0
    return float((sums[kept] / counts[kept]).mean())


def rule_objective(pool: Pool, share: np.ndarray) -> float:
    """tune_auto.py's rule as one number: mean clean nDCG@10 over the clean groups, minus
    RULE_PENALTY times each damaged group's shortfall beyond SHORTFALL_LIMIT below the
    stronger single ranking of that group (share 0 = vector alone, share 1 = keyword alone)."""
    assert pool.clean is not None
    values = interpolate(pool.curve, share)
    counts = np.bincount(pool.group)
    kept = counts > 0
    means = np.bincount(pool.group, weights=values)[kept] / counts[kept]
    stronger = np.maximum(np.bincount(pool.group, weights=pool.curve[:, 0])[kept],
                          np.bincount(pool.group, weights=pool.curve[:, -1])[kept]) / counts[kept]
    clean = pool.clean[kept]
    shortfall = np.maximum(0.0, stronger - means - SHORTFALL_LIMIT)[~clean]
    return float(means[clean].mean() - RULE_PENALTY * shortfall.sum())


SHORTFALL_LIMIT = 0.005  # tune_auto.py's
RULE_PENALTY = 10.0


def fit(pool: Pool, names: Sequence[str], columns: Sequence[int], seed: int = 0,
        rule: bool = False) -> Guard:
    """The guard over ``columns`` of the pool's features that maximises :func:`objective`
    (``rule``: :func:`rule_objective`)."""
    x = pool.features[:, list(columns)]
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale

    def loss(theta: np.ndarray) -> float:
        share = 1.0 / (1.0 + np.exp(-(z @ theta[:-1] + theta[-1])))
        score = rule_objective(pool, share) if rule else objective(pool, share)
        return -score + L2 * float(theta[:-1] @ theta[:-1])

    rng = np.random.default_rng(seed)
    starts = [np.zeros(len(columns) + 1)] + [rng.normal(0, 1, len(columns) + 1)
                                             for _ in range(2)]
    best = min((minimize(loss, s, method="Powell", options={"maxiter": 4000, "xtol": 1e-3,
                                                             "ftol": 1e-6})
                for s in starts), key=lambda r: r.fun)
    return Guard([names[c] for c in columns], mean, scale, np.asarray(best.x))


def fixed_share(pool: Pool) -> float:
    """The one keyword share that maximises the objective (a tuned constant, for contrast)."""
    scores = [objective(pool, np.full(len(pool.curve), w)) for w in GRID]
    return float(GRID[int(np.argmax(scores))])
