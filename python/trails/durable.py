"""Files that survive a power loss: written whole to a temporary file, synced, renamed over
the old one, and the rename synced through the directory.

``os.replace`` is atomic against a crash of the process, not of the machine: until the file's
data is on the disk the renamed file may come back empty, and until its directory is synced
the rename (or a new file's very name) may be lost. :func:`replace_file` does the four steps
in the order that closes both gaps; :func:`sync_directory` is the last step alone, for a file
created or renamed in place (an audit log). A platform where a directory cannot be opened
(Windows) skips that step: its file system orders the rename itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

__all__ = ["replace_file", "sync_directory"]

# What fsync of a directory raises where the file system cannot sync one (not a failure).
_UNSYNCABLE = {errno.EINVAL, errno.EBADF, errno.ENOTSUP, errno.EACCES, errno.EPERM}


def sync_directory(directory: str | os.PathLike[str]) -> None:
    """Put ``directory``'s entries (a new file's name, a rename) on the disk; nothing where a
    directory cannot be opened or synced.

    Raises:
        OSError: the disk failed the sync (EIO): what was renamed there may not last.
    """
    try:
        descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # Windows opens no directory; a folder that cannot be read has no sync
        return
    try:
        os.fsync(descriptor)
    except OSError as exc:
        if exc.errno not in _UNSYNCABLE:
            raise
    finally:
        os.close(descriptor)


def replace_file(target: str | os.PathLike[str], data: bytes, temporary: str | os.PathLike[str],
                 mode: int = 0o666) -> None:
    """Replace ``target`` by ``data`` so that a crash, of the process or the machine, leaves
    the old file or the new one, whole: written to ``temporary`` (beside it), flushed and
    synced, renamed over ``target``, then the directory synced. The temporary file is removed
    when a step fails (the old file is then as it was). A ``target`` that exists keeps its
    permission bits (a ``chmod 600`` made by hand); a new one gets ``mode`` less the umask.

    Raises:
        OSError: a step failed (a full disk, a read-only mount, permissions).
    """
    target, temporary = Path(target), Path(temporary)
    kept = _mode_of(target)
    try:
        # Created with the kept mode (the umask can only narrow it), so data meant for the
        # owner alone is never readable by others, even before the chmod below.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                             | getattr(os, "O_BINARY", 0), mode if kept is None else kept)
        if kept is not None:  # exactly the old bits: the umask may have taken some off
            _set_mode(descriptor, temporary, kept)
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())  # the data on the disk before the name points at it
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):  # a read-only mount refuses this too
            temporary.unlink(missing_ok=True)
        raise
    sync_directory(target.parent)  # the rename itself on the disk


def _mode_of(target: Path) -> int | None:
    """The permission bits of ``target``, or None when there is no file to keep them of."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _set_mode(descriptor: int, path: Path, mode: int) -> None:
    if hasattr(os, "fchmod"):  # Windows has none before Python 3.13, and few bits anyway
        os.fchmod(descriptor, mode)
    else:
        os.chmod(path, mode)
