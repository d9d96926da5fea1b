"""A real PostgreSQL server with pgvector, for tests of :class:`PgVectorStore`.

The PyPI package ``pgserver`` (the dev extra) ships PostgreSQL and pgvector in a wheel;
:class:`PostgresServer` runs one in a temporary directory, listening on a unix socket only.
:func:`shared_server` is the one server of the process (a test session starts it once), and
:meth:`PostgresServer.new_schema` gives each test a DSN of its own, empty schema.

>>> server = shared_server()  # doctest: +SKIP
>>> store = PgVectorStore(server.new_schema(), dim=3)  # doctest: +SKIP
>>> server.stop(); server.start()  # an outage, then the same data at the same DSN  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trails._lazy import require
from trails.errors import EndpointUnavailableError

if TYPE_CHECKING:
    from typing import Self

__all__ = ["PostgresServer", "shared_server"]

_SHARED: PostgresServer | None = None
_LOCK = threading.Lock()


class PostgresServer:
    """PostgreSQL (with the vector extension created) in ``location``, by default a new
    temporary directory that :meth:`close` removes.

    Raises:
        MissingExtraError: pgserver or psycopg is not installed (``trails[dev]``).
        EndpointUnavailableError: the server did not start (the message says why).
    """

    def __init__(self, location: str | Path | None = None) -> None:
        self._pgserver = require("pgserver", "Running a PostgreSQL test server")
        self._psycopg = require("psycopg", "Running a PostgreSQL test server")
        self._owned = location is None
        self.location = Path(location if location is not None
                             else tempfile.mkdtemp(prefix="trails-pg-", dir=_outside_kernels()))
        self._schemas = itertools.count()
        self._server: Any = None
        self.start()
        with self._psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    @property
    def dsn(self) -> str:
        """The superuser's DSN (a unix socket, no password)."""
        return str(self._server.get_uri())

    def start(self) -> None:
        """Start the server (again after :meth:`stop`: the same data, the same DSN)."""
        try:
            if self._server is None:
                self._server = self._pgserver.get_server(self.location, cleanup_mode="stop")
            else:
                with self._server._lock:
                    self._server.ensure_postgres_running()
        except Exception as exc:
            raise EndpointUnavailableError(
                f"the PostgreSQL test server in {self.location} did not start: {exc}") from exc

    def stop(self) -> None:
        """Stop the server at once (an outage); :meth:`start` brings it back."""
        self._pgserver.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.location,
                              user=self._server.system_user)

    def new_schema(self) -> str:
        """A DSN whose search path is a new, empty schema (the vector type stays visible)."""
        name = f"t{next(self._schemas)}_{id(self):x}"
        with self._psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(self._psycopg.sql.SQL("CREATE SCHEMA {}").format(
                self._psycopg.sql.Identifier(name)))
        return str(self._psycopg.conninfo.make_conninfo(
            self.dsn, options=f"-c search_path={name},public"))

    def close(self) -> None:
        """Stop the server and remove the directory it made."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if self._owned:
            shutil.rmtree(self.location, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _outside_kernels() -> Path:
    """The temporary directory, outside any isolated kernel's (which is deleted when its
    test ends, while the shared server outlives it)."""
    base = Path(tempfile.gettempdir())
    while base.name.startswith("trails-kernel-"):
        base = base.parent
    return base


def shared_server() -> PostgresServer:
    """The process's test server, started at the first call and closed at exit."""
    global _SHARED
    with _LOCK:
        if _SHARED is None:
            _SHARED = PostgresServer()
            atexit.register(_SHARED.close)
        return _SHARED
