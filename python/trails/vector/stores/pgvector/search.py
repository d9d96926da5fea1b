"""Exact search in PostgreSQL (ADR 0001, 0002): the candidates, scopes and liveness go into
the WHERE clause, the rows are ordered by pgvector's inner product and re-scored in float64.

PostgreSQL is asked for ``k + OVERFETCH`` rows in order of ``embedding <#> query`` (cast, so
no index can answer it: every candidate is scored), and for more while the k-th float64 score
is within pgvector's float32 error bound of the last row returned: a row left out can never
belong to the top k, and ties are ordered by id as in every store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from trails.vector.stores.arrays import SEARCH_REFUSED, VectorLike, as_matrix, unit_rows
from trails.vector.stores.matrix import _exact_cosine
from trails.vector.stores.pgvector.ann import PgAnn
from trails.vector.stores.pgvector.schema import as_array, held
from trails.vector.stores.records import DocumentIris, SearchPlan, VectorHit

__all__ = ["OVERFETCH", "Explanation", "PgSearch"]


class Explanation(NamedTuple):
    """How a search ran: its plan, whether the HNSW index answered, PostgreSQL's EXPLAIN."""

    plan: SearchPlan
    indexed: bool
    text: str

# Up to this many candidate names, a semi-join looks each up in the id and doc_iri indexes;
# past it, a hashed subplan matches them in one scan of the table. Measured at 100,000 rows
# (EXPLAIN ANALYZE, docs/benchmarks.md): the lookups cost ~0.05 ms a name, the scan ~5 us a
# row, so they cross near a tenth of the table (10,000 names here); below the crossing the
# lookups win by up to the whole scan (10 names: 5 ms against 330 ms at load 8).
FEW_CANDIDATES = 10_000
# The hashed subplan must fit PostgreSQL's hash memory (work_mem x hash_mem_multiplier: 8 MB
# by default), else the planner scans the names for every row instead: 150,000 names ran past
# a 60 s statement_timeout over 3,000 rows. So names whose hash table may not fit (their
# bytes, and ~48 a name) go back to the semi-join, which has no such cliff (400,000 names:
# 1.8 s at 100,000 rows, where the subplan would be ~2x faster had it fit).
HASHED_BYTES = 4 * 2**20
# Rows fetched beyond k, so near ties at the k-th place can be ordered in float64.
OVERFETCH = 16


class PgSearch(PgAnn):
    """Search, ``expand_ids``, ``all_ids`` and ``scopes``: over live rows only."""

    @staticmethod
    def _live(iris: Sequence[str] | None, scopes: Sequence[str] | None,
              documents_only: bool = False, row: str = "") -> tuple[str, list[Any]]:
        """The WHERE clause for live rows named by ``iris`` (ids, or document IRIs standing
        for their chunks; only the latter with ``documents_only``), in ``scopes``; ``row``
        prefixes the columns (``"i."``)."""
        clauses, params = [f"NOT {row}pending"], list[Any]()
        if iris is not None:
            if documents_only:
                clauses.append(f"{row}doc_iri = ANY(%s)")
                params.append(list(iris))
            elif len(iris) <= FEW_CANDIDATES or _hash_bytes(iris) > HASHED_BYTES:
                # A semi-join on the ids: the names, and the chunks of the documents among
                # them. PostgreSQL looks each up in its index; "= ANY" under OR scans the
                # array for every row once the array is large or the plan generic (1,000
                # names: 0.2-4.5 s where this takes 60-80 ms).
                clauses.append(f"{row}id IN (SELECT unnest(%s::text[]) UNION ALL SELECT d.id"
                               " FROM {items} d WHERE d.doc_iri IN (SELECT unnest(%s::text[])))")
                params.extend([list(iris), list(iris)])
            else:
                # IN (SELECT unnest): a hashed subplan, one pass over the table.
                clauses.append(f"({row}id IN (SELECT unnest(%s::text[])) OR {row}doc_iri IN"
                               " (SELECT unnest(%s::text[])))")
                params.extend([list(iris), list(iris)])
        if scopes is not None:
            clauses.append(f"{row}scope = ANY(%s)")
            params.append(list(scopes))
        return " AND ".join(clauses), params

    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        name, where = self._where(ids, scopes)
        if where is None:
            return [], SearchPlan(name, 0, True)
        clause, params = where
        columns = "id, embedding" + (", metadata" if with_metadata else "")

        def work(conn: Any) -> tuple[list[VectorHit], SearchPlan]:
            candidates = self._count(conn, clause, params)
            if k == 0 or candidates == 0:
                return [], SearchPlan(name, candidates, True)
            fallback = name
            if self._ann_allowed(conn, candidates, ids is not None or scopes is not None):
                limit = min(k + OVERFETCH, candidates)
                rows = self._ann_rows(conn, query, clause, params, limit, columns)
                if len(rows) >= limit:  # else the filter left the index short: score exactly
                    return self._rescored(rows, query)[:k], SearchPlan("pg-hnsw", candidates,
                                                                       False)
                fallback = "pg-hnsw+exact-fallback"
            ranked = self._exact_top(conn, query, k, clause, params, candidates, columns)
            return ranked, SearchPlan(fallback, candidates, True)

        return self._run(work)

    def _where(self, ids: Iterable[str] | None, scopes: Sequence[str] | None,
               ) -> tuple[str, tuple[str, list[Any]] | None]:
        """The exact plan's name and the WHERE clause of the eligible rows (None: none)."""
        documents_only = isinstance(ids, DocumentIris)
        iris = None if ids is None else held(ids)
        scope_list = None if scopes is None else held(scopes)
        name = "pg-exact" if iris is None else "pg-filtered-exact"
        if iris == [] or scope_list == []:
            return name, None
        return name, self._live(iris, scope_list, documents_only)

    def _count(self, conn: Any, clause: str, params: list[Any]) -> int:
        return int(conn.execute(self._sql("SELECT count(*) FROM {items} WHERE " + clause),
                                params).fetchone()[0])

    def explain(self, vector: VectorLike, k: int = 10, ids: Iterable[str] | None = None, *,
                scopes: Sequence[str] | None = None) -> Explanation:
        """How :meth:`search` answers this query: its plan (``pg-exact``,
        ``pg-filtered-exact``, ``pg-hnsw`` or ``pg-hnsw+exact-fallback``), whether the HNSW
        index answered, and PostgreSQL's EXPLAIN of the statement that ranked."""
        given: list[str] | DocumentIris | None = None if ids is None else list(ids)
        if isinstance(ids, DocumentIris):
            given = DocumentIris(ids)
        _hits, plan = self.search_with_plan(vector, k, given, scopes=scopes, with_metadata=False)
        _, where = self._where(given, scopes)
        if where is None or plan.candidates == 0:
            return Explanation(plan, False, "")
        clause, params = where
        query = unit_rows(as_matrix(vector, self._dim, refused=SEARCH_REFUSED))[0].astype(np.float32)
        index = plan.name == "pg-hnsw"
        limit = max(1, k) + OVERFETCH

        def work(conn: Any) -> str:
            if index:
                with self._through_index(conn, limit):
                    rows = conn.execute(self._ann_statement("id", clause, "EXPLAIN "), [
                        query, self._ef(limit), *params, query, limit]).fetchall()
            else:
                rows = conn.execute(self._sql(
                    f"EXPLAIN SELECT id FROM {{items}} WHERE {clause}"
                    " ORDER BY (embedding <#> %s)::float8, id LIMIT %s"),
                    [*params, query, limit]).fetchall()
            return "\n".join(r[0] for r in rows)

        return Explanation(plan, index, self._run(work))

    def _exact_top(self, conn: Any, query: np.ndarray, k: int, clause: str, params: list[Any],
                   candidates: int, columns: str) -> list[VectorHit]:
        """The exact top-k of the rows ``clause`` admits (``columns``: id, embedding and
        perhaps metadata)."""
        err = (self._dim + 2) * 2.0**-23  # pgvector's float32 inner product vs. float64
        q32 = query.astype(np.float32)
        statement = self._sql(
            f"SELECT {columns} FROM {{items}} WHERE {clause}"
            " ORDER BY (embedding <#> %s)::float8, id LIMIT %s")
        limit = min(k + OVERFETCH, candidates)
        while True:
            rows = conn.execute(statement, [*params, q32, limit]).fetchall()
            ranked = self._rescored(rows, query)
            done = len(rows) < limit or limit >= candidates
            if done or ranked[k - 1].score > ranked[-1].score + 2 * err:
                return ranked[:k]
            limit = min(2 * limit, candidates)

    def _rescored(self, rows: Sequence[Any], query: np.ndarray) -> list[VectorHit]:
        """``rows`` (id, embedding[, metadata]) as hits scored in float64, best first."""
        if not rows:
            return []
        matrix = np.stack([as_array(r[1]) for r in rows])
        scores = _exact_cosine(matrix, query).tolist()
        hits = [VectorHit(r[0], s, r[2] if len(r) > 2 else {}) for r, s in zip(rows, scores)]
        return sorted(hits, key=lambda h: (-h.score, h.id))

    def expand_ids(self, iris: Iterable[str]) -> list[str]:
        """Live vector ids named by ``iris``: the ids themselves, or the chunks of document IRIs
        (only the latter for a ``DocumentIris``), sorted."""
        wanted = held(iris)
        if not wanted:
            return []
        clause, params = self._live(wanted, None, isinstance(iris, DocumentIris))
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id FROM {items} WHERE " + clause + " ORDER BY id"), params).fetchall())
        return [r[0] for r in rows]

    def all_ids(self) -> list[str]:
        """Ids of live (published) vectors, sorted."""
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id FROM {items} WHERE NOT pending ORDER BY id")).fetchall())
        return [r[0] for r in rows]

    def scopes(self) -> list[str]:
        """The scopes that hold live vectors."""
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT DISTINCT scope FROM {items} WHERE NOT pending ORDER BY scope")).fetchall())
        return [r[0] for r in rows]


def _hash_bytes(names: Sequence[str]) -> int:
    """About how many bytes a hashed subplan's table of ``names`` takes."""
    return sum(len(name.encode("utf-8")) for name in names) + 48 * len(names)
