"""A real ``oxigraph serve`` process on loopback, for tests of remote knowledge graphs.

>>> from trails.kg import SparqlEndpointGraph
>>> with OxigraphServer() as server:  # doctest: +SKIP
...     kg = SparqlEndpointGraph(server.query_url)
...     server.stop()   # an outage: requests now fail with EndpointUnavailableError
...     server.start()  # the same data, the same URL
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from trails.errors import ConfigurationError, MissingExtraError

__all__ = ["OxigraphServer", "oxigraph_binary"]


# Loopback only: never through a proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def oxigraph_binary() -> str:
    """The ``oxigraph`` command installed by the PyPI package ``oxigraph`` (the dev extra)."""
    beside = Path(sys.executable).parent / ("oxigraph.exe" if os.name == "nt" else "oxigraph")
    if beside.exists():
        return str(beside)
    found = shutil.which("oxigraph")
    if found is None:
        raise MissingExtraError("oxigraph", "dev", "Running an Oxigraph SPARQL server")
    return found


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class OxigraphServer:
    """Starts ``oxigraph serve`` on a free loopback port and stops it on exit.

    Args:
        location: the data directory; by default a new temporary one, removed by
            :meth:`close`. ``None`` with ``persistent=False`` runs in memory (a restart then
            loses the data).
        union_default_graph: start the server with ``--union-default-graph``.
        startup_timeout: seconds to wait for the server to answer.

    ``stop()`` ends the process (an outage); ``start()`` starts it again on the same port and
    data directory, so URLs and data survive the restart.
    """

    def __init__(
        self,
        location: str | os.PathLike[str] | None = None,
        *,
        persistent: bool = True,
        union_default_graph: bool = False,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 15.0,
    ) -> None:
        self.host = host
        self.port = port or _free_port(host)
        self.union_default_graph = union_default_graph
        self.startup_timeout = startup_timeout
        self._owned_dir: str | None = None
        if location is not None:
            self.location: str | None = str(location)
        elif persistent:
            self._owned_dir = self.location = tempfile.mkdtemp(prefix="trails-oxigraph-")
        else:
            self.location = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = Path(tempfile.mkdtemp(prefix="trails-oxigraph-log-")) / "server.log"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def query_url(self) -> str:
        return f"{self.base_url}/query"

    @property
    def update_url(self) -> str:
        return f"{self.base_url}/update"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> OxigraphServer:
        """Start the server (again) and wait until it answers a query."""
        if self.running:
            return self
        command = [oxigraph_binary(), "serve", "--bind", f"{self.host}:{self.port}"]
        if self.location is not None:
            command += ["--location", self.location]
        if self.union_default_graph:
            command.append("--union-default-graph")
        deadline = time.monotonic() + self.startup_timeout
        while True:
            with open(self._log_path, "ab") as log:
                self._process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            if self._wait_until_ready(deadline):
                return self
            # Exited early (the port still held by a process being torn down, say): retry.
            if time.monotonic() >= deadline:
                self.stop()
                raise ConfigurationError(
                    f"oxigraph serve did not answer on {self.base_url} within "
                    f"{self.startup_timeout:g} s; its log:\n{self.log()[-2000:]}")
            time.sleep(0.1)

    def _wait_until_ready(self, deadline: float) -> bool:
        assert self._process is not None
        probe = f"{self.query_url}?query=ASK%7B%7D"
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                with _OPENER.open(probe, timeout=1.0) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        """End the server process (its data directory stays for :meth:`start`)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def close(self) -> None:
        """Stop the server and remove the directories this object created."""
        self.stop()
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None
        shutil.rmtree(self._log_path.parent, ignore_errors=True)

    def log(self) -> str:
        """What the server printed so far."""
        try:
            return self._log_path.read_text(errors="replace")
        except OSError:
            return ""

    def __enter__(self) -> OxigraphServer:  # noqa: PYI034 - Self needs Python 3.11
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<OxigraphServer {self.base_url} {state} location={self.location}>"
