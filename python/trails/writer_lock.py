"""One writer per context directory, whatever its backends.

The embedded graph admits one writing process (RocksDB's lock), which made a context directory
one writer's. A context whose graph and vectors live on servers had no such guard: two
processes could ingest into one directory's context at once, and their writes of versions
would interleave (ADR 5: each must run whole; within a process ``writing_versions`` sees to
it). A writable ``Context.open`` takes ``trails-writer.lock`` in the directory (portalocker:
``flock`` on POSIX, exclusive, not waiting) and keeps it until the context closes; the
operating system lets it go with a process that dies. Contexts in other directories on the
same servers are not covered: one writer at a time there is the operator's to keep.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import portalocker

from trails.errors import ContextLockedError

__all__ = ["LOCK_FILE", "WriterLock", "hold_for_writing"]

LOCK_FILE = "trails-writer.lock"
_HELD: set[str] = set()  # directories this process holds: a second open here is told so
_GUARD = threading.Lock()


class WriterLock:
    """The held lock of one context directory; :meth:`close` lets it go (twice is fine)."""

    def __init__(self, key: str, descriptor: int) -> None:
        self._key, self._descriptor = key, descriptor

    def close(self) -> None:
        with _GUARD:
            if self._descriptor < 0:
                return
            os.close(self._descriptor)  # closing the file releases its lock
            self._descriptor = -1
            _HELD.discard(self._key)


def hold_for_writing(directory: Path) -> WriterLock:
    """Take ``directory``'s writer lock.

    Raises:
        ContextLockedError: this process or another has the directory open for writing.
    """
    key = os.path.realpath(directory)
    with _GUARD:
        if key in _HELD:
            raise ContextLockedError(
                f"the context in {str(directory)!r} is already open for writing in this "
                "process: a Context opened earlier on this directory has not been closed. Use "
                "that handle, or close it first (ctx.close(), or open it as `with "
                "Context.open(...) as ctx:` so it closes itself); read_only=True opens another "
                "handle alongside it.")
        descriptor = os.open(os.path.join(key, LOCK_FILE),
                             os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            portalocker.lock(descriptor, portalocker.LockFlags.EXCLUSIVE
                             | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException as exc:
            os.close(descriptor)
            raise ContextLockedError(
                f"the context in {str(directory)!r} is open for writing in another process "
                "(one writer at a time). Close that process, or open this one with "
                "read_only=True to read alongside it.") from exc.with_traceback(None)
        _HELD.add(key)
    return WriterLock(key, descriptor)
