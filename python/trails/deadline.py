"""One deadline for a whole HTTP exchange, which httpx does not give.

httpx bounds each network operation by its timeout (connecting, each read, each write), not the
request: a server that sends a byte a little more often than the read timeout keeps its caller
waiting for ever. The httpx clients trails makes (the SPARQL endpoint, a Qdrant server, an
OpenAI-compatible API) send through :func:`transport`, so that each request, from connecting to
the last byte of its response, ends within the backend's ``timeout``: every operation is given
what is left of it, and none starts once nothing is. Past it the request fails with httpx's own
timeout errors (``ReadTimeout``, ``WriteTimeout``, ``ConnectTimeout``), which each backend
reports as it reports any timeout (``EndpointUnavailableError``, after the retries of
:mod:`trails.resilience`; each try has the whole ``timeout`` again).
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from trails._lazy import require
from trails.errors import ConfigurationError

__all__ = ["package_of", "transport"]

# When the request this thread is sending must have ended (time.monotonic()); None: no deadline.
_ENDS: contextvars.ContextVar[float | None] = contextvars.ContextVar("trails_http_deadline",
                                                                    default=None)
# A write is sent in pieces, each given what is left: a peer that reads slowly cannot stretch it.
_PIECE = 64 * 1024


def transport(seconds: float, url: str | None = None, *, package: str = "httpx",
              **options: Any) -> Any:
    """An ``httpx.HTTPTransport`` (``options``: its arguments) each of whose requests ends
    within ``seconds``, from connecting to the last byte of the response body.

    ``url`` is the endpoint: it goes through the proxy the environment names for it
    (``HTTPS_PROXY``, ``NO_PROXY``), as httpx would send it (an ``httpx.Client`` given a
    transport reads no proxy from the environment). ``package``: ``httpx``, or ``httpx2`` for a
    client built on that fork (:func:`package_of` tells).
    """
    if url is not None and "proxy" not in options:
        options["proxy"] = _environment_proxy(url)
    return _transport_class(package)(seconds, **options)


def package_of(client_class: type) -> str:
    """The httpx package (``httpx`` or ``httpx2``) that ``client_class`` (a client library's
    ``httpx.Client`` subclass) is built on."""
    for base in client_class.__mro__:
        root = base.__module__.partition(".")[0]
        if root in ("httpx", "httpx2"):
            return root
    return "httpx"


def _environment_proxy(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """What an operation may take: ``timeout`` (httpx's, per operation) cut to what is left of
    the request's deadline.

    Raises:
        error: the deadline has passed.
    """
    ends = _ENDS.get()
    if ends is None:
        return timeout
    left = ends - time.monotonic()
    if left <= 0:
        raise error("the request took longer than its deadline (the timeout of the whole "
                    "exchange)")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """A connection's socket, each operation bounded by the deadline of the request using it."""

    def __init__(self, inner: Any, httpcore: Any) -> None:
        self._inner, self._httpcore = inner, httpcore

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = self._inner.read(max_bytes, _left(timeout, self._httpcore.ReadTimeout))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), _PIECE):
            self._inner.write(buffer[start : start + _PIECE],
                              _left(timeout, self._httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream:
        inner = self._inner.start_tls(ssl_context, server_hostname,
                                      _left(timeout, self._httpcore.ConnectTimeout))
        return _Stream(inner, self._httpcore)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend:
    """httpcore's network backend, its connections' operations bounded (:class:`_Stream`)."""

    def __init__(self, inner: Any, httpcore: Any) -> None:
        self._inner, self._httpcore = inner, httpcore

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None, socket_options: Any = None) -> _Stream:
        stream = self._inner.connect_tcp(host, port, _left(timeout, self._httpcore.ConnectTimeout),
                                         local_address, socket_options)
        return _Stream(stream, self._httpcore)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> _Stream:
        stream = self._inner.connect_unix_socket(
            path, _left(timeout, self._httpcore.ConnectTimeout), socket_options)
        return _Stream(stream, self._httpcore)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Body:
    """A response body read under its request's deadline (httpx reads it after the transport
    has returned the response)."""

    def __init__(self, inner: Any, ends: float) -> None:
        self._inner, self._ends = inner, ends

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._inner)
        while True:
            token = _ENDS.set(self._ends)
            try:
                chunk = next(chunks, None)
            finally:
                _ENDS.reset(token)
            if chunk is None:
                return
            yield chunk

    def close(self) -> None:
        self._inner.close()


@functools.cache
def _transport_class(package: str) -> Any:
    """The transport class of ``package``, made once it is loaded (a remote part's first
    client)."""
    if package == "httpx":
        httpx = require("httpx", "An HTTP endpoint")
        import httpcore  # installed with httpx
    else:  # a fork a client library brings (openai: httpx2, on httpcore2)
        httpx = importlib.import_module(package)
        httpcore = importlib.import_module(package.replace("httpx", "httpcore"))

    class DeadlineTransport(httpx.HTTPTransport):  # type: ignore[misc,name-defined]
        def __init__(self, seconds: float, **options: Any) -> None:
            super().__init__(**options)
            pool: Any = getattr(self, "_pool", None)
            if not hasattr(pool, "_network_backend"):  # pragma: no cover - another httpx
                raise ConfigurationError(
                    f"httpx {httpx.__version__} builds its connections in a way trails does not "
                    "know, so a request could not be given a deadline: install httpx 0.27 or "
                    "0.28 (pip install \"trails[remote]\")")
            pool._network_backend = _Backend(pool._network_backend, httpcore)
            self.seconds = float(seconds)

        def handle_request(self, request: Any) -> Any:
            ends = time.monotonic() + self.seconds
            token = _ENDS.set(ends)
            try:
                response = super().handle_request(request)
            finally:
                _ENDS.reset(token)
            return httpx.Response(response.status_code, headers=response.headers,
                                  stream=_BoundedBody(response.stream, ends),
                                  extensions=response.extensions)

    class _BoundedBody(_Body, httpx.SyncByteStream):  # type: ignore[misc,name-defined]
        pass

    return DeadlineTransport
