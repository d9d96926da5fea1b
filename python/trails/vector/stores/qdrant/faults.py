"""qdrant-client's failures in trails' words: every call the store makes goes through
:class:`GuardedClient`, so no raw client error reaches a caller.

- The server cannot be reached, timed out, or failed (HTTP 5xx, 429; gRPC unavailable):
  :class:`~trails.errors.EndpointUnavailableError` naming the location and what to check.
- The server refused the credentials (HTTP 401, 403): an EndpointRefusedError naming
  ``QDRANT_API_KEY``.
- The client was closed under the store: a ConfigurationError saying so.
- Local mode's own files (a full disk, a read-only folder, a corrupt file):
  :func:`trails.faults.storage_fault`.

Anything else (a request trails built wrong) passes through unchanged. The classes are told by
name and module, so importing this module does not import qdrant-client.

On a server (not local mode) every call also runs under the store's resilience policy
(:mod:`trails.resilience`): a read that failed as above is retried with backoff, a write only
when it certainly never reached the server (the connection was refused), and the server's
circuit breaker makes calls fail at once while it is open.
"""

from __future__ import annotations

import functools
from typing import Any

from trails.errors import (
    ConfigurationError,
    EndpointRefusedError,
    EndpointUnavailableError,
    TrailsError,
)
from trails.faults import storage_fault
from trails.resilience import Failure, Resilience, breaker_for, retry_after

__all__ = ["GuardedClient", "failure", "translate"]

_NETWORK_MODULES = ("httpx", "httpcore", "h11", "h2", "urllib3", "socket", "ssl")
# Client methods that only read: safe to repeat after any failure.
_READS = ("query", "search", "retrieve", "scroll", "count", "get_", "collection_exists",
          "facet", "recommend", "discover", "info")
_NEVER_SENT = {"ConnectError", "ConnectTimeout", "ConnectionRefusedError"}
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
            return EndpointRefusedError(
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


def failure(exc: BaseException, call: str) -> Failure | None:
    """How the resilience policy treats ``exc`` from the client's ``call``: None unless the
    server was unavailable; retried if ``call`` only reads or the request never left."""
    if not isinstance(translate(exc, "", call), EndpointUnavailableError):
        return None
    status = getattr(exc, "status_code", None)
    headers = getattr(exc, "headers", None)
    wait = retry_after(headers) if status == 429 and headers is not None else None
    return Failure(retryable=call.startswith(_READS) or _never_sent(exc), retry_after=wait)


def _never_sent(exc: BaseException | None) -> bool:
    """Whether the connection was never made (refused): the request cannot have arrived."""
    seen = 0
    while exc is not None and seen < 8:
        if type(exc).__name__ in _NEVER_SENT:
            return True
        exc = getattr(exc, "source", None) or exc.__cause__ or exc.__context__
        seen += 1
    return False


class GuardedClient:
    """A ``QdrantClient`` whose public methods raise trails' errors (:func:`translate`), run
    under ``policy`` (retries and the circuit breaker of ``location``) when one is given.

    Attributes that are not public methods (local mode's internals) pass through as they are.
    """

    def __init__(self, client: Any, location: str, policy: Resilience | None = None) -> None:
        self._raw = client
        self._location = location
        self._policy = policy
        self._breaker = None if policy is None else breaker_for("Qdrant", location, policy)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._raw, name)
        if name.startswith("_") or not callable(value):
            return value

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                if self._policy is None or self._breaker is None:
                    return value(*args, **kwargs)
                return self._policy.call(lambda: value(*args, **kwargs),
                                         lambda exc: failure(exc, name), self._breaker)
            except Exception as exc:
                error = translate(exc, self._location, name)
                if error is exc:
                    raise
                raise error from exc

        return call
