"""A filter never seen before, on a kept context: each shape of ``benchmarks/scale.py`` at
0.1%, 1%, 10% and 50% of the documents, exact hybrid and the fused default, every run with a
fresh filter text (no kept answer), beside unfiltered vector, exact and fused queries.

Build a context once with ``scale.py --keep DIR`` (``--docs N`` for its size), then measure it
as users open it, writable or read-only (how ``trails query`` opens it), with any version of
the code, side by side in one session:

    .venv/bin/python benchmarks/scale.py --docs 20000 --keep /tmp/scale20k --no-write
    .venv/bin/python benchmarks/first_runs.py /tmp/scale20k --read-only

Prints one JSON line per row (milliseconds, the median over ``--queries`` query texts).
"""

from __future__ import annotations

import argparse
import json
import statistics
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("context", type=Path, help="a context built by scale.py --keep")
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--queries", type=int, default=3)
    args = parser.parse_args()
    ctx = Context.open(args.context, embedder=MockEmbedder(dim=384), read_only=args.read_only)
    vocab, rng = corpus.vocabulary(), np.random.default_rng(3)
    texts = [" ".join(vocab[int(i)] for i in rng.zipf(1.3, size=4) if i < len(vocab))
             or vocab[0] for _ in range(args.queries)]
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
