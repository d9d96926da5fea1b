"""One writer per context directory, whatever its backends.

The embedded graph admits one writing process (RocksDB's lock), which made a context directory
one writer's. A context whose graph and vectors live on servers had no such guard: two
processes could ingest into one directory's context at once, and their writes of versions
would interleave (ADR 5: each must run whole; within a process ``writing_versions`` sees to
it). A writable ``Context.open`` takes ``trails-writer.lock`` in the directory (portalocker:
``flock`` on POSIX, exclusive, not waiting) and keeps it until the context is closed or
collected; the operating system lets it go with a process that dies, and a forked child lets
go of its inherited copy at once. The file must stay where it is while a writer runs.

A directory that cannot hold the lock (a read-only mount, a file system without locks) opens
as it did before the lock existed, with a warning. Contexts in other directories on the same
servers are not covered: one writer at a time there is the operator's to keep.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from pathlib import Path

import portalocker

from trails.errors import ContextLockedError

__all__ = ["LOCK_FILE", "WriterLock", "hold_for_writing"]

log = logging.getLogger("trails")

LOCK_FILE = "trails-writer.lock"
_HELD: set[str] = set()  # directories this process holds: a second open here is told so
_LIVE: weakref.WeakSet[WriterLock] = weakref.WeakSet()
_GUARD = threading.Lock()


class WriterLock:
    """The held lock of one context directory; :meth:`close` lets it go (twice is fine)."""

    def __init__(self, key: str, descriptor: int) -> None:
        self._key, self._descriptor = key, descriptor

    def owned_by(self, owner: object) -> WriterLock:
        """This lock, let go when ``owner`` (its context) is collected without being closed."""
        weakref.finalize(owner, self.close)
        return self

    def close(self) -> None:
        with _GUARD:
            if self._descriptor < 0:
                return
            os.close(self._descriptor)  # closing the file releases its lock
            self._descriptor = -1
            _HELD.discard(self._key)


def hold_for_writing(directory: Path) -> WriterLock | None:
    """Take ``directory``'s writer lock; None when the directory cannot hold one (logged).

    Raises:
        ContextLockedError: this process or another has the directory open for writing.
    """
    key = os.path.realpath(directory)
    path = os.path.join(key, LOCK_FILE)
    with _GUARD:
        if key in _HELD:
            raise ContextLockedError(
                f"the context in {str(directory)!r} is already open for writing in this "
                "process: a Context opened earlier on this directory has not been closed. Use "
                "that handle, or close it first (ctx.close(), or open it as `with "
                "Context.open(...) as ctx:` so it closes itself); read_only=True opens another "
                "handle alongside it.")
        try:  # read access is all a lock needs (a read-only mount, a file of another user)
            descriptor = _open(path)
        except OSError as exc:
            log.warning("%s cannot hold its writer lock (%s): opened without it; keep to one "
                        "writing process there", directory, exc.strerror or exc)
            return None
        try:
            portalocker.lock(descriptor, portalocker.LockFlags.EXCLUSIVE
                             | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.AlreadyLocked as exc:
            os.close(descriptor)
            raise ContextLockedError(
                f"the context in {str(directory)!r} is open for writing in another process "
                "(one writer at a time). Close that process, or open this one with "
                "read_only=True to read alongside it.") from exc.with_traceback(None)
        except portalocker.exceptions.LockException as exc:  # no locks here (NFS without them)
            os.close(descriptor)
            log.warning("%s cannot hold its writer lock (%s): opened without it; keep to one "
                        "writing process there", directory, exc)
            return None
        _HELD.add(key)
        held = WriterLock(key, descriptor)
        _LIVE.add(held)
    return held


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # there already, not creatable now


def _forked_child() -> None:
    """In a forked child: let go of the inherited descriptors (the parent's lock stays the
    parent's, and ends when the parent closes), and forget what the parent held."""
    global _GUARD
    _GUARD = threading.Lock()  # another thread may have held it at the fork
    for held in list(_LIVE):
        if held._descriptor >= 0:
            os.close(held._descriptor)
            held._descriptor = -1
    _HELD.clear()


os.register_at_fork(after_in_child=_forked_child)
