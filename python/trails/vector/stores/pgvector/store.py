"""PgVectorStore: vectors in PostgreSQL with pgvector, scored exactly, BM25 in SQL."""

from __future__ import annotations

from trails.vector.stores.pgvector.keyword import PgKeywords

__all__ = ["PgVectorStore"]


class PgVectorStore(PgKeywords):
    """Vectors in a PostgreSQL table (pgvector), searched exactly over SPARQL candidate sets.

    It is a :class:`~trails.vector.stores.base.VectorStore` with every capability: versioned
    commits (one transaction per publish), snapshots (one REPEATABLE READ transaction per
    block), a BM25 keyword index whose statistics are the caller's scopes', and query
    weights for fusion.

    Args:
        dsn: a libpq connection string or URI (``postgresql://user@host:5432/db``); by
            default ``$TRAILS_PG_DSN``. The password comes from the DSN, ``PGPASSWORD`` or
            ``~/.pgpass``; :attr:`dsn` shows the DSN without it.
        table: the name of the store's table (the others take it as a prefix).
        dim: vector dimension; required for a new store, checked against an existing one.
        embedder: optional identity to record (new store) or check (existing store).
        read_only: open an existing store without writing to it (every transaction is
            read-only on the server too).
        pool_min, pool_max: the connection pool's size.
        connect_timeout: seconds to wait for a connection.
        statement_timeout: seconds a statement may run before the server cancels it.
        hnsw: build (and keep) an HNSW index on the embeddings.
        resilience: retries and the circuit breaker (:class:`trails.resilience.Resilience`
            or a mapping of its fields): reads are retried after the server was unavailable,
            writes only when no connection was made (docs/resilience.md).

    Raises:
        EndpointUnavailableError: the server cannot be reached.
        ConfigurationError: no DSN, credentials or database refused, a table that is not a
            store, a missing store opened read-only.
        DimensionMismatchError: ``dim`` differs from the store's dimension.
        EmbeddingModelMismatchError: ``embedder`` differs from the recorded identity.
        MissingExtraError: psycopg is not installed (``pip install "trails[pgvector]"``).
    """

    _new_home = "another table"

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"count={self.count()}"
        return f"<PgVectorStore table={self.table!r} dsn={self.dsn!r} dim={self._dim} {state}>"
