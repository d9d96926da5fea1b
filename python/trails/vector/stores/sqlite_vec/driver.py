"""Open a SQLite connection that can load sqlite-vec, whatever the Python's own sqlite3 allows.

Many Pythons (pyenv and macOS builds among them) ship a ``sqlite3`` that cannot load
extensions. We try, in order: apsw (bundles a recent SQLite with FTS5), sqlean.py, and the
standard library; the first that can load sqlite-vec wins. All three are driven through the
small :class:`Database` interface so the store never cares which one it got.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from trails._lazy import require
from trails.errors import MissingExtraError
from trails.faults import storage_fault

__all__ = ["Database", "open_database"]


class Database:
    """A connection in autocommit mode with explicit, nestable-safe transactions.

    A storage fault (full disk, read-only file, corrupt file) raises a
    :class:`~trails.errors.StorageError` naming ``path``, after the transaction is rolled back.
    """

    def __init__(self, connection: Any, driver: str, path: str = ":memory:") -> None:
        self._connection = connection
        self.driver = driver
        self.path = path
        self._in_transaction = False

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._faults("reading or writing"):
            return list(self._connection.execute(sql, tuple(params)))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._faults("writing"):
                self._connection.executemany(sql, rows)

    @contextlib.contextmanager
    def _faults(self, action: str) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            fault = storage_fault(exc, self.path, action)
            if fault is None:
                raise
            raise fault from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (then re-raised)."""
        if self._in_transaction:
            yield
            return
        with self._faults("starting a transaction on"):
            self._connection.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
            with self._faults("committing to"):
                self._connection.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        finally:
            self._in_transaction = False

    def _rollback(self) -> None:
        """Roll back what is open: SQLite may already have (a full disk does that), and a
        second ROLLBACK's own error must not hide the first."""
        with contextlib.suppress(Exception):
            self._connection.execute("ROLLBACK")

    def data_version(self) -> int:
        """Changes whenever another connection commits to the same file."""
        return int(self.execute("PRAGMA data_version")[0][0])

    def state(self) -> tuple[int, int]:
        """Changes whenever anyone commits to the file, this connection included
        (``data_version`` ignores this connection's own commits; its change count does not)."""
        changes = self._connection.total_changes
        return self.data_version(), int(changes() if callable(changes) else changes)

    def close(self) -> None:
        self._connection.close()


def _open_apsw(path: str, read_only: bool) -> Any:
    import apsw

    flags = apsw.SQLITE_OPEN_READONLY if read_only else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    connection = apsw.Connection(path, flags=flags)
    connection.enable_load_extension(True)
    return connection


def _open_stdlib_like(module_name: str, path: str, read_only: bool) -> Any:
    module = importlib.import_module(module_name)
    target = f"file:{path}?mode=ro" if read_only and path != ":memory:" else path
    connection = module.connect(
        target, isolation_level=None, check_same_thread=False, uri=target.startswith("file:")
    )
    connection.enable_load_extension(True)
    return connection


def open_database(path: str, *, read_only: bool = False) -> Database:
    """Connect to ``path`` (or ``":memory:"``) with sqlite-vec loaded."""
    sqlite_vec = require("sqlite_vec", "SqliteVecStore")
    attempts: list[tuple[str, Callable[[], Any]]] = [
        ("apsw", lambda: _open_apsw(path, read_only)),
        ("sqlean", lambda: _open_stdlib_like("sqlean", path, read_only)),
        ("sqlite3", lambda: _open_stdlib_like("sqlite3", path, read_only)),
    ]
    for driver, opener in attempts:
        try:
            connection = opener()
        except (ImportError, AttributeError):
            continue  # driver missing, or built without extension loading
        except Exception as exc:
            fault = storage_fault(exc, path, "opening")
            if fault is None:
                raise
            raise fault from exc
        connection.load_extension(sqlite_vec.loadable_path())
        if driver != "apsw":
            connection.enable_load_extension(False)
        busy = "PRAGMA busy_timeout = 5000"
        connection.execute(busy)
        return Database(connection, driver, path)
    raise MissingExtraError(
        "apsw", "vector", "SqliteVecStore (this Python's sqlite3 cannot load extensions)"
    )
