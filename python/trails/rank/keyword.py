"""Keyword (BM25) ranking: the quality fusion reads off a keyword ranking.

The tokeniser (``keyword_terms``, ``fts5_match``, ``STOPWORDS``) lives in :mod:`trails.text`,
below the stores that use it; it is re-exported here, where it has always been importable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trails.text import MAX_TERMS, STOPWORDS, fts5_match, keyword_terms
from trails.vector.stores.base import KeywordWeights

__all__ = ["MAX_TERMS", "STOPWORDS", "fts5_match", "keyword_evidence", "keyword_quality",
           "keyword_terms"]


def keyword_quality(query: str, store: object, hits: Sequence[Any],
                    scopes: Sequence[str] | None = None) -> float | None:
    """How much of ``query`` the best keyword hit covers: its BM25 score over the query's
    BM25 weight in ``store`` (``store.keyword_idf_sum``; about 1.0 for a hit holding every
    query term once). 0.0 when nothing matched; None when the store cannot weigh a query
    (it is no :class:`~trails.vector.stores.base.KeywordWeights`) or the query has no weight.
    ``scopes``: the weight among their rows, as the hits were scored (no other scope's words
    may move it).

    Fusion reads it as the keyword ranking's :attr:`~trails.rank.fusion.Ranking.quality`.
    """
    return keyword_evidence(query, store, hits, scopes)[0]


def keyword_evidence(query: str, store: object, hits: Sequence[Any],
                     scopes: Sequence[str] | None = None,
                     ) -> tuple[float | None, dict[str, float] | None]:
    """:func:`keyword_quality` and what the store knows of the query, ``{"terms": distinct
    scored terms, "weight": their summed IDF}`` (None for a store that cannot weigh a
    query), from one ``keyword_idf_sum`` call: the keyword ranking's
    :attr:`~trails.rank.fusion.Ranking.quality` and :attr:`~trails.rank.fusion.Ranking.query`.
    """
    if not isinstance(store, KeywordWeights):
        return None, None
    total = float(store.keyword_idf_sum(query, scopes=scopes))
    about = {"terms": float(len(keyword_terms(query))), "weight": total}
    if not hits:
        return 0.0, about
    return (float(hits[0].score) / total if total > 0 else None), about
