"""qdrant-client's failures in trails' words: every call the store makes goes through
:class:`GuardedClient`, so no raw client error reaches a caller.

- The server cannot be reached, timed out, or failed (HTTP 5xx, 429; gRPC unavailable):
  :class:`~trails.errors.EndpointUnavailableError` naming the location and what to check.
- The server refused the credentials (HTTP 401, 403): a ConfigurationError naming
  ``QDRANT_API_KEY``.
- The client was closed under the store: a ConfigurationError saying so.
- Local mode's own files (a full disk, a read-only folder, a corrupt file):
  :func:`trails.faults.storage_fault`.

Anything else (a request trails built wrong) passes through unchanged. The classes are told by
name and module, so importing this module does not import qdrant-client.
"""

from __future__ import annotations

import functools
from typing import Any

from trails.errors import ConfigurationError, EndpointUnavailableError, TrailsError
from trails.faults import storage_fault

__all__ = ["GuardedClient", "translate"]

_NETWORK_MODULES = ("httpx", "httpcore", "h11", "h2", "urllib3", "socket", "ssl")
_UNAVAILABLE_GRPC = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "INTERNAL",
                     "UNKNOWN", "ABORTED"}


def translate(exc: BaseException, location: str, call: str) -> BaseException:
    """The trails error ``exc`` (raised by the client's ``call``) stands for, or ``exc``."""
    if isinstance(exc, TrailsError):
        return exc
    kind, module = type(exc).__name__, type(exc).__module__
    text = str(exc)
    where = f"Qdrant at {location} ({call})"
    if "client has been closed" in text:
        return ConfigurationError(f"{where}: the client is closed; open the store again")
    status = getattr(exc, "status_code", None)
    if kind == "UnexpectedResponse" and isinstance(status, int):
        if status in (401, 403):
            return ConfigurationError(
                f"{where} refused the request (HTTP {status}): set QDRANT_API_KEY to a key the "
                "server accepts")
        if status >= 500 or status == 429:
            return _unavailable(where, f"HTTP {status}: {text[:300]}")
        return exc
    code = getattr(exc, "code", None)
    if module.startswith("grpc") and callable(code):
        name = getattr(code(), "name", "")
        return _unavailable(where, f"gRPC {name}") if name in _UNAVAILABLE_GRPC else exc
    network = module.split(".")[0] in _NETWORK_MODULES or isinstance(
        exc, (ConnectionError, TimeoutError))
    if kind == "ResponseHandlingException" or network:
        return _unavailable(where, text or kind)
    return storage_fault(exc, location, f"{call} on the Qdrant folder") or exc


def _unavailable(where: str, detail: str) -> EndpointUnavailableError:
    return EndpointUnavailableError(
        f"{where} failed: {detail}. Check that the server is running and reachable (the url, "
        "the network, QDRANT_API_KEY), then run it again: a request Qdrant did not answer "
        "wrote nothing of ingestion's commit point, and ingestion is idempotent")


class GuardedClient:
    """A ``QdrantClient`` whose public methods raise trails' errors (:func:`translate`).

    Attributes that are not public methods (local mode's internals) pass through as they are.
    """

    def __init__(self, client: Any, location: str) -> None:
        self._raw = client
        self._location = location

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._raw, name)
        if name.startswith("_") or not callable(value):
            return value

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return value(*args, **kwargs)
            except Exception as exc:
                error = translate(exc, self._location, name)
                if error is exc:
                    raise
                raise error from exc

        return call
