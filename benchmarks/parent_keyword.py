"""Would a keyword ranking over whole documents, beside the chunk vectors, rank better?

An experiment for the quality goal (docs/benchmarks.md, "What was tried for the guard"): on
each set's test split, the default hybrid over the default chunks, against the same guard
fusing *documents*: each document's best chunk cosine (the default chunks' vector ranking)
with BM25 over the whole document (eval_beir.py's whole-doc context, one row per document).
Reuses eval_beir.py's persisted contexts and embedding cache (run eval_beir.py first).

    .venv/bin/python benchmarks/parent_keyword.py [--datasets scifact nfcorpus]
"""

from __future__ import annotations

import argparse
import sys

import _lab as lab
import eval_beir as eb

from trails import evaluation as ev
from trails.evaluation.run import keyword_index
from trails.rank.fusion import Ranking, auto
from trails.rank.keyword import keyword_evidence


def document_of(doc_of: dict[str, str], chunk: str) -> str | None:
    return doc_of.get(chunk.split("/v/", 1)[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["scifact", "nfcorpus"])
    args = parser.parse_args()
    model = eb.embedder()
    for name in args.datasets:
        data = ev.load_beir(eb.dataset_dir(name))
        qrels = data.split("test")
        with eb.open_context(data, "default", model) as ctx:
            chunks = lab.collect_rankings(data, "test", ctx)
            chunk_doc = ev.doc_ids_by_iri(data, ctx)
        runs: dict[str, dict[str, list[str]]] = {"default hybrid (chunks)": {},
                                                 "chunk vectors + document BM25": {}}
        with eb.open_context(data, "whole", model) as whole:
            whole_doc = ev.doc_ids_by_iri(data, whole)
            for query_id, lists in chunks.items():
                text = data.queries[query_id]
                runs["default hybrid (chunks)"][query_id] = ev.max_pool(
                    auto(list(lists.values())), chunk_doc)
                best: dict[str, float] = {}
                for chunk, score in lists["vector"].hits:
                    document = document_of(chunk_doc, chunk)
                    if document is not None:
                        best.setdefault(document, score)
                found = keyword_index(whole.vectors).keyword_search(text, ev.CHUNK_DEPTH)
                quality, about = keyword_evidence(text, whole.vectors, found)
                keyword = [(d, float(h.score)) for h in found
                           if (d := document_of(whole_doc, h.id)) is not None]
                fused = auto([Ranking("vector", list(best.items()),
                                      quality=lists["vector"].quality),
                              Ranking("keyword", keyword, quality=quality, query=about)])
                runs["chunk vectors + document BM25"][query_id] = [d for d, _ in fused][:100]
        for label, run in runs.items():
            means = ev.score_run(run, {q: qrels[q] for q in run})[0]
            print(f"{name} test, {label}: nDCG@10 {means['nDCG@10']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
