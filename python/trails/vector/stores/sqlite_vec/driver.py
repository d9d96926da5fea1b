"""Open the store's SQLite file, whatever the Python's own sqlite3 allows.

We try, in order: apsw (bundles a recent SQLite with FTS5), sqlean.py, and the standard
library. All three are driven through the small :class:`Database` interface so the store
never cares which one it got.

The store keeps no vector in SQLite (ADR 0014), so the sqlite-vec extension is loaded only
where its ``vec0`` tables are used (ADR 0044): migrating a store written before m004 and
:meth:`~trails.vector.stores.sqlite_vec.SqliteVecStore.knn_sqlite_vec`. Many Pythons (pyenv
and macOS builds among them) ship a ``sqlite3`` that cannot load extensions; apsw can.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from trails._lazy import require
from trails.errors import ConfigurationError, MissingExtraError
from trails.faults import closed, translated

__all__ = ["Database", "open_database"]

# What the system says when a write finds no space: a full disk, a quota, a file size limit.
_FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class Database:
    """A connection in autocommit mode with explicit, nestable-safe transactions.

    Write transactions (:meth:`transaction`) and read transactions (:meth:`reading`: every
    statement inside sees one committed state of the file) never nest into each other's kind.
    A storage fault (full disk, read-only file, corrupt file) raises a
    :class:`~trails.errors.StorageError` naming the file (:mod:`trails.faults`); any call
    after :meth:`close` raises a ConfigurationError saying the store is closed.
    """

    def __init__(self, connection: Any, driver: str, path: str = ":memory:") -> None:
        self._connection = connection
        self.driver = driver
        self.path = path
        self._in_transaction = False
        self._reader: int | None = None  # the thread holding the read transaction, if one is
        self._closed = False
        self._sqlite_vec = False

    @property
    def _live(self) -> Any:
        if self._closed:
            raise closed("vector store", self.path)
        return self._connection

    def load_sqlite_vec(self, purpose: str) -> None:
        """Load the sqlite-vec extension into this connection (once), for ``purpose``."""
        if self._sqlite_vec:
            return
        sqlite_vec = require("sqlite_vec", purpose)
        connection = self._live
        if not hasattr(connection, "enable_load_extension"):
            raise MissingExtraError("apsw", "sqlite-vec",
                                    f"{purpose} (this Python's sqlite3 cannot load extensions)")
        connection.enable_load_extension(True)
        try:
            with translated(self.path, "loading sqlite-vec"):
                connection.load_extension(sqlite_vec.loadable_path())
        finally:
            connection.enable_load_extension(False)
        self._sqlite_vec = True

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._statement("using the vector store") as connection:
            return list(connection.execute(sql, tuple(params)))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._statement("writing the vector store") as connection:
                connection.executemany(sql, rows)

    @contextlib.contextmanager
    def _statement(self, action: str) -> Iterator[Any]:
        """The connection, its failures raised as storage faults. SQLite reports a write
        refused for lack of space (or past a file size limit) as a "disk I/O error" at times;
        the error number the system gave it says which, so the fault says the disk is full."""
        connection = self._live
        with translated(self.path, action):
            try:
                yield connection
            except Exception as exc:
                number = getattr(connection, "system_errno", 0)  # apsw keeps it
                if number not in _FULL_DISK or "i/o" not in str(exc).lower():
                    raise
                raise OSError(number, f"{os.strerror(number)} ({exc})") from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (then re-raised).

        Raises:
            ConfigurationError: called inside :meth:`reading` (a read transaction cannot
                become a write transaction without losing its snapshot).
            StorageError: the disk is full, the file read-only or corrupt; rolled back.
        """
        if self._in_transaction:
            yield
            return
        if self._reader is not None:
            raise ConfigurationError(
                f"cannot write to vector store {self.path!r} inside a read snapshot; leave the "
                "`with store.snapshot():` block first")
        self.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
            self.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        finally:
            self._in_transaction = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A read transaction: the statements inside see one committed state of the file,
        whatever other connections commit meanwhile (WAL keeps it for us). Nested in a read or
        a write transaction it adds nothing."""
        if self._in_transaction or self._reader is not None:
            yield
            return
        self.execute("BEGIN")  # deferred: the first read inside pins the snapshot
        self._reader = threading.get_ident()
        try:
            yield
        finally:
            self._reader = None
            try:  # COMMIT, not ROLLBACK: keeps the scratch tables a read made in temp
                self.execute("COMMIT")
            except Exception:  # noqa: BLE001 - a read has nothing to lose: end it either way
                self._rollback()

    def _rollback(self) -> None:
        """End the open transaction. SQLite may have rolled it back already (a full disk does),
        and a second error from ROLLBACK must not hide the first."""
        if not self._closed:
            with contextlib.suppress(Exception):
                self._connection.execute("ROLLBACK")

    def data_version(self) -> int:
        """Changes whenever another connection commits to the same file (inside a read
        transaction: the version of its snapshot)."""
        return int(self.execute("PRAGMA data_version")[0][0])

    def state(self) -> tuple[int, int]:
        """Changes whenever anyone commits to the file, this connection included
        (``data_version`` ignores this connection's own commits; its change count does not)."""
        changes = self._live.total_changes
        return self.data_version(), int(changes() if callable(changes) else changes)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def reading_here(self) -> bool:
        """Whether the calling thread holds this connection's read transaction."""
        return self._reader == threading.get_ident()

    @property
    def in_transaction(self) -> bool:
        """Whether a write transaction is open (a nested one joins it)."""
        return self._in_transaction

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):  # a failed rollback or a busy file: gone either way
            self._connection.close()


def on_read_only_mount(path: str) -> bool:
    """Whether ``path``'s directory is on a file system mounted read-only.

    There SQLite cannot create the WAL index (``-shm``) a read needs, and no process can
    change the file, so it is opened ``immutable``: read without locks or a WAL index."""
    if path == ":memory:":
        return False
    try:
        flags = os.statvfs(os.path.dirname(os.path.abspath(path))).f_flag
    except (OSError, AttributeError):  # no statvfs (Windows): open it the usual way
        return False
    return bool(flags & getattr(os, "ST_RDONLY", 1))


def _uri(path: str, immutable: bool) -> str:
    return Path(path).absolute().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")


def _open_apsw(path: str, read_only: bool) -> Any:
    import apsw

    if read_only and path != ":memory:":
        connection = apsw.Connection(_uri(path, on_read_only_mount(path)),
                                     flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    else:
        connection = apsw.Connection(
            path, flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    return connection


def _open_stdlib_like(module_name: str, path: str, read_only: bool) -> Any:
    module = importlib.import_module(module_name)
    target = _uri(path, on_read_only_mount(path)) if read_only and path != ":memory:" else path
    return module.connect(
        target, isolation_level=None, check_same_thread=False, uri=target.startswith("file:")
    )


def open_database(path: str, *, read_only: bool = False) -> Database:
    """Connect to ``path`` (or ``":memory:"``)."""
    attempts: list[tuple[str, Callable[[], Any]]] = [
        ("apsw", lambda: _open_apsw(path, read_only)),
        ("sqlean", lambda: _open_stdlib_like("sqlean", path, read_only)),
        ("sqlite3", lambda: _open_stdlib_like("sqlite3", path, read_only)),
    ]
    for driver, opener in attempts:
        try:
            with translated(path, "opening the vector store"):
                connection = opener()
        except ImportError:
            continue  # driver missing
        database = Database(connection, driver, path)
        try:
            database.execute("PRAGMA busy_timeout = 5000")
            # Deleted and rewritten content is overwritten with zeros, not left in free
            # space: a payload field removed from the store (the payload allowlist) must not
            # stay readable in the file. Some builds default to it, apsw's does not.
            database.execute("PRAGMA secure_delete = ON")
        except BaseException:
            database.close()
            raise
        return database
    raise MissingExtraError("apsw", "sqlite-vec", "SqliteVecStore (no SQLite driver found)")
