"""``trails serve``: one context, one process, uvicorn on one socket.

The context lives in this process (its graph store, its vector matrix, its warm model), so
there is one worker: several would each open the context and hold the model, and only one
of them could write (ADR 0019). Ctrl-C and SIGTERM shut down cleanly: requests finish, the
audit log is folded, the context is closed, ``service.json`` is removed.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any

from trails._lazy import require

require("uvicorn", "trails serve (the HTTP service)")

# (Imported after the check above, which names the extra to install.)
import uvicorn

from trails.errors import ConfigurationError, ContextLockedError
from trails.rank import Step
from trails.service.app import create_app
from trails.service.client import NotAnswered, ServiceClient
from trails.service.discovery import (
    ServiceInfo,
    read_service,
    remove_service,
    write_service,
)
from trails.service.keys import KeyRing, new_secret
from trails.service.limits import DEFAULT_MAX_REQUEST_BYTES
from trails.service.state import local_key

__all__ = ["is_loopback", "serve"]

log = logging.getLogger("trails.service")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _running(directory: str | os.PathLike[str]) -> ServiceInfo | None:
    """The service ``directory/service.json`` names, if its process lives and answers (a
    file left by a killed service, its pid since reused, names none)."""
    info = read_service(directory)
    if info is None:
        return None
    try:
        client = ServiceClient(info)
    except NotAnswered:  # not on loopback: its live pid is all there is to go by
        return info
    return info if client.health() else None


def serve(directory: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 8000,
          keys: KeyRing | None = None, read_only: bool = False, reranker: Step | None = None,
          announce: Callable[[str], None] = print, log_level: str = "info",
          allowed_hosts: Sequence[str] | None = None,
          max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
    """Serve the context in ``directory`` until Ctrl-C or SIGTERM.

    Once the socket is bound, ``directory/service.json`` names the URL and a token valid
    for this run (:mod:`trails.service.discovery`) and ``announce`` gets the URL. Without
    keys, a request whose ``Host`` names neither the bound address nor loopback nor one of
    ``allowed_hosts`` is refused (:mod:`trails.service.hosts`); a request body longer than
    ``max_request_bytes`` is answered 413 (:mod:`trails.service.limits`).

    Raises:
        ConfigurationError: a host that is not loopback without keys (anyone who can reach
            it could read and write everything), the port cannot be bound, or a live
            service already serves ``directory`` (ContextLockedError).
        Everything :meth:`Context.open` raises.
    """
    running = _running(directory)
    if running is not None:  # its service.json is what `trails query` and writes read
        raise ContextLockedError(
            f"{directory} is already served by `trails serve` (pid {running.pid}, "
            f"{running.url}): send requests there (`trails query` does), or stop it (Ctrl-C "
            f"where it runs, or kill -TERM {running.pid}) and start this one again. One "
            "service per directory: a second, even --read-only, would answer from the data "
            "as it was when it opened")
    if keys is None and not is_loopback(host):
        raise ConfigurationError(
            f"--host {host} is reachable from other machines, and no API keys are configured: "
            "give --keys FILE (trails keys add LABEL --keys FILE), or bind 127.0.0.1")
    if keys is None:
        log.warning("no API keys: every request on %s is served as 'anonymous', with every "
                    "scope and the right to write", host)
    token = new_secret()
    app = create_app(directory, keys, read_only=read_only, reranker=reranker,
                     extra_keys=(local_key(token),), allowed_hosts=allowed_hosts,
                     max_request_bytes=max_request_bytes)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                            workers=1, access_log=False)
    written: list[ServiceInfo] = []

    def bound(server: uvicorn.Server) -> None:
        port_bound = _port(server)
        url = f"http://{_url_host(host)}:{port_bound}"
        info = ServiceInfo(url=url, pid=os.getpid(), token=token,
                           started=dt.datetime.now(dt.UTC).isoformat())
        write_service(directory, info)
        written.append(info)
        announce(url)

    server = _Server(config, bound)
    previous = signal.signal(signal.SIGTERM, _note)  # uvicorn re-raises SIGTERM after its
    try:                                             # shutdown: noted, not fatal
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C once it has shut down
        pass
    except SystemExit:  # uvicorn's exit when it cannot start (its code, 3, is not trails')
        if written or server.started:
            raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        for info in written:
            remove_service(directory, info)
    if not server.started and not written:
        raise ConfigurationError(
            f"could not serve on {host}:{port}: the address is in use (another "
            "trails serve, or another program) or cannot be bound here, or the context could "
            "not start; the log above says which. Choose another --port (--port 0 takes a "
            "free one) or --host")


def _note(signum: int, frame: Any) -> None:
    log.info("signal %d received after shutdown", signum)


class _Server(uvicorn.Server):
    """uvicorn's server, calling ``on_bound`` once its socket listens."""

    def __init__(self, config: uvicorn.Config, on_bound: Callable[[uvicorn.Server], None]):
        super().__init__(config)
        self._on_bound = on_bound

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit:
            self._on_bound(self)


def _port(server: uvicorn.Server) -> int:
    for listener in server.servers:
        for sock in listener.sockets:
            address = sock.getsockname()
            return int(address[1])
    return int(server.config.port)


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):  # every interface: this machine reaches it on loopback
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host

