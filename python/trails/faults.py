"""Storage faults in trails' words: what the embedded databases raise, as a ``StorageError``.

SQLite (apsw or the standard library) and Oxigraph (RocksDB) report a full disk, a read-only
mount or a corrupt file with their own exception classes and messages. The stores and the
graph pass every failure of theirs through :func:`storage_fault`; what it recognises becomes
a :class:`~trails.errors.StorageError` (or :class:`~trails.errors.ContextDamagedError` for
corruption) naming the file and the fix, the rest stays as it was. The databases apply a
failed transaction not at all, so the message can say that nothing partial was written.
"""

from __future__ import annotations

from trails.errors import ContextDamagedError, StorageError

__all__ = ["storage_fault"]

# (words in the message or the exception's class name, what happened, what to do)
_FAULTS: list[tuple[tuple[str, ...], str, str]] = [
    (("no space", "disk is full", "disk full", "fullerror", "quota"),
     "the disk is full", "free space, then run it again"),
    (("read-only file system", "readonly database", "read-only database", "readonlyerror"),
     "the file system or file is read-only", "make it writable (or open the context read-only)"),
    (("permission denied", "permissionserror", "access denied", "unable to open database file",
      "cantopenerror"),
     "the file cannot be opened (permissions?)", "check the file's and directory's permissions"),
]
_CORRUPT = ("corruption", "corrupt", "malformed", "not a database", "notadberror",
            "may be corrupted")
_IO = ("io error", "i/o error", "ioerror")


def storage_fault(exc: BaseException, path: str | None, action: str) -> StorageError | None:
    """The StorageError ``exc`` stands for while ``action`` ran on ``path``; None when it is
    no storage fault (a SPARQL error, a bug), which the caller then handles as before.

    >>> str(storage_fault(OSError("IO error: No space left on device"), "kb/graph", "writing"))
    'writing kb/graph failed: the disk is full (IO error: No space left on device); free space, then run it again. Nothing partial was written.'
    >>> storage_fault(ValueError("bad IRI"), "kb/graph", "writing") is None
    True
    """
    text = f"{type(exc).__name__} {exc}".lower()
    where = f"{action} {path}" if path else action
    detail = str(exc) or type(exc).__name__
    for words, what, fix in _FAULTS:
        if any(w in text for w in words):
            return StorageError(f"{where} failed: {what} ({detail}); {fix}. Nothing partial "
                                "was written.")
    if any(w in text for w in _CORRUPT):
        return ContextDamagedError(
            f"{where} failed: the file is corrupt ({detail}). Restore the context directory "
            "from a backup, or move it aside and ingest the sources into a new one.")
    if any(w in text for w in _IO):
        return StorageError(f"{where} failed: an I/O error ({detail}); check the disk and the "
                            "mount, then run it again.")
    return None
