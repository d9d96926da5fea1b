"""What the retry policy itself costs per remote call: ``Resilience.call`` around an operation
that does nothing, as it is now and as it was at an earlier git revision (the hand-written loop
before ADR 0049), interleaved round by round so the machine's noise falls on both alike.

Two paths: a call whose first try succeeds (every healthy call), and a call whose first two
tries fail (retried twice, with the waits drawn and a sleep that returns at once). The figures
are the policy's own cost. For scale, the same run times a bare HTTP request on loopback
(httpx to a standard-library server answering 204), the cheapest request a remote part makes.

    .venv/bin/python benchmarks/resilience_overhead.py --against 8e1aced
    .venv/bin/python benchmarks/resilience_overhead.py --against 8e1aced --quick --no-write
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from _docs import write_region

import trails.resilience as current

ROOT = Path(__file__).resolve().parent.parent


def module_at(revision: str) -> ModuleType:
    """``trails/resilience.py`` as it was at ``revision``, loaded under another name."""
    source = subprocess.run(["git", "show", f"{revision}:python/trails/resilience.py"],
                            capture_output=True, text=True, check=True, cwd=ROOT).stdout
    path = Path(tempfile.mkdtemp()) / "resilience_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("resilience_then", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class Down(Exception):
    pass


def paths(module: Any) -> dict[str, Callable[[], object]]:
    """Each path as one call of ``module``'s policy (a breaker of its own, never opened)."""
    policy = module.Resilience(attempts=3, failure_threshold=10**9)
    circuit = module.CircuitBreaker("bench", "http://127.0.0.1:1", failure_threshold=10**9)
    failure = module.Failure()
    left = [0]

    def flaky() -> str:
        left[0] -= 1
        if left[0] >= 0:
            raise Down
        return "ok"

    def retried() -> object:
        left[0] = 2
        return policy.call(flaky, lambda exc: failure, circuit, sleep=lambda s: None)

    return {"first try": lambda: policy.call(lambda: "ok", lambda exc: failure, circuit),
            "two retries": retried}


class NoContent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the backends' clients use

    def do_GET(self) -> None:
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def loopback_request() -> Iterator[Callable[[], object]]:
    """One bare GET to a server on this machine, over a kept connection."""
    import httpx

    server = ThreadingHTTPServer(("127.0.0.1", 0), NoContent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    with httpx.Client() as client:
        yield lambda: client.get(url)
    server.shutdown()


def per_call(call: Callable[[], object], n: int) -> float:
    """Microseconds per call over ``n`` calls."""
    started = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the git revision to compare with")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--no-write", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args()
    rounds, n = (3, 300) if args.quick else (9, 1500)
    versions = {"now": paths(current), args.against: paths(module_at(args.against))}
    with loopback_request() as request:
        versions["bare"] = {"loopback HTTP request": request}
        for calls in versions.values():  # warm up (tenacity's import included)
            for call in calls.values():
                per_call(call, 50)
        seen: dict[tuple[str, str], list[float]] = {}
        for _ in range(rounds):
            for version, calls in versions.items():
                for path, call in calls.items():
                    seen.setdefault((version, path), []).append(
                        per_call(call, n // 5 if version == "bare" else n))
    lines = [f"| path | {args.against} (µs/call) | now (µs/call) | now / then |",
             "| --- | ---: | ---: | ---: |"]
    for path in paths(current):
        then = statistics.median(seen[(args.against, path)])
        now = statistics.median(seen[("now", path)])
        lines.append(f"| {path} | {then:.1f} | {now:.1f} | {now / then:.1f}x |")
    bare = statistics.median(seen[("bare", "loopback HTTP request")])
    lines += ["", f"For scale: a bare HTTP request on loopback (no policy), {bare:.0f} µs."]
    command = f"`.venv/bin/python benchmarks/resilience_overhead.py --against {args.against}`"
    lines += ["", (f"{command} ({dt.date.today()}, {platform.machine()}, {os.cpu_count()} "
                   f"cores, Python {sys.version.split()[0]}, load average "
                   f"{os.getloadavg()[0]:.1f}, a shared machine): medians of {rounds} "
                   f"interleaved rounds of {n} calls.")]
    print("\n".join(lines))
    if not args.no_write:
        write_region("resilience-overhead", "## What the retry policy costs per call\n\n"
                     + "\n".join(lines), after="tracing")


if __name__ == "__main__":
    main()
