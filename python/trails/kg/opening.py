"""Opening an Oxigraph store in a directory, beside a writer that may be compacting it, and
the revision stamp kept beside its files."""

from __future__ import annotations

import contextlib
import os
import secrets
import time

import pyoxigraph as ox

from trails.errors import ConfigurationError, ContextLockedError, StorageError
from trails.faults import storage_fault

__all__ = ["OPEN_ATTEMPTS", "REVISION_FILE", "new_revision", "open_store", "read_revision"]

# A read-only open lists the writer's files, then opens them; a flush or compaction in between
# deletes one ("IO error: No such file ... .sst"). Such opens are tried this many times, waiting
# 10 ms, 20 ms, ... up to 250 ms between them (about 9 s in all: on a loaded machine a busy
# writer's compactions can win a dozen races in a row).
OPEN_ATTEMPTS = 40
# Inside the store's directory: RocksDB leaves files of other names alone.
REVISION_FILE = "trails-revision"


def open_store(path: str | None, *, read_only: bool) -> ox.Store:
    """The Oxigraph store in ``path`` (in memory for None), opened; read-only, opened again
    while a writer's compaction removes the files it listed (``OPEN_ATTEMPTS``).

    Raises:
        ConfigurationError: read-only, and the directory holds no graph.
        ContextLockedError: another process (or this one) has it open for writing.
        ContextDamagedError: its files are corrupt.
        StorageError: its files cannot be read or written (permissions, mount, space).
    """
    if path is None:
        if read_only:
            raise ConfigurationError("an in-memory graph cannot be read-only; give a path")
        return ox.Store()
    if read_only and not os.path.exists(os.path.join(path, "CURRENT")):
        raise ConfigurationError(
            f"cannot open the graph in {path!r} read-only: it holds no graph (yet); "
            "open it once without read_only=True to create it")
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return ox.Store.read_only(path) if read_only else ox.Store(path)
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
            # Files of a live store vanished (its CURRENT stays: RocksDB renames it in).
            vanished = ("no such file" in message.lower()
                        and os.path.exists(os.path.join(path, "CURRENT")))
            if read_only and vanished and attempt + 1 < OPEN_ATTEMPTS:
                time.sleep(min(0.01 * 2**attempt, 0.25))
                continue
            # No traceback kept: its frames would hold nothing, but the cause's message is
            # all a caller can use.
            raise (storage_fault(exc, path, "opening the graph in") or StorageError(
                f"opening the graph in {path} failed: {message}; check the "
                "directory (a graph trails made there, readable, on a mounted disk)")
            ) from exc.with_traceback(None)
    raise AssertionError("unreachable")  # pragma: no cover - the last attempt raises



def read_revision(path: str | None) -> str | None:
    """The revision stamp of the graph in ``path`` (None: none written yet, or in memory)."""
    if path is None:
        return None
    try:
        with open(os.path.join(path, REVISION_FILE), encoding="ascii") as file:
            return file.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None  # a stamp is a hint for replays: never a reason to fail a query


def new_revision(path: str | None) -> str:
    """A new stamp for the graph in ``path``, written beside its files (renamed into place, so
    a reader sees the old stamp or the new one)."""
    revision = secrets.token_hex(8)
    if path is not None:
        target = os.path.join(path, REVISION_FILE)
        temporary = f"{target}.{revision}.tmp"
        with contextlib.suppress(OSError):  # a full disk fails the next write, not this one
            with open(temporary, "w", encoding="ascii") as file:
                file.write(revision)
            os.replace(temporary, target)
    return revision
