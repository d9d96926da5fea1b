"""`trails serve` under load: 16 clients querying over HTTP while an ingest runs, with every
answer checked for torn reads.

A context of DOCS documents, each PARTS chunks long (every chunk names its document's
revision), is served by a real `trails serve` process on loopback. One writer re-ingests all
documents at a new revision through `POST /ingest` (server-sent events) again and again;
meanwhile 16 clients send `POST /retrieve` (hybrid and vector alternately, k large enough to
return every chunk) as fast as answers come. An answer is *torn* when it shows one document
at two revisions or with fewer or more chunks than a revision has; an *error* is any answer
other than 200. Both must be 0. Also measured: how long the service takes to be ready, and
the first query after ready against the warm ones.

    .venv/bin/python benchmarks/service_load.py                      # full run, writes docs/benchmarks.md
    .venv/bin/python benchmarks/service_load.py --quick --no-write   # smoke run (MockEmbedder)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
from _docs import write_region

from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.service.discovery import read_service
from trails.testing import MockEmbedder

CLIENTS = 16
DOCS = 20
PARTS = 4
REVISION = re.compile(r"revision (\d+)")
DOC_BASE = "trails://local/doc/"
# Each part is long enough to be a chunk of its own under the default chunkers.
FILLER = ("The keeper climbs the spiral stair at dusk and lights the great lamp, which turns "
          "all night above the rocks so that ships passing the headland keep their course. ")


def documents(revision: int) -> list[dict]:
    return [{"id": f"d{i}", "source": f"load/d{i}", "title": f"Lighthouse log {i}",
             "text": "\n\n".join(f"Document {i} revision {revision} part {p}. " + FILLER * 3
                                 for p in range(PARTS))}
            for i in range(DOCS)]


def chunk_counts(hits: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for hit in hits:
        counts[hit["document"]] += 1
    return dict(counts)


def torn(hits: list[dict], expected: dict[str, int] | None) -> int:
    """Documents shown at two revisions; with ``expected`` (an answer that holds every chunk of
    its documents), also those with another number of chunks than their revisions have
    (every revision's text has the same length, so the same chunks)."""
    revisions: dict[str, set[str]] = defaultdict(set)
    for hit in hits:
        revisions[hit["document"]].update(REVISION.findall(hit["snippet"]))
    counts = chunk_counts(hits)
    return sum(1 for d in counts if len(revisions[d]) > 1
               or (expected is not None and counts[d] != expected[d]))


def two_documents(rng: random.Random) -> str:
    """A filter admitting every chunk of two documents chosen at random."""
    chosen = " ".join(f"<{DOC_BASE}d{i}>" for i in rng.sample(range(DOCS), 2))
    return f"SELECT ?c WHERE {{ ?c schema:isPartOf ?d . VALUES ?d {{ {chosen} }} }}"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def client(http: httpx.AsyncClient, number: int, stop: float, totals: dict,
                 expected: dict[str, int]) -> None:
    """Hybrid searches over two documents' chunks (each answer holds all of them, k=10) and
    vector searches of the top 10, alternately."""
    rng = random.Random(number)
    hybrid = number % 2 == 1
    while time.perf_counter() < stop:
        request = ({"query": "lighthouse keeper lamp", "k": 10, "filter": two_documents(rng)}
                   if hybrid else {"query": "lighthouse keeper lamp", "mode": "vector", "k": 10})
        started = time.perf_counter()
        response = await http.post("/retrieve", json=request)
        totals["latency"].append(time.perf_counter() - started)
        if response.status_code != 200:
            totals["errors"].append(f"{response.status_code} {response.text[:200]}")
            continue
        hits = response.json()["hits"]
        totals["torn"] += torn(hits, expected if hybrid else None)
        totals["queries"] += 1
        if hybrid and len(chunk_counts(hits)) != 2:
            totals["errors"].append(f"a filtered answer showed {len(chunk_counts(hits))} "
                                    "documents, not 2")
        hybrid = not hybrid


async def writer(http: httpx.AsyncClient, stop: float, totals: dict) -> None:
    revision = 1
    while time.perf_counter() < stop:
        async with http.stream("POST", "/ingest", json={"documents": documents(revision)},
                               timeout=600) as response:
            if response.status_code != 200:
                totals["errors"].append(f"ingest {response.status_code}")
                return
            async for line in response.aiter_lines():
                if line.startswith("event: summary"):
                    totals["ingests"] += 1
        revision += 1


async def load(url: str, token: str, seconds: float, expected: dict[str, int]) -> dict:
    totals: dict = {"latency": [], "errors": [], "torn": 0, "queries": 0, "ingests": 0,
                    "documents_seen": 0}
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=CLIENTS + 2)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120,
                                 limits=limits) as http:
        started = time.perf_counter()
        stop = started + seconds
        await asyncio.gather(writer(http, stop, totals),
                             *(client(http, n, stop, totals, expected)
                               for n in range(CLIENTS)))
        totals["seconds"] = time.perf_counter() - started
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="MockEmbedder, 4 seconds")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    seconds = 4.0 if args.quick else args.seconds  # quick: several ingests under the queries
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "kb"
        embedder = MockEmbedder(dim=384) if args.quick else None
        with Context.open(db, **({"embedder": embedder} if embedder else {})) as ctx:
            ingest_all([Document(**d) for d in documents(0)], ctx=ctx)
            model = ctx.embedder.identity.describe()
        started = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "trails.cli", "--db", str(db), "serve", "--port", "0",
             "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        try:
            info = None
            while info is None:
                if server.poll() is not None:
                    raise SystemExit(f"trails serve exited: {server.stdout.read()[-2000:]}")
                info = read_service(db)
                time.sleep(0.05)
            with httpx.Client(base_url=info.url, timeout=60,
                              headers={"Authorization": f"Bearer {info.token}"}) as http:
                while http.get("/health").json()["status"] != "ready":
                    time.sleep(0.05)
                ready = time.perf_counter() - started
                timings = []
                for _ in range(21):
                    t0 = time.perf_counter()
                    http.post("/retrieve", json={"query": "lighthouse keeper lamp"}).raise_for_status()
                    timings.append(time.perf_counter() - t0)
                everything = http.post("/retrieve", json={
                    "query": "lighthouse keeper lamp", "mode": "vector", "k": 1000})
                expected = chunk_counts(everything.json()["hits"])
                if (len(expected) != DOCS or max(expected.values()) > 5
                        or torn(everything.json()["hits"], expected)):
                    raise SystemExit(f"the seeded context is not as expected: {expected}")
            totals = asyncio.run(load(info.url, info.token, seconds, expected))
        finally:
            server.terminate()
            server.wait(timeout=60)
    first, warm = timings[0] * 1000, statistics.median(timings[1:]) * 1000
    latency = totals["latency"]
    rows = [
        ("start to ready (process start, context open, model warm)", f"{ready:.1f} s"),
        ("first query after ready", f"{first:.1f} ms"),
        ("warm query, median of 20, alone", f"{warm:.1f} ms"),
        (f"under load: queries answered ({CLIENTS} clients, {totals['seconds']:.0f} s)",
         f"{totals['queries']:,}"),
        ("under load: throughput", f"{totals['queries'] / totals['seconds']:.1f} queries/s"),
        ("under load: latency p50", f"{percentile(latency, 0.50):.1f} ms"),
        ("under load: latency p99", f"{percentile(latency, 0.99):.1f} ms"),
        ((f"under load: ingests completed meanwhile (each {DOCS} documents, "
         f"{sum(expected.values())} chunks)"),
         f"{totals['ingests']}"),
        ("errors", f"{len(totals['errors'])}"),
        ("torn reads", f"{totals['torn']}"),
    ]
    for name, value in rows:
        print(f"{value:>14}  {name}")
    for error in totals["errors"][:5]:
        print("error:", error)
    if totals["errors"] or totals["torn"]:
        raise SystemExit("errors or torn reads under load")
    if args.no_write:
        return
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    write_region("service-load", f"""## The service under load (`benchmarks/service_load.py`)

`.venv/bin/python benchmarks/service_load.py` ({dt.date.today()}, {machine}, a shared machine;
the load generator runs on the same two cores as the service): a real `trails serve` process
on loopback, {model}. {CLIENTS} clients send `POST /retrieve` without pause (alternately a hybrid search
filtered to two documents chosen at random, k=10, which holds all their chunks, and a vector
search, k=10), each recorded in the audit trail, for {seconds:.0f} s while one writer re-ingests all
{DOCS} documents at a new revision through `POST /ingest`, again and again. Each answer is
checked: a document at two revisions, or (in a filtered answer) with another number of chunks
than its revisions have, is a torn read; a filtered answer without both documents is an error.

| what | measured |
|---|---:|
{table}
""", after="cli-query")


if __name__ == "__main__":
    main()
