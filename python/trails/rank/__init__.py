"""Ranking: fusion of several rankings into one (more rankers arrive here)."""

from trails.rank.fusion import FusionFn, Ranking, rrf

__all__ = ["FusionFn", "Ranking", "rrf"]
