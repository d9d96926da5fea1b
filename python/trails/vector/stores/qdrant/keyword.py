"""Keyword (BM25) search on Qdrant's text index (qdrant-client and server 1.20+; ADR 0009).

Scores are Qdrant's BM25 (default tokenization, no stemming; statistics of every point holding
text, staged ones included). The candidates, scopes and liveness restrict the ranking exactly
as they restrict vector search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trails.errors import ConfigurationError
from trails.vector.stores.base import BaseKeywordIndex
from trails.vector.stores.qdrant import local
from trails.vector.stores.qdrant.lock import locked
from trails.vector.stores.qdrant.schema import KEYWORD_FIELD, metadata_of
from trails.vector.stores.qdrant.search import OVERFETCH, QdrantSearch
from trails.vector.stores.records import VectorHit

__all__ = ["QdrantKeywords"]


class QdrantKeywords(QdrantSearch, BaseKeywordIndex):
    """:class:`~trails.vector.stores.base.KeywordIndex` on the ``KEYWORD_FIELD`` text index."""

    def _check_keyword_support(self) -> None:
        if not hasattr(self._m, "TextQuery"):
            raise ConfigurationError(
                "keyword_search on Qdrant needs qdrant-client 1.20 or later (and a 1.20+ server):"
                ' pip install -U "trails[vector-qdrant]"')

    @locked
    def _keyword_ranked(self, terms: list[str], k: int, iris: Sequence[str] | None,
                        scopes: list[str] | None, *, with_metadata: bool) -> list[VectorHit]:
        # Payloads arrive with the points either way: with_metadata=False saves nothing here.
        text = self._m.TextQuery(text=" ".join(terms))
        points = self._local_points()
        if points is not None:
            return self._local_keyword(points, text, k, iris, scopes)
        flt, limit, hidden = self._live_filter(iris, scopes), k + OVERFETCH, set[str]()
        while True:
            found = self._c.query_points(self.collection, query=text, using=KEYWORD_FIELD,
                                         query_filter=self._hiding(flt, hidden), limit=limit,
                                         with_payload=True).points
            stale = self._superseded(found)
            if stale:
                hidden |= stale
                continue
            ranked = sorted(((p.payload["id"], float(p.score), p) for p in found),
                            key=lambda r: (-r[1], r[0]))
            # Done when every match is here, or the k-th score beats the last one returned (a
            # point left out cannot tie with it, so the order by id is settled).
            if len(found) < limit or ranked[min(k, len(ranked)) - 1][1] > ranked[-1][1]:
                return [VectorHit(id, score, metadata_of(p.payload)) for id, score, p in ranked[:k]]
            limit *= 2

    def _local_keyword(self, points: local.LocalPoints, text: Any, k: int,
                       iris: Sequence[str] | None, scopes: list[str] | None) -> list[VectorHit]:
        """Local mode: qdrant-client ranks every matching point in one query without a filter;
        :func:`local.keyword` keeps the eligible, current ones."""
        ranking = self._c.query_points(self.collection, query=text, using=KEYWORD_FIELD,
                                       limit=max(1, len(points.payload)),
                                       with_payload=["id"]).points
        return local.keyword(points, ((p.payload["id"], float(p.score)) for p in ranking), k,
                             k + OVERFETCH, iris, scopes, self._stale)
