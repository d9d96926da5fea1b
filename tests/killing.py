"""Running a real worker process, and killing it (SIGKILL) at a chosen moment.

A crash test kills a worker many times; a new ``python -c`` for each paid over a second of
imports (trails, numpy, pyoxigraph, ...) before the work to be killed even began. Workers are
therefore forked from a fork server that imported those modules once (and opened nothing:
no store, no thread of trails). Each worker is still a real, separate process running the
same script as ``python -c SCRIPT ARGS`` would, with its own stdout and stderr, killed with a
real SIGKILL. Tests about the process itself (the console script, its signal handling) start
a real ``python -m trails.cli`` instead.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.util
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

# What the workers import; the fork server imports them once. A missing optional one is skipped.
PRELOAD = ["numpy", "pyoxigraph", "trails.context", "trails.ingest", "trails.ingest.linking",
           "trails.kg", "trails.vector", "trails.vector.stores.sqlite_vec",
           "trails.vector.stores.pgvector", "killing"]

_forkserver = multiprocessing.get_context("forkserver")
_forkserver.set_forkserver_preload(PRELOAD)


def _temp_dir_outside_any_kernel() -> None:
    """The fork server's socket lives in multiprocessing's temporary directory, made on first
    use under tempfile's directory. A test's kernel points tempfile at a directory of its own
    that it deletes when the test ends (and a test may import this module inside one): make
    it under the environment's directory, as a new interpreter would."""
    saved, tempfile.tempdir = tempfile.tempdir, None
    try:
        multiprocessing.util.get_temp_dir()
    finally:
        tempfile.tempdir = saved


_temp_dir_outside_any_kernel()


def _run_script(script: str, args: list[str], environment: dict[str, str],
                stdout: multiprocessing.connection.Connection, stderr: str) -> None:
    """In the forked worker: ``python -c script *args`` in the starting test's environment,
    with stdout to a pipe and stderr to a file."""
    os.environ.clear()
    os.environ.update(environment)
    tempfile.tempdir = None  # from the environment, as in a new interpreter
    os.dup2(stdout.fileno(), 1)
    stdout.close()
    err = os.open(stderr, os.O_WRONLY | os.O_APPEND)
    os.dup2(err, 2)
    os.close(err)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.argv = ["-c", *args]
    exec(compile(script, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102


class Worker:
    """``python -c script *args`` forked from the fork server; the part of ``subprocess.Popen``
    the tests use: ``stdout`` (text lines), ``poll``, ``wait``, ``kill``, ``communicate``."""

    def __init__(self, script: str, args: list[object]) -> None:
        out_r, out_w = _forkserver.Pipe(duplex=False)
        self._err = tempfile.NamedTemporaryFile(  # noqa: SIM115 - read when the worker ended
            prefix="worker-", suffix=".err", dir=multiprocessing.util.get_temp_dir())
        self._process = _forkserver.Process(target=_run_script, args=(
            script, [str(a) for a in args], dict(os.environ), out_w, self._err.name))
        self._process.start()
        out_w.close()
        self.stdout: IO[str] = open(os.dup(out_r.fileno()), encoding="utf-8")  # noqa: SIM115
        out_r.close()
        self.pid = self._process.pid
        self._reading: threading.Thread | None = None
        self._out = ""

    @property
    def returncode(self) -> int | None:
        """The exit code, or ``-signal`` if a signal ended it; None while it runs."""
        return self._process.exitcode

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self.returncode is None:
            raise TimeoutError(f"worker {self.pid} still runs after {timeout} s")
        return self.returncode

    def kill(self) -> None:
        """SIGKILL, unless it already ended. The fork server, not this process, reaps the
        worker, so it can be gone before its exit code reaches us: multiprocessing's kill
        treats that as ended (a bare ``os.kill`` raised ProcessLookupError)."""
        self._process.kill()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """The rest of stdout and all of stderr, once the worker ended."""
        if self._reading is None:  # read in a thread: the pipe must drain while we wait
            self._reading = threading.Thread(target=self._read_rest, daemon=True)
            self._reading.start()
        self._reading.join(timeout)
        if self._reading.is_alive():
            raise TimeoutError(f"worker {self.pid} still writes after {timeout} s")
        self.wait(timeout)
        self._err.seek(0)
        return self._out, self._err.read().decode("utf-8", "backslashreplace")

    def _read_rest(self) -> None:
        self._out = self.stdout.read()
        self.stdout.close()


def start(script: str, args: list[object]) -> Worker:
    """Start ``python -c script *args`` as a worker forked from the pre-imported fork server."""
    return Worker(script, args)


def run_worker(script: str, args: list[Path], kill_after: float | None) -> bool:
    """Run ``python -c script *args``; once it prints "ready", wait for it (``kill_after``
    None) or SIGKILL it ``kill_after`` seconds later. True if it finished on its own."""
    return _run(script, args, kill_after)[0]


def time_worker(script: str, args: list[Path]) -> float:
    """Run the worker to its end; the seconds from its "ready" to its exit (the work a kill
    can land in)."""
    return _run(script, args, None)[1]


def _run(script: str, args: list[Path], kill_after: float | None) -> tuple[bool, float]:
    worker = start(script, list(args))
    assert worker.stdout.readline().strip() == "ready", worker.communicate(timeout=30)[1]
    ready = time.perf_counter()
    if kill_after is None:
        _out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        return True, time.perf_counter() - ready
    time.sleep(kill_after)
    worker.kill()
    worker.communicate(timeout=30)
    return worker.returncode == 0, time.perf_counter() - ready


def random_kills(script: str, args: list[Path], fresh: Iterator[Path], kills: int,
                 seed: int) -> Iterator[Path]:
    """States (each a new one from ``fresh``) that the worker (``script state *args``) ran on
    and was SIGKILLed at a random moment of its measured work. Goes on (bounded) until
    ``kills // 2`` kills landed mid-run, and checks that they did."""
    duration = time_worker(script, [next(fresh), *args])
    rng = random.Random(seed)
    interrupted = attempts = 0
    while (attempts < kills or interrupted < kills // 2) and attempts < 3 * kills:
        state = next(fresh)
        attempts += 1
        interrupted += not run_worker(script, [state, *args], rng.uniform(0.0, duration))
        yield state
    assert interrupted >= kills // 2, "kills should land while the worker is running"


def killed_copies(script: str, base: Path, args: list[Path], root: Path, kills: int,
                  seed: int) -> Iterator[tuple[Path, Path]]:
    """Copies of ``base`` that the worker ran on (``script base *args``) and was killed at a
    random moment of its measured duration: ``(state, the same state copied untouched)``."""
    def copies() -> Iterator[Path]:
        for name in ("timing", *(f"kill{n}" for n in range(3 * kills))):
            shutil.copytree(base, root / name)
            yield root / name

    for state in random_kills(script, args, copies(), kills, seed):
        untouched = root / f"{state.name}-norepair"
        shutil.copytree(state, untouched)
        yield state, untouched
