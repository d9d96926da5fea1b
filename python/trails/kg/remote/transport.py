"""How ``SparqlEndpointGraph`` sends one request: under the resilience policy
(:mod:`trails.resilience`), with transport failures reported as ``EndpointUnavailableError``.

Each try ends within the graph's ``timeout``, from connecting to the last byte of the answer
(:mod:`trails.deadline`: a server that trickles its answer is not waited for), and reads at
most ``max_response_bytes`` of a successful answer (decompressed): a larger one is refused
with a ``SparqlError`` naming the setting, before it fills the memory. Of an error's answer
only the start is read (its message is shown cut).

A query is retried after a refused or reset connection, a timeout, HTTP 5xx or 429 (reads are
safe to repeat). An update is retried only when it certainly never reached the server (the
connection was refused or never made): the server applies an update atomically, but one that
timed out or failed with a 5xx may have been applied, and repeating it is the caller's choice.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from trails._lazy import require
from trails.errors import (
    EndpointRefusedError,
    EndpointUnavailableError,
    InvalidArgumentError,
    SparqlError,
)
from trails.kg.remote.connection import SPARQL_AUTH_ENV, split_credentials
from trails.kg.remote.dialect import permission_hint
from trails.kg.remote.results import server_message
from trails.kg.remote.rewrite import PROLOGUE_MARK, caller_positions
from trails.resilience import CircuitBreaker, Failure, Resilience, retry_after

if TYPE_CHECKING:
    import httpx

__all__ = ["ATOMIC", "DEFAULT_MAX_RESPONSE_BYTES", "answered", "article", "check_limits",
           "send"]

# The most of a successful answer read (decompressed): a result set or graph of this size is
# many times larger once parsed.
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
# The most of an error's answer read: its message is shown cut to 600 characters.
_ERROR_BODY_BYTES = 64 * 1024

ATOMIC = ("Nothing partial was committed by that request: the endpoint applies a request whole "
          "or not at all. Retry when the endpoint is back (ingestion is idempotent).")


def check_limits(timeout: object, batch_size: object, max_response_bytes: object) -> None:
    """Refuse a graph's ``timeout``, ``batch_size`` or ``max_response_bytes`` out of range.

    Raises:
        InvalidArgumentError: naming the setting, what it got and what it takes.
    """
    for name, value in (("batch_size", batch_size), ("max_response_bytes", max_response_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (
            0 < timeout < float("inf")):  # inf: a call could wait for ever; NaN: none runs
        raise InvalidArgumentError(f"timeout must be a positive, finite number of seconds, "
                                   f"got {timeout!r}")


def send(client: httpx.Client, policy: Resilience, breaker: CircuitBreaker, timeout: float,
         method: str, url: str, kind: str, *, max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
         **kwargs: Any) -> httpx.Response:
    """The response to one request (``kind``: ``query``, ``update`` or what it is for, in
    messages), read whole (at most ``max_bytes``), retried as the module says. A 5xx or 429
    still there when retries are spent is returned for the caller to report.

    Raises:
        EndpointUnavailableError: refused, reset or timed out on every try (each try bounded by
            ``timeout`` in all, as the ``client``'s transport bounds it), or the endpoint's
            circuit is open (nothing sent).
        SparqlError: a successful answer longer than ``max_bytes`` (not retried).
    """
    httpx = require("httpx", "A knowledge graph on a SPARQL endpoint")
    safe = kind != "update"
    try:
        return policy.call(lambda: _exchange(httpx, client, method, url, kind, max_bytes, kwargs),
                           lambda exc: _failure(httpx, exc, safe=safe), breaker,
                           refused=lambda response: _refused(response, safe=safe))
    except httpx.TimeoutException as exc:
        raise EndpointUnavailableError(
            f"the SPARQL endpoint {url} did not answer {article(kind)} within {timeout:g} s "
            f"({type(exc).__name__}; the graph's timeout bounds each try in all: raise it for "
            f"an endpoint that is slow but working). {ATOMIC}") from exc
    except httpx.TransportError as exc:
        what = "refused the connection" if isinstance(exc, httpx.ConnectError) else "failed"
        raise EndpointUnavailableError(
            f"the SPARQL endpoint {url} {what} for {article(kind)} ({type(exc).__name__}: "
            f"{exc}). {ATOMIC}") from exc


def _exchange(http: Any, client: httpx.Client, method: str, url: str, kind: str,
              max_bytes: int, options: dict[str, Any]) -> httpx.Response:
    """One try: the response with its body read, at most ``max_bytes`` of a success."""
    with client.stream(method, url, **options) as response:
        success = response.status_code < 300
        # What the wire carries; compressed, it says nothing of what it unpacks to.
        declared = ("" if "content-encoding" in response.headers
                    else response.headers.get("content-length", ""))
        if success and declared.isdigit() and int(declared) > max_bytes:
            raise _too_large(url, kind, max_bytes, f"announced {int(declared):,} bytes")
        limit = max_bytes if success else _ERROR_BODY_BYTES
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > limit:
                if success:
                    raise _too_large(url, kind, max_bytes, f"sent more than {max_bytes:,} bytes")
                del body[limit:]
                break
    # The body as read (decoded): the headers that described it on the wire go.
    headers = [(name, value) for name, value in response.headers.multi_items()
               if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    read: httpx.Response = http.Response(
        response.status_code, headers=headers, content=bytes(body), request=response.request,
        extensions={name: value for name, value in response.extensions.items()
                    if name in ("reason_phrase", "http_version")})
    return read


def _too_large(url: str, kind: str, max_bytes: int, what: str) -> SparqlError:
    return SparqlError(
        f"the SPARQL endpoint {url} {what} in answer to {article(kind)}, more than "
        f"max_response_bytes={max_bytes:,}; trails read no more of it. Narrow the query (a "
        "LIMIT, a tighter filter, one scope at a time), or raise the cap: "
        "SparqlEndpointGraph(..., max_response_bytes=N), or \"max_response_bytes\" in the "
        "graph's settings in trails.json")


def answered(response: httpx.Response, url: str, kind: str, text: str) -> httpx.Response:
    """``response`` to ``text`` (``kind``: ``query`` or ``update``) sent to ``url``, when it
    succeeded; else the error its status says.

    Raises:
        SparqlError: HTTP 400 (the server's parser), with the server's message.
        EndpointRefusedError: a redirect (naming where to), or the URL or the credentials are
            wrong (HTTP 401, 403, 404, 405, 406, 415, or a permission error whatever its
            status).
        EndpointUnavailableError: any other status (a 5xx still there after retries).
    """
    status = response.status_code
    if status < 300:
        return response
    if status < 400:  # a redirect: followed, a POST could come back a GET, the auth go elsewhere
        location = response.headers.get("location")
        target = location and split_credentials(urllib.parse.urljoin(url, location))[0]
        raise EndpointRefusedError(
            f"the SPARQL endpoint {url} answered {article(kind)} with HTTP {status}, a redirect "
            f"to {target or 'nowhere (no Location header)'}; trails does not follow redirects. "
            "Give the URL the server redirects to (query_url/update_url; trails init "
            "--endpoint/--update-endpoint)")
    message = server_message(response)
    if text.startswith(PROLOGUE_MARK):
        message = caller_positions(message)
    if status == 400:
        raise SparqlError(f"SPARQL {kind} does not parse or is not allowed (HTTP 400 from "
                          f"{url}): {message}")
    if status in (401, 403, 404, 405, 406, 415) or permission_hint(message):
        raise EndpointRefusedError(
            f"the SPARQL endpoint {url} answered HTTP {status} to {article(kind)}: {message}. "
            "Check the URL (query_url/update_url) and the credentials (headers=/auth=; for a "
            f"context opened from trails.json, ${SPARQL_AUTH_ENV}, which is never recorded)."
            + permission_hint(message))
    raise EndpointUnavailableError(
        f"the SPARQL endpoint {url} failed with HTTP {status}: {message}. {ATOMIC}")


def _failure(httpx: Any, exc: BaseException, *, safe: bool) -> Failure | None:
    """Whether a failed try is worth another: any transport failure of a query, only a
    connection never made for an update. None: not a transport failure (re-raised)."""
    if not isinstance(exc, httpx.TransportError):
        return None
    never_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
    return Failure(retryable=safe or never_sent)


def _refused(response: httpx.Response, *, safe: bool) -> Failure | None:
    """An answer that says the endpoint cannot serve now (5xx, 429): a failure, retried for a
    query (after ``Retry-After`` when given), not for an update (it may have been applied)."""
    status = response.status_code
    if status < 500 and status != 429:
        return None
    return Failure(retryable=safe, retry_after=retry_after(response.headers))


def article(kind: str) -> str:
    """``a query``, ``an update``."""
    return ("an " if kind[0] in "aeiou" else "a ") + kind
