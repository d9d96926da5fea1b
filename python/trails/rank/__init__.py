"""Ranking: fusion of several rankings into one, keyword signals, and post-ranking steps
(``retrieve(..., steps=[...])``: rerankers, diversity, recency, graph expansion)."""

from trails.rank._steps import Step
from trails.rank.entities import EntityBoost
from trails.rank.expand import Edge, Neighbourhood, ParentDocument
from trails.rank.fusion import FusionFn, Ranking, auto, rrf, weighted
from trails.rank.keyword import keyword_terms
from trails.rank.mmr import MMR, mmr
from trails.rank.recency import RecencyDecay
from trails.rank.rerank import BaseReranker, CrossEncoderReranker, Reranker

__all__ = ["MMR", "BaseReranker", "CrossEncoderReranker", "Edge", "EntityBoost", "FusionFn", "Neighbourhood",
           "ParentDocument", "Ranking", "RecencyDecay", "Reranker", "Step", "auto",
           "keyword_terms", "mmr", "rrf", "weighted"]
