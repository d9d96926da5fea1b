"""A filter never seen before, on a kept context: each shape of ``benchmarks/scale.py`` at
0.1%, 1%, 10% and 50% of the documents, exact hybrid and the fused default, every run with a
fresh filter text (no kept answer), beside unfiltered vector, exact and fused queries.

Build a context once with ``scale.py --keep DIR`` (``--docs N`` for its size), then measure it
as users open it, writable or read-only (how ``trails query`` opens it), with any version of
the code, side by side in one session:

    .venv/bin/python benchmarks/scale.py --docs 20000 --keep DIR --no-write
    .venv/bin/python benchmarks/first_runs.py DIR --read-only

Prints one JSON line per row (milliseconds, the median over ``--queries`` query texts).

``--fresh`` measures what ``trails query`` pays instead: each query is the first of a new
process that opens the context read-only (``open`` and ``first`` in milliseconds), for each
version of the code given as ``--code LABEL=PYTHONPATH`` side by side; ``--cold`` also runs the
last version once with the kept columns (ADR 29) removed first (the first process at a new
graph revision). It removes files from the context's ``graph/trails-columns``: use a copy.

    .venv/bin/python benchmarks/first_runs.py COPY --fresh --cold \
        --code before=OLD/python --code after=python
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import _scale_corpus as corpus
import numpy as np
import scale

from trails.context import Context
from trails.retrieval.retrieve import retrieve
from trails.vector import MockEmbedder


def milliseconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


def query_texts(count: int) -> list[str]:
    vocab, rng = corpus.vocabulary(), np.random.default_rng(3)
    return [" ".join(vocab[int(i)] for i in rng.zipf(1.3, size=4) if i < len(vocab))
            or vocab[0] for _ in range(count)]


def first_of_a_process(context: Path, shape: str | None, share: str | None,
                       fusion: str | None) -> dict[str, float]:
    """A new process's first query (the child side of ``--fresh``): opening read-only, then
    one search (unfiltered with no ``shape``; ``fusion`` "mode" is the vector mode)."""
    started = time.perf_counter()
    ctx = Context.open(context, embedder=MockEmbedder(dim=384), read_only=True)
    opened = (time.perf_counter() - started) * 1000
    text = "regulation of the markets"  # the embedder is a mock: any text ranks alike
    if shape is None:
        options: dict[str, object] = ({"mode": "vector"} if fusion == "mode" else
                                      {"fusion": fusion})
    else:
        natural, _, per_share, scope = scale.shapes()[shape]
        options = {"sparql_filter": scale.select(natural), "scope": scope, "fusion": fusion,
                   "bindings": per_share[scale.SHARES.index(share or "")]}
    first = milliseconds(lambda: retrieve(text, ctx, **options))  # type: ignore[arg-type]
    ctx.close()
    return {"open": round(opened), "first": round(first)}


def fresh(args: argparse.Namespace) -> int:
    """Each row: one new process per version of the code (and cold: without kept columns)."""
    versions = [tuple(code.split("=", 1)) for code in args.code]
    if args.cold:  # first: it writes the columns the last version then reads
        versions.insert(0, ("cold", versions[-1][1]))
    here = str(Path(__file__).parent)
    kept = args.context / "graph" / "trails-columns"

    def child(code: str, *row: str) -> dict[str, float]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([code, here])}
        out = subprocess.run([sys.executable, __file__, str(args.context), "--child", *row],
                             env=env, check=True, capture_output=True, text=True).stdout
        return dict(json.loads(out.splitlines()[-1]))

    rows = [("", "", "mode"), ("", "", "none"), ("", "", "auto")] + [
        (shape, share, fusion) for shape in scale.shapes() for share in args.shares.split(",")
        for fusion in ("none", "auto")]
    for shape, share, fusion in rows:
        row: dict[str, object] = {"shape": shape or "no filter", "share": share,
                                  "fusion": {"mode": "vector mode", "none": "exact"}.get(
                                      fusion, "fused")}
        for label, code in versions:
            if label == "cold":
                shutil.rmtree(kept, ignore_errors=True)
            row[label] = child(code, shape, share, fusion)
        print(json.dumps(row), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context", type=Path, help="a context built by scale.py --keep")
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--queries", type=int, default=3)
    parser.add_argument("--fresh", action="store_true",
                        help="each query the first of a new read-only process")
    parser.add_argument("--code", action="append", default=[],
                        help="LABEL=PYTHONPATH of a version of the code (--fresh)")
    parser.add_argument("--cold", action="store_true",
                        help="also the last version with the kept columns removed (--fresh)")
    parser.add_argument("--shares", default=",".join(scale.SHARES), help="with --fresh")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        shape, share, fusion = args.child
        print(json.dumps(first_of_a_process(args.context, shape or None, share or None,
                                            None if fusion == "none" else fusion)))
        return 0
    if args.fresh:
        return fresh(args)
    ctx = Context.open(args.context, embedder=MockEmbedder(dim=384), read_only=args.read_only)
    texts = query_texts(args.queries)
    unique = scale.Unique()
    row: dict[str, object] = {"read_only": args.read_only}
    for name, options in (("vector", {"mode": "vector"}), ("exact", {"fusion": None}),
                          ("fused", {})):
        retrieve(texts[0], ctx, **options)
        row[name] = round(statistics.median(
            milliseconds(lambda q=q, o=options: retrieve(q, ctx, **o)) for q in texts), 1)
    print(json.dumps(row), flush=True)
    for shape, (natural, _, per_share, scope) in scale.shapes().items():
        for share, bindings in zip(scale.SHARES, per_share):
            row = {"shape": shape, "share": share}
            for fusion, label in ((None, "exact_first"), ("auto", "fused_first")):
                row[label] = round(statistics.median(milliseconds(
                    lambda q=q, f=fusion, b=bindings, n=natural, s=scope: retrieve(
                        q, ctx, sparql_filter=unique(scale.select(n)), bindings=b, scope=s,
                        fusion=f)) for q in texts))
            print(json.dumps(row), flush=True)
    ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
