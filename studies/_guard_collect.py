"""The guard study's collection step: every split's two chunk rankings, clean and damaged,
searched once and kept in ``benchmarks/.cache/guard_study/<data set>.pickle``.

What is kept per query (:class:`QueryRankings`): the vector and keyword chunk rankings
(``lab.collect_rankings``: 300 deep, each ranking's quality as ``retrieve`` sets it), the
query's BM25 weight in the store (``keyword_idf_sum``, which the keyword quality divides by)
and each query term's own IDF (term statistics for the guard's evidence). Damage is
eval_beir.py's and tune_auto.py's: letters of the keyword index's text replaced at random,
or Gaussian noise added to the stored vectors (tune_auto.variants()).
"""

from __future__ import annotations

import dataclasses
import functools
import pickle
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _lab as lab
import eval_beir as eb
import numpy as np

from trails import evaluation as ev
from trails.evaluation.run import keyword_index
from trails.rank.fusion import Ranking
from trails.rank.keyword import keyword_evidence
from trails.retrieval.degraded import embed_query
from trails.text import keyword_terms

STUDY_CACHE = eb.CACHE / "guard_study"
# The backend a study name without "@<backend>" runs MiniLM on: the engine's own on a CPU
# (``backend="auto"``), so that the study ranks as a user's default context ranks.
DEFAULT_BACKEND = "onnx-int8"
# Splits that only have test queries are test-only sets (left out in cross-validation).
SPLIT_ORDER = ("train", "dev", "test")


@dataclass
class QueryRankings:
    """One query's evidence, before any fusion: nothing here reads a qrel."""

    vector: Ranking
    keyword: Ranking
    idf_sum: float  # the query's BM25 weight in the (possibly damaged) store
    term_idfs: list[float]  # each distinct query term's IDF, in query order
    words: int  # words in the query text


def arguana_test_and_validation() -> Path:
    """ArguAna cut to the arguments of its test and validation splits (5,384 of 13,532
    documents; every dev and test qrel points inside it), with the dev and test qrels: the
    whole corpus takes hours to embed on this machine. It still has more distractors per
    query than a single split would, and the queries are still documents (self-hit rule)."""
    folder = STUDY_CACHE / "data" / "arguana-tv"
    if (folder / "qrels" / "test.tsv").is_file():
        return folder
    source = eb.dataset_dir("arguana")
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    kept = [line for line in (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
            if line.startswith(('{"_id": "test-', '{"_id": "validation-'))]
    (folder / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    shutil.copyfile(source / "queries.jsonl", folder / "queries.jsonl")
    for split in ("dev", "test"):
        shutil.copyfile(source / "qrels" / f"{split}.tsv", folder / "qrels" / f"{split}.tsv")
    return folder


def split_name(name: str) -> tuple[str, str]:
    """(data set, MiniLM backend) of a study name: ``scifact`` is SciFact on the default
    backend, ``scifact@torch`` on torch (as eval_beir.py and the published figures). A
    ``+<variant>`` after it names rankings derived from that collection (``_guard_sentences``)."""
    data_set, _, backend = name.partition("+")[0].partition("@")
    return data_set, backend or DEFAULT_BACKEND


def data_folder(name: str) -> Path:
    data_set = split_name(name)[0]
    return arguana_test_and_validation() if data_set == "arguana-tv" else eb.dataset_dir(data_set)


def cache_path(name: str) -> Path:
    return STUDY_CACHE / f"{name}.pickle"


def load(name: str) -> dict[str, Any]:
    """The cached collection of one data set (see :func:`collect`)."""
    data: dict[str, Any] = pickle.loads(cache_path(name).read_bytes())
    return data


def collect(name: str, *, splits: list[str] | None = None, limits: dict[str, int] | None = None,
            damage: bool = True) -> dict[str, Any]:
    """Search every query of ``splits`` (default: every split the data set has) in every
    variant and cache the result under ``name`` (a data set, ``@<backend>`` for another
    backend than :data:`DEFAULT_BACKEND`). ``limits``: the first N queries of a split only.

    The vector ranking is exact cosine over the store's (unit) chunk vectors, computed here
    with numpy as the store computes it (``guard_study.py check-search`` compares it with
    ``retrieve``); a damaged variant searches again only the ranking it damages and reuses
    the clean other one, which the damage leaves exactly as it was.

    Returns ``{"doc_of": {document IRI: doc id}, "qrels": {split: qrels},
    "rankings": {(split, variant): {query id: QueryRankings}}}``.
    """
    backend = split_name(name)[1]
    data = ev.load_beir(data_folder(name))
    splits = [s for s in SPLIT_ORDER if s in data.splits] if splits is None else splits
    limits = limits or {}
    out: dict[str, Any] = {"name": name, "rankings": {}, "qrels": {}, "backend": backend}
    model = eb.embedder(backend)
    with eb.open_context(data, "default", model, backend) as ctx:
        out["doc_of"] = ev.doc_ids_by_iri(data, ctx)
        chosen = {s: dict(list(data.split(s).items())[:limits.get(s)]) for s in splits}
        out["qrels"] = chosen
        ids, matrix = _vectors(ctx.vectors)
        # One batched pass fills the embedding cache; embed_query (retrieve's own call)
        # then reads each query's vector back from it.
        model.embed_array([data.queries[q] for s in splits for q in chosen[s]])
        queries = {s: {q: np.asarray(embed_query(model, data.queries[q]), dtype=np.float32)
                       for q in chosen[s]} for s in splits}
        eb.log(f"{name}: {len(ids)} chunks, queries embedded ({model.hits} hits / "
               f"{model.misses} misses)")
        clean: dict[str, dict[str, QueryRankings]] = {}
        for split in splits:
            clean[split] = {q: _keyword_side(data.queries[q], ctx.vectors,
                                             _vector_ranking(ids, matrix, v))
                            for q, v in queries[split].items()}
            out["rankings"][(split, "clean")] = clean[split]
        for variant, rate, sigma in _damage() if damage else []:
            started = time.perf_counter()
            if rate:
                store = lab.derived_store(ctx.vectors,
                                          text=functools.partial(lab.corrupt, rate=rate))
                for split in splits:
                    out["rankings"][(split, variant)] = {
                        q: _keyword_side(data.queries[q], store, r.vector)
                        for q, r in clean[split].items()}
                store.close()
            else:
                noisy = _noisy(matrix, sigma)
                for split in splits:
                    out["rankings"][(split, variant)] = {
                        q: dataclasses.replace(r, vector=_vector_ranking(ids, noisy,
                                                                         queries[split][q]))
                        for q, r in clean[split].items()}
            eb.log(f"{name} {variant}: {time.perf_counter() - started:.0f}s")
    STUDY_CACHE.mkdir(parents=True, exist_ok=True)
    cache_path(name).write_bytes(pickle.dumps(out))
    return out


def _damage() -> list[tuple[str, float, float]]:
    """tune_auto.variants()'s damages, as (name, keyword letter rate, vector noise norm)."""
    return ([(f"keyword {rate:.0%}", rate, 0.0) for rate in eb.KEYWORD_NOISE]
            + [(f"vector {sigma:g}", 0.0, sigma) for sigma in eb.VECTOR_NOISE])


def _rows(store: Any) -> list[Any]:
    """The store's live rows (sorted by id, as ``all_ids``), read 2,000 at a time."""
    ids = store.all_ids()
    return [r for start in range(0, len(ids), 2000) for r in store.get(ids[start:start + 2000])]


def _matrix(rows: list[Any]) -> tuple[list[str], np.ndarray]:
    """The rows' ids and unit vectors, in their order."""
    return [r.id for r in rows], np.asarray([r.vector for r in rows], dtype=np.float32)


def _vectors(store: Any) -> tuple[list[str], np.ndarray]:
    """The store's live chunk ids (sorted, as ``all_ids``) and unit vectors."""
    return _matrix(_rows(store))


def _noisy(matrix: np.ndarray, sigma: float, seed: int = 0) -> np.ndarray:
    """``lab.derived_store(vector_noise=sigma)``'s vectors: the same noise, drawn in the same
    batches of 2000 rows from the same seed, then unit-normalised as a store keeps them."""
    rng = np.random.default_rng(seed)
    parts = []
    for start in range(0, len(matrix), 2000):
        part = matrix[start:start + 2000]
        noise = rng.standard_normal(part.shape).astype(np.float32)
        parts.append(part + sigma * noise / np.sqrt(part.shape[1]))
    noisy = np.vstack(parts)
    return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


def _vector_ranking(ids: list[str], matrix: np.ndarray, query: np.ndarray,
                    depth: int = ev.CHUNK_DEPTH) -> Ranking:
    scores = matrix @ (query / np.linalg.norm(query))
    top = np.argpartition(-scores, min(depth, len(scores) - 1))[:depth]
    top = top[np.argsort(-scores[top], kind="stable")]
    hits = [(ids[i], float(scores[i])) for i in top]
    return Ranking("vector", hits, quality=hits[0][1] if hits else None)


def _keyword_side(text: str, store: Any, vector: Ranking) -> QueryRankings:
    found = keyword_index(store).keyword_search(text, ev.CHUNK_DEPTH)
    quality, about = keyword_evidence(text, store, found)
    keyword = Ranking("keyword", [(h.id, float(h.score)) for h in found], quality=quality,
                      query=about)
    return _with_terms(text, {"vector": vector, "keyword": keyword}, store)


def _with_terms(text: str, lists: dict[str, Ranking], store: Any) -> QueryRankings:
    terms = keyword_terms(text)
    return QueryRankings(
        vector=lists["vector"], keyword=lists["keyword"],
        idf_sum=float(store.keyword_idf_sum(text)),
        term_idfs=[float(store.keyword_idf_sum(t, stopwords=())) for t in terms],
        words=len(text.split()))
