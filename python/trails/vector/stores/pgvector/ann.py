"""The HNSW index, used only where a measured recall holds (ADR 0001, 0026).

An exact answer is always available (search.py scores every candidate). The index
(``hnsw=True``: pgvector's HNSW on inner product) may answer instead only when all of these
hold, and ``SearchPlan.exhaustive`` is then False:

- :meth:`PgAnn.measure_recall` has recorded a recall@k of at least ``min_recall`` (sample
  queries answered by the index and exactly, compared), and the store has not grown past
  twice the rows it was measured on since;
- the search is unfiltered, or broad: its candidates are at least ``ann_share`` of the live
  rows (a narrow filter ranks a small set exactly, which is also faster);
- the index returned as many rows as asked. pgvector filters the index's candidates after the
  walk, so a filter can leave it short: then the exact plan runs (``pg-hnsw+exact-fallback``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from trails.errors import InvalidArgumentError
from trails.vector.stores.pgvector.versions import PgVersions

__all__ = ["PgAnn"]

# ef_search at least this, and at least the rows asked for (pgvector returns at most ef_search).
EF_SEARCH = 100


class PgAnn(PgVersions):
    """The HNSW side of search: the recall measurement and the index query."""

    # Filtered searches whose candidates are at least this share of the live rows are broad.
    ann_share: float = 0.5

    def measure_recall(self, queries: int = 50, k: int = 10) -> float:
        """Measure the index's recall@k on ``queries`` stored vectors used as queries, and
        record it with the live row count: searches use the index only while it is at least
        ``min_recall``. Run it after a large ingest. Returns the recall (1.0 without rows).

        Raises:
            ConfigurationError: the store has no HNSW index (``hnsw=True``) or is read-only.
        """
        if not self.hnsw:
            raise InvalidArgumentError(
                "measure_recall needs the HNSW index: open the store with hnsw=True")
        if queries < 1 or k < 1:
            raise InvalidArgumentError(f"queries and k must be >= 1, got {queries} and {k}")

        def work(conn: Any) -> float:
            rows = int(conn.execute(self._sql(
                "SELECT count(*) FROM {items} WHERE NOT pending")).fetchone()[0])
            sample = conn.execute(self._sql(
                "SELECT embedding FROM {items} WHERE NOT pending ORDER BY md5(id) LIMIT %s"),
                (queries,)).fetchall()
            found = wanted = 0
            for (vector,) in sample:
                exact = self._ordered(conn, vector, "NOT pending", [], k, index=False)
                approximate = self._ordered(conn, vector, "NOT pending", [], k, index=True)
                found += len(set(exact) & set(approximate))
                wanted += len(exact)
            recall = 1.0 if wanted == 0 else found / wanted
            conn.execute(self._sql("UPDATE {meta} SET ann_recall = %s, ann_rows = %s"),
                         (recall, rows))
            return recall

        return self._run(work, write=True)

    def _ordered(self, conn: Any, vector: Any, clause: str, params: list[Any], limit: int, *,
                 index: bool) -> list[str]:
        """Ids of the ``limit`` nearest rows ``clause`` admits, through the index or not."""
        if index:
            return [r[0] for r in self._ann_rows(conn, vector, clause, params, limit, "id")]
        rows = conn.execute(self._sql(
            f"SELECT id FROM {{items}} WHERE {clause}"
            " ORDER BY (embedding <#> %s)::float8, id LIMIT %s"),
            [*params, vector, limit]).fetchall()
        return [r[0] for r in rows]

    @staticmethod
    def _ef(limit: int) -> int:
        return min(1000, max(EF_SEARCH, limit))

    def _ann_statement(self, columns: str, clause: str, prefix: str = "") -> Any:
        """The index walk: the ``ef`` nearest rows by the HNSW index (the inner query has no
        filter, so no other plan can answer it), then ``clause`` and the order among them.
        Parameters: query, ef, the clause's, query, limit."""
        return self._sql(
            f"{prefix}SELECT {columns} FROM (SELECT * FROM {{items}} ORDER BY embedding <#> %s"
            f" LIMIT %s) AS near WHERE {clause} ORDER BY embedding <#> %s LIMIT %s")

    @staticmethod
    @contextlib.contextmanager
    def _through_index(conn: Any, limit: int) -> Iterator[None]:
        """Statements in the block walk the index: ef_search for ``limit`` rows, and no
        sequential scan (on a small or unanalysed table the planner would sort every row,
        and a plan would claim an index that did not run). Both reset after the block."""
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true),"
                     " set_config('enable_seqscan', 'off', true)", (str(PgAnn._ef(limit)),))
        try:
            yield
        finally:
            conn.execute("SELECT set_config('enable_seqscan', 'on', true)")

    def _ann_allowed(self, conn: Any, candidates: int, filtered: bool) -> bool:
        """Whether the index may answer a search over ``candidates`` rows (a ``filtered``
        share of the live rows, else all of them). The live rows are counted only when an
        index with a measured recall could answer: counting reads the whole table."""
        if not self.hnsw:
            return False
        measured = conn.execute(self._sql("SELECT ann_recall, ann_rows FROM {meta}")).fetchone()
        if measured is None or measured[0] is None or measured[0] < self.min_recall:
            return False
        live = candidates if not filtered else int(conn.execute(self._sql(
            "SELECT count(*) FROM {items} WHERE NOT pending")).fetchone()[0])
        if live > 2 * int(measured[1] or 0):
            return False
        return not filtered or candidates >= self.ann_share * live

    def _ann_rows(self, conn: Any, query: Any, clause: str, params: list[Any],
                  limit: int, columns: str) -> list[Any]:
        """The index's ``limit`` nearest rows among those ``clause`` admits (fewer when the
        index walk found fewer of them)."""
        q32 = query.astype(np.float32) if isinstance(query, np.ndarray) else query
        with self._through_index(conn, limit):
            return list(conn.execute(self._ann_statement(columns, clause), [
                q32, self._ef(limit), *params, q32, limit]).fetchall())
