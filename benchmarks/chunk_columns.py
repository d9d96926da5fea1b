"""Filters on a chunk's own predicates (``schema:position``): what a column of them would buy.

ADR 29 refuses columns of chunk-level predicates. This measures, on a kept context, what such
a column would cost and save, side by side in one process, against the unfiltered vector query:

- ``as_written``: ``retrieve`` with the filter (a text never seen before), as planned today;
- ``handed``: ``retrieve`` with the same candidates handed in at no cost: the floor any
  filter plan reaches, since the candidates are chunk IRIs (one per chunk);
- ``columns``: the candidates read from a ``schema:position`` and a ``schema:isPartOf`` column
  kept in memory (a mask over the position values, the link tested by name), then ``retrieve``;
- ``build``: reading both columns from the graph (a revision's first filter would pay it),
  writing and loading them as kept files, their size and the Python memory they hold;
- ``carry``: reading the position rows of 1,000 and 5,000 chunk subjects (what a writer's carry
  reads for each new chunk, ADR 29's carried columns).

The prototype is not exact in general (it parses the values in Python): it measures costs.
Build a context with ``scale.py --keep DIR`` and measure a copy (kept files may be written):

    .venv/bin/python benchmarks/chunk_columns.py COPY --rounds 3 [--writable]
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from first_runs import query_texts

from trails.context import Context
from trails.kg.column_files import ColumnFiles, Kept, read_rows
from trails.vector import MockEmbedder

run_module = importlib.import_module("trails.retrieval.retrieve")
SCHEMA = "https://schema.org/"
PREFIX = "PREFIX schema: <https://schema.org/> "
Test = Callable[[np.ndarray], np.ndarray] | None  # None: no columns prototype, as written only
FILTERS: dict[str, tuple[str, Test]] = {
    "position 0": (PREFIX + "SELECT ?iri WHERE {{ ?iri schema:isPartOf ?doc ; "
                   "schema:position 0 }} # {}", lambda v: v == 0),
    "position < 2": (PREFIX + "SELECT ?iri WHERE {{ ?iri schema:isPartOf ?doc ; "
                     "schema:position ?p FILTER(?p < 2) }} # {}", lambda v: v < 2),
    "position 0, created since": (PREFIX + "SELECT ?iri WHERE {{ ?iri schema:isPartOf ?doc ; "
                                  "schema:position 0 . ?doc schema:dateCreated ?d FILTER(?d >= "
                                  "\"2023-06-01\"^^<http://www.w3.org/2001/XMLSchema#date>) }} "
                                  "# {}", None),
}


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = run()
    return (time.perf_counter() - started) * 1000, out


def number(term: str) -> float:
    try:
        return float(term)
    except ValueError:
        return float("nan")


def from_columns(position: Kept, linked: set[str], test: Test) -> tuple[str, ...]:
    assert test is not None
    passing = np.flatnonzero(test(np.array([number(v) for v in position.values])))
    rows = np.unique(position.subjects[np.isin(position.objects, passing)])
    names = np.array(position.names, dtype=object)[rows]
    return tuple(name[1:-1] for name in names if name in linked)


def one_round(ctx: Context, query: str, text: str, tag: str, row: dict[str, list[float]],
              candidates: Callable[[], tuple[str, ...]] | None) -> None:
    """One search of each kind with a filter text never seen before."""
    retrieve, planned = run_module.retrieve, run_module.filter_candidates
    row["as_written"].append(timed(lambda: retrieve(
        query, ctx, sparql_filter=text.format(f"w{tag}")))[0])
    if candidates is None:
        return
    found: list[tuple[str, ...]] = []

    def columns(*_: Any, **__: Any) -> tuple[str, ...]:
        ms, iris = timed(candidates)
        row["columns_filter"].append(ms)
        found.append(iris)
        return iris  # type: ignore[no-any-return]

    try:
        run_module.filter_candidates = columns
        row["columns"].append(timed(lambda: retrieve(
            query, ctx, sparql_filter=text.format(f"c{tag}")))[0])
        run_module.filter_candidates = lambda *_, **__: found[0]
        row["handed"].append(timed(lambda: retrieve(
            query, ctx, sparql_filter=text.format(f"h{tag}")))[0])
    finally:
        run_module.filter_candidates = planned


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context", type=Path, help="a copy of a context built by scale.py")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writable", action="store_true", help="open it writable")
    args = parser.parse_args()
    ctx = Context.open(args.context, embedder=MockEmbedder(dim=384),
                       read_only=not args.writable)
    texts = query_texts(args.rounds + 2)
    retrieve, planned = run_module.retrieve, run_module.filter_candidates
    retrieve(texts[0], ctx, mode="vector")
    asked: list[Any] = []  # the scopes retrieve asks the filter in (the context's own)

    def scopes_of(*given: Any, **named: Any) -> Any:
        asked.append(given[3])
        return planned(*given, **named)

    run_module.filter_candidates = scopes_of
    retrieve(texts[0], ctx, sparql_filter=FILTERS["position 0"][0].format("scopes"))
    run_module.filter_candidates = planned
    scopes = asked[0]
    tracemalloc.start()
    build_position, position = timed(lambda: read_rows(
        ctx.kg.select_tsv, f"?s <{SCHEMA}position> ?o", True, scopes))
    build_link, link = timed(lambda: read_rows(
        ctx.kg.select_tsv, f"?s <{SCHEMA}isPartOf> ?o", True, scopes))
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    with tempfile.TemporaryDirectory() as folder:
        files = ColumnFiles(folder, "measured", scopes)
        save = sum(timed(lambda k=k, c=c: files.save("column", SCHEMA + k, c))[0]
                   for k, c in (("position", position), ("isPartOf", link)))
        load = sum(timed(lambda k=k: files.load("column", SCHEMA + k))[0]
                   for k in ("position", "isPartOf"))
        disk = sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())
    print(json.dumps({"scopes": scopes, "build": {"position_ms": round(build_position),
                                                  "link_ms": round(build_link),
                                "rows": len(position.subjects), "values": len(position.values),
                                "save_ms": round(save), "load_ms": round(load),
                                "disk_mb": round(disk / 2**20, 1),
                                "held_mb": round(held / 2**20, 1),
                                "peak_mb": round(peak / 2**20, 1)}}), flush=True)
    subjects = [f"<{name[1:-1]}>" for name in position.names]
    random.seed(1)
    for count in (1000, 5000):
        chosen = " ".join(random.sample(subjects, min(count, len(subjects))))
        ms, _ = timed(lambda chosen=chosen: ctx.kg.select_tsv(
            f"SELECT ?s ?o WHERE {{ VALUES ?s {{ {chosen} }} ?s <{SCHEMA}position> ?o }}"))
        print(json.dumps({"carry": {"subjects": count, "ms": round(ms)}}), flush=True)

    linked = set(link.names)
    floor: list[float] = []
    rows: dict[str, dict[str, list[float]]] = {
        name: {"as_written": [], "handed": [], "columns": [], "columns_filter": []}
        for name in FILTERS}
    try:
        for n in range(args.rounds):
            floor += [timed(lambda q=q: retrieve(q, ctx, mode="vector"))[0] for q in texts[:2]]
            for name, (text, test) in FILTERS.items():
                one_round(ctx, texts[n], text, f"{n}", rows[name], None if test is None else
                          lambda test=test: from_columns(position, linked, test))
            floor += [timed(lambda q=q: retrieve(q, ctx, mode="vector"))[0] for q in texts[2:4]]
    finally:
        run_module.filter_candidates = planned
    vector = statistics.median(floor)
    print(json.dumps({"vector_ms": round(vector, 1),
                      "vector_range": [round(min(floor)), round(max(floor))]}))
    for name, row in rows.items():
        print(json.dumps({"filter": name, **{
            key: {"median_ms": round(statistics.median(ms)), "range": [round(min(ms)),
                  round(max(ms))], "x_vector": round(statistics.median(ms) / vector, 1)}
            for key, ms in row.items() if ms}}), flush=True)
    ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
