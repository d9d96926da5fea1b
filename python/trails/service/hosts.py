"""Which ``Host`` the service answers: the defence against DNS rebinding.

A keyless service on loopback serves whoever reaches it. A web page cannot reach it by its
own name, but it can make its name resolve to 127.0.0.1 once it has loaded (DNS rebinding):
the browser then sends the page's requests to the service, with the page's name in ``Host``,
and lets the page read the answers. Refusing a ``Host`` that names no address of the service
stops that: a request meant for it names 127.0.0.1, ``localhost``, ``[::1]`` or the address
it is bound to (with its port), or a name configured as allowed (``--allowed-host``, for a
service reached through a proxy or by another name). Everything else answers 421.

A plain ASGI middleware, so that it stands in front of every route, streamed ones included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from trails.errors import ConfigurationError

__all__ = ["ANY_HOST", "HostCheck", "check_allowed_hosts", "parse_host"]

ANY_HOST = "*"  # an allowed host that turns the check off (a proxy that checks for us)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_HOST = re.compile(r"\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\.?")
_PORT = re.compile(r"(?::(?P<port>[0-9]{1,5}))?")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class HostName:
    """A ``Host`` value: its name (lower case, IPv6 without brackets) and port, if any."""

    name: str
    port: int | None


def parse_host(value: str) -> HostName | None:
    """``name``, ``name:port``, ``[v6]`` or ``[v6]:port``; None for anything else (a user
    part, a path, spaces, an empty value)."""
    found = _HOST.match(value)
    if found is None:
        return None
    rest = _PORT.fullmatch(value[found.end():])
    if rest is None:
        return None
    name = (found.group("v6") or found.group("name")).lower()
    port = rest.group("port")
    return HostName(name, None if port is None else int(port))


def check_allowed_hosts(entries: Iterable[str]) -> list[str]:
    """``entries`` checked: each a host name with an optional port, or ``*``.

    Raises:
        ConfigurationError: an entry that is no host name.
    """
    checked = []
    for entry in entries:
        if entry != ANY_HOST and parse_host(entry.strip()) is None:
            raise ConfigurationError(
                f"allowed host {entry!r} is no host name: give a name or address, optionally "
                "with a port (search.internal, search.internal:8443, [::1]:8000), or '*' for "
                "any")
        checked.append(entry.strip())
    return checked


class HostCheck:
    """ASGI middleware answering 421 to a request whose ``Host`` names none of the service's
    addresses (see the module's docstring).

    Args:
        app: the application behind it.
        allowed: more names (``name`` any port, ``name:port`` that port); ``*`` allows any.

    Raises:
        ConfigurationError: an allowed host that is no host name.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]],
                 allowed: Iterable[str] = ()) -> None:
        self.app = app
        entries = list(allowed)
        self.anything = ANY_HOST in entries
        self.allowed = [parse_host(e) for e in check_allowed_hosts(entries) if e != ANY_HOST]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.anything:
            await self.app(scope, receive, send)
            return
        hosts = [value.decode("latin-1") for name, value in scope.get("headers", ())
                 if name.lower() == b"host"]
        if len(hosts) == 1 and self.accepts(parse_host(hosts[0]), scope.get("server")):
            await self.app(scope, receive, send)
            return
        await _refuse(send, hosts[0] if len(hosts) == 1 else None, scope.get("server"))

    def accepts(self, host: HostName | None, server: Any) -> bool:
        """Whether ``host`` names this service: a loopback name or its bound host (on its
        bound port, when the request names one), or an allowed name."""
        if host is None:
            return False
        bound_name, bound_port = (str(server[0]).lower(), server[1]) if server else (None, None)
        if host.name in LOOPBACK_NAMES or host.name == bound_name:
            return host.port is None or bound_port is None or host.port == bound_port
        return any(entry is not None and entry.name == host.name
                   and entry.port in (None, host.port) for entry in self.allowed)


async def _refuse(send: Send, host: str | None, server: Any) -> None:
    where = f"http://127.0.0.1:{server[1]}" if server else "http://127.0.0.1:PORT"
    named = "no Host header, or more than one" if host is None else f"Host {host!r}"
    body = json.dumps({"error": "MisdirectedRequest", "message": (
        f"this service answers requests addressed to it (127.0.0.1, localhost, [::1] or the "
        f"address it is bound to), and this one has {named}: a web page whose name was "
        f"rebound to this machine sends its own. Connect to {where}, or start the service "
        "with --allowed-host NAME for a name it is reached by (docs/security.md)")}).encode()
    await send({"type": "http.response.start", "status": 421, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})
