"""PgVectorStore: the vector store on PostgreSQL with pgvector (ADR 0026).

One concern per module: ``schema`` (tables, rows), ``faults`` (psycopg's failures in trails'
words, the resilience policy), ``core`` (pool, transactions, writes, reads by id and by
metadata), ``versions`` (versioned commits, snapshots), ``search`` (exact search), ``keyword``
(BM25 in SQL) and ``store``.
"""

from trails.vector.stores.pgvector.core import DSN_ENV
from trails.vector.stores.pgvector.search import OVERFETCH
from trails.vector.stores.pgvector.store import PgVectorStore

__all__ = ["DSN_ENV", "OVERFETCH", "PgVectorStore"]
