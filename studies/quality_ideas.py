"""Ideas for the SciFact goal (0.74 nDCG@10) that were measured and not shipped, each against
the default hybrid on the same rankings (docs/fusion-study.md, finding 9).

    .venv/bin/python studies/quality_ideas.py title   [--sets scifact nfcorpus]
    .venv/bin/python studies/quality_ideas.py document [--sets scifact scifact@torch]
    .venv/bin/python studies/quality_ideas.py feedback [--sets scifact]
    .venv/bin/python studies/quality_ideas.py chunks   [--sets scifact nfcorpus]
    .venv/bin/python studies/quality_ideas.py bm25     [--sets scifact nfcorpus]
    .venv/bin/python studies/quality_ideas.py weights  [--sets scifact nfcorpus]
    .venv/bin/python studies/quality_ideas.py proximity [--sets scifact]

Each reads the guard study's collection of a set (``guard_study.py collect <set>``; a plain
name is onnx-int8, ``<set>@torch`` torch) and eval_beir.py's persisted contexts and
embedding cache, and prints nDCG@10 of the vector
ranking, the keyword ranking and the shipped ``fusion="auto"`` over chunks, max-pooled to
documents as everywhere else, on each split named.

- ``title``: every chunk that does not begin with its document's title gets it in front,
  in the keyword index, in the embedded text, or both (a "contextual chunk header").
- ``document``: keyword evidence of whole documents: each chunk scored with its document's
  BM25 (statistics over documents; eval_beir.py's "whole" context), or both rankings pooled
  to documents before fusing (on ``scifact@torch`` this is where 0.741 came from).
- ``feedback``: the vector ranking re-scored with Rocchio feedback from its own top chunks.
- ``chunks``: the default chunker packing up to the model's token limit (2,500 characters),
  without sentence overlap, and down to about two sentences (300 characters).
- ``bm25``: the keyword ranking with other BM25 constants than FTS5's (k1 1.2, b 0.75), among
  them Anserini's BEIR baseline (k1 0.9, b 0.4).
- ``weights``: the ceiling of the fusion itself: every fixed keyword share of the by-best
  score fusion (0 to 1 in steps of 0.05), and the share best for each query (an oracle no
  searcher has), beside the guard's.
- ``proximity``: term proximity on top of BM25 (as the sequential dependence model adds it):
  each of the keyword ranking's chunks gains ``alpha`` times a BM25-saturated count of the
  query's adjacent term pairs found together (in order and adjacent, or either order within a
  window), weighted by the rarer term's IDF; the guard reads the same qualities.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _guard as g
import _guard_collect as gc
import eval_beir as eb

from trails import evaluation as ev
from trails.evaluation.run import keyword_index
from trails.rank.fusion import Ranking, auto
from trails.rank.keyword import keyword_evidence
from trails.retrieval.degraded import embed_query

SPLITS = {"scifact": ("train", "test"), "nfcorpus": ("dev", "test")}
Scores = dict[str, list[float]]


def scored(scores: Scores, label: str, p: g.Prepared, single: bool = True) -> None:
    if single:
        scores.setdefault(f"{label} vector", []).append(g.single(p, "vector"))
        scores.setdefault(f"{label} keyword", []).append(g.single(p, "keyword"))
    scores.setdefault(f"{label} auto", []).append(g.fused(p, *g.auto_weights(p, auto)))


def show(name: str, split: str, scores: Scores) -> None:
    for label, values in scores.items():
        print(f"{name} {split:5} {label:38} {np.mean(values):.4f}")


class Study:
    """One set's collection (on the backend its name says) and its default context, open."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.backend = gc.split_name(name)[1]
        self.data = ev.load_beir(gc.data_folder(name))
        self.cache = gc.load(name)
        self.model = eb.embedder(self.backend)
        self.ctx = eb.open_context(self.data, "default", self.model, self.backend)
        rows = gc._rows(self.ctx.vectors)
        self.ids, self.matrix = gc._matrix(rows)
        self.metadata = {r.id: r.metadata for r in rows}
        self.doc_of = self.cache["doc_of"]

    def text(self, chunk: str) -> str:
        return str(self.metadata[chunk].get("text") or "")

    def document(self, chunk: str) -> str | None:
        return self.doc_of.get(chunk.split("/v/", 1)[0])

    def query(self, query_id: str) -> np.ndarray:
        vector = np.asarray(embed_query(self.model, self.data.queries[query_id]), np.float32)
        return vector / np.linalg.norm(vector)

    def clean(self, split: str) -> dict[str, gc.QueryRankings]:
        rankings: dict[str, gc.QueryRankings] = self.cache["rankings"][(split, "clean")]
        return rankings

    def prepare(self, query_id: str, rankings: gc.QueryRankings, split: str) -> g.Prepared:
        return g.prepare(query_id, rankings, self.cache["qrels"][split][query_id],
                         self.doc_of, False)


def titled(study: Study, *, keyword: bool, vector: bool) -> Any:
    """An in-memory copy of the store whose chunks carry their document's title in front."""
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    texts, changed = [], []
    for i, chunk in enumerate(study.ids):
        text = study.text(chunk)
        document = study.document(chunk)
        title = study.data.corpus[document][0] if document else ""
        if title and not text.startswith(title):
            texts.append(f"{title}\n\n{text}")
            changed.append(i)
        else:
            texts.append(text)
    matrix = study.matrix.copy()
    if vector and changed:
        new = np.asarray(study.model.embed_array([texts[i] for i in changed]), np.float32)
        matrix[changed] = new / np.linalg.norm(new, axis=1, keepdims=True)
    copy = SqliteVecStore(":memory:", dim=study.ctx.vectors.dim,
                          embedder=study.ctx.vectors.embedder_identity)
    for start in range(0, len(study.ids), 2000):
        part = study.ids[start:start + 2000]
        copy.add_many(part, matrix[start:start + 2000], [
            dict(study.metadata[c], text=texts[start + j] if keyword else study.text(c))
            for j, c in enumerate(part)])
    return copy, matrix


def title_idea(study: Study, split: str) -> Scores:
    scores: Scores = {}
    variants = {label: titled(study, keyword=k, vector=v) for label, k, v in
                (("title in keyword text", True, False), ("title in embedded text", False, True),
                 ("title in both", True, True))}
    for query_id, rankings in study.clean(split).items():
        text = study.data.queries[query_id]
        scored(scores, "shipped", study.prepare(query_id, rankings, split))
        for label, (store, matrix) in variants.items():
            vector = gc._vector_ranking(study.ids, matrix, study.query(query_id))
            scored(scores, label, study.prepare(query_id, gc._keyword_side(text, store, vector),
                                                split))
    return scores


def document_idea(study: Study, split: str) -> Scores:
    scores: Scores = {}
    runs: dict[str, dict[str, list[str]]] = {"fused per document, chunk keyword": {},
                                             "fused per document, document keyword": {}}
    chunks_of: dict[str | None, list[str]] = {}
    for chunk in study.ids:
        chunks_of.setdefault(study.document(chunk), []).append(chunk)
    with eb.open_context(study.data, "whole", eb.embedder()) as whole:
        # The whole context's keyword index is one row per document (its vectors are torch's
        # and unused here): BM25 with document statistics.
        whole_doc = ev.doc_ids_by_iri(study.data, whole)
        for query_id, rankings in study.clean(split).items():
            text = study.data.queries[query_id]
            found = keyword_index(whole.vectors).keyword_search(text, 1000)
            quality, about = keyword_evidence(text, whole.vectors, found)
            documents = [(d, float(h.score)) for h in found
                         if (d := whole_doc.get(h.id.split("/v/", 1)[0])) is not None]
            own = dict(rankings.keyword.hits)
            hits = [(c, s) for d, s in documents
                    for c in sorted(chunks_of.get(d, []), key=lambda c: -own.get(c, 0.0))]
            chunked = Ranking("keyword", hits[:ev.CHUNK_DEPTH], quality=quality, query=about)
            scored(scores, "shipped", study.prepare(query_id, rankings, split), single=False)
            scored(scores, "each chunk its document's BM25", study.prepare(
                query_id, gc.QueryRankings(rankings.vector, chunked, about["weight"],
                                           rankings.term_idfs, rankings.words), split))
            best_vector = pooled(study, rankings.vector.hits)
            for label, keyword in (("chunk keyword", Ranking(
                    "keyword", pooled(study, rankings.keyword.hits), quality=rankings.keyword.quality,
                    query=g.query_evidence(rankings))), ("document keyword", Ranking(
                    "keyword", documents[:ev.CHUNK_DEPTH], quality=quality, query=about))):
                fused = auto([Ranking("vector", best_vector, quality=rankings.vector.quality),
                              keyword])
                runs[f"fused per document, {label}"][query_id] = [d for d, _ in fused][:100]
    qrels = study.data.split(split)
    for label, run in runs.items():
        scores[label] = [ev.score_run(run, {q: qrels[q] for q in run})[0]["nDCG@10"]]
    return scores


def pooled(study: Study, hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """A chunk ranking as a document ranking: each document at its best chunk's score."""
    best: dict[str, float] = {}
    for chunk, score in hits:
        document = study.document(chunk)
        if document is not None:
            best.setdefault(document, score)
    return list(best.items())


def feedback_idea(study: Study, split: str) -> Scores:
    scores: Scores = {}
    position = {c: i for i, c in enumerate(study.ids)}
    for query_id, rankings in study.clean(split).items():
        scored(scores, "shipped", study.prepare(query_id, rankings, split))
        top = [position[c] for c, _ in rankings.vector.hits]
        query = study.query(query_id)
        for m, beta in ((3, 0.3), (5, 0.3), (3, 0.6)):
            moved = query + beta * study.matrix[top[:m]].mean(axis=0)
            moved /= np.linalg.norm(moved)
            values = study.matrix[top] @ moved
            order = np.argsort(-values, kind="stable")
            vector = rankings.vector._replace(
                hits=[(study.ids[top[i]], float(values[i])) for i in order])
            scored(scores, f"feedback from top {m}, weight {beta}", study.prepare(
                query_id, gc.QueryRankings(vector, rankings.keyword, rankings.idf_sum,
                                           rankings.term_idfs, rankings.words), split))
    return scores


def chunks_idea(study: Study, split: str) -> Scores:
    from trails import Context
    from trails.ingest.chunkers import default_chunker

    scores: Scores = {}
    for query_id, rankings in study.clean(split).items():
        scored(scores, "shipped", study.prepare(query_id, rankings, split))
    for max_chars, overlap in ((2500, 1), (1000, 0), (300, 1)):
        folder = eb.context_dir(study.data.name, f"chunks-{max_chars}-{overlap}", study.backend)
        with Context.open(folder, embedder=study.model, audit=False) as ctx:
            chunker = default_chunker(study.model, max_chars=max_chars, overlap=overlap)
            ev.ingest_dataset(study.data, ctx, chunker=chunker, batch_size=256)
            doc_of = ev.doc_ids_by_iri(study.data, ctx)
            ids, matrix = gc._vectors(ctx.vectors)
            label = f"chunks of {max_chars} characters, overlap {overlap}"
            for query_id in study.clean(split):
                vector = gc._vector_ranking(ids, matrix, study.query(query_id))
                rankings = gc._keyword_side(study.data.queries[query_id], ctx.vectors, vector)
                scored(scores, label, g.prepare(query_id, rankings,
                                                study.cache["qrels"][split][query_id],
                                                doc_of, False))
    return scores


def bm25_idea(study: Study, split: str) -> Scores:
    from trails.vector.stores.sqlite_vec import SqliteVecStore, keyword_postings

    scores: Scores = {}
    for query_id, rankings in study.clean(split).items():
        scored(scores, "shipped", study.prepare(query_id, rankings, split))
    shipped = keyword_postings.K1, keyword_postings.B
    path = eb.context_dir(study.data.name, "default", study.backend) / "vectors.db"
    try:
        for k1, b in ((0.9, 0.4), (1.2, 0.4), (0.9, 0.75), (1.5, 0.75), (1.2, 0.9), (2.0, 0.75)):
            keyword_postings.K1, keyword_postings.B = k1, b
            store = SqliteVecStore(path, read_only=True)  # its postings norm is built anew
            try:
                for query_id, rankings in study.clean(split).items():
                    redone = gc._keyword_side(study.data.queries[query_id], store,
                                              rankings.vector)
                    scored(scores, f"k1 {k1}, b {b}", study.prepare(query_id, redone, split))
            finally:
                store.close()
    finally:
        keyword_postings.K1, keyword_postings.B = shipped
    return scores


def weights_idea(study: Study, split: str) -> Scores:
    scores: Scores = {}
    grid = np.linspace(0.0, 1.0, 21)
    for query_id, rankings in study.clean(split).items():
        p = study.prepare(query_id, rankings, split)
        scored(scores, "shipped", p, single=False)
        by_share = g.keyword_weight_grid(p, grid)
        for share, value in zip(grid, by_share, strict=True):
            scores.setdefault(f"fixed keyword share {share:.2f}", []).append(float(value))
        scores.setdefault("best share per query (oracle)", []).append(float(by_share.max()))
    return scores


# (window, in order, alpha) of the proximity idea: SDM's ordered bigram and unordered windows.
PROXIMITY = ((1, True, 0.25), (1, True, 0.5), (1, True, 1.0), (4, False, 0.25),
             (4, False, 0.5), (8, False, 0.5), (8, False, 1.0))


def proximity_idea(study: Study, split: str) -> Scores:
    from trails.text import keyword_terms
    from trails.vector.stores.sqlite_vec.keyword_postings import K1, B, apsw_tokenizers, idf
    from trails.vector.stores.sqlite_vec.schema import KEYWORD_TOKENIZER

    document_stems, query_stems = apsw_tokenizers(KEYWORD_TOKENIZER)
    # Every chunk's stems, as the keyword index holds them.
    chunk_stems = {chunk: document_stems(study.text(chunk)) for chunk in study.ids}
    holding: dict[str, int] = {}
    for chunk in chunk_stems.values():
        for stem in set(chunk):
            holding[stem] = holding.get(stem, 0) + 1
    rows, mean_length = len(chunk_stems), float(np.mean([len(c) for c in chunk_stems.values()]))

    def together(chunk: list[str], a: str, b: str, window: int, ordered: bool) -> int:
        """How many of ``a``'s places have ``b`` within ``window`` after (or either side)."""
        at_b = [i for i, stem in enumerate(chunk) if stem == b]
        return sum(any(0 < j - i <= window if ordered else 0 < abs(j - i) <= window
                       for j in at_b) for i, stem in enumerate(chunk) if stem == a)

    scores: Scores = {}
    for query_id, rankings in study.clean(split).items():
        scored(scores, "shipped", study.prepare(query_id, rankings, split), single=False)
        terms = [t[0] for w in keyword_terms(study.data.queries[query_id])
                 if (t := query_stems(w))]
        pairs = [(a, b) for a, b in itertools.pairwise(terms) if a != b]
        for window, ordered, alpha in PROXIMITY:
            hits = []
            for chunk_id, score in rankings.keyword.hits:
                chunk = chunk_stems.get(chunk_id, [])
                norm = K1 * (1 - B + B * len(chunk) / mean_length)
                bonus = 0.0
                for a, b in pairs:
                    if (tf := together(chunk, a, b, window, ordered)):
                        weight = min(idf(rows, holding.get(a, 0)), idf(rows, holding.get(b, 0)))
                        bonus += weight * tf * (K1 + 1) / (tf + norm)
                hits.append((chunk_id, score + alpha * bonus))
            hits.sort(key=lambda hit: (-hit[1], hit[0]))
            label = f"{'in order' if ordered else 'any order'}, window {window}, alpha {alpha}"
            scored(scores, label, study.prepare(query_id, gc.QueryRankings(
                rankings.vector, rankings.keyword._replace(hits=hits), rankings.idf_sum,
                rankings.term_idfs, rankings.words), split))
    return scores


IDEAS: dict[str, Callable[[Study, str], Scores]] = {
    "title": title_idea, "document": document_idea, "feedback": feedback_idea,
    "chunks": chunks_idea, "bm25": bm25_idea, "weights": weights_idea,
    "proximity": proximity_idea}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("idea", choices=sorted(IDEAS))
    parser.add_argument("--sets", nargs="+", default=["scifact"],
                        help=f"{', '.join(sorted(SPLITS))}, each optionally @torch")
    args = parser.parse_args()
    for name in args.sets:
        if gc.split_name(name)[0] not in SPLITS:
            parser.error(f"no tuning split known for {name!r}: choose from {sorted(SPLITS)}")
        study = Study(name)
        for split in SPLITS[gc.split_name(name)[0]]:
            show(name, split, IDEAS[args.idea](study, split))
        study.ctx.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
