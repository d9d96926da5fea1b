"""Locks: each store's lock around its requests, and the local folders shared in a process.

qdrant-client's local mode locks its folder for one client, even within a process, so stores
opened on the same path in one process share one client, and one lock (:class:`SharedFolders`).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

from trails.vector.stores.qdrant import local

__all__ = ["SharedFolders", "locked"]

F = TypeVar("F", bound=Callable[..., Any])


class _Locked(Protocol):
    _lock: threading.RLock


def locked(method: F) -> F:
    """Run ``method`` holding its store's ``_lock``."""
    @functools.wraps(method)
    def wrapper(self: _Locked, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class SharedFolders:
    """One local-mode client (and lock) per folder in this process, with a count of users."""

    _open: ClassVar[dict[str, list[Any]]] = {}  # realpath -> [client, users, lock]
    _guard = threading.Lock()

    @classmethod
    def acquire(cls, qdrant: Any, path: str) -> tuple[Any, threading.RLock, str]:
        """The folder's client and lock, opened if needed; and the key to release it by."""
        key = os.path.realpath(path)
        with cls._guard:
            entry = cls._open.get(key)
            if entry is None:
                entry = cls._open[key] = [local.open_folder(qdrant, key), 0, threading.RLock()]
            entry[1] += 1
            return entry[0], entry[2], key

    @classmethod
    def release(cls, key: str) -> None:
        """One user fewer; the last one closes the client."""
        with cls._guard:
            entry = cls._open.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    del cls._open[key]
                    entry[0].close()
