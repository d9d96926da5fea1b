"""The first filter after an ingest, with the writer carrying the kept columns (ADR 29) and
without: side by side on one kept context, in one session.

Each round ingests ``--docs`` new documents (generated past the context's own) in a writable
process, then a fresh read-only process asks each shape of ``benchmarks/scale.py`` once at 1%
of the documents, a filter text never seen (what an analyst's ``trails query`` meets after the
nightly ingest). *carried*: the revision before the ingest had every shape's columns and the
link checks' counts kept, so the run carries them; *columns only*: the kept counts were removed
before the run, so the run carries the columns and the reader counts the links (as before the
counts were carried); *rebuilt*: everything kept was removed before the run, so the reader
builds it all, as every reader did before ADR 29's carry. Before each round a read-only
process asks every shape once, so that what it needs is kept (and the page cache is warm alike).

    .venv/bin/python benchmarks/scale.py --keep DIR              # once (~1M chunks: 30 min)
    .venv/bin/python benchmarks/after_ingest.py DIR --docs 200

It adds documents to DIR (``--start`` names the first generated one; each round takes the
next ``--docs``) and removes its ``graph/trails-columns`` once. Prints one JSON line a round.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _scale_corpus as corpus
import numpy as np
import scale

from trails.context import Context
from trails.ingest import ingest_all
from trails.kg.column_files import FOLDER
from trails.retrieval.retrieve import retrieve
from trails.vector import MockEmbedder

SHARE = 1  # the 1% row of each shape's bindings


def ask_each_shape(path: Path, label: str) -> dict[str, float]:
    """Seconds of each shape's first filter in this (fresh) read-only process."""
    ctx = Context.open(path, read_only=True, embedder=MockEmbedder(dim=384))
    try:
        retrieve("plupe gibo rojou", ctx, mode="vector", k=10)  # the vectors, opened apart
        took = {}
        for name, (natural, _, bindings, scope) in scale.shapes().items():
            started = time.perf_counter()
            retrieve("plupe gibo", ctx, sparql_filter=f"{scale.select(natural)}\n# {label}",
                     bindings=bindings[SHARE], scope=scope)
            took[name] = round(time.perf_counter() - started, 3)
        return took
    finally:
        ctx.close()


def ingest(path: Path, start: int, count: int) -> dict[str, float]:
    docs = [d for i, d in enumerate(corpus.documents(start + count)) if i >= start]
    ctx = Context.open(path, embedder=MockEmbedder(dim=384))
    try:
        started = time.perf_counter()
        stats = ingest_all(docs, ctx=ctx)
        return {"documents": stats.ingested, "chunks": stats.chunks,
                "seconds": round(time.perf_counter() - started, 2)}
    finally:
        ctx.close()


def drop_counts(folder: Path) -> None:
    """Remove the kept link counts (every file whose meta says ``count``)."""
    for file in folder.glob("*/*.npz"):
        with np.load(file, allow_pickle=False) as data:
            kind = json.loads(data["meta"].tobytes().decode())["kind"]
        if kind == "count":
            file.unlink()


def in_new_process(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--start", type=int, default=1_000_000)
    parser.add_argument("--step", choices=["ask", "ingest"], help=argparse.SUPPRESS)
    parser.add_argument("--label", default="")
    parser.add_argument("--rounds", default="carried,columns only,rebuilt",
                        help="which rounds, in order (comma-separated)")
    args = parser.parse_args()
    if args.step == "ask":
        print(json.dumps(ask_each_shape(args.path, args.label)))
        return 0
    if args.step == "ingest":
        print(json.dumps(ingest(args.path, args.start, args.docs)))
        return 0
    for n, label in enumerate(args.rounds.split(",")):
        if label not in ("carried", "columns only", "rebuilt"):
            parser.error(f"no round {label!r}")
        in_new_process(str(args.path), "--step", "ask", "--label", f"{label} warm")
        if label == "columns only":
            drop_counts(args.path / "graph" / FOLDER)
        if label == "rebuilt":
            shutil.rmtree(args.path / "graph" / FOLDER, ignore_errors=True)
        run = in_new_process(str(args.path), "--step", "ingest", "--docs", str(args.docs),
                             "--start", str(args.start + n * args.docs))
        first = in_new_process(str(args.path), "--step", "ask", "--label", label)
        print(json.dumps({"round": label, "ingest": run, "first filter (s)": first}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
