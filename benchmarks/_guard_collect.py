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

import pickle
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _lab as lab
import eval_beir as eb
import tune_auto

from trails import evaluation as ev
from trails.rank.fusion import Ranking
from trails.text import keyword_terms

STUDY_CACHE = eb.CACHE / "guard_study"
# eval_beir.py's data folder, or the shared one when the checkout is a worktree elsewhere.
DATA = next((p for p in (eb.DATA, Path("/work/shared/data/beir")) if p.is_dir()), eb.DATA)
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
    source = DATA / "arguana"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    kept = [line for line in (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
            if line.startswith(('{"_id": "test-', '{"_id": "validation-'))]
    (folder / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    shutil.copyfile(source / "queries.jsonl", folder / "queries.jsonl")
    for split in ("dev", "test"):
        shutil.copyfile(source / "qrels" / f"{split}.tsv", folder / "qrels" / f"{split}.tsv")
    return folder


def data_folder(name: str) -> Path:
    return arguana_test_and_validation() if name == "arguana-tv" else DATA / name


def cache_path(name: str) -> Path:
    return STUDY_CACHE / f"{name}.pickle"


def load(name: str) -> dict[str, Any]:
    """The cached collection of one data set (see :func:`collect`)."""
    data: dict[str, Any] = pickle.loads(cache_path(name).read_bytes())
    return data


def embedder(backend: str) -> lab.CachedEmbedder:
    """eval_beir.py's cached MiniLM, on ``backend`` (its cache keys name the backend)."""
    if backend == "torch":
        return eb.embedder()
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    return lab.CachedEmbedder(SentenceTransformerEmbedder(backend=backend),
                              eb.CACHE / "embeddings.sqlite")


def collect(name: str, *, splits: list[str] | None = None, limits: dict[str, int] | None = None,
            damage: bool = True, backend: str = "torch") -> dict[str, Any]:
    """Search every query of ``splits`` (default: every split the data set has) in every
    variant and cache the result. ``limits``: the first N queries of a split only.

    Returns ``{"doc_of": {chunk-document IRI: doc id}, "qrels": {split: qrels},
    "rankings": {(split, variant): {query id: QueryRankings}}}``.
    """
    data = ev.load_beir(data_folder(name))
    splits = [s for s in SPLIT_ORDER if s in data.splits] if splits is None else splits
    limits = limits or {}
    out: dict[str, Any] = {"name": name, "rankings": {}, "qrels": {}, "backend": backend}
    model = embedder(backend)
    with eb.open_context(data, "default", model) as ctx:
        out["doc_of"] = ev.doc_ids_by_iri(data, ctx)
        chosen = {s: dict(list(data.split(s).items())[:limits.get(s)]) for s in splits}
        out["qrels"] = chosen
        wanted = [v for v in tune_auto.variants() if damage or v[0] == "clean"]
        for variant, make in wanted:
            store = make(ctx.vectors) if make else ctx.vectors
            for split in splits:
                started = time.perf_counter()
                view = ev.BeirDataset(data.name, data.path, data.corpus, data.queries,
                                      {split: chosen[split]})
                found = lab.collect_rankings(view, split, ctx, store=store)
                out["rankings"][(split, variant)] = {
                    q: _with_terms(data.queries[q], lists, store) for q, lists in found.items()}
                eb.log(f"{name} {split} {variant}: {len(found)} queries "
                       f"({time.perf_counter() - started:.0f}s; embedding cache "
                       f"{model.hits} hits / {model.misses} misses)")
            if make:
                store.close()
    STUDY_CACHE.mkdir(parents=True, exist_ok=True)
    cache_path(name).write_bytes(pickle.dumps(out))
    return out


def _with_terms(text: str, lists: dict[str, Ranking], store: Any) -> QueryRankings:
    terms = keyword_terms(text)
    return QueryRankings(
        vector=lists["vector"], keyword=lists["keyword"],
        idf_sum=float(store.keyword_idf_sum(text)),
        term_idfs=[float(store.keyword_idf_sum(t, stopwords=())) for t in terms],
        words=len(text.split()))
