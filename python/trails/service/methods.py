"""The methods a path takes: ``HEAD`` answered as ``GET`` without its body, and a 405's
``Allow`` naming every method of the path.

FastAPI registers each method of a path as a route of its own (``GET`` and ``POST /sparql``,
``GET`` and ``POST /runs/{run}/feedback``), and the router's 405 names only the first one's;
nor does it answer ``HEAD`` for a ``GET`` route (``curl -I .../health`` was a 405).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from starlette.routing import BaseRoute, Match
from starlette.types import Message, Receive, Scope, Send

__all__ = ["HeadAsGet", "allowed_methods"]


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """The methods of every route whose path matches ``scope``'s, ``HEAD`` with ``GET``."""
    methods: set[str] = set()
    for route in routes:
        if route.matches(scope)[0] is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


class HeadAsGet:
    """ASGI middleware answering ``HEAD`` as the app answers ``GET``: the same status and
    headers, no body."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b""})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
