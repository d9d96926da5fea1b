"""What linking and the entity step cost (docs/benchmarks.md, region ``entity-cost``).

    flock <lock> python benchmarks/entity_cost.py [--chunks 100000] [--labels 100000]
                                                  [--ingest 1000] [--no-write]

Linking: ``--labels`` synthetic entity labels (one to three words of a 20,000-word
vocabulary) matched by ``LabelLinker`` in ``--chunks`` synthetic chunks of 80 words each
(some labels planted), against the ingest pipeline's own time per chunk: ``ingest_all`` of
``--ingest`` such chunks (one per document) into an on-disk context with the default model
(onnx-int8), without a linker. Both are quoted per chunk; the issue's budget is linking at
most 20% of the pipeline's time.

The query step: the HotpotQA sample's context as ``_multihop.py`` links it (``studies/entity_study.py``'s too), the default
hybrid (k=10) against the same search with ``EntityBoost`` over ``ex:linksTo`` at 2 hops,
each query run every way in turn (each way first in turn, every query's vector cached
beforehand, so the ratio is the search's own work), median latency (budget: 1.5x).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from _docs import write_region
from _multihop import LINKER, LINKS_TO, linked_context

from trails import Context
from trails.ingest import Document, ingest_all
from trails.ingest.document import Chunk
from trails.ingest.linking import RDFS_LABEL
from trails.rank import EntityBoost
from trails.retrieval.retrieve import retrieve


def corpus(chunks: int, labels: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocabulary = [f"w{rng.getrandbits(40):x}" for _ in range(20_000)]
    names = list(dict.fromkeys(" ".join(rng.choices(vocabulary, k=rng.randint(1, 3)))
                               for _ in range(labels)))
    texts = []
    for _ in range(chunks):
        words = rng.choices(vocabulary, k=80)
        for at in rng.sample(range(80), 3):
            words[at] = rng.choice(names)
        texts.append(" ".join(words))
    return names, texts


def linking(names: list[str], texts: list[str]) -> tuple[float, float, int]:
    started = time.perf_counter()
    matcher = LINKER.matcher((f"https://example.org/e/{i}", n, RDFS_LABEL)
                             for i, n in enumerate(names))
    built = time.perf_counter() - started
    started = time.perf_counter()
    found = sum(len(matcher.mentions(Chunk(t, 0, len(t), 0))) for t in texts)
    return built, time.perf_counter() - started, found


def ingest(texts: list[str]) -> float:
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder(backend="onnx-int8")
    model.embed_many(texts[:8])  # the model loaded and warm before the clock starts
    with tempfile.TemporaryDirectory() as folder:
        ctx = Context.open(Path(folder) / "ctx", embedder=model, audit=False)
        started = time.perf_counter()
        ingest_all([Document(id=f"d{i}", source=f"d{i}", text=t) for i, t in enumerate(texts)],
                   ctx=ctx)
        took = time.perf_counter() - started
        ctx.close()
    return took


def query_latency(rounds: int = 1) -> tuple[dict[int, float], int]:
    """Median latency of the default hybrid (key -1) and with the step at 1 and 2 hops."""
    data, ctx, _ = linked_context("hotpotqa")
    steps = {hops: [EntityBoost(LINKER, neighbours=[LINKS_TO], hops=hops, weight=0.3)]
             for hops in (1, 2)}
    queries = list(data.queries.values())
    took: dict[int, list[float]] = {-1: [], 1: [], 2: []}
    # Warm: the model, the label matchers, the kept edges, and every query's vector (the
    # embedding cache would otherwise make whichever runs first pay for the others).
    for query in queries:
        retrieve(query, ctx)
        for chosen in steps.values():
            retrieve(query, ctx, steps=chosen)
    turn = 0
    for _ in range(rounds):
        for query in queries:
            order = list(took.items())
            turn += 1
            for hops, times in order[turn % 3:] + order[:turn % 3]:  # each goes first in turn
                started = time.perf_counter()
                retrieve(query, ctx, k=10, steps=steps.get(hops, []))
                times.append(time.perf_counter() - started)
    ctx.close()
    return {hops: statistics.median(t) for hops, t in took.items()}, rounds * len(queries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--labels", type=int, default=100_000)
    parser.add_argument("--ingest", type=int, default=1_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    names, texts = corpus(args.chunks, args.labels)
    built, linked, found = linking(names, texts)
    pipeline = ingest(texts[:args.ingest])
    per_link, per_ingest = linked / len(texts), pipeline / args.ingest
    latency, queries = query_latency(rounds=3)
    plain = latency[-1]
    body = "\n".join([
        "## What linking and the entity step cost", "",
        (f"`flock <lock> python benchmarks/entity_cost.py --chunks {args.chunks} --labels "
        f"{args.labels} --ingest {args.ingest}` (load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end)."), "",
        "| measure | value |", "|---|---:|",
        f"| labels (distinct) | {len(names):,} |",
        f"| matcher built from them | {built:.2f} s (once per scope and graph generation) |",
        (f"| linking {len(texts):,} chunks of 80 words | {linked:.1f} s, "
        f"{per_link * 1e6:.0f} µs a chunk ({found:,} mentions) |"),
        (f"| ingest pipeline (onnx-int8, no linker), {args.ingest:,} chunks | {pipeline:.1f} s, "
        f"{per_ingest * 1e3:.1f} ms a chunk |"),
        f"| **linking / pipeline, per chunk** | **{per_link / per_ingest:.1%}** (budget 20%) |",
        f"| default hybrid, median of {queries} HotpotQA queries | {plain * 1e3:.1f} ms |",
        *[f"| with `EntityBoost` ({hops} hop{'s' * (hops > 1)}): latency, **over the default** | "
          f"{latency[hops] * 1e3:.1f} ms, **{latency[hops] / plain:.2f}x** (budget 1.5x) |"
          for hops in (1, 2)]])
    print(body)
    if not args.no_write:
        write_region("entity-cost", body, after="entities")
    return 0


if __name__ == "__main__":
    sys.exit(main())
