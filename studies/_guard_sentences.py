"""Sentence-aware vector rankings for the guard study (docs/fusion-study.md, finding 12).

A chunk's vector score becomes the mean of its own cosine and the cosine of its best
sentence: a chunk embeds several sentences into one mean, and a claim or question that one
sentence answers is diluted by the others. Only the vector ranking's own 300 chunks are
rescored (then re-sorted), so the cost is one dot product per sentence of those chunks, and
the keyword ranking is untouched.

``derive(name)`` writes the collection ``<name>+sentences``: ``<name>``'s (same queries,
qrels, keyword rankings and damage), each vector ranking rescored. Under vector damage the
sentence vectors get the same noise as the chunk vectors (another draw), as a damaged store
would hold them.
"""

from __future__ import annotations

import pickle
from typing import Any

import _guard_collect as gc
import eval_beir as eb
import numpy as np

from trails import evaluation as ev
from trails.ingest.chunkers.sentences import split_sentences
from trails.rank.fusion import Ranking
from trails.retrieval.degraded import embed_query

SUFFIX = "+sentences"


def sentence_vectors(rows: list[Any], model: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, vectors)``: the sentences of the chunk in ``rows[i]`` are rows ``starts[i]``
    to ``starts[i + 1]`` of the unit ``vectors`` (a chunk with no sentence break is one)."""
    sentences, starts = [], [0]
    for row in rows:
        text = str(row.metadata.get("text") or "")
        spans = [(a, b) for a, b in split_sentences(text) if text[a:b].strip()]
        sentences += [text[a:b] for a, b in spans] or [text]
        starts.append(len(sentences))
    vectors = np.asarray(model.embed_array(sentences), dtype=np.float32)
    return np.array(starts), vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def rescore(ranking: Ranking, position: dict[str, int], starts: np.ndarray,
            vectors: np.ndarray, query: np.ndarray) -> Ranking:
    """``ranking``'s chunks scored ``(cosine + best sentence cosine) / 2``, re-sorted."""
    unit = query / np.linalg.norm(query)
    hits = []
    for chunk, cosine in ranking.hits:
        i = position[chunk]
        best = float(np.max(vectors[starts[i]:starts[i + 1]] @ unit))
        hits.append((chunk, (float(cosine) + best) / 2))
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return ranking._replace(hits=hits, quality=hits[0][1] if hits else None)


def derive(name: str) -> dict[str, Any]:
    """Write and return the collection ``name + SUFFIX`` from ``name``'s (see module doc)."""
    source = gc.load(name)
    data = ev.load_beir(gc.data_folder(name))
    backend = gc.split_name(name)[1]
    model = eb.embedder(backend)
    with eb.open_context(data, "default", model, backend) as ctx:
        rows = gc._rows(ctx.vectors)
    starts, clean = sentence_vectors(rows, model)
    eb.log(f"{name}: {len(rows)} chunks, {len(clean)} sentences")
    position = {row.id: i for i, row in enumerate(rows)}
    damaged = {variant: gc._noisy(clean, sigma, seed=1)
               for variant, _, sigma in gc._damage() if sigma}
    queries: dict[str, np.ndarray] = {}
    rankings = {}
    for (split, variant), by_query in source["rankings"].items():
        vectors = damaged.get(variant, clean)
        out = {}
        for query_id, lists in by_query.items():
            if query_id not in queries:
                queries[query_id] = np.asarray(embed_query(model, data.queries[query_id]),
                                               dtype=np.float32)
            out[query_id] = gc.QueryRankings(
                rescore(lists.vector, position, starts, vectors, queries[query_id]),
                lists.keyword, lists.idf_sum, lists.term_idfs, lists.words)
        rankings[(split, variant)] = out
    derived = dict(source, name=name + SUFFIX, rankings=rankings)
    gc.cache_path(name + SUFFIX).write_bytes(pickle.dumps(derived))
    return derived
