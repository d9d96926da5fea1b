"""The knowledge graph on a SPARQL server: what writes and reads cost, side by side.

For each server (``oxigraph serve`` and, when installed, Virtuoso 7), started throwaway on
loopback by ``trails.testing.servers``, through ``SparqlEndpointGraph`` as a context uses it:

- ``extend``: QUADS quads of ~90-character literals into one scope, in batches of 5,000
  (the default ``batch_size``), a fresh graph each round;
- ``len``: counting every quad;
- ``select``: a scoped ``SELECT ... LIMIT 100``;
- ``listing``: a union-view query asking one row (no scope: every graph), whose cost is
  the graph listing Virtuoso needs first, at 10,000, 100,000 and 400,000 quads in three
  graphs;
- ``start``: starting the server until it answers (Virtuoso creates its database and grants
  updates).

Rounds alternate the servers so both see the same load; medians are printed as JSON lines
and, without ``--no-write``, the table replaces its region of docs/benchmarks.md:

    .venv/bin/python benchmarks/sparql_servers.py [--rounds 3] [--quick] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from _docs import write_region

from trails.kg import SparqlEndpointGraph
from trails.testing.servers.oxigraph import OxigraphServer
from trails.testing.servers.virtuoso import VirtuosoServer, virtuoso_binaries

EX = "https://example.org/"
TEXT = "Interim notice: the pump seal failed in the field and was replaced under warranty."


def quads(count: int, graph: str | None = None) -> list[ox.Quad]:
    """``count`` quads of ~90-character literals, in ``graph`` (a scope's, or the default)."""
    name = ox.DefaultGraph() if graph is None else ox.NamedNode(graph)
    return [ox.Quad(ox.NamedNode(f"{EX}s{n}"), ox.NamedNode(f"{EX}note"),
                    ox.Literal(f"{TEXT} #{n:07d}"), name) for n in range(count)]


def timed(run: Callable[[], Any]) -> float:
    began = time.perf_counter()
    run()
    return (time.perf_counter() - began) * 1000


def servers(parent: Path, stack: ExitStack, started: dict[str, list[float]]
            ) -> Iterator[tuple[str, str, str | None, str]]:
    """(name, query URL, update URL, dialect) of each server this machine can run."""
    began = time.perf_counter()
    oxigraph = stack.enter_context(OxigraphServer(parent / "oxigraph"))
    started.setdefault("oxigraph serve", []).append((time.perf_counter() - began) * 1000)
    yield "oxigraph serve", oxigraph.query_url, oxigraph.update_url, "standard"
    try:
        virtuoso_binaries()
    except Exception:  # noqa: BLE001 - not installed: measure the other alone
        return
    began = time.perf_counter()
    virtuoso = stack.enter_context(VirtuosoServer(parent))
    started.setdefault("Virtuoso 7", []).append((time.perf_counter() - began) * 1000)
    yield "Virtuoso 7", virtuoso.query_url, None, "virtuoso"


def one_round(kg: SparqlEndpointGraph, count: int, sizes: list[int]) -> dict[str, Any]:
    kg.update("DROP SILENT GRAPH <urn:trails:scope:legal>")
    row: dict[str, Any] = {"extend": timed(lambda: kg.extend(quads(count, "urn:trails:scope:legal")))}
    assert len(kg) >= count, "the server holds fewer quads than were sent"
    row["len"] = timed(lambda: len(kg))
    row["select"] = timed(lambda: kg.query(
        f"SELECT ?s ?o WHERE {{ ?s <{EX}note> ?o }} LIMIT 100", scopes=["legal"]))
    row["listing"] = {}
    for size in sizes:
        for scope in ("legal", "tax", "hr"):
            kg.update(f"DROP SILENT GRAPH <urn:trails:scope:{scope}>")
            kg.extend(quads(size // 3, f"urn:trails:scope:{scope}"))
        row["listing"][size] = timed(lambda: kg.query(
            f"SELECT ?s WHERE {{ ?s <{EX}note> ?o }} LIMIT 1"))
    for scope in ("legal", "tax", "hr"):
        kg.update(f"DROP SILENT GRAPH <urn:trails:scope:{scope}>")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md")
    args = parser.parse_args()
    count, sizes = (600, [300]) if args.quick else (20_000, [10_000, 100_000, 400_000])
    rounds = 1 if args.quick else args.rounds
    results: dict[str, list[dict[str, Any]]] = {}
    started: dict[str, list[float]] = {}
    for _ in range(rounds):  # each round starts the servers again: their start is measured
        with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
            graphs = [(name, SparqlEndpointGraph(query, update_url=update, dialect=dialect,
                                                 timeout=120.0))
                      for name, query, update, dialect in servers(Path(folder), stack, started)]
            for name, kg in graphs:
                results.setdefault(name, []).append(one_round(kg, count, sizes))
                kg.close()
    summary = {}
    for name, rows in results.items():
        summary[name] = {
            "start_ms": round(statistics.median(started[name])),
            "extend_ms": round(statistics.median(r["extend"] for r in rows)),
            "quads_per_s": round(count / statistics.median(r["extend"] for r in rows) * 1000),
            "len_ms": round(statistics.median(r["len"] for r in rows), 1),
            "select_ms": round(statistics.median(r["select"] for r in rows), 1),
            "listing_ms": {size: round(statistics.median(r["listing"][size] for r in rows), 1)
                           for size in sizes}}
        print(json.dumps({"server": name, **summary[name]}), flush=True)
    if not args.no_write and not args.quick:
        write(summary, count, rounds)
    return 0


def write(summary: dict[str, dict[str, Any]], count: int, rounds: int) -> None:
    info = Path("/proc/cpuinfo")
    cpu = next((line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
                if line.startswith("model name")), "") if info.exists() else ""
    lines = ["## The graph on a SPARQL server (`benchmarks/sparql_servers.py`)", "",
             (f"`.venv/bin/python benchmarks/sparql_servers.py --rounds {rounds}` on "
             f"{os.cpu_count()} cores ({cpu or platform.machine()}), Python "
             f"{platform.python_version()}, pyoxigraph {ox.__version__}, "
             f"{time.strftime('%Y-%m-%d')}; medians of {rounds} rounds, the servers alternating "
             "on loopback, each started again every round (a shared machine: compare the "
             "servers within this table)."), "",
             f"| server | start | `extend` of {count:,} quads (batches of 5,000) | `len()` | "
             "scoped `SELECT ... LIMIT 100` | a union-view `SELECT ... LIMIT 1` at "
             + " / ".join(f"{size:,}" for size in next(iter(summary.values()))["listing_ms"])
             + " quads |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, row in summary.items():
        listing = " / ".join(f"{ms} ms" for ms in row["listing_ms"].values())
        lines.append(f"| {name} | {row['start_ms']:,} ms | {row['extend_ms']:,} ms "
                     f"({row['quads_per_s']:,} quads/s) | {row['len_ms']} ms | "
                     f"{row['select_ms']} ms | {listing} |")
    write_region("sparql-servers", "\n".join(lines), after="resilience-overhead")


if __name__ == "__main__":
    raise SystemExit(main())
