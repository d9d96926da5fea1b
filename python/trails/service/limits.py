"""How large a request body the service reads: ``--max-request-bytes`` (50 MiB by default).

A route reads its body whole before parsing it (a SPARQL query, a search, documents to ingest),
so a body without a bound could fill the service's memory. A request that announces a longer
body (``Content-Length``) is answered 413 before any of it is read; one sent in chunks is
answered 413 once its bytes pass the cap, and no more of it is read.

A plain ASGI middleware, so that it stands in front of every route; so does
:class:`NoContentCoding`, which refuses a body sent with a ``Content-Encoding`` (gzip...):
the service decodes none, and read as it is, such a body would mean one thing to the service
and another to every reader that decodes it.
"""

from __future__ import annotations

import json
from typing import Any

from trails.errors import InvalidArgumentError, RequestTooLargeError
from trails.service.hosts import Receive, Scope, Send

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "BodyLimit", "NoContentCoding", "too_large"]

DEFAULT_MAX_REQUEST_BYTES = 50 * 1024 * 1024


def too_large(what: str, max_bytes: int) -> RequestTooLargeError:
    """The error of a request body that ``what`` (``announces 2,000,000 bytes``), past
    ``max_bytes``."""
    return RequestTooLargeError(
        f"the request body {what}, more than this service reads ({max_bytes:,} bytes): send "
        "less in one request (documents to ingest in several requests), or start the service "
        "with a larger --max-request-bytes (create_app(max_request_bytes=...))")


class BodyLimit:
    """ASGI middleware answering 413 to a request whose body passes ``max_bytes``.

    Raises:
        InvalidArgumentError: ``max_bytes`` is not a positive integer.
    """

    def __init__(self, app: Any, max_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise InvalidArgumentError(f"max_request_bytes must be a positive integer, got "
                                       f"{max_bytes!r}")
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = [value.strip() for name, value in scope.get("headers", ())
                    if name.lower() == b"content-length"]
        if declared and declared[0].isdigit() and int(declared[0]) > self.max_bytes:
            await _refuse(send, too_large(f"announces {int(declared[0]):,} bytes", self.max_bytes),
                          413)
            return
        seen, refused, started = 0, False, False

        async def counted() -> Any:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    refused = True
                    raise too_large(f"passed {self.max_bytes:,} bytes", self.max_bytes)
            return message

        async def unless_refused(message: Any) -> None:
            nonlocal started
            if refused:  # the route's answer to a body it was refused: the 413 goes instead
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, unless_refused)
        except Exception:
            if not refused:
                raise
        if refused and not started:
            await _refuse(send, too_large(f"passed {self.max_bytes:,} bytes", self.max_bytes), 413)


class NoContentCoding:
    """ASGI middleware answering 415 to a request whose body has a content coding (a
    ``Content-Encoding`` other than ``identity``), which no route decodes."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        codings = [coding.strip() for name, value in scope.get("headers", ())
                   if name.lower() == b"content-encoding"
                   for coding in value.decode("latin-1").lower().split(",")]
        sent = [coding for coding in codings if coding not in ("", "identity")]
        if scope["type"] != "http" or not sent:
            await self.app(scope, receive, send)
            return
        await _refuse(send, InvalidArgumentError(
            f"the request body has Content-Encoding: {', '.join(sent)}, "
            "which this service does not decode; send the body uncompressed, without that "
            "header"), 415, [(b"accept-encoding", b"identity")])  # RFC 9110, 15.5.16


async def _refuse(send: Send, error: Exception, status: int,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": type(error).__name__, "message": str(error)}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), (b"connection", b"close"), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
