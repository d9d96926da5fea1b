"""What the default hybrid costs over vector-only retrieval at 100,000 chunks of real text.

100,000 chunks packed from the sentences of SciFact's and NFCorpus's abstracts (../shared;
the two corpora are cycled to reach the count) in a file-backed SqliteVecStore, with
clustered synthetic 384-d vectors (an exact scan costs the same whatever the vectors hold),
and the two sets' test queries as keyword text with a vector near a topic each. Per query,
in a random order per round: ``retrieve(mode="vector")``, the default
``retrieve(mode="hybrid")`` (``fusion="auto"``, ADR 22), the same with ADR 10's ramp guard
(``fusion=AutoFusion()``) and with ``fusion="rrf"``; k = 10. Medians in milliseconds.

    .venv/bin/python benchmarks/fusion_cost.py               # writes docs/benchmarks.md
    .venv/bin/python benchmarks/fusion_cost.py --quick --no-write
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _docs import write_region
from hybrid import DIM, make_corpus

from trails.context import Context
from trails.kg.oxigraph import OxigraphGraph
from trails.rank.fusion import AutoFusion
from trails.vector import BaseEmbedder, retrieve
from trails.vector.stores.sqlite_vec import SqliteVecStore

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "beir"
CHUNK_CHARS = 600
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class TableEmbedder(BaseEmbedder):
    """Each benchmark query's precomputed vector, looked up by its text."""

    model_id = "bench-table"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    @property
    def dim(self) -> int:
        return DIM

    def embed_batch(self, texts):
        return np.stack([self.vectors[t] for t in texts])


def chunk_texts(n: int) -> list[str]:
    """``n`` chunks of whole sentences up to CHUNK_CHARS, from the corpora in turn."""
    chunks: list[str] = []
    while len(chunks) < n:
        for name in ("scifact", "nfcorpus"):
            with open(DATA / name / "corpus.jsonl", encoding="utf-8") as lines:
                for line in lines:
                    record = json.loads(line)
                    current = record.get("title") or ""
                    for sentence in _SENTENCE.split(record.get("text") or ""):
                        if current and len(current) + len(sentence) > CHUNK_CHARS:
                            chunks.append(current)
                            current = ""
                        current = f"{current} {sentence}".strip()
                    if current:
                        chunks.append(current)
                    if len(chunks) >= n:
                        return chunks[:n]
    return chunks[:n]


def query_texts(count: int) -> list[str]:
    texts: list[str] = []
    for name in ("scifact", "nfcorpus"):
        with open(DATA / name / "queries.jsonl", encoding="utf-8") as lines:
            texts += [json.loads(line)["text"] for line in lines]
    rng = np.random.default_rng(3)
    return [texts[i] for i in rng.choice(len(texts), count, replace=False)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks, 10 queries")
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md alone")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, count = (10_000, 10) if args.quick else (100_000, 60)
    rng = np.random.default_rng(11)
    vectors, _bucket, qs = make_corpus(n, count, rng)
    texts, queries = chunk_texts(n), query_texts(count)
    plans = {
        "vector": {"mode": "vector"},
        "hybrid (default auto)": {"mode": "hybrid"},
        "hybrid, ramp guard (ADR 10)": {"mode": "hybrid", "fusion": AutoFusion()},
        "hybrid, rrf": {"mode": "hybrid", "fusion": "rrf"},
    }
    times: dict[str, list[float]] = {p: [] for p in plans}
    started, load = time.perf_counter(), f"{os.getloadavg()[0]:.1f}"
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteVecStore(os.path.join(tmp, "vectors.db"), dim=DIM)
        for start in range(0, n, 20_000):
            part = range(start, min(start + 20_000, n))
            store.add_many([f"trails://bench/chunk/{i}" for i in part], vectors[start:part.stop],
                           [{"text": texts[i]} for i in part])
        ctx = Context(OxigraphGraph(), store, TableEmbedder(dict(zip(queries, qs))))
        built = time.perf_counter() - started
        print(f"built {n:,} chunks in {built:.0f} s", file=sys.stderr)
        for query in queries:  # warm: the first keyword query reads the postings' arrays
            retrieve(query, ctx, k=10)
        for _ in range(args.rounds):
            for query in queries:
                for plan in rng.permutation(list(plans)):
                    began = time.perf_counter()
                    retrieve(query, ctx, k=10, **plans[plan])
                    times[plan].append((time.perf_counter() - began) * 1000)
        store.close()
    load += f" -> {os.getloadavg()[0]:.1f}"
    median = {p: statistics.median(t) for p, t in times.items()}
    base = median["vector"]
    rows = "\n".join(f"| {p} | {m:.1f} | {m / base:.2f}x | {(m - base) / base:+.2f}x |"
                     for p, m in median.items())
    default = median["hybrid (default auto)"]
    verdict = "met" if default - base <= 2 * base else "missed"
    body = f"""## What the default hybrid adds to a vector query (`benchmarks/fusion_cost.py`)

Reproduce: `.venv/bin/python benchmarks/fusion_cost.py` ({datetime.date.today()}, {platform.node() and 'nproc ' + str(os.cpu_count())}, Python {platform.python_version()}, load {load}, a shared machine).
{n:,} chunks of real text (SciFact and NFCorpus abstracts' sentences packed to {CHUNK_CHARS} characters, the corpora cycled to reach the count) with clustered synthetic 384-d vectors in a file-backed `SqliteVecStore`; {count} SciFact and NFCorpus test queries, {args.rounds} rounds, the plans in a random order per query; k = 10. Medians of end-to-end `retrieve()` wall time (a precomputed query vector: no model).

| plan | median ms | / vector | adds |
|---|---:|---:|---:|
{rows}

Target: the default adds at most 2x the vector-only time: **{verdict}** ({(default - base) / base:+.2f}x). The default's guard reads only evidence the two rankings and the keyword quality's one store call already give, so it costs what ADR 10's guard cost."""
    print(body)
    if not args.no_write:
        write_region("fusion-cost", body, after="hybrid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
