"""Filters on a chunk's own values (``schema:position``, ``trails:startOffset``) at scale.

Each filter is one never seen before (new bindings each round), beside the unfiltered vector
query of the same moment, on a context built by ``scale.py --keep DIR``:

- ``exact`` and ``fused``: ``retrieve`` with the filter, as planned (a chunk's value that is a
  variable is read from the graph's columns, ADR 29), exact hybrid and the fused default;
- ``graph``: the graph's own evaluation of the same filter (``select_iris``, what the planned
  path replaced; first round only, it takes seconds);
- ``first``: the process's first filter on chunks' values, which reads the columns (from
  the kept files of the revision, else from the graph) and hashes their names.

``position 0`` gives the value, so the graph's index answers it (no column): it is here to
show the two paths side by side. Results go to stdout as JSON lines:

    .venv/bin/python benchmarks/chunk_columns.py DIR --rounds 3 [--writable]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _scale_corpus as corpus
from first_runs import query_texts

from trails.context import Context
from trails.retrieval.retrieve import retrieve
from trails.scopes import normalize_scopes
from trails.vector import MockEmbedder

LINK = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc ; "
# name -> (the filter, its bindings in round n)
FILTERS: dict[str, tuple[str, Callable[[int], dict[str, Any]]]] = {
    "position below n": (LINK + "schema:position ?p FILTER(?p < ?n) }",
                         lambda n: {"n": 1 + n}),
    "position equal to n": (LINK + "schema:position ?p FILTER(?p = ?n) }",
                            lambda n: {"n": n}),
    "position, created since": (LINK + "schema:position ?p . ?doc schema:dateCreated ?d "
                                "FILTER(?p < ?n && ?d >= ?since) }",
                                lambda n: {"n": 1 + n,
                                           "since": corpus.date_for_fraction(0.1 + 0.2 * n)}),
    "offset below n": (LINK + "trails:startOffset ?o FILTER(?o < ?n) }",
                       lambda n: {"n": 1500 + 500 * n}),
    "position 0 (the graph's index)": (LINK + "schema:position 0 }", lambda n: {}),
}


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = run()
    return (time.perf_counter() - started) * 1000, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context", type=Path, help="a context built by scale.py --keep")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writable", action="store_true", help="open it writable")
    args = parser.parse_args()
    ctx = Context.open(args.context, embedder=MockEmbedder(dim=384),
                       read_only=not args.writable)
    texts = query_texts(4 * args.rounds * len(FILTERS) + 2)
    retrieve(texts[0], ctx, mode="vector")
    ms, first = timed(lambda: retrieve(texts[1], ctx, sparql_filter=(
        LINK + "schema:position ?p FILTER(?p > ?n) } # first"), bindings={"n": 40}))
    print(json.dumps({"first": {"ms": round(ms), "path": first.filter_path,
                                "candidates": first.candidates}}), flush=True)
    floor: list[float] = []
    rows: dict[str, dict[str, list[float]]] = {
        name: {"exact": [], "fused": [], "graph": []} for name in FILTERS}
    found: dict[str, Any] = {}
    asked = iter(texts[2:])
    for n in range(args.rounds):
        for name, (text, bindings) in FILTERS.items():
            for kind, fusion in (("exact", None), ("fused", "auto")):
                floor.append(timed(lambda: retrieve(next(asked), ctx, mode="vector"))[0])
                ms, result = timed(lambda text=text, kind=kind, n=n, bindings=bindings,
                                   fusion=fusion: retrieve(
                    next(asked), ctx, sparql_filter=f"{text} # {kind} {n}",
                    bindings=bindings(n), fusion=fusion))
                rows[name][kind].append(ms)
                found[name] = (result.filter_path, result.candidates)
            if n == 0:
                rows[name]["graph"].append(timed(lambda text=text, bindings=bindings: (
                    ctx.kg.select_iris(text, bindings(0), scopes=normalize_scopes(None))))[0])
    vector = statistics.median(floor)
    print(json.dumps({"vector_ms": round(vector, 1),
                      "vector_range": [round(min(floor)), round(max(floor))],
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                           / 1024)}))
    for name, row in rows.items():
        print(json.dumps({"filter": name, "path": found[name][0], "candidates": found[name][1],
                          **{key: {"median_ms": round(statistics.median(ms)),
                                   "range": [round(min(ms)), round(max(ms))],
                                   "x_vector": round(statistics.median(ms) / vector, 1)}
                             for key, ms in row.items() if ms}}), flush=True)
    ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
