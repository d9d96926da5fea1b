"""PgVectorStore: vectors in PostgreSQL with pgvector, scored exactly, BM25 in SQL."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trails.errors import ContextLockedError
from trails.recorded import Setting, Settings, Where, with_resilience
from trails.vector.stores.pgvector.core import DSN_ENV, public_dsn
from trails.vector.stores.pgvector.faults import translated
from trails.vector.stores.pgvector.keyword import PgKeywords

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Self

__all__ = ["PgVectorStore", "dsn_to_connect"]

# A writer's advisory lock: trails' class of locks, and the store's meta table (by oid, so the
# same table reached through any search_path is one lock).
_LOCK_CLASS = 0x74726C73
_TRY_LOCK = "SELECT pg_try_advisory_lock(%s, %s::regclass::oid::integer)"

# The settings trails.json records when they differ from these defaults.
_DEFAULTS: dict[str, Setting] = {"pool_min": 1, "pool_max": 4, "connect_timeout": 5.0,
                                 "statement_timeout": 60.0, "hnsw": False, "min_recall": 0.95}


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

    # -- one writing context a table (trails.writer_lock.SharedServer) -----------------

    def hold_writer_lock(self) -> Callable[[], None]:
        """Take this table's writer lock: a session advisory lock, keyed by the table, on a
        connection of its own, held until the returned callable closes it (a process that
        dies ends its session, and the lock with it). A writable context takes it, so two
        context directories (or machines) on one table write one at a time, as two
        processes on one directory do.

        Raises:
            ContextLockedError: another context holds it.
            EndpointUnavailableError: the server cannot be reached.
        """
        with translated(self.location):
            conn = self._psycopg.connect(self._dsn, autocommit=True, **self._options())
            try:
                got = conn.execute(_TRY_LOCK, (_LOCK_CLASS, self.table + "__meta")).fetchone()
            except BaseException:
                conn.close()
                raise
        if not got or not got[0]:
            conn.close()
            raise ContextLockedError(
                f"the PostgreSQL table {self.table!r} on {self.dsn} is open for writing by "
                "another context (another directory, process or machine; one writer at a "
                "time). Close that context, or open this one with read_only=True to read "
                "alongside it.")
        return conn.close  # type: ignore[no-any-return]

    # -- trails.json (trails.recorded.Recordable) ---------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, where: Where) -> Self:
        options: dict[str, Any] = dict(settings)
        options["dsn"] = dsn_to_connect(options.get("dsn"))
        return cls(**options, dim=where.dim, read_only=where.read_only)

    def recorded_settings(self, root: Path) -> Settings | None:
        """The DSN without its password, the table, and the options set otherwise."""
        settings: Settings = {"dsn": self.dsn, "table": self.table}
        for name, default in _DEFAULTS.items():
            if getattr(self, name) != default:
                settings[name] = getattr(self, name)
        return with_resilience(settings, self.resilience)


def dsn_to_connect(recorded: Setting) -> str | None:
    """The DSN to connect with: the recorded one (no password: libpq reads ``PGPASSWORD``
    or ``~/.pgpass``), or ``$TRAILS_PG_DSN`` when it is the same DSN with a password (or
    when nothing is recorded)."""
    full = os.environ.get(DSN_ENV) or None
    if recorded is None or recorded == "":
        return full
    if full is not None and public_dsn(full) == public_dsn(str(recorded)):
        return full
    return str(recorded)
