"""Ingestion throughput: the pipeline's own overhead, and its cost on top of a real model.

Two measurements on real text (BEIR SciFact abstracts from ../shared/data), into a persisted
context (graph on disk, vectors in SQLite), in one run:

1. MockEmbedder: embedding is nearly free, so chunks/s is the pipeline's own throughput
   (loading, chunking, minting, staging, publishing, graph writes). Target: >= 5,000 chunks/s.
2. The local all-MiniLM-L6-v2: the same chunk texts embedded directly (`embed_array`, same
   batch size) and then ingested. Target: ingest within 10% of the embedder's own throughput.

    .venv/bin/python benchmarks/ingest.py            # full run, writes docs/benchmarks.md
    .venv/bin/python benchmarks/ingest.py --quick --no-write
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "data" / "beir" / "scifact" / "corpus.jsonl"

from trails.context import Context  # noqa: E402
from trails.ingest import Document, ingest_all  # noqa: E402
from trails.ingest.chunkers import default_chunker  # noqa: E402
from trails.vector import MockEmbedder  # noqa: E402


def documents(limit: int) -> list[Document]:
    out = []
    with CORPUS.open() as lines:
        for line in lines:
            record = json.loads(line)
            text = f"{record['title']}\n\n{record['text']}".strip()
            out.append(Document(id=f"scifact/{record['_id']}", source=str(CORPUS), text=text,
                                title=record["title"]))
            if len(out) == limit:
                break
    return out


def timed_ingest(docs: list[Document], embedder, batch_size: int) -> tuple[float, int]:
    """Seconds to ingest ``docs`` into a fresh on-disk context, and the chunks written."""
    folder = Path(tempfile.mkdtemp(prefix="trails-bench-"))
    try:
        with Context.open(folder / "ctx", embedder=embedder) as ctx:
            chunker = default_chunker(embedder)
            started = time.perf_counter()
            stats = ingest_all(docs, ctx=ctx, chunker=chunker, batch_size=batch_size)
            seconds = time.perf_counter() - started
            if stats.failed:
                raise RuntimeError(f"benchmark ingest failed: {stats.failures[:3]}")
            return seconds, stats.chunks
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def chunk_texts(docs: list[Document], embedder) -> list[str]:
    chunker = default_chunker(embedder)
    return [c.text for d in docs for c in chunker.chunk(d)]


def run_mock(n_docs: int) -> dict:
    docs = documents(n_docs)
    embedder = MockEmbedder(dim=384, seed=0)
    timed_ingest(docs[:50], embedder, 256)  # warm imports and caches
    seconds, chunks = timed_ingest(docs, embedder, 256)
    embed_seconds = _time(lambda: embedder.embed_array(chunk_texts(docs, embedder)))
    return {"docs": len(docs), "chunks": chunks, "seconds": seconds,
            "chunks_per_s": chunks / seconds, "embed_only_chunks_per_s": chunks / embed_seconds}


def run_model(n_docs: int) -> dict:
    from trails.vector import SentenceTransformerEmbedder

    docs = documents(n_docs)
    embedder = SentenceTransformerEmbedder(batch_size=32)
    embedder.warm()
    texts = chunk_texts(docs, embedder)
    embedder.embed_array(texts[:64])  # warm the model's kernels
    # Alternate the two measurements so machine noise hits both alike.
    direct, ingest = [], []
    for _ in range(2):
        direct.append(_time(lambda: embedder.embed_array(texts)))
        seconds, chunks = timed_ingest(docs, embedder, 32)
        ingest.append(seconds)
    direct_rate, ingest_rate = len(texts) / min(direct), chunks / min(ingest)
    return {"docs": len(docs), "chunks": chunks, "embed_only_chunks_per_s": direct_rate,
            "chunks_per_s": ingest_rate, "overhead": 1 - ingest_rate / direct_rate}


def _time(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def table(mock: dict, model: dict | None) -> str:
    lines = [
        "| embedder | documents | chunks | ingest chunks/s | embedder alone chunks/s | target | met |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
        f"| MockEmbedder (384-d) | {mock['docs']} | {mock['chunks']} | "
        f"{mock['chunks_per_s']:,.0f} | {mock['embed_only_chunks_per_s']:,.0f} | "
        f">= 5,000 chunks/s | {'yes' if mock['chunks_per_s'] >= 5000 else 'no'} |",
    ]
    if model:
        lines.append(
            f"| all-MiniLM-L6-v2 (torch, CPU) | {model['docs']} | {model['chunks']} | "
            f"{model['chunks_per_s']:,.1f} | {model['embed_only_chunks_per_s']:,.1f} | "
            f"within 10% of embedder alone | {'yes' if model['overhead'] <= 0.10 else 'no'} "
            f"({model['overhead']:+.1%}) |")
    return "\n".join(lines)


def write_doc(body: str) -> None:
    path = ROOT / "docs" / "benchmarks.md"
    start, end = "<!-- ingest:start -->", "<!-- ingest:end -->"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{start}\n{body}\n{end}"
    if start in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small corpus, mock embedder only")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    mock = run_mock(300 if args.quick else 3000)
    model = None if args.quick else run_model(300)
    result = table(mock, model)
    print(result)
    if not args.no_write:
        body = (f"## Ingestion throughput\n\nMeasured {dt.date.today()} with "
                f"`.venv/bin/python benchmarks/ingest.py` on {os.cpu_count()} cores "
                f"({platform.machine()}, Python {platform.python_version()}). Real text: BEIR "
                f"SciFact abstracts, default chunker, persisted context (Oxigraph on disk, "
                f"sqlite-vec file), one run, best of two for the model rows.\n\n{result}\n")
        write_doc(body)


if __name__ == "__main__":
    main()
