"""The audit log: activities appended as JSON lines beside the context, folded into the graph
by its writer (ADR 0018).

A search must not wait for the graph's one writer, nor turn a reader into one, so recording is
an append to a file of this process's own (``audit/<pid>-<token>.jsonl``; a forked child
starts one of its own): one ``write`` of a whole line, under an exclusive lock on that file (portalocker: ``flock`` on POSIX). The writer folds the files into the
audit graph: it renames a file out of the appenders' way, takes its lock (an appender that
opened it before the rename has finished its line, or writes it after and is still read),
seals it (read-only) and releases the lock, reads it, adds its triples and deletes it. An
appender that finds its file renamed, sealed or deleted once it holds the lock writes a new
one (the name decides: a new file's mode is set after its open, which can undo a seal), so a
search never waits for a fold's graph write. Records are idempotent in the graph (an
activity's IRI and triples derive from the record), so a fold that crashed before the delete
only folds the same triples again. A file the fold cannot read (another account's) is left as
it is, logged, and the others are folded.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import secrets
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import portalocker

from trails.audit.records import ActivityRecord, from_json
from trails.durable import sync_directory

__all__ = ["AuditLog"]

log = logging.getLogger("trails.audit")

_SUFFIX = ".jsonl"
_FOLDING = ".folding"
_SEALED = 0o400  # the mode of a file a fold has read: no appender writes to it again
# A fold can take the new file an appender opens before the appender holds its lock, again
# and again while a fold loops and the appending thread waits for the interpreter: three
# attempts ran out under load (a search's record lost). Each attempt takes microseconds.
_ATTEMPTS = 100


class AuditLog:
    """The append-only files of one context's audit records (``directory``)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        # Absolute: the appender's file is known by its name (see _taken), and a relative one
        # would name another file once the process changed its working directory.
        self.directory = Path(directory).absolute()
        self._name = f"{os.getpid()}-{secrets.token_hex(4)}{_SUFFIX}"
        self._lock = threading.Lock()  # one line at a time from this process
        self._descriptor: int | None = None  # kept open: an append is one write
        self._unsynced: set[Path] = set()  # folders holding a new name a sync must cover
        _LIVE.add(self)

    def _forked(self) -> None:
        """In a forked child: a file of its own, and a lock of its own. The parent's open file
        shares the parent's lock (one's unlock would let a fold in while the other appends),
        and the lock may have been held by a thread the child does not have."""
        self._lock = threading.Lock()
        if self._descriptor is not None:
            os.close(self._descriptor)  # the child's copy only: the parent's stays open
            self._descriptor = None
        self._name = f"{os.getpid()}-{secrets.token_hex(4)}{_SUFFIX}"

    def append(self, record: ActivityRecord, *, sync: bool = False) -> None:
        """Add ``record`` (raises OSError when the file cannot be written); with ``sync`` it
        is on the disk, and so is its file's name, when this returns (a record that must come
        before what it records)."""
        line = (json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":"))
                + "\n").encode("utf-8")
        with self._lock:
            for _ in range(_ATTEMPTS):
                descriptor = self._open()
                portalocker.lock(descriptor, portalocker.LockFlags.EXCLUSIVE)
                try:
                    if _taken(descriptor, self.directory / self._name):  # a new one
                        os.close(descriptor)
                        self._descriptor = None
                        continue
                    _append_whole(descriptor, line)
                    if sync:
                        os.fsync(descriptor)
                        self._sync_names()
                    return
                finally:
                    if self._descriptor is not None:
                        portalocker.unlock(descriptor)
            raise OSError(f"the audit log {self.directory / self._name} kept vanishing")

    def close(self) -> None:
        """Release this process's file (appending again opens it anew)."""
        with self._lock:
            if self._descriptor is not None:
                os.close(self._descriptor)
                self._descriptor = None

    def _open(self) -> int:
        if self._descriptor is None:
            if not self.directory.is_dir():
                self.directory.mkdir(parents=True, exist_ok=True)
                self._unsynced.add(self.directory.parent)  # the folder's own name
            flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
            try:
                self._descriptor = os.open(self.directory / self._name,
                                           flags | os.O_CREAT | os.O_EXCL, 0o600)
                self._unsynced.add(self.directory)  # a new file: its name is not synced yet
            except FileExistsError:
                self._descriptor = os.open(self.directory / self._name, flags | os.O_CREAT,
                                           0o600)
            os.fchmod(self._descriptor, 0o600)  # writable whatever the umask: unsealed
        return self._descriptor

    def _sync_names(self) -> None:
        """Sync the folders where this process made a file or folder since the last synced
        append: a record synced into a file whose name a power loss takes away is lost."""
        for folder in sorted(self._unsynced, key=lambda path: len(path.parts)):
            sync_directory(folder)
        self._unsynced.clear()

    def keep_aside(self, record: ActivityRecord, name: str) -> None:
        """Append ``record`` to the file ``name`` of the log's directory, which no fold reads;
        on the disk, its name too, when this returns (a fold deletes the file it came from)."""
        with open(self.directory / name, "a", encoding="utf-8") as file:
            file.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
            file.flush()
            os.fsync(file.fileno())
        sync_directory(self.directory)

    def pending(self) -> list[ActivityRecord]:
        """The records not folded yet, every process's, oldest file first.

        A file a fold took aside between the listing and the reading is read under its new
        name (listed again); only a file the fold deleted, after writing its records into the
        graph, is left out."""
        records: dict[str, ActivityRecord] = {}
        read: set[str] = set()
        for _ in range(_ATTEMPTS):
            vanished = False
            for path in self._files():
                if path.name in read:
                    continue
                try:
                    found = _read(path, gone_raises=True)
                except FileNotFoundError:
                    vanished = True
                    continue
                except OSError as exc:  # the others are still read
                    _unreadable(path, exc)
                    read.add(path.name)
                    continue
                read.add(path.name)
                records.update((r.run_id, r) for r in found if r.run_id not in records)
            if not vanished:
                break
        return list(records.values())

    @contextlib.contextmanager
    def folding(self, aside: str, on_aside: Callable[[int], object] = lambda _: None,
                ) -> Iterator[list[ActivityRecord]]:
        """The pending records, taken out of the appenders' way; deleted when the block ends
        without an error (the caller has put them into the graph), kept otherwise. Lines that
        are no record this version reads (a torn line, a newer version's record) are appended
        to the file ``aside`` first, and ``on_aside`` told how many: deleting the files must
        not lose them."""
        taken: list[tuple[Path, int]] = []
        records: list[ActivityRecord] = []
        unread: list[bytes] = []
        try:
            for path in self._files():
                if not path.name.endswith(_FOLDING):
                    # A name no other file has: a fold that failed kept ``<name>.folding``,
                    # and the appender has since written a new ``<name>`` (renaming it onto
                    # the kept file would drop that file's records unread).
                    moved = path.with_name(f"{path.name[:-len(_SUFFIX)]}.{secrets.token_hex(4)}"
                                           f"{_SUFFIX}{_FOLDING}")
                    try:
                        path.rename(moved)
                    except FileNotFoundError:
                        continue  # another writer's fold took it
                    path = moved
                try:
                    descriptor = os.open(path, os.O_RDONLY)
                except OSError as exc:  # kept for a fold that can read it; the others go on
                    _unreadable(path, exc)
                    continue
                taken.append((path, descriptor))
                portalocker.lock(descriptor, portalocker.LockFlags.EXCLUSIVE)  # a line being appended ends first
                try:
                    # Sealed while locked: an appender that opened the file before the
                    # rename sees the seal once it holds the lock and writes a new file, so
                    # nothing is added after this read, and appends never wait for the
                    # graph write that follows.
                    os.fchmod(descriptor, _SEALED)
                    lines: list[bytes] = []
                    found, failed = _read(path, lines), None
                except OSError as exc:
                    failed = exc
                finally:
                    portalocker.unlock(descriptor)
                if failed is not None:  # not deleted: only a file read whole is
                    taken.pop()
                    os.close(descriptor)
                    _unreadable(path, failed)
                    continue
                records.extend(found)
                unread.extend(lines)
            yield records
            if unread:
                with open(self.directory / aside, "ab") as file:
                    file.write(b"".join(line + b"\n" for line in unread))
                    file.flush()
                    os.fsync(file.fileno())  # on the disk before the files that held them go
                sync_directory(self.directory)  # and its name, if this made the file
                on_aside(len(unread))
            for path, _ in taken:
                path.unlink(missing_ok=True)
        finally:
            for _, descriptor in taken:
                os.close(descriptor)

    def _files(self) -> list[Path]:
        """Every log file, those a fold left behind (renamed, not deleted) included."""
        if not self.directory.is_dir():
            return []
        files = [p for p in self.directory.iterdir()
                 if p.name.endswith((_SUFFIX, _SUFFIX + _FOLDING))]
        return sorted(files, key=lambda p: (_mtime(p), p.name))


_LIVE: weakref.WeakSet[AuditLog] = weakref.WeakSet()


def _forked_child() -> None:
    for audit_log in list(_LIVE):
        audit_log._forked()


os.register_at_fork(after_in_child=_forked_child)


def _unreadable(path: Path, error: OSError) -> None:
    log.warning("cannot read the audit log %s (%s): its records stay in it until this "
                "process can read and seal it (a file another account wrote: mind the "
                "permissions of the audit folder)", path, error.strerror or error)


def _append_whole(descriptor: int, line: bytes) -> None:
    """Append ``line`` whole, or leave the file as it was and raise OSError: a line cut short
    by a full disk would otherwise join the next record appended to it, and both be lost."""
    start = os.fstat(descriptor).st_size
    try:
        view = memoryview(line)
        while view:
            written = os.write(descriptor, view)
            if written == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            view = view[written:]
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(descriptor, start)
        raise


def _taken(descriptor: int, path: Path) -> bool:
    """Whether a fold has taken the appender's file: no longer at the appender's ``path``
    (every fold renames a file before it locks and reads it, so under the lock this is
    decided before the fold reads), deleted, or sealed. The mode alone does not tell: an
    appender makes its new file writable after opening it, which undid the seal of a fold
    that took the file in between, and the line appended after that fold's read was
    deleted with the file."""
    status = os.fstat(descriptor)
    if status.st_nlink == 0 or not status.st_mode & 0o200:
        return True
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return True
    return (named.st_dev, named.st_ino) != (status.st_dev, status.st_ino)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _read(path: Path, unread: list[bytes] | None = None, *,
          gone_raises: bool = False) -> list[ActivityRecord]:
    """The records of the file at ``path`` (none when it is gone, or FileNotFoundError with
    ``gone_raises``); the lines that are none go to ``unread``."""
    records = []
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if gone_raises:
            raise
        return []
    lines = data.splitlines()
    for number, line in enumerate(lines, 1):
        try:
            records.append(from_json(json.loads(line)))
        except (ValueError, TypeError) as exc:  # one bad line: the rest still counts
            # A record is appended with its line end in one write: a last line without one
            # was cut short by a process that stopped while writing it, not edited.
            torn = number == len(lines) and not data.endswith((b"\n", b"\r"))
            why = ("cut short (a process stopped while writing it: that run's record never "
                   "finished)" if torn else f"no record this version reads ({exc})")
            log.warning("skipping line %d of the audit log %s: %s", number, path, why)
            if unread is not None:
                unread.append(line)
    return records
