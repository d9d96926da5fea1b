"""Ranking: fusion of several rankings into one (more rankers arrive here)."""

from trails.rank.fusion import FusionFn, Ranking, auto, rrf, weighted
from trails.rank.keyword import keyword_terms

__all__ = ["FusionFn", "Ranking", "auto", "keyword_terms", "rrf", "weighted"]

# Post-ranking steps (retrieve(..., steps=[...])): rerankers, diversity, recency, expansion.
from trails.rank.expand import Edge, Neighbourhood, ParentDocument
from trails.rank.mmr import MMR, mmr
from trails.rank.recency import RecencyDecay
from trails.rank.rerank import BaseReranker, CrossEncoderReranker, Reranker

__all__ += ["MMR", "BaseReranker", "CrossEncoderReranker", "Edge", "Neighbourhood",
            "ParentDocument", "RecencyDecay", "Reranker", "mmr"]
