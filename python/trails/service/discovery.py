"""``service.json``: how a command finds the service (``trails serve``) serving a directory.

The service writes the file (mode 0600) once its socket is bound and removes it at shutdown;
``trails query`` reads it to answer through the warm service instead of loading the model. It
imports nothing heavy, so that path stays fast.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SERVICE_FILE", "ServiceInfo", "read_service"]

SERVICE_FILE = "service.json"


@dataclass(frozen=True)
class ServiceInfo:
    """Where the service for a directory listens, and the local token it accepts."""

    url: str
    pid: int
    token: str
    started: str = ""


def read_service(directory: str | os.PathLike[str]) -> ServiceInfo | None:
    """The service serving ``directory``, or None when there is none: no file, a file that
    does not parse, or one whose process is gone (a service killed before it could clean up)."""
    try:
        data = json.loads((Path(directory) / SERVICE_FILE).read_text(encoding="utf-8"))
        info = ServiceInfo(url=str(data["url"]).rstrip("/"), pid=int(data["pid"]),
                           token=str(data["token"]), started=str(data.get("started", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if _alive(info.pid) else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    return True
