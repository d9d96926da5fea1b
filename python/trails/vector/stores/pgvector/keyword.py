"""Keyword (BM25) ranking in PostgreSQL (ADR 0009), on statistics of the caller's scopes.

``<table>__terms`` holds every row's words with their counts (the words of
:func:`trails.text.text_words`: case-folded runs of letters and digits, no stemming; a word
longer than an index entry holds, as its digest: :func:`~.schema.index_term`). One
query computes BM25 (k1 1.2, b 0.75, IDF ``ln((N - n + 0.5) / (n + 0.5))`` floored at 1e-6,
as SQLite FTS5's ``bm25()``) where ``N``, the average length and each term's ``n`` count only
the live rows with a non-empty text of the caller's scopes (every such row without scopes): no scope's words move
another scope's scores. Candidates then restrict the ranking, as they restrict vector search.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from trails.text import keyword_terms
from trails.vector.stores.base import BaseKeywordIndex
from trails.vector.stores.pgvector.schema import held, index_term
from trails.vector.stores.pgvector.search import PgSearch
from trails.vector.stores.records import DocumentIris, VectorHit

__all__ = ["PgKeywords"]

_K1, _B = 1.2, 0.75
# The rows whose statistics count: live, holding text, in the caller's scopes. An empty text
# is none: SqliteVecStore never indexes one, so FTS5 does not count that row either.
_POOL = "SELECT id, body_len FROM {items} WHERE NOT pending AND body <> ''"
_STATS = ("pool AS (" + _POOL + "{scoped}),"
          " stats AS (SELECT count(*)::float8 AS n, coalesce(avg(body_len), 0)::float8 AS avgdl"
          " FROM pool),"
          " df AS (SELECT t.term, count(*)::float8 AS df FROM {terms} t JOIN pool p USING (id)"
          " WHERE t.term = ANY(%s) GROUP BY t.term),"
          " idf AS (SELECT df.term, greatest(ln((s.n - df.df + 0.5) / (df.df + 0.5)), 1e-6)"
          " AS idf FROM df, stats s)")


class PgKeywords(PgSearch, BaseKeywordIndex):
    """:class:`~trails.vector.stores.base.KeywordIndex` and
    :class:`~trails.vector.stores.base.KeywordWeights` on ``<table>__terms``."""

    def _keyword_ranked(self, terms: list[str], k: int, iris: Sequence[str] | None,
                        scopes: list[str] | None, *, with_metadata: bool) -> list[VectorHit]:
        names = None if iris is None else held(iris)
        scope_list = None if scopes is None else held(scopes)
        if names == [] or scope_list == []:
            return []
        stats, params = self._statistics(scope_list, terms)
        clause, restrict = self._live(names, None, isinstance(iris, DocumentIris), "i.")
        statement = self._sql(
            # idf * (tf (k1 + 1) / (tf + k1 (1 - b + b len / avgdl))), added up in the query's
            # term order: SqliteVecStore's (and FTS5's) operations in its order, so the scores
            # are the same to the last bit (idf * tf first rounds another way).
            "WITH " + stats + ", scored AS (SELECT t.id, sum(idf.idf * ((t.tf * %s) / (t.tf + %s"
            " * (%s + %s * p.body_len / nullif(s.avgdl, 0)))) ORDER BY"
            " array_position(%s::text[], t.term)) AS score FROM {terms} t"
            " JOIN pool p USING (id) JOIN idf USING (term) CROSS JOIN stats s GROUP BY t.id)"
            " SELECT i.id, sc.score" + (", i.metadata" if with_metadata else "")
            + " FROM scored sc JOIN {items} i USING (id) WHERE " + clause
            # Ties by id in code-point order, as SQLite orders them, whatever the database's
            # collation (en_US would choose and order the tied rows at the k-th place apart).
            + ' ORDER BY sc.score DESC, i.id COLLATE "C" LIMIT %s')
        rows = self._run(lambda conn: conn.execute(statement, [
            *params, _K1 + 1, _K1, 1 - _B, _B, params[-1], *restrict, k]).fetchall())
        return [VectorHit(r[0], float(r[1]), r[2] if with_metadata else {}) for r in rows]

    def _statistics(self, scopes: list[str] | None, terms: list[str]) -> tuple[str, list[Any]]:
        scoped = "" if scopes is None else " AND scope = ANY(%s)"
        params: list[Any] = ([] if scopes is None else [scopes]) + [[index_term(t) for t in terms]]
        return _STATS.replace("{scoped}", scoped), params

    def keyword_idf_sum(self, query: str, *, stopwords: Iterable[str] | None = None,
                        scopes: Sequence[str] | None = None) -> float:
        """The sum of the query's terms' BM25 IDFs among the live rows of ``scopes`` (every
        live row without them); a term no row holds counts in full. 0.0 for a query without
        words."""
        terms = keyword_terms(query, stopwords)
        if not terms:
            return 0.0
        stats, params = self._statistics(None if scopes is None else held(scopes), terms)
        statement = self._sql(
            "WITH " + stats + " SELECT s.n, coalesce(sum(idf.idf), 0), count(idf.term)"
            " FROM stats s LEFT JOIN idf ON true GROUP BY s.n")
        n, total, found = self._run(lambda conn: conn.execute(statement, params).fetchone())
        missing = len(terms) - int(found)  # a term no row holds: n = 0
        full = max(math.log((n + 0.5) / 0.5), 1e-6)
        return float(total) + missing * full
