"""The connection to PostgreSQL and the store's tables: opening, identity, transactions,
writes, deletes, and reads by id or by metadata."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from trails._lazy import require
from trails.errors import (
    ConfigurationError,
    DimensionMismatchError,
    EndpointUnavailableError,
    InvalidArgumentError,
)
from trails.resilience import Resilience, breaker_for
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores import arguments
from trails.vector.stores.base import BaseVectorStore, StoredVector
from trails.vector.stores.pgvector import schema
from trails.vector.stores.pgvector.faults import check_tls, guarded, server_url, translated
from trails.vector.stores.records import DocumentIris, back_reference

__all__ = ["DSN_ENV", "PgCore", "public_dsn"]

T = TypeVar("T")
# The full DSN (password included) when none is given; trails.json never records a password.
DSN_ENV = "TRAILS_PG_DSN"
# The DSN's secrets: the password and the passphrase of the client's TLS key.
_SECRETS = ("password", "sslpassword")
_UPSERT = (
    "INSERT INTO {items} (id, embedding, metadata, doc_iri, scope, version, pending, body,"
    " body_len) VALUES (%s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE"
    " SET embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata,"
    " doc_iri = EXCLUDED.doc_iri, scope = EXCLUDED.scope, version = EXCLUDED.version,"
    " pending = EXCLUDED.pending, body = EXCLUDED.body, body_len = EXCLUDED.body_len")


def public_dsn(dsn: str) -> str:
    """``dsn`` without its secrets (password, sslpassword), as ``key=value`` pairs: what messages and ``trails.json``
    show."""
    conninfo = require("psycopg", "PgVectorStore").conninfo
    try:
        params = conninfo.conninfo_to_dict(dsn)
    except Exception as exc:  # psycopg.ProgrammingError: not a DSN
        raise ConfigurationError(f"not a PostgreSQL DSN: {exc}; pass e.g. "
                                 "postgresql://user@host:5432/dbname") from exc
    for secret in _SECRETS:
        params.pop(secret, None)
    return str(conninfo.make_conninfo(**params))


class PgCore(BaseVectorStore):
    """What every part of ``PgVectorStore`` builds on: the pool, the table names (``_n``),
    transactions (:meth:`_run`) and the snapshot a thread holds (``_local``)."""

    def __init__(
        self,
        dsn: str | None = None,
        table: str = "trails",
        dim: int | None = None,
        *,
        embedder: EmbedderIdentity | None = None,
        read_only: bool = False,
        pool_min: int = 1,
        pool_max: int = 4,
        connect_timeout: float = 5.0,
        statement_timeout: float = 60.0,
        hnsw: bool = False,
        min_recall: float = 0.95,
        resilience: Resilience | Mapping[str, Any] | None = None,
    ) -> None:
        self._closed = True  # until the pool is open: close() has nothing to release
        arguments.check_dim(dim)
        self._psycopg = require("psycopg", "PgVectorStore")
        self._pool_module = require("psycopg_pool", "PgVectorStore")
        self._register = require("pgvector.psycopg", "PgVectorStore").register_vector
        given = dsn if dsn is not None else os.environ.get(DSN_ENV)
        if not given:
            raise ConfigurationError(
                f"PgVectorStore needs a server: pass dsn='postgresql://user@host/dbname' or set "
                f"{DSN_ENV} (the password goes in PGPASSWORD or in {DSN_ENV})")
        for name, value in (("pool_min", pool_min), ("pool_max", pool_max)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
        if pool_max < pool_min:
            raise InvalidArgumentError(f"pool_max ({pool_max}) must be >= pool_min ({pool_min})")
        for name, seconds in (("connect_timeout", connect_timeout),
                              ("statement_timeout", statement_timeout)):
            if not isinstance(seconds, (int, float)) or not 0 < seconds < 86_400:
                raise InvalidArgumentError(f"{name} must be a number of seconds > 0, got "
                                           f"{seconds!r}")
        self._dsn = given
        self.dsn = public_dsn(given)
        self.location = self.dsn
        self.table = table
        self._n = schema.names(self._psycopg.sql, table)
        self.read_only = read_only
        self.pool_min, self.pool_max = pool_min, pool_max
        self.connect_timeout, self.statement_timeout = float(connect_timeout), float(statement_timeout)
        self.hnsw = hnsw
        if not isinstance(min_recall, (int, float)) or not 0 < min_recall <= 1:
            raise InvalidArgumentError(f"min_recall must be in (0, 1], got {min_recall!r}")
        self.min_recall = float(min_recall)
        self.resilience = Resilience.from_settings(resilience)
        params = self._psycopg.conninfo.conninfo_to_dict(given)
        check_tls(params, self.dsn, self.resilience)
        self._breaker = breaker_for("PostgreSQL", server_url(params), self.resilience)
        self._local = threading.local()
        self._fence: Callable[[Any], None] | None = None
        self._identity: EmbedderIdentity | None = None
        self._dim, meta = self._guard(lambda: self._prepare(dim), write=True)
        self._open_pool()
        try:
            if meta.get("embedder") is not None:
                self._identity = EmbedderIdentity.model_validate(meta["embedder"])
            if embedder is not None:
                self.bind_embedder(embedder)
        except BaseException:
            self.close()
            raise

    # -- connections ----------------------------------------------------------------------

    def _options(self) -> dict[str, Any]:
        """Connection options: the DSN's own ``options`` (a search_path, say) and the store's
        statement timeout and read-only mode."""
        given = self._psycopg.conninfo.conninfo_to_dict(self._dsn).get("options") or ""
        settings = f"{given} -c statement_timeout={int(self.statement_timeout * 1000)}"
        if self.read_only:
            settings += " -c default_transaction_read_only=on"
        return {"options": settings.strip(),
                "connect_timeout": max(1, round(self.connect_timeout))}

    def _open_pool(self) -> None:
        pools = self._pool_module

        def configure(conn: Any) -> None:
            self._register(conn)

        self._pool = pools.ConnectionPool(
            self._dsn, min_size=self.pool_min, max_size=self.pool_max, open=False,
            kwargs={"autocommit": True, **self._options()}, configure=configure,
            check=pools.ConnectionPool.check_connection, timeout=self.connect_timeout,
            name=f"trails:{self.table}")
        self._pool.open(wait=False)
        self._closed = False

    def _guard(self, operation: Callable[[], T], *, write: bool) -> T:
        return guarded(operation, self.location, self.resilience, self._breaker, write=write)

    def _run(self, work: Callable[[Any], T], *, write: bool = False) -> T:
        """``work(connection)`` in one transaction: a write commits (and renews the revision)
        when it returns; a read sees one committed state (REPEATABLE READ), or the state of
        the snapshot this thread holds."""
        if self._closed:
            raise ConfigurationError(f"vector store {self._label!r} is closed; open a new one")
        if write:
            self._check_writable()
        pinned = None if write else self._snapshot_connection()
        if pinned is not None:
            with translated(self.location):
                return work(pinned)

        def once() -> T:
            with self._pool.connection() as conn, conn.transaction():
                if not write:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                done = work(conn)
                if write and self._fence is not None:
                    self._fence(conn)  # a context's writer lock, still held (store.py)
                if write:
                    conn.execute(self._sql("UPDATE {meta} SET revision = %s"),
                                 (uuid.uuid4().hex,))
                return done

        return self._guard(once, write=write)

    def _sql(self, template: str) -> Any:
        """``template`` with the store's table names (``{items}``, ``{terms}``...)."""
        return self._psycopg.sql.SQL(template).format(**self._n._asdict())

    @contextmanager
    def _pinned(self) -> Iterator[None]:
        """Hold this thread's snapshot for the block: a REPEATABLE READ, read-only transaction
        on a connection of its own, taken when the block begins: a reader that reads the
        graph next relies on the snapshot being no newer than that graph read (ADR 5's
        torn-read checks). A server unreachable then (or its circuit open) fails the first
        read inside instead, where retrieval can answer around it. Blocks nest."""
        if self._closed:
            raise ConfigurationError(f"vector store {self._label!r} is closed; open a new one")
        local = self._local
        if getattr(local, "depth", 0):
            local.depth += 1
            try:
                yield
            finally:
                local.depth -= 1
            return
        local.depth, local.conn = 1, None
        try:
            with contextlib.suppress(EndpointUnavailableError):  # under the breaker: an
                # open circuit fails here at once, not after the connect timeout
                local.conn = self._guard(self._begin_snapshot, write=False)
            yield
        finally:
            conn, local.conn, local.depth = local.conn, None, 0
            if conn is not None:
                try:
                    conn.rollback()
                finally:
                    self._pool.putconn(conn)

    def _snapshot_connection(self) -> Any:
        """The connection of this thread's snapshot (None outside one), begun at first use."""
        local = self._local
        if not getattr(local, "depth", 0):
            return None
        if local.conn is None:
            local.conn = self._guard(self._begin_snapshot, write=False)
        return local.conn

    def _begin_snapshot(self) -> Any:
        conn = self._pool.getconn()
        try:
            conn.autocommit = False
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            # A REPEATABLE READ transaction takes its snapshot at its first query.
            conn.execute(self._sql("SELECT revision FROM {meta}"))
        except BaseException:
            self._pool.putconn(conn)
            raise
        return conn

    # -- schema and identity --------------------------------------------------------------

    def _prepare(self, dim: int | None) -> tuple[int, dict[str, Any]]:
        with self._psycopg.connect(self._dsn, autocommit=True, **self._options()) as conn:
            meta = self._read_meta(conn)
            if meta is None:
                self._check_new(conn, dim)
                assert dim is not None
                with conn.transaction():
                    # One creator at a time, in every process (CREATE EXTENSION included).
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext('trails pgvector'))")
                    meta = self._read_meta(conn)
                    if meta is None:
                        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                        for template in schema.ddl(dim):
                            conn.execute(self._sql(template))
                        conn.execute(self._sql(
                            "INSERT INTO {meta} (format, dim, embedder, revision)"
                            " VALUES (%s, %s, NULL, %s)"), (schema.FORMAT, dim, uuid.uuid4().hex))
                        meta = {"format": schema.FORMAT, "dim": dim, "embedder": None}
            stored = int(meta["dim"])
            if dim is not None and dim != stored:
                raise DimensionMismatchError(
                    f"vector store {self._label!r} holds {stored}-dimensional vectors but "
                    f"dim={dim} was requested; use an embedder of dimension {stored} or another "
                    "table")
            if not self.read_only:
                schema.build_indexes(conn, self._sql, self.table, hnsw=self.hnsw)
            return stored, meta

    def _check_new(self, conn: Any, dim: int | None) -> None:
        found = conn.execute("SELECT to_regclass(%s)", (self.table,)).fetchone()[0]
        if found is not None:
            raise ConfigurationError(
                f"table {self.table!r} at {self.location} exists but is not a trails vector "
                "store; choose another table name")
        if self.read_only:
            raise ConfigurationError(
                f"cannot open vector store {self._label!r} read-only: it does not exist yet; "
                "open it once without read_only=True to create it")
        if dim is None or dim < 1:
            raise ConfigurationError(
                f"a new vector store needs its dimension: pass dim=... (got {dim!r})")

    def _read_meta(self, conn: Any) -> dict[str, Any] | None:
        if conn.execute("SELECT to_regclass(%s)", (self.table + "__meta",)).fetchone()[0] is None:
            return None
        found = conn.execute(self._sql("SELECT format, dim, embedder FROM {meta}")).fetchone()
        if found is None:
            return None
        if found[0] > schema.FORMAT:
            raise ConfigurationError(
                f"vector store {self._label!r} has format {found[0]}, newer than this trails "
                f"reads ({schema.FORMAT}); upgrade trails")
        return {"format": found[0], "dim": found[1], "embedder": found[2]}

    @property
    def name(self) -> str:
        return f"pgvector:{self.table}@{self.dsn}"

    @property
    def _label(self) -> str:
        return self.name

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        return self._identity

    def _record_embedder(self, identity: EmbedderIdentity) -> None:
        self._run(lambda conn: conn.execute(
            self._sql("UPDATE {meta} SET embedder = %s::jsonb"),
            (json.dumps(identity.model_dump(mode="json")),)), write=True)
        self._identity = identity

    # -- writes ---------------------------------------------------------------------------

    def _write(self, ids: list[str], unit: np.ndarray, metas: list[dict[str, Any]],
               pending: bool) -> None:
        """``add_many``: every row and its keyword terms in one transaction."""
        rows = [schema.row(i, v, m, pending) for i, v, m in zip(ids, unit, metas)]

        def work(conn: Any) -> None:
            with conn.cursor() as cur:
                cur.executemany(self._sql(_UPSERT), rows)
            self._write_terms(conn, rows)

        self._run(work, write=True)

    def _rewrite_rows(self, conn: Any, rows: list[schema.Row]) -> None:
        """Replace the metadata of existing rows, and everything derived from it (the
        promoted columns, the keyword text and its terms), keeping their vectors."""
        with conn.cursor() as cur:
            cur.executemany(self._sql(
                "UPDATE {items} SET metadata = %s::jsonb, doc_iri = %s, scope = %s,"
                " version = %s, body = %s, body_len = %s WHERE id = %s"),
                [(r.metadata, r.doc_iri, r.scope, r.version, r.body, r.body_len, r.id)
                 for r in rows])
        self._write_terms(conn, rows)

    def _write_terms(self, conn: Any, rows: list[schema.Row]) -> None:
        """The keyword index's rows of ``rows``, replacing any they had."""
        with conn.cursor() as cur:
            cur.execute(self._sql("DELETE FROM {terms} WHERE id = ANY(%s)"),
                        ([r.id for r in rows],))
            with cur.copy(self._sql("COPY {terms} (term, id, tf) FROM STDIN")) as copy:
                for r in rows:
                    for term in schema.term_rows(r):
                        copy.write_row(term)

    def _delete_ids(self, ids: list[str]) -> int:
        wanted = schema.held(ids)
        if not wanted:
            self._check_writable()
            return 0
        return self._run(lambda conn: len(conn.execute(self._sql(
            "DELETE FROM {items} WHERE id = ANY(%s) RETURNING id"), (wanted,)).fetchall()),
            write=True)

    def _delete_matching(self, filters: Mapping[str, Any]) -> int:
        """Other keys than ``doc_iri`` and ``scope`` compare metadata values as JSON (1 is
        not true, ``None`` matches nothing)."""
        where = schema.where_clause(filters, promoted=True)
        if where is None:
            self._check_writable()
            return 0
        clause, params = where
        return self._run(lambda conn: len(conn.execute(self._sql(
            "DELETE FROM {items} WHERE " + clause + " RETURNING id"), params).fetchall()),
            write=True)

    # -- reads by id or metadata ----------------------------------------------------------

    def get(self, ids: Iterable[str]) -> list[StoredVector]:
        """Stored vectors (unit-normalised) and metadata for the ids that exist, in input order."""
        wanted = list(arguments.check_ids(ids))
        unique = schema.held(wanted)
        if not unique:
            return []
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id, embedding, metadata FROM {items} WHERE id = ANY(%s)"), (unique,)).fetchall())
        found = {r[0]: StoredVector(r[0], _floats(r[1]), r[2]) for r in rows}
        return [found[i] for i in wanted if isinstance(i, str) and i in found]

    def find(self, filters: Mapping[str, Any], limit: int = 1) -> list[StoredVector]:
        """Up to ``limit`` live rows whose metadata equals every filter value, by id, without
        a vector search. Values compare as JSON (1 is neither true nor "1"; ``None`` matches
        an explicit null, not a missing key).

        Raises:
            InvalidArgumentError: ``limit`` is not an integer >= 0, or a value has no JSON form.
        """
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise InvalidArgumentError(f"limit must be an integer >= 0, got {limit!r}")
        checked = self._checked_filters(filters, "find")
        clause, params = schema.where_clause(checked, promoted=False) or ("FALSE", [])
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id, embedding, metadata FROM {items} WHERE NOT pending AND " + clause
            + " ORDER BY id LIMIT %s"), [*params, limit]).fetchall())
        return [StoredVector(r[0], _floats(r[1]), r[2]) for r in rows]

    def count(self, filters: Mapping[str, Any] | None = None) -> int:
        """Live vectors (staged ones are not counted until published); with ``filters``, those
        whose metadata equals every filter value (as :meth:`find` compares)."""
        checked = self._checked_filters(filters or {}, "count")
        clause, params = schema.where_clause(checked, promoted=False) or ("FALSE", [])
        return int(self._run(lambda conn: conn.execute(self._sql(
            "SELECT count(*) FROM {items} WHERE NOT pending AND " + clause),
            params).fetchone()[0]))

    def has_back_references(self) -> bool:
        """Whether some live row's ``metadata["iri"]`` is a string other than its id
        (``BackReferences``)."""
        return bool(self._run(lambda conn: conn.execute(self._sql(
            "SELECT EXISTS (SELECT 1 FROM {items} WHERE NOT pending AND "
            + schema.BACK_REFERENCE + ")")).fetchone()[0]))

    def rows_named(self, iris: Iterable[str]) -> dict[str, str]:
        """``{id: back-reference}`` of the live rows whose back-reference (``metadata["iri"]``,
        else the id) or document is one of ``iris`` (only the document for a
        ``DocumentIris``)."""
        documents_only = isinstance(iris, DocumentIris)
        names = schema.held(iris)
        if not names:
            return {}
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id, metadata ->> 'iri', doc_iri FROM {items} WHERE NOT pending AND"
            " (doc_iri IN (SELECT unnest(%s::text[])) OR id IN (SELECT unnest(%s::text[]))"
            " OR metadata ->> 'iri' IN (SELECT unnest(%s::text[]))) ORDER BY id"),
            (names, names, names)).fetchall())
        wanted, found = set(names), {}
        for id, iri, doc in rows:  # the SQL shortlists; the back-reference decides
            name = back_reference(id, {"iri": iri})
            if doc in wanted or (not documents_only and name in wanted):
                found[id] = name
        return found

    def close(self) -> None:
        """Close the pool's connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._pool.close()


def _floats(vector: Any) -> list[float]:
    return schema.as_array(vector).tolist()  # type: ignore[no-any-return]
