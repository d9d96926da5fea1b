"""PgVectorStore: vectors in PostgreSQL with pgvector, scored exactly, BM25 in SQL."""

from __future__ import annotations

import contextlib
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
_UNLOCK = "SELECT pg_advisory_unlock(%s, %s::regclass::oid::integer)"
_HELD = ("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid AND objid ="
         " %s::regclass::oid AND objsubid = 2 AND pid = %s AND granted")
_LOCKER = "trails writer lock"
# The lock connections' sockets: a forked child closes its copies (never the sessions), so a
# parent that dies ends its session even while a child lives on.
_LOCK_SOCKETS: set[int] = set()


def _forked_child() -> None:
    for fd in _LOCK_SOCKETS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _LOCK_SOCKETS.clear()


os.register_at_fork(after_in_child=_forked_child)

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
        connection of its own, held until the returned callable lets it go (a process that
        dies ends its session, and the lock with it). A writable context takes it, so two
        context directories (or machines) on one table write one at a time, as two
        processes on one directory do. While it is held, every write checks in its own
        transaction that the lock's session still holds it (a server restart or a cut
        connection ends it, and another context may then take it): if not, nothing is
        written and the write raises ``ContextLockedError``. A read-only store takes none.

        Raises:
            ContextLockedError: another context holds it.
            EndpointUnavailableError: the server cannot be reached.
        """
        if self.read_only:
            return lambda: None
        meta = self.table + "__meta"
        with translated(self.location):
            conn = self._psycopg.connect(self._dsn, autocommit=True,
                                         **{**self._options(), "application_name": _LOCKER})
            try:
                got = conn.execute(_TRY_LOCK, (_LOCK_CLASS, meta)).fetchone()
            except BaseException:
                conn.close()
                raise
        if not got or not got[0]:
            conn.close()
            raise ContextLockedError(
                f"the PostgreSQL table {self.table!r} on {self.dsn} is open for writing by "
                "another context (another directory, process or machine; one writer at a "
                "time). Close that context, or open this one with read_only=True to read "
                f"alongside it. Its holder is the session of pg_locks with classid = "
                f"{_LOCK_CLASS}.")
        pid, fd = conn.info.backend_pid, conn.fileno()

        def still_held(writing: Any) -> None:
            if not writing.execute(_HELD, (_LOCK_CLASS, meta, pid)).fetchone():
                raise ContextLockedError(
                    f"this context's writer lock on the PostgreSQL table {self.table!r} was "
                    "lost (its session ended: a server restart or a cut connection), so "
                    "another context may be writing; nothing was written. Close this context "
                    "and open it again.")

        def release() -> None:
            self._fence = None
            _LOCK_SOCKETS.discard(fd)
            with contextlib.suppress(Exception):  # let go at once, not when the session ends
                conn.execute(_UNLOCK, (_LOCK_CLASS, meta))
            conn.close()

        self._fence = still_held
        _LOCK_SOCKETS.add(fd)
        return release

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
