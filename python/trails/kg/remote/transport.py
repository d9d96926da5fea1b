"""How ``SparqlEndpointGraph`` sends one request: under the resilience policy
(:mod:`trails.resilience`), with transport failures reported as ``EndpointUnavailableError``.

A query is retried after a refused or reset connection, a timeout, HTTP 5xx or 429 (reads are
safe to repeat). An update is retried only when it certainly never reached the server (the
connection was refused or never made): the server applies an update atomically, but one that
timed out or failed with a 5xx may have been applied, and repeating it is the caller's choice.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from trails._lazy import require
from trails.errors import EndpointRefusedError, EndpointUnavailableError, SparqlError
from trails.kg.remote.connection import SPARQL_AUTH_ENV, split_credentials
from trails.kg.remote.dialect import permission_hint
from trails.kg.remote.results import server_message
from trails.kg.remote.rewrite import PROLOGUE_MARK, caller_positions
from trails.resilience import CircuitBreaker, Failure, Resilience, retry_after

if TYPE_CHECKING:
    import httpx

__all__ = ["ATOMIC", "answered", "article", "send"]

ATOMIC = ("Nothing partial was committed by that request: the endpoint applies a request whole "
          "or not at all. Retry when the endpoint is back (ingestion is idempotent).")


def send(client: httpx.Client, policy: Resilience, breaker: CircuitBreaker, timeout: float,
         method: str, url: str, kind: str, **kwargs: Any) -> httpx.Response:
    """The response to one request (``kind``: ``query``, ``update`` or what it is for, in
    messages), retried as the module says. A 5xx or 429 still there when retries are spent is
    returned for the caller to report.

    Raises:
        EndpointUnavailableError: refused, reset or timed out on every try, or the endpoint's
            circuit is open (nothing sent).
    """
    httpx = require("httpx", "A knowledge graph on a SPARQL endpoint")
    safe = kind != "update"
    try:
        return policy.call(lambda: client.request(method, url, **kwargs),
                           lambda exc: _failure(httpx, exc, safe=safe), breaker,
                           refused=lambda response: _refused(response, safe=safe))
    except httpx.TimeoutException as exc:
        raise EndpointUnavailableError(
            f"the SPARQL endpoint {url} did not answer {article(kind)} within {timeout:g} s "
            f"({type(exc).__name__}). {ATOMIC}") from exc
    except httpx.TransportError as exc:
        what = "refused the connection" if isinstance(exc, httpx.ConnectError) else "failed"
        raise EndpointUnavailableError(
            f"the SPARQL endpoint {url} {what} for {article(kind)} ({type(exc).__name__}: "
            f"{exc}). {ATOMIC}") from exc


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
