"""Storage faults in trails' words: what the embedded databases raise, as a ``StorageError``.

SQLite (apsw or the standard library's ``sqlite3``), Oxigraph (RocksDB, through pyoxigraph's
``OSError``/``RuntimeError``) and the JSON reader report a full disk, a read-only mount, a
refused permission or a corrupt file each in their own classes and words. The vector stores,
the graph and the configuration reader pass their failures through :func:`storage_fault` (or
the :func:`translated` block): what it recognises becomes a
:class:`~trails.errors.StorageError`, or a :class:`~trails.errors.ContextDamagedError` for a
corrupt file, naming the file and what to do; anything else (a SPARQL mistake, a bug) is left
for the caller to handle as before.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from trails.errors import ConfigurationError, ContextDamagedError, StorageError

__all__ = ["closed", "corrupt_file", "is_full_disk", "storage_fault", "translated"]

RESTORE = ("restore the context directory from a backup, or move it aside, create a new "
           "context and ingest the sources again")

# (words in "<class name> <message>", lower-cased; what happened; what to do). The first
# match wins: a full disk first, since RocksDB words it "IO error: No space left on device".
_FAULTS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("fullerror", "no space left", "disk is full", "database or disk is full",
      "disk quota exceeded", "file too large"),
     "the disk is full (or a file size limit was reached)",
     ("free some space, then run it again (what it left half done, it finishes; `trails "
     "verify` says whether anything is left)")),
    (("read-only file system", "readonlyerror", "readonly database", "read-only database"),
     "the file system or the file is read-only",
     "make it writable, or open the context with read_only=True to only read it"),
    (("permission denied", "permissionerror", "permissionserror", "operation not permitted", "cantopenerror",
      "unable to open database file", "authorization denied"),
     "it cannot be opened (permissions, or a missing directory)",
     "check that the path exists and that this user may read and write it"),
    (("fileexistserror", "notadirectoryerror", "not a directory"),
     "a file stands where a directory must be (the path, or one of its parents)",
     "give the path of a directory (new or existing), or move the file aside"),
)
_CORRUPT = ("corruption", "corrupterror", "notadberror", "malformed", "not a database",
            "may be corrupted", "checksum mismatch", "bad magic number",
            "unsupported file format")  # SQLite: a header whose schema format is no known one
_IO = ("ioerror", "io error", "i/o error", "disk i/o")


def is_full_disk(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or a size limit) is full."""
    text = _text(exc)
    return any(word in text for word in _FAULTS[0][0])


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__} {exc}".lower()


def storage_fault(exc: BaseException, path: str | None, action: str) -> StorageError | None:
    """The StorageError that ``exc``, raised while ``action`` ran on ``path``, stands for;
    None when it is no storage fault.

    >>> print(storage_fault(OSError("IO error: No space left on device"), "kb/graph",
    ...                     "writing the graph in"))
    writing the graph in kb/graph failed: the disk is full (or a file size limit was reached) (IO error: No space left on device); free some space, then run it again (what it left half done, it finishes; `trails verify` says whether anything is left).
    >>> storage_fault(ValueError("bad IRI"), "kb/graph", "writing") is None
    True
    """
    if isinstance(exc, StorageError):
        return exc
    text = _text(exc)
    where = f"{action} {path}" if path else action
    detail = str(exc) or type(exc).__name__
    for words, what, fix in _FAULTS:
        if any(word in text for word in words):
            return StorageError(f"{where} failed: {what} ({detail}); {fix}.")
    if any(word in text for word in _CORRUPT):
        return corrupt_file(path or "a file of the context", detail)
    if any(word in text for word in _IO):
        return StorageError(f"{where} failed: an I/O error ({detail}); check the disk and the "
                            "mount, then run it again.")
    return None


def corrupt_file(path: str, detail: str) -> ContextDamagedError:
    """The error for a file of a context that is corrupt."""
    return ContextDamagedError(f"{path} is corrupt ({detail}); {RESTORE}.")


@contextlib.contextmanager
def translated(path: str | None, action: str) -> Iterator[None]:
    """Raise a storage fault met inside the block as its StorageError (the original as its
    cause); let anything else through unchanged.

    ``json.JSONDecodeError`` (and a file that is not UTF-8) means a corrupt file here: the
    block reads a file trails wrote."""
    try:
        yield
    except StorageError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise corrupt_file(path or "a file of the context", f"not JSON: {exc}") from exc
    except Exception as exc:
        fault = storage_fault(exc, path, action)
        if fault is None:
            raise
        raise fault from exc


def closed(what: str, path: str | None) -> ConfigurationError:
    """The error for a store used after it was closed: ``what`` (the knowledge graph, the
    vector store) at ``path``, None (or ``:memory:``) for one in memory, which cannot be
    opened again: what it held lived in it alone."""
    if path is None or path == ":memory:":
        return ConfigurationError(
            f"the {what} in memory is closed, and what it held went with it; make a new "
            "context (Context.memory(), trails.testing.fresh_context()) and ingest again")
    return ConfigurationError(f"the {what} in {path!r} is closed; open it (or its context) "
                              "again")
