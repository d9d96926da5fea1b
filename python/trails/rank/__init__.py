"""Ranking: fusion of several rankings into one (more rankers arrive here)."""

from trails.rank.fusion import FusionFn, Ranking, rrf

__all__ = ["FusionFn", "Ranking", "rrf"]

# Post-ranking steps (retrieve(..., steps=[...])): rerankers, diversity, recency, expansion.
from trails.rank.expand import Edge, Neighbourhood, ParentDocument  # noqa: E402
from trails.rank.mmr import MMR, mmr  # noqa: E402
from trails.rank.recency import RecencyDecay  # noqa: E402
from trails.rank.rerank import BaseReranker, CrossEncoderReranker, Reranker  # noqa: E402

__all__ += ["BaseReranker", "CrossEncoderReranker", "Edge", "MMR", "Neighbourhood",  # noqa: PLE0605
            "ParentDocument", "RecencyDecay", "Reranker", "mmr"]
