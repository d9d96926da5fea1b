"""Opening an Oxigraph store in a directory, beside a writer that may be compacting it, and
the revision stamp kept beside its files."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import secrets
import time
from collections.abc import Iterator

import pyoxigraph as ox

from trails.errors import ConfigurationError, ContextLockedError, StorageError
from trails.faults import is_full_disk, storage_fault

__all__ = ["LOG_CUT_BYTES", "OPEN_PATIENCE", "REVISION_FILE", "WRITING", "cut_log",
           "kept_in_the_log", "mark_writing", "new_revision", "open_store", "patience",
           "read_revision", "settled", "store_state", "vanished_while_moving"]

# A read-only open lists the writer's files, then opens them; a flush or compaction in between
# deletes one ("IO error: No such file ... .sst"). Such an open is a race against the writer's
# next compaction, each try as likely to win as the last: so tries come quickly (2-50 ms
# apart, jittered) for this many seconds. On a loaded machine a writer compacting without
# pause wins dozens of races in a row; a missing file in a store that is not moving is
# damage, raised at once (vanished_while_moving).
OPEN_PATIENCE = 30.0
# Inside the store's directory: RocksDB leaves files of other names alone.
REVISION_FILE = "trails-revision"
# A stamp that begins so names no state: written *before* a write, so that a stamp naming a
# state (``settled``) is never on disk while the graph is being changed or after a crash
# during a change (what is kept per revision, ADR 0029, relies on it).
WRITING = "writing-"

StoreState = tuple[str, int, int]
log = logging.getLogger("trails.graph")


def patience(seconds: float = OPEN_PATIENCE) -> Iterator[bool]:
    """One item per try, pausing briefly before each but the first; True for the last try
    (the first after ``seconds``).

    >>> [last for last in patience(0.0)]
    [True]
    """
    deadline = time.monotonic() + seconds
    attempt = 0
    while True:
        last = time.monotonic() >= deadline
        yield last
        if last:
            return
        time.sleep(random.uniform(0.002, min(0.005 * 2**attempt, 0.05)))
        attempt += 1


def store_state(path: str | None) -> StoreState | None:
    """Where the store in ``path`` stands: the manifest its CURRENT file names, with that
    manifest's size and modification time. Every flush or compaction that adds or deletes a
    file writes to the manifest first, so the state moves before any file goes (None: in
    memory, or unreadable)."""
    if path is None:
        return None
    try:
        with open(os.path.join(path, "CURRENT"), encoding="ascii") as file:
            manifest = file.read().strip()
        stat = os.stat(os.path.join(path, manifest))
    except (OSError, UnicodeDecodeError):
        return None
    return manifest, stat.st_size, stat.st_mtime_ns


def vanished_while_moving(message: str, path: str, before: StoreState | None) -> bool:
    """Whether an error met on the store in ``path`` is a file its writer deleted since
    ``before`` (the state when the view was opened): worth another try on a newer view. The
    same file missing from a store that has not moved is damage."""
    if "no such file" not in message.lower():
        return False
    now = store_state(path)
    return now is not None and now != before


def open_store(path: str | None, *, read_only: bool) -> tuple[ox.Store, StoreState | None]:
    """The Oxigraph store in ``path`` (in memory for None), opened; read-only, opened again
    while a writer's compaction removes the files it listed (for ``OPEN_PATIENCE`` seconds).
    With it, a read-only store's :func:`store_state` from just before the open that worked
    (None otherwise): a later "No such file" is a compaction only if the state moved since.

    Raises:
        ConfigurationError: read-only, and the directory holds no graph.
        ContextLockedError: another process (or this one) has it open for writing.
        ContextDamagedError: its files are corrupt.
        StorageError: its files cannot be read or written (permissions, mount, space).
    """
    if path is None:
        if read_only:
            raise ConfigurationError("an in-memory graph cannot be read-only; give a path")
        return ox.Store(), None
    if read_only and not os.path.exists(os.path.join(path, "CURRENT")):
        raise ConfigurationError(
            f"cannot open the graph in {path!r} read-only: it holds no graph (yet); "
            "open it once without read_only=True to create it")
    for last in patience():
        before = store_state(path) if read_only else None
        try:
            return (ox.Store.read_only(path), before) if read_only else (ox.Store(path), None)
        except (OSError, RuntimeError) as exc:
            message = str(exc)
            if "lock hold by current process" in message:  # RocksDB's words for this process
                raise ContextLockedError(
                    f"the knowledge graph in {path!r} is already open for writing in this "
                    "process: a Context opened earlier on this directory has not been closed. "
                    "Use that handle, or close it first (ctx.close(), or open it as `with "
                    "Context.open(...) as ctx:` so it closes itself); read_only=True opens "
                    "another handle alongside it."
                ) from exc.with_traceback(None)
            if "lock hold by" in message or ("While lock file" in message
                                             and "read-only" not in message.lower()):
                raise ContextLockedError(
                    f"the knowledge graph in {path!r} is open for writing in another "
                    "process (Oxigraph allows one writer). Close that process, or open this "
                    "one with read_only=True to read alongside it."
                ) from exc.with_traceback(None)
            if read_only and not last and vanished_while_moving(message, path, before):
                continue
            # No traceback kept: its frames would hold nothing, but the cause's message is
            # all a caller can use.
            raise (storage_fault(exc, path, "opening the graph in") or StorageError(
                f"opening the graph in {path} failed: {message}; check the "
                "directory (a graph trails made there, readable, on a mounted disk)")
            ) from exc.with_traceback(None)
    raise AssertionError("unreachable")  # pragma: no cover - the last try raises


def read_revision(path: str | None) -> str | None:
    """The revision stamp of the graph in ``path`` (None: none written yet, or in memory)."""
    if path is None:
        return None
    try:
        with open(os.path.join(path, REVISION_FILE), encoding="ascii") as file:
            return file.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None  # a stamp is a hint for replays: never a reason to fail a query


def settled(revision: str | None) -> bool:
    """Whether ``revision`` names one state of the graph: written after a write completed and
    before the next began (not a :data:`WRITING` mark, not missing)."""
    return revision is not None and not revision.startswith(WRITING)


def new_revision(path: str | None, *, prefix: str = "") -> str:
    """A new stamp for the graph in ``path``, written beside its files (renamed into place, so
    a reader sees the old stamp or the new one)."""
    revision = prefix + secrets.token_hex(8)
    if path is not None:
        target = os.path.join(path, REVISION_FILE)
        temporary = f"{target}.{revision}.tmp"
        with contextlib.suppress(OSError):  # a full disk fails the next write, not this one
            with open(temporary, "w", encoding="ascii") as file:
                file.write(revision)
            os.replace(temporary, target)
    return revision


def mark_writing(path: str | None) -> None:
    """Before a write to the graph in ``path``: replace its stamp by a :data:`WRITING` mark,
    or remove it, so no settled stamp survives the write's start (a crash mid-write included).

    Raises:
        StorageError: the stamp can be neither replaced nor removed (then the write must not
            go on: the stamp would still name the state before it).
    """
    if path is None:
        return
    mark = new_revision(path, prefix=WRITING)
    if read_revision(path) == mark:
        return
    target = os.path.join(path, REVISION_FILE)
    try:
        os.remove(target)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(
            f"cannot mark the graph in {path} as being written ({exc}): its revision stamp "
            f"{target} can be neither replaced nor removed; make the directory writable"
        ) from exc


# Write-ahead logs larger than this are cut when a writable graph closes (ADR 0036).
LOG_CUT_BYTES = 16 * 1024 * 1024


def cut_log(path: str | None) -> None:
    """Remove the write-ahead logs a closed writable store left in ``path`` (None: in
    memory or read-only, nothing to do).

    RocksDB keeps them after a flush until the store is next opened, and after a long
    ingest they held more bytes than the graph's data. One open (which replays nothing a
    flush already wrote, and deletes the logs) and close does it. Logs of at most
    ``LOG_CUT_BYTES`` are left for the next open. Another process that took the graph in
    between, or any failure here, leaves the logs as they were: the next open cuts them."""
    if path is None:
        return
    with contextlib.suppress(OSError, RuntimeError):
        logs = sum(entry.stat().st_size for entry in os.scandir(path)
                   if entry.name.endswith(".log"))
        if logs > LOG_CUT_BYTES:
            ox.Store(path)  # dropped at once: opened, replayed, closed


@contextlib.contextmanager
def kept_in_the_log() -> Iterator[None]:
    """Around the flush a writable store gets as it closes: a flush refused for lack of space
    is only logged. Every write that returned is in RocksDB's write-ahead log already, which
    the next open replays (a flush only moves it into tables), so a context closing after a
    full disk closes cleanly. Any other failure is raised."""
    try:
        yield
    except StorageError as exc:
        if not is_full_disk(exc):
            raise
        # The text only: a kept log record must not keep the failure's frames (and through
        # them the store and its lock) alive.
        log.warning("%s; the graph's writes are kept in its log and read at the next open",
                    str(exc))


_FORKED_STORES: list[object] = []  # stores a forked child let go of, never closed there


class Stamp:
    """The revision stamp as one graph object knows it: the one it wrote last (writable), or
    the one on disk when its view opened (read-only), and whether that names what it reads."""

    def __init__(self, path: str | None, read_only: bool) -> None:
        self.path = path
        self.read_only = read_only
        self.revision = read_revision(path) if read_only else None
        self.exact = False  # a view shows the state its stamp names
        self.raw = False  # the store was handed out: writes may bypass the stamp
        self.pid = os.getpid()  # the process that opened the store, the one that may write

    def forked(self) -> bool:
        """Whether this is a forked child of the process that opened the store."""
        return os.getpid() != self.pid

    def let_go(self, store: ox.Store | None) -> ox.Store | None:
        """Release ``store`` (pyoxigraph closes it when it is dropped): None, what its graph
        holds now. In a forked child closing its parent's store aborts the process (the
        store's threads stayed in the parent): it is kept, unused, until the child ends."""
        if store is not None and self.forked():
            _FORKED_STORES.append(store)
        return None

    def writes_here(self) -> bool:
        """Whether this process writes (flushes) the store on disk: opened writable, here."""
        return not self.read_only and self.path is not None and not self.forked()

    def check_writable(self) -> None:
        """Refuse a write to a graph opened read-only, or from a forked child of its writer.

        Raises:
            ConfigurationError: it was opened read-only.
            ContextLockedError: this process is a forked child of the one that opened it.
        """
        if self.read_only:
            raise ConfigurationError(
                f"the knowledge graph in {self.path!r} was opened read-only; reopen it "
                "without read_only=True (only one process may write) to change it")
        if self.path is not None and self.forked():  # its writer's threads are the parent's
            raise ContextLockedError(
                f"the knowledge graph in {self.path!r} was opened for writing by process "
                f"{self.pid}, and this process is a forked child of it: a child cannot write "
                "through its parent's handle (one writer at a time). Write from the parent, "
                "or use the spawn start method and open the context in the child")

    def on_disk(self) -> str | None:
        return read_revision(self.path)

    def opened(self, before: str | None) -> None:
        """A view just opened with ``before`` on disk: it shows that state if the stamp is
        still the same (a write replaces it before it starts)."""
        self.revision = before
        self.exact = read_revision(self.path) == before

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around a write: a :data:`WRITING` mark before, a new stamp after (a mark again once
        the store was handed out)."""
        mark_writing(self.path)
        yield
        self.revision = new_revision(self.path, prefix=WRITING if self.raw else "")

    def handed_out(self, store: ox.Store) -> ox.Store:
        """``store``, given away: from now on no stamp here names a state."""
        if not self.read_only and self.path is not None and not self.raw:
            self.raw = True
            self.revision = new_revision(self.path, prefix=WRITING)
        return store

    def settled(self) -> str | None:
        """The stamp naming exactly the state the graph object reads, or None."""
        revision = self.revision if self.read_only else read_revision(self.path)
        exact = self.path is not None and not self.raw and (self.exact or not self.read_only)
        return revision if exact and settled(revision) else None

    def closed(self) -> None:
        """The graph object closed its store: a writable one's long logs go (:func:`cut_log`)."""
        if not self.read_only:
            cut_log(self.path)
