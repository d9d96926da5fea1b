"""Embedder backends side by side: throughput (texts/s) and full-corpus SciFact nDCG@10.

Backends: MockEmbedder (bag of words, the floor), and all-MiniLM-L6-v2 on torch, ONNX Runtime
fp32 (``onnx``) and ONNX Runtime int8 (``onnx-int8``), all on the same real texts.

1. Throughput: the backends take turns on the same batches (round robin, order rotated each
   round) so that load from other processes on this shared machine hits them alike. Reported:
   median texts/s by wall clock and per CPU-second of this process, and the median of the
   per-round ratio to torch (the number to trust on a noisy machine).
2. Quality: the full BEIR SciFact corpus (5,183 documents, 300 test queries), each document
   embedded whole as "title text" and truncated by the model at 256 word pieces, as BEIR and
   MTEB do (no chunking), scored exactly; nDCG@10, recall@10/100 with ir-measures. The anchor:
   all-MiniLM-L6-v2 scores 0.645 nDCG@10 on SciFact (MTEB). Also: each backend's per-text
   cosine to torch, and mixed runs (ONNX queries against torch documents), which is what a
   store built with one backend and queried with another does.

    .venv/bin/python benchmarks/embedders.py                  # full run, writes docs/benchmarks.md
    .venv/bin/python benchmarks/embedders.py --quick --no-write
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import random
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "beir" / "scifact"
MODEL_BACKENDS = ("torch", "onnx", "onnx-int8")
PUBLISHED_NDCG = 0.645  # all-MiniLM-L6-v2 on SciFact, MTEB leaderboard

from _docs import DOC, write_region

from trails.vector import MockEmbedder
from trails.vector.embedders.sentence_transformer import (
    AUTO_CPU_BACKEND,
    SentenceTransformerEmbedder,
)

# --------------------------------------------------------------------------- data


def load_scifact() -> tuple[list[str], list[str], list[str], list[str], dict[str, dict[str, int]]]:
    """(doc ids, doc texts, test query ids, query texts, test qrels)."""
    doc_ids, doc_texts = [], []
    with (SCIFACT / "corpus.jsonl").open() as corpus:
        for line in corpus:
            record = json.loads(line)
            doc_ids.append(record["_id"])
            doc_texts.append(f"{record['title']} {record['text']}".strip())
    qrels: dict[str, dict[str, int]] = {}
    for line in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, score = line.strip().split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    queries = {}
    with (SCIFACT / "queries.jsonl").open() as lines:
        for line in lines:
            record = json.loads(line)
            if record["_id"] in qrels:
                queries[record["_id"]] = record["text"]
    query_ids = sorted(queries, key=int)
    return doc_ids, doc_texts, query_ids, [queries[q] for q in query_ids], qrels


def make_embedders(names: list[str], cache_dir: Path | None) -> dict:
    """Embedders by name, each exported (ONNX) and loaded before anything is timed."""
    embedders = {}
    for name in names:
        if name == "mock":
            embedders[name] = MockEmbedder(dim=384)
        else:
            embedders[name] = SentenceTransformerEmbedder(backend=name, device="cpu",
                                                          cache_dir=cache_dir)
        started = time.perf_counter()
        embedders[name].embed_array(["warm up"])
        print(f"  {name}: ready in {time.perf_counter() - started:.1f}s", flush=True)
    return embedders


# --------------------------------------------------------------------------- throughput


def throughput(embedders: dict, texts: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """Per backend: median texts/s (wall, CPU) and the median per-round ratio to torch."""
    names = list(embedders)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
        for name in order:
            started_wall, started_cpu = time.perf_counter(), time.process_time()
            embedders[name].embed_array(texts)
            wall[name].append(time.perf_counter() - started_wall)
            cpu[name].append(time.process_time() - started_cpu)
    out = {}
    for name in names:
        row = {"wall": len(texts) / float(np.median(wall[name])),
               "cpu": len(texts) / float(np.median(cpu[name]))}
        if "torch" in wall:
            row["ratio"] = float(np.median(np.array(wall["torch"]) / np.array(wall[name])))
        out[name] = row
    return out


def batch_independence(embedder, texts: list[str]) -> float:
    """Worst cosine between a text's vector alone and in a batch (1.0: no dependence)."""
    together = embedder.embed_array(texts)
    alone = np.vstack([embedder.embed_array([t]) for t in texts])
    return float(np.min(np.sum(together * alone, axis=1)))


# --------------------------------------------------------------------------- quality


def embed_corpus(name: str, embedder, texts: list[str], kind: str, cache: Path | None,
                 ) -> tuple[np.ndarray, float]:
    """All vectors for ``texts``, and the seconds it took (0 when read from ``cache``).

    The cache key is the embedder's identity and the texts, so a changed model, backend or
    corpus is recomputed.
    """
    key = hashlib.sha256((embedder.identity.model_dump_json() + "\x00".join(texts)).encode())
    path = cache / f"{name}-{kind}-{key.hexdigest()[:16]}.npy" if cache else None
    if path is not None and path.is_file():
        return np.load(path), 0.0
    started = time.perf_counter()
    vectors = embedder.embed_array(texts)
    seconds = time.perf_counter() - started
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors, seconds


def evaluate(queries: np.ndarray, docs: np.ndarray, query_ids: list[str], doc_ids: list[str],
             qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Exact top-100 by dot product (vectors are unit length), scored with ir-measures."""
    import ir_measures
    from ir_measures import R, nDCG

    scores = queries @ docs.T
    run = []
    for i, query_id in enumerate(query_ids):
        top = np.argpartition(-scores[i], 100)[:100]
        run += [ir_measures.ScoredDoc(query_id, doc_ids[j], float(scores[i, j])) for j in top]
    judged = [ir_measures.Qrel(q, d, rel) for q, docs_ in qrels.items() for d, rel in docs_.items()]
    result = ir_measures.calc_aggregate([nDCG @ 10, R @ 10, R @ 100], judged, run)
    return {"ndcg@10": result[nDCG @ 10], "recall@10": result[R @ 10],
            "recall@100": result[R @ 100]}


def quality(embedders: dict, data: tuple, cache: Path | None) -> dict:
    doc_ids, doc_texts, query_ids, query_texts, qrels = data
    vectors, rows = {}, {}
    for name in (n for n in embedders if n in MODEL_BACKENDS):
        print(f"  embedding {len(doc_texts)} documents with {name}...", flush=True)
        docs, seconds = embed_corpus(name, embedders[name], doc_texts, "docs", cache)
        queries, _ = embed_corpus(name, embedders[name], query_texts, "queries", cache)
        vectors[name] = (queries, docs)
        rows[name] = {**evaluate(queries, docs, query_ids, doc_ids, qrels), "seconds": seconds}
        print(f"    nDCG@10 {rows[name]['ndcg@10']:.4f}", flush=True)
    if "torch" in vectors:
        for name in (n for n in vectors if n != "torch"):
            rows[name].update(_agreement(vectors[name], vectors["torch"]))
            mixed = evaluate(vectors[name][0], vectors["torch"][1], query_ids, doc_ids, qrels)
            rows[name]["mixed_ndcg@10"] = mixed["ndcg@10"]
    return rows


def _agreement(pair: tuple[np.ndarray, np.ndarray], torch_pair: tuple[np.ndarray, np.ndarray],
               ) -> dict[str, float]:
    """Per-text cosine to torch over documents and queries: worst, 1st percentile, mean."""
    cosine = np.concatenate([np.sum(a * b, axis=1) for a, b in zip(pair, torch_pair)])
    return {"cos_min": float(cosine.min()), "cos_p1": float(np.percentile(cosine, 1)),
            "cos_mean": float(cosine.mean())}


# --------------------------------------------------------------------------- report


def report(speed_docs: dict, speed_queries: dict, batch_dep: dict, rows: dict, meta: dict) -> str:
    lines = [
        (f"Measured {meta['date']} on {meta['machine']} (2 cores shared with other jobs: "
        "absolute rates are noisy, the per-round ratios less so). Command: "
        f"`{meta['command']}`."),
        "",
        f"### Throughput ({meta['rounds']} alternating rounds, same texts for every backend)",
        "",
        ("| backend | SciFact documents: texts/s | per CPU-s | × torch | test queries: texts/s "
        "| per CPU-s | × torch | batch-independent (worst cos alone vs in batch) |"),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in speed_docs.items():
        q = speed_queries[name]
        dep = batch_dep.get(name)
        lines.append(
            f"| {name} | {row['wall']:.1f} | {row['cpu']:.1f} | {row.get('ratio', 0):.2f} "
            f"| {q['wall']:.1f} | {q['cpu']:.1f} | {q.get('ratio', 0):.2f} "
            f"| {'—' if dep is None else f'{dep:.4f}'} |")
    lines += ["", (f"Documents: {meta['n_docs']} SciFact abstracts (title + text, ~250 word pieces, "
              f"truncated at 256); torch in batches of 32, ONNX one text per run on a thread per core. Queries: {meta['n_queries']} SciFact test "
              "claims (~20 word pieces).")]
    if rows:
        lines += [
            "", "### Retrieval quality: full BEIR SciFact (5,183 documents, 300 test queries)", "",
            (f"Published anchor: all-MiniLM-L6-v2 nDCG@10 = {PUBLISHED_NDCG} (MTEB). Documents "
            "embedded whole (truncated by the model), exact search."), "",
            ("| backend | nDCG@10 | Δ vs torch | recall@10 | recall@100 | cos to torch: worst "
            "/ 1st pct / mean | nDCG@10, its queries vs torch documents | embed time (s) |"),
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        base = rows.get("torch", {}).get("ndcg@10")
        for name, row in rows.items():
            delta = "—" if base is None or name == "torch" else f"{row['ndcg@10'] - base:+.4f}"
            cos = ("—" if "cos_min" not in row else
                   f"{row['cos_min']:.4f} / {row['cos_p1']:.4f} / {row['cos_mean']:.5f}")
            mixed = f"{row['mixed_ndcg@10']:.4f}" if "mixed_ndcg@10" in row else "—"
            secs = f"{row['seconds']:.0f}" if row["seconds"] else "cached"
            lines.append(f"| {name} | {row['ndcg@10']:.4f} | {delta} | {row['recall@10']:.4f} "
                         f"| {row['recall@100']:.4f} | {cos} | {mixed} | {secs} |")
        lines += ["", (f"`backend=\"auto\"` runs `{AUTO_CPU_BACKEND or 'torch'}` on the CPU "
                  "(ADR 0007: chosen only if it loses < 0.005 nDCG@10 against torch).")]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="few texts and rounds, no full-corpus quality run")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--backends", default="mock,torch,onnx,onnx-int8")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--texts", type=int, default=64, help="texts per round and backend")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="ONNX export cache (default: trails' own, ~/.cache/trails/onnx)")
    parser.add_argument("--vectors-cache", type=Path, default=None,
                        help="keep corpus vectors here between runs (keyed by identity+texts)")
    args = parser.parse_args()
    rounds, n_texts = (2, 16) if args.quick else (args.rounds, args.texts)

    data = load_scifact()
    rng = random.Random(0)
    doc_sample = rng.sample(data[1], n_texts)
    query_sample = rng.sample(data[3], n_texts)
    print("loading backends (ONNX exports on first use)...", flush=True)
    embedders = make_embedders(args.backends.split(","), args.cache_dir)
    print("throughput...", flush=True)
    speed_docs = throughput(embedders, doc_sample, rounds)
    speed_queries = throughput(embedders, query_sample, rounds)
    batch_dep = {n: batch_independence(e, doc_sample[:16])
                 for n, e in embedders.items() if n in MODEL_BACKENDS}
    rows = {} if args.quick else quality(embedders, data, args.vectors_cache)

    meta = {"date": dt.date.today().isoformat(), "rounds": rounds, "n_docs": n_texts,
            "n_queries": n_texts,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
                       f"{platform.python_version()}",
            "command": "python benchmarks/embedders.py" + (" --quick" if args.quick else "")}
    body = report(speed_docs, speed_queries, batch_dep, rows, meta)
    print(body)
    if not args.no_write:
        write_region("embedders", f"## Embedders\n\n{body}")
        print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
