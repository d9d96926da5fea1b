"""A real Virtuoso Open Source 7 server on loopback, for tests of remote knowledge graphs.

Debian ships it (``apt-get install -y virtuoso-opensource``: ``virtuoso-t`` and ``isql-vt``).
Each :class:`VirtuosoServer` is a throwaway instance: a generated ``virtuoso.ini`` in a new
temporary directory (database, transaction log and error log there), its SQL and HTTP ports
chosen free on loopback, started with ``virtuoso-t +foreground +configfile ...``. Once the HTTP
endpoint answers ``ASK {}``, ``isql-vt`` grants ``SPARQL_UPDATE`` to the ``SPARQL`` user, so the
anonymous endpoint ``/sparql`` takes queries and updates; ``/sparql-auth`` takes them from the
``dba`` account with HTTP digest auth (``auth`` below). Stopping sends SIGTERM, on which
Virtuoso checkpoints and exits.

>>> from trails.kg import SparqlEndpointGraph
>>> with VirtuosoServer() as server:  # doctest: +SKIP
...     kg = SparqlEndpointGraph(server.query_url, dialect="virtuoso")

Starting one takes seconds (it creates its database): tests share one per process with
:func:`shared_virtuoso`, stopped when the process exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from trails.errors import ConfigurationError
from trails.testing.servers.oxigraph import _free_port

__all__ = ["INSTALL_COMMAND", "VirtuosoServer", "shared_virtuoso", "virtuoso_binaries"]

INSTALL_COMMAND = "apt-get update && apt-get install -y virtuoso-opensource"
DBA_PASSWORD = "dba"  # a fresh database's; the instance listens on loopback and is thrown away

# Loopback only: never through a proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
Striping = 0

[Parameters]
ServerPort = {host}:{sql_port}
DisableUnixSocket = 1
; No periodic checkpoints: the instance lives for one test session.
CheckpointInterval = 0
NumberOfBuffers = 10000
MaxDirtyBuffers = 6000
DirsAllowed = .
{sorted_rows}
[HTTPServer]
ServerPort = {host}:{http_port}
ServerRoot = {dir}
ServerThreads = 10
MaxClientConnections = 10
Charset = UTF-8

[SPARQL]
; Debian's default of 10000 rows cuts larger results (flagged: X-SPARQL-MaxRows).
ResultSetMaxRows = {max_rows}
MaxQueryExecutionTime = 120
"""


def virtuoso_binaries() -> tuple[str, str]:
    """``(virtuoso-t, isql-vt)`` on PATH.

    Raises:
        ConfigurationError: Virtuoso is not installed; the message gives the apt command.
    """
    server, isql = shutil.which("virtuoso-t"), shutil.which("isql-vt") or shutil.which("isql")
    if server is None or isql is None:
        raise ConfigurationError(
            f"Virtuoso Open Source 7 is not installed (no virtuoso-t/isql-vt on PATH); install "
            f"it with: {INSTALL_COMMAND}")
    return server, isql


class VirtuosoServer:
    """Starts a throwaway Virtuoso 7 on free loopback ports and removes it on :meth:`close`.

    Args:
        parent: the directory to create the server's own directory in (the system's temporary
            directory unless given).
        host: the loopback address to listen on.
        startup_timeout: seconds to wait for the HTTP endpoint to answer.
        max_rows: the server's ``ResultSetMaxRows``, the most rows of a result it sends (it
            cuts larger ones and says so in an ``X-SPARQL-MaxRows`` header), and its
            ``MaxSortedTopRows``, the most rows an ``ORDER BY`` with ``LIMIT``/``OFFSET``
            sorts (it refuses more: SR353). Debian's virtuoso.ini sets the first to 10,000
            and leaves the second at Virtuoso's 10,000; give a small one to test reads past
            them cheaply. None: 1,000,000 result rows, ``MaxSortedTopRows`` left as it is.
    """

    def __init__(self, parent: str | os.PathLike[str] | None = None, *, host: str = "127.0.0.1",
                 startup_timeout: float = 90.0, max_rows: int | None = None) -> None:
        self.host = host
        self.max_rows = max_rows
        self.startup_timeout = startup_timeout
        self.sql_port = _free_port(host)
        self.http_port = _free_port(host)
        self.directory = Path(tempfile.mkdtemp(prefix="trails-virtuoso-", dir=parent))
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    @property
    def query_url(self) -> str:
        """The anonymous endpoint: queries, and updates once :meth:`start` granted them."""
        return f"{self.base_url}/sparql"

    @property
    def update_url(self) -> str:
        return self.query_url

    @property
    def auth_url(self) -> str:
        """The endpoint that takes the ``dba`` account's credentials (HTTP digest auth)."""
        return f"{self.base_url}/sparql-auth"

    @property
    def auth(self) -> tuple[str, str]:
        """``(user, password)`` for :attr:`auth_url` (``httpx.DigestAuth(*server.auth)``)."""
        return "dba", DBA_PASSWORD

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> VirtuosoServer:
        """Start the server, wait until it answers, and let ``SPARQL`` update.

        Raises:
            ConfigurationError: Virtuoso is not installed, or did not come up in time.
        """
        if self.running:
            return self
        server, isql = virtuoso_binaries()
        deadline = time.monotonic() + self.startup_timeout
        for attempt in range(3):
            if attempt:  # it exited early: a port taken since it was picked, say
                self.sql_port, self.http_port = _free_port(self.host), _free_port(self.host)
            ini = self.directory / "virtuoso.ini"
            ini.write_text(_INI.format(dir=self.directory, host=self.host,
                                       sql_port=self.sql_port, http_port=self.http_port,
                                       max_rows=1_000_000 if self.max_rows is None else self.max_rows,
                                       sorted_rows="" if self.max_rows is None else
                                       f"MaxSortedTopRows = {self.max_rows}\n"))
            with open(self.directory / "stdout.log", "ab") as log:
                self._process = subprocess.Popen(
                    [server, "+foreground", "+configfile", str(ini)], cwd=self.directory,
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            if self._wait_until_ready(deadline):
                self.sql('GRANT SPARQL_UPDATE TO "SPARQL";', isql)
                return self
            if self._process.poll() is None:  # still starting when the time ran out
                break
        self.stop()
        raise ConfigurationError(
            f"Virtuoso did not answer on {self.base_url} within {self.startup_timeout:g} s; "
            f"its log:\n{self.log()[-2000:]}")

    def sql(self, statements: str, isql: str | None = None) -> str:
        """Run SQL statements as ``dba`` with ``isql-vt``; its output.

        Raises:
            ConfigurationError: isql reports an error.
        """
        command = isql or virtuoso_binaries()[1]
        done = subprocess.run(
            [command, f"{self.host}:{self.sql_port}", "dba", DBA_PASSWORD,
             f"exec={statements}"], capture_output=True, text=True, timeout=60, check=False)
        output = done.stdout + done.stderr
        if done.returncode != 0 or "*** Error" in output:
            raise ConfigurationError(f"isql failed on {statements!r}: {output[-1000:]}")
        return output

    def _wait_until_ready(self, deadline: float) -> bool:
        assert self._process is not None
        probe = f"{self.query_url}?query=ASK%7B%7D"
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                with _OPENER.open(probe, timeout=2.0) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        """End the server (SIGTERM: Virtuoso checkpoints and exits; killed after 30 s)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def close(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def log(self) -> str:
        """What the server wrote to its error log and its output so far."""
        parts = []
        for name in ("virtuoso.log", "stdout.log"):
            try:
                parts.append((self.directory / name).read_text(errors="replace"))
            except OSError:
                pass
        return "\n".join(parts)

    def __enter__(self) -> VirtuosoServer:  # noqa: PYI034 - Self needs Python 3.11
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<VirtuosoServer {self.base_url} {state} directory={self.directory}>"


_SHARED: list[VirtuosoServer] = []


def shared_virtuoso(parent: str | os.PathLike[str] | None = None) -> VirtuosoServer:
    """One running server for this process (started on first use, in ``parent``, and closed
    at exit): tests share it and each keeps to its own graphs. Give a ``parent`` that outlives
    every test (pytest: a ``tmp_path_factory`` directory).

    Raises:
        ConfigurationError: as :meth:`VirtuosoServer.start`.
    """
    if _SHARED and _SHARED[0].running:
        return _SHARED[0]
    server = VirtuosoServer(parent).start()
    if not _SHARED:
        atexit.register(_close_shared)
    _SHARED[:] = [server]
    return server


def _close_shared() -> None:
    for server in _SHARED:
        server.close()
