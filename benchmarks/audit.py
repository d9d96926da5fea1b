"""What recording a search costs: the same queries with the audit trail off, on, and on with
each hit's admitting filter solution, interleaved query by query so the machine's noise falls
on all three alike.

Two contexts from SciFact's corpus ($TRAILS_BEIR_DIR/scifact, else
../shared/data/beir/scifact): the packaged all-MiniLM-L6-v2 over a sample (the real path: the
query is embedded), and a MockEmbedder over the whole corpus (retrieval alone: the worst case for the ratio). Modes: vector, hybrid
without a filter, hybrid with a date filter admitting about half of the documents.

    .venv/bin/python benchmarks/audit.py                     # full run, writes docs/benchmarks.md
    .venv/bin/python benchmarks/audit.py --quick --no-write  # smoke run
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _data import SCIFACT
from _docs import write_region

from trails import retrieve
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder

SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
         "FILTER(?d >= ?since) }")
SETTINGS = ("off", "on", "on+why")


def documents(limit: int | None) -> list[Document]:
    docs = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if limit is not None and n >= limit:
                break
            row = json.loads(line)
            docs.append(Document(id=row["_id"], source=f"scifact/{row['_id']}",
                                 title=row.get("title") or None, text=row["text"],
                                 metadata={"date": f"{2000 + n % 24}-06-01"}))
    return docs


def queries(limit: int) -> list[str]:
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines][:limit]


def measure(ctx: Context, asked: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """Median milliseconds per mode and setting."""
    modes = {"vector": {"mode": "vector"}, "hybrid": {},
             "hybrid, filter ~50%": {"sparql_filter": SINCE,
                                     "bindings": {"since": dt.date(2012, 1, 1)}}}
    times: dict[str, dict[str, list[float]]] = {m: {s: [] for s in SETTINGS} for m in modes}
    for mode, options in modes.items():
        for query in asked[:3]:  # warm: the filter's cache, the model, the files
            retrieve(query, ctx, **options)
        for _ in range(rounds):
            for n, query in enumerate(asked):
                order = SETTINGS[n % 3:] + SETTINGS[:n % 3]  # each setting first in turn
                for setting in order:
                    ctx.audit.enabled = setting != "off"
                    why = setting == "on+why"
                    started = time.perf_counter()
                    retrieve(query, ctx, why=why, **options)
                    times[mode][setting].append((time.perf_counter() - started) * 1000)
        ctx.audit.enabled = True
        ctx.audit.fold()  # between modes, as a writer would at its own pace
    return {m: {s: statistics.median(v) for s, v in by.items()} for m, by in times.items()}


def build(directory: Path, docs: list[Document], embedder) -> Context:
    ctx = Context.open(directory, embedder=embedder)
    started = time.perf_counter()
    ingest_all(docs, ctx=ctx)
    print(f"  ingested {len(docs)} documents in {time.perf_counter() - started:.0f} s", flush=True)
    return ctx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--no-write", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--sample", type=int, default=1500, help="documents for the real model")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    # --quick is a smoke run (tests/test_benchmarks_smoke.py): every mode and setting once.
    # 24 documents: dates 2000-2023, so the ~50% filter admits half of them; 3 queries: each
    # setting runs first once in the rotation.
    sample, asked, rounds = ((24, 3, 1) if args.quick
                             else (args.sample, args.queries, args.rounds))
    asked_queries = queries(asked)
    results = {}
    with tempfile.TemporaryDirectory() as work:
        from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder
        setups = [(f"MiniLM, {sample:,} SciFact documents", documents(sample),
                   SentenceTransformerEmbedder()),
                  ("MockEmbedder(384), all 5,183 SciFact documents",
                   documents(None if not args.quick else 100), MockEmbedder(dim=384))]
        for n, (name, docs, embedder) in enumerate(setups):
            print(f"{name}:", flush=True)
            with build(Path(work) / f"ctx{n}", docs, embedder) as ctx:
                results[name] = measure(ctx, asked_queries, rounds)
    lines = report(results, asked, rounds)
    print("\n".join(lines))
    if not args.no_write and not args.quick:
        write_region("audit", "\n".join(lines))


def report(results: dict[str, dict[str, dict[str, float]]], asked: int, rounds: int) -> list[str]:
    lines = [
        "## What recording a search costs",
        "",
        (f"`.venv/bin/python benchmarks/audit.py` ({dt.date.today()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, a shared machine): "
        f"{asked} SciFact queries x {rounds} rounds, k=10. Each query runs with the audit trail "
        "off, on, and on with each hit's admitting filter solution (`why`), in rotating order, "
        "so noise falls on all three alike. Medians in milliseconds. The overhead is on / off."),
        "",
        "| context | mode | off | on | on + why | on / off | on + why / off |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, modes in results.items():
        for mode, by in modes.items():
            lines.append(f"| {name} | {mode} | {by['off']:.2f} | {by['on']:.2f} | "
                         f"{by['on+why']:.2f} | {by['on'] / by['off']:.3f} | "
                         f"{by['on+why'] / by['off']:.3f} |")
    worst = max(by[s] / by["off"] for modes in results.values() for by in modes.values()
                for s in ("on", "on+why"))
    lines += [
        "",
        (f"Target: recording costs at most 10% of the query's latency. Worst ratio here: "
        f"{worst:.3f}. What a record costs is about constant per search: the JSON line, one "
        "`write()` under the log's lock, and for a filtered search with `why` one more graph "
        "query over the k hits. So the ratio is highest where the search itself is cheapest "
        "(vector mode without a model). Folding into the graph is the writer's work, outside "
        "every search, at close or when the trail is listed."),
    ]
    return lines


if __name__ == "__main__":
    main()
