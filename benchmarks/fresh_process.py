"""A new process's first searches, with and without the live slots kept beside the store.

What each ``trails query`` pays before its answer: a new process opens the context read-only
and searches once. Each round runs two new processes one after the other on the same context:
one with ``vectors.db.live`` in place (ADR 0053), one with it moved aside, so the store reads
the live slots from its rows. Each process times its open, its first vector query, its first
fused search under a filter never seen before (the seed's date at 1%) and a second vector
query (warm). The file is put back after every round, whatever happens. Results are JSON lines
and a Markdown table of medians:

    .venv/bin/python benchmarks/fresh_process.py DIR --rounds 7

``DIR`` is a context built by ``scale.py --keep DIR`` whose last write kept the file (any
ingest or delete with this code does).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import importlib, json, sys, time
sys.path.insert(0, sys.argv[2])
import _scale_corpus as corpus
from trails.context import Context
from trails.vector import MockEmbedder
retrieve = importlib.import_module("trails.retrieval.retrieve").retrieve
started = time.perf_counter()
ctx = Context.open(sys.argv[1], embedder=MockEmbedder(dim=384), read_only=True)
times = {"open": time.perf_counter() - started}
def timed(name, **kwargs):
    started = time.perf_counter()
    result = retrieve(kwargs.pop("text"), ctx, **kwargs)
    times[name] = time.perf_counter() - started
    return result
timed("first vector", text="contract renewal terms", mode="vector")
found = timed("first filtered, fused", text="obligations of the supplier",
              sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
              "?doc schema:dateCreated ?d FILTER(?d >= ?since) } # " + sys.argv[3],
              bindings={"since": corpus.date_for_fraction(0.01)})
timed("second vector", text="termination for convenience", mode="vector")
ctx.close()
print(json.dumps({"ms": {k: round(v * 1000, 1) for k, v in times.items()},
                  "candidates": found.candidates}))
"""


def run(context: Path, label: str) -> dict:
    here = str(Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", CHILD, str(context), here, label],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context", type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    live = args.context / "vectors.db.live"
    aside = args.context / "vectors.db.live.aside"
    if not live.exists():
        raise SystemExit(f"{live} is missing: write to the context once with this code")
    rows: dict[str, list[dict]] = {"file": [], "rows": []}
    for n in range(args.rounds):
        for kind in ("file", "rows") if n % 2 == 0 else ("rows", "file"):
            if kind == "rows":
                os.replace(live, aside)
            try:
                result = run(args.context, f"{kind} {n}")
            finally:
                if kind == "rows":
                    os.replace(aside, live)
            rows[kind].append(result)
            print(json.dumps({"round": n, "live slots from": kind, **result}), flush=True)
    names = list(rows["file"][0]["ms"])
    print("\n| new process, read-only: median (range) | live slots from the rows "
          "| from the kept file |")
    print("| --- | ---: | ---: |")
    for name in names:
        cells = []
        for kind in ("rows", "file"):
            ms = [r["ms"][name] for r in rows[kind]]
            cells.append(f"{statistics.median(ms):.0f} ms ({min(ms):.0f}-{max(ms):.0f})")
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
