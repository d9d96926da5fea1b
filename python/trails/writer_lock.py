"""One writer per context directory, whatever its backends.

The embedded graph admits one writing process (RocksDB's lock), which made a context directory
one writer's. A context whose graph and vectors live on servers had no such guard: two
processes could ingest into one directory's context at once, and their writes of versions
would interleave (ADR 5: each must run whole; within a process ``writing_versions`` sees to
it). A writable ``Context.open`` takes ``trails-writer.lock`` in the directory (portalocker:
``flock`` on POSIX, exclusive, not waiting) and keeps it until the context is closed or
collected; the operating system lets it go with a process that dies, and a forked child lets
go of its inherited copy at once.

A lock belongs to the open file, not to its name: deleting ``trails-writer.lock`` while a writer
ran let the next process create a new file there and lock that, a second writer. So the
writer locks the directory itself too (``flock`` on the open directory, where the system
opens one: not on Windows, nor where it cannot lock one), which no file deleted in it can take
away: a second writer is refused by it whatever became of the file.

A lock file that cannot be opened (another account's, made with mode 0600) leaves the
directory's lock to keep a second writer out. A directory that can hold neither (a file system
without locks) opens as it did before the lock existed, with a warning.

Contexts in other directories (or on other machines) may share a server. A part that can hold
a lock there (:class:`SharedServer`: PgVectorStore, a session advisory lock on its table) is
asked for it too, so one table is one writing context's. Where no part can (a SPARQL endpoint
beside Qdrant), one writer per server stays the operator's to keep.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

import portalocker

from trails.errors import ContextLockedError

__all__ = ["LOCK_FILE", "SharedServer", "WriterLock", "hold_for_writing", "hold_on_servers"]

log = logging.getLogger("trails")

LOCK_FILE = "trails-writer.lock"
_HELD: set[str] = set()  # directories this process holds: a second open here is told so
_LIVE: weakref.WeakSet[WriterLock] = weakref.WeakSet()
# Reentrant: a context collected while this thread holds it (the collector may run at any
# allocation) lets its lock go through close(), which takes it again.
_GUARD = threading.RLock()


@runtime_checkable
class SharedServer(Protocol):
    """A context's part on a server that context directories elsewhere may share."""

    def hold_writer_lock(self) -> Callable[[], None]:
        """Take the server's writer lock for this part; the callable lets it go (a process
        that dies lets it go too).

        Raises:
            ContextLockedError: another context holds it.
        """
        ...


class WriterLock:
    """The held lock of one context directory, and its parts' on servers; :meth:`close` lets
    them go (twice is fine)."""

    def __init__(self, key: str | None, descriptor: int, folder: int = -1) -> None:
        self._key, self._descriptor, self._folder = key, descriptor, folder
        self._servers: list[Callable[[], None]] = []
        self.forked = False  # this process is a forked child of the one that took it

    def refuse_forked(self) -> None:
        """Refuse a write from a forked child of the process that took this lock, whatever
        the backend: the parent still writes (its lock is its own), so the child's writes
        would interleave with the parent's, through the parent's server sessions.

        Raises:
            ContextLockedError: this process is such a child.
        """
        if self.forked:
            raise ContextLockedError(
                "this context was opened for writing by the parent of this process, a forked "
                "child: a child cannot write through its parent's context (one writer at a "
                "time). Write from the parent, or use the spawn start method and open the "
                "context in the child")

    def owned_by(self, owner: object) -> WriterLock:
        """This lock, let go when ``owner`` (its context) is collected without being closed."""
        weakref.finalize(owner, self.close)
        return self

    def close(self) -> None:
        with _GUARD:
            servers, self._servers = self._servers, []
            if self._descriptor >= 0 or self._folder >= 0:
                _HELD.discard(self._key or "")
            if self._descriptor >= 0:
                os.close(self._descriptor)  # closing the file releases its lock
                self._descriptor = -1
            if self._folder >= 0:
                os.close(self._folder)
                self._folder = -1
        for release in servers:
            try:
                release()
            except Exception as exc:  # noqa: BLE001 - a session already gone let its lock go
                log.warning("letting a server's writer lock go failed: %s", exc)


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
        folder = -1
        try:  # read access is all a lock needs (a read-only mount, a file of another user)
            descriptor = _open(path)
        except OSError as exc:  # another account's file (mode 0600): the directory's lock
            try:
                folder = _lock_folder(key)
            except portalocker.exceptions.AlreadyLocked as locked:
                raise _locked_elsewhere(directory) from locked.with_traceback(None)
            if folder < 0:
                log.warning("%s cannot hold its writer lock (%s): opened without it; keep to "
                            "one writing process there", directory, exc.strerror or exc)
                return None
            descriptor = -1
        try:
            if descriptor >= 0:
                portalocker.lock(descriptor, portalocker.LockFlags.EXCLUSIVE
                                 | portalocker.LockFlags.NON_BLOCKING)
                folder = _lock_folder(key)  # held too when the file was deleted under its writer
        except portalocker.exceptions.AlreadyLocked as exc:
            os.close(descriptor)
            raise _locked_elsewhere(directory) from exc.with_traceback(None)
        except portalocker.exceptions.LockException as exc:  # no locks here (NFS without them)
            os.close(descriptor)
            log.warning("%s cannot hold its writer lock (%s): opened without it; keep to one "
                        "writing process there", directory, exc)
            return None
        _HELD.add(key)
        held = WriterLock(key, descriptor, folder)
        _LIVE.add(held)
    return held


def _locked_elsewhere(directory: Path) -> ContextLockedError:
    return ContextLockedError(
        f"the context in {str(directory)!r} is open for writing in another process (one "
        "writer at a time). Close that process, or open this one with read_only=True to read "
        "alongside it.")


def hold_on_servers(held: WriterLock | None, *parts: object) -> WriterLock | None:
    """``held`` (a directory's lock, or None) with the writer locks of ``parts`` that are on
    a shared server added; what this call took is let go if a later part refuses.

    Raises:
        ContextLockedError: another context writes to one of those servers.
    """
    taken: list[Callable[[], None]] = []
    try:
        for part in parts:
            if isinstance(part, SharedServer):
                taken.append(part.hold_writer_lock())
    except BaseException:
        for release in taken:
            release()
        raise
    if not taken:
        return held
    held = held or WriterLock(None, -1)
    with _GUARD:
        held._servers.extend(taken)
        _LIVE.add(held)
    return held


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # there already, not creatable now


def _lock_folder(key: str) -> int:
    """The directory ``key`` opened and locked (exclusive, not waiting); -1 where a directory
    cannot be opened (Windows) or locked (a file system without locks on one).

    Raises:
        portalocker.exceptions.AlreadyLocked: another writer holds it.
    """
    try:
        folder = os.open(key, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    except OSError:
        return -1
    try:
        portalocker.lock(folder, portalocker.LockFlags.EXCLUSIVE
                         | portalocker.LockFlags.NON_BLOCKING)
    except portalocker.exceptions.AlreadyLocked:
        os.close(folder)
        raise
    except portalocker.exceptions.LockException:  # the file's lock still holds
        os.close(folder)
        return -1
    return folder


def _forked_child() -> None:
    """In a forked child: let go of the inherited descriptors (the parent's lock stays the
    parent's, and ends when the parent closes), and forget what the parent held, on servers
    too (without ending the parent's sessions)."""
    global _GUARD
    _GUARD = threading.RLock()  # another thread may have held it at the fork
    for held in list(_LIVE):
        held._servers = []  # the parent's sessions: closing one here would end it there
        for descriptor in (held._descriptor, held._folder):
            if descriptor >= 0:
                os.close(descriptor)
        held._descriptor = held._folder = -1
        held.forked = True
    _HELD.clear()


os.register_at_fork(after_in_child=_forked_child)
