"""What ``SparqlEndpointGraph`` connects with: the update URL beside a query URL, the
credentials a URL carries taken out of it, the TLS context every endpoint shares, and the
``Authorization`` header taken from the environment."""

from __future__ import annotations

import os
import urllib.parse
from types import ModuleType
from typing import TYPE_CHECKING

from trails import _state
from trails.errors import InvalidArgumentTypeError
from trails.resilience import public_url

if TYPE_CHECKING:
    import ssl

__all__ = ["SPARQL_AUTH_ENV", "auth_headers", "split_credentials", "ssl_context", "update_url"]

# The value of the Authorization header sent to a SPARQL endpoint ("Bearer TOKEN", "Basic ...").
SPARQL_AUTH_ENV = "TRAILS_SPARQL_AUTH"


def update_url(query_url: str) -> str:
    """``.../update`` beside a ``.../query`` URL, else the query URL itself."""
    if query_url.endswith("/query"):
        return query_url[: -len("/query")] + "/update"
    return query_url


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@``, and that user and password (decoded), if any.

    The URL is shown in messages, ``repr``, ``trails.json`` and ``GET /health``; the
    credentials are sent as HTTP basic auth, as httpx would send them from the URL.

    >>> split_credentials("https://ann:p%40ss@graph.example.org/query")
    ('https://graph.example.org/query', ('ann', 'p@ss'))
    >>> split_credentials("http://127.0.0.1:7878/query")
    ('http://127.0.0.1:7878/query', None)
    """
    if not isinstance(url, str):  # a hand-edited trails.json, or a caller's mistake
        raise InvalidArgumentTypeError(f"an endpoint URL must be a string, got {url!r}")
    userinfo, at, _ = urllib.parse.urlsplit(url).netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    return public_url(url), (urllib.parse.unquote(user), urllib.parse.unquote(password))


def ssl_context(httpx: ModuleType) -> ssl.SSLContext:
    """One default TLS context per process: building one (the CA bundle) takes ~0.2 s."""
    context: ssl.SSLContext = _state.cached(
        ("tls-context",), lambda: httpx.create_ssl_context(trust_env=True))
    return context


def auth_headers() -> dict[str, str] | None:
    """The ``Authorization`` header ``$TRAILS_SPARQL_AUTH`` holds, read each time a graph
    opens from ``trails.json`` (a secret is never recorded)."""
    auth = os.environ.get(SPARQL_AUTH_ENV)
    return {"Authorization": auth} if auth else None
