"""``service.json``: how a process finds the service running on a context directory.

``trails serve --db DIR`` writes ``DIR/service.json`` once its socket is bound and removes it
at shutdown::

    {"version": 1, "url": "http://127.0.0.1:8000", "pid": 4242,
     "token": "trails_...", "started": "2026-01-01T12:00:00+00:00", "directory": "/srv/kb"}

``directory`` is the served directory's real path, ``identity`` its device and inode: a copy
of the directory (``cp -a kb kb2`` while ``kb`` is served) holds the same file, and its queries
must not go to ``kb``'s service, even once it is renamed ``kb``; the served directory moved
(``mv kb kb-old``) is still the one its service serves. Where ``identity`` is recorded it
decides (a path names another directory once the served one is moved); a file without it
(an older trails) is matched by ``directory``.

The token is a key valid for that run only (every scope, read and write), so the file is
written with mode 0600: whoever can read it could already open the directory itself. Clients
(``trails query``) read it with :func:`read_service`; this module imports nothing heavy, so
that a client pays nothing for looking.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SERVICE_FILE", "ServiceInfo", "pid_alive", "read_service", "remove_service",
           "write_service"]

SERVICE_FILE = "service.json"
VERSION = 1


@dataclass(frozen=True)
class ServiceInfo:
    """A running service, as its ``service.json`` describes it."""

    url: str
    pid: int
    token: str
    started: str
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "url": self.url, "pid": self.pid,
                "token": self.token, "started": self.started}


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0 checks without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, it is someone else's
        return True
    except OSError:
        return False
    return True


def read_service(directory: str | os.PathLike[str]) -> ServiceInfo | None:
    """The service running on ``directory``; None when there is no ``service.json``, it
    cannot be read or parsed, or the process it names is gone (a service that was killed)."""
    try:
        data = json.loads((Path(directory) / SERVICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    url, pid, token, started = (data.get(name) for name in ("url", "pid", "token", "started"))
    if not (isinstance(url, str) and isinstance(pid, int) and not isinstance(pid, bool)
            and isinstance(token, str) and isinstance(started, str)):
        return None
    identity, served = data.get("identity"), data.get("directory")  # absent: written earlier
    if identity is not None:
        if identity != _identity(directory):
            return None  # a copy's, whatever its name: another context's service
    elif served is not None and served != os.path.realpath(directory):
        return None  # a copy's: another context's service
    if not pid_alive(pid):
        return None
    return ServiceInfo(url=url, pid=pid, token=token, started=started)


def write_service(directory: str | os.PathLike[str], info: ServiceInfo) -> Path:
    """Write ``service.json`` atomically (a temporary file renamed over it), mode 0600.

    Raises:
        OSError: the directory cannot be written.
    """
    target = Path(directory) / SERVICE_FILE
    handle, temporary = tempfile.mkstemp(prefix=".service.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(handle, 0o600)  # before a byte of the token is written
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump({**info.to_dict(), "directory": os.path.realpath(directory),
                       "identity": _identity(directory)}, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def _identity(directory: str | os.PathLike[str]) -> list[int] | None:
    """The directory's device and inode, which a move keeps and a copy does not (None when
    it cannot be looked at)."""
    try:
        status = os.stat(directory)
    except OSError:
        return None
    return [status.st_dev, status.st_ino]


def remove_service(directory: str | os.PathLike[str], info: ServiceInfo) -> bool:
    """Remove ``service.json`` if it still describes ``info`` (same pid and token): a newer
    service on the same directory keeps its file. True when it was removed."""
    target = Path(directory) / SERVICE_FILE
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or data.get("pid") != info.pid or data.get("token") != info.token:
        return False
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
        return True
    return False
