"""Does ingest slow down as the corpus grows? Chunks/s per batch into one growing context.

Ingests the generated corpus (benchmarks/_scale_corpus.py, ~7.7 chunks of ~900 characters
per document) with ``MockEmbedder(dim=384)`` (the pipeline's own cost) into one on-disk
context, a batch of documents at a time, and reports each batch's chunks/s and CPU-ms per
chunk, the first batch against the last (ADR 0036's target: within 20%), and the bytes on
disk per chunk once the context is closed (write-ahead logs cut, ADR 0036).

    .venv/bin/python benchmarks/ingest_growth.py --docs 60000 --batch 1300
    .venv/bin/python benchmarks/ingest_growth.py --docs 2600 --no-write   # a smoke run
    .venv/bin/python benchmarks/ingest_growth.py --docs 15000 --batch 15000 --no-write [--one-thread]
    .venv/bin/python benchmarks/ingest_growth.py --docs 15000 --batch 15000 --no-write --free-embedder

``--free-embedder`` swaps the mock for an embedder whose vectors cost nothing (a fixed
direction a chunk): what is left is the pipeline's own work, chunking and the two stores'
writes, the ceiling a faster embedder could reach (ADR 0036, ninth amendment).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import tempfile
import time
from pathlib import Path

import _scale_corpus as corpus
import numpy as np
from _docs import write_region
from scale import disk, facts

from trails.context import Context
from trails.ingest import ingest_all
from trails.vector import MockEmbedder


class FreeEmbedder(MockEmbedder):
    """Unit vectors that cost nothing to make (two coordinates set): the pipeline without an
    embedder's own cost. Not a retrieval model: every vector is one of ``dim`` directions."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim)
        self.model_id = "trails-benchmark-free"

    def embed_batch(self, texts):
        rows = np.arange(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0
        out[rows, rows % self.dim] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def batches(count: int, size: int):
    documents = corpus.documents(count)
    while batch := [d for _, d in zip(range(size), documents)]:
        yield batch


def run(path: Path, count: int, size: int, budget: float,
        ahead: bool = True, free: bool = False) -> tuple[list[dict], dict]:
    ctx = Context.open(path, embedder=FreeEmbedder(384) if free else MockEmbedder(dim=384))
    rows: list[dict] = []
    total, started = 0, time.perf_counter()
    for batch in batches(count, size):
        wall, cpu = time.perf_counter(), time.process_time()
        stats = ingest_all(batch, ctx=ctx, prepare_ahead=ahead)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        total += stats.chunks
        rows.append({"before": total - stats.chunks, "chunks": stats.chunks, "seconds": wall,
                     "per_s": stats.chunks / wall, "cpu_ms": 1000 * cpu / stats.chunks,
                     "load": os.getloadavg()[0]})
        print(rows[-1], flush=True)
        if time.perf_counter() - started > budget:
            break
    closing = time.perf_counter()
    ctx.close()
    parts = disk(path)
    return rows, {"chunks": total, "close_s": time.perf_counter() - closing,
                  "bytes_per_chunk": sum(parts.values()) * 1024**3 / total, "parts": parts}


def render(rows: list[dict], end: dict, args: argparse.Namespace) -> str:
    first, last = rows[0], rows[-1]
    lines = [
        "### Ingest as the corpus grows (ADR 36)", "",
        (f"`benchmarks/ingest_growth.py --docs {args.docs} --batch {args.batch} --minutes {args.minutes:g}"
         f"{' --one-thread' if args.one_thread else ''}"
         f"{' --free-embedder' if args.free_embedder else ''}`, "
         f"{dt.date.today().isoformat()}, {facts()}; load average "
         f"{rows[0]['load']:.1f} at the start, {rows[-1]['load']:.1f} at the end (the machine "
         "is shared: CPU-ms per chunk is the steadier figure)."), "",
        "| batch | chunks before | chunks | chunks/s | CPU-ms per chunk |",
        "| ---: | ---: | ---: | ---: | ---: |"]
    shown = rows if len(rows) <= 12 else rows[:3] + rows[len(rows) // 2 - 1:len(rows) // 2 + 1] + rows[-3:]
    lines += [f"| {rows.index(r) + 1} | {r['before']:,} | {r['chunks']:,} | {r['per_s']:,.0f} | "
              f"{r['cpu_ms']:.2f} |" for r in shown]
    parts = ", ".join(f"{k} {v * 1024:.0f} MB" for k, v in end["parts"].items() if v > 1e-4)
    lines += ["", (f"Last batch against the first: {last['per_s'] / first['per_s']:.2f}x the "
                   f"chunks/s, {last['cpu_ms'] / first['cpu_ms']:.2f}x the CPU per chunk. After "
                   f"close ({end['close_s']:.1f} s): {end['bytes_per_chunk']:,.0f} bytes per "
                   f"chunk on disk at {end['chunks']:,} chunks ({parts}).")]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=60_000, help="documents at most")
    parser.add_argument("--batch", type=int, default=1_300, help="documents per batch")
    parser.add_argument("--minutes", type=float, default=13.0, help="stop after this long")
    parser.add_argument("--keep", type=Path, default=None, help="build here and keep it")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    parser.add_argument("--one-thread", action="store_true",
                        help="prepare documents on the committing thread too (ADR 0036, fourth "
                             "amendment): the run before the read-ahead, for a side by side")
    parser.add_argument("--free-embedder", action="store_true",
                        help="an embedder that costs nothing instead of the mock: the "
                             "pipeline's own work alone")
    args = parser.parse_args()
    path = args.keep or Path(tempfile.mkdtemp(prefix="trails-growth-")) / "ctx"
    shutil.rmtree(path, ignore_errors=True)
    try:
        rows, end = run(path, args.docs, args.batch, args.minutes * 60, not args.one_thread,
                         args.free_embedder)
    finally:
        if args.keep is None:
            shutil.rmtree(path.parent, ignore_errors=True)
    body = render(rows, end, args)
    print(body)
    if not args.no_write:
        write_region("ingest-growth", body, after="ingest")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
