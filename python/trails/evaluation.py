"""Retrieval quality on BEIR-layout data sets: nDCG@10 and Recall@100 through the real pipeline.

A BEIR data set is a folder with ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``,
``score``). :func:`evaluate` ingests the corpus into a persisted context with
:func:`trails.ingest.ingest_all` (one Document per record: ``id`` = ``_id``, text = title,
a blank line, then the text), retrieves every query of the split with
:func:`trails.retrieve`, maps chunk hits to document ids (a document scores as its best chunk,
in first-occurrence order) and scores the document rankings with ``ir-measures`` (trec_eval's
nDCG and recall, as BEIR and MTEB use).

    >>> from trails.evaluation import load_beir, evaluate  # doctest: +SKIP
    >>> dataset = load_beir("shared/data/beir/scifact")  # doctest: +SKIP
    >>> evaluate(dataset, "test", ctx, systems=["keyword", "vector", "hybrid"])  # doctest: +SKIP

The ``trails eval`` command and ``benchmarks/eval_beir.py`` call this module.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trails.ingest.document import Document
from trails.ingest.minting import doc_iri
from trails.vector.stores.base import KeywordIndex, VectorStore, versioned

if TYPE_CHECKING:
    from trails.context import Context
    from trails.ingest import IngestionStats
    from trails.vector.embedders.base import Embedder, EmbedderIdentity
    from trails.vector.stores.sqlite_vec import SqliteVecStore

__all__ = [
    "CHUNKINGS",
    "MEASURES",
    "PUBLISHED",
    "SYSTEMS",
    "BeirDataset",
    "CachedEmbedder",
    "EvalResult",
    "chunker_for",
    "collect_rankings",
    "corrupt",
    "derived_store",
    "doc_ids_by_iri",
    "documents",
    "evaluate",
    "evaluate_searcher",
    "find_dataset",
    "format_table",
    "fused_run",
    "hybrid_fusion",
    "ingest_dataset",
    "load_beir",
    "make_searcher",
    "max_pool",
    "run_system",
    "score_run",
]

# The measures reported, as ir-measures names them: trec_eval's ndcg_cut.10 and recall.100.
MEASURES = ("nDCG@10", "R@100")
# Documents per query in a run: Recall@100 needs 100 distinct documents.
DOC_DEPTH = 100
# Chunks retrieved per query to fill DOC_DEPTH documents (several chunks share a document).
CHUNK_DEPTH = 300


# ------------------------------------------------------------------------------- data sets

@dataclass
class BeirDataset:
    """A BEIR-layout data set, loaded: corpus and queries in file order, qrels per split."""

    name: str
    path: Path
    corpus: dict[str, tuple[str, str]]  # _id -> (title, text)
    queries: dict[str, str]  # _id -> text
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # split -> ...

    @property
    def splits(self) -> list[str]:
        return sorted(self.qrels)

    def split(self, name: str) -> dict[str, dict[str, int]]:
        """The qrels of one split: query id -> {document id: relevance}."""
        if name not in self.qrels:
            raise ValueError(f"{self.name} has no {name!r} split; it has "
                             f"{', '.join(self.splits) or 'none'} (files qrels/<split>.tsv)")
        return self.qrels[name]


def load_beir(path: str | Path) -> BeirDataset:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and every ``qrels/*.tsv`` of a BEIR folder.

    Raises:
        ValueError: a file is missing or a line is not a JSON object with ``_id``.
    """
    root = Path(path)
    for needed in ("corpus.jsonl", "queries.jsonl", "qrels"):
        if not (root / needed).exists():
            raise ValueError(f"{root} is not a BEIR data set: it has no {needed} (expected "
                             "corpus.jsonl, queries.jsonl and qrels/<split>.tsv)")
    corpus = {str(r["_id"]): (str(r.get("title") or ""), str(r.get("text") or ""))
              for r in _jsonl(root / "corpus.jsonl")}
    queries = {str(r["_id"]): str(r.get("text") or "") for r in _jsonl(root / "queries.jsonl")}
    qrels = {p.stem: _read_qrels(p) for p in sorted((root / "qrels").glob("*.tsv"))}
    return BeirDataset(root.resolve().name, root, corpus, queries, qrels)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(record, dict) or "_id" not in record:
                raise ValueError(f"{path}:{number}: expected a JSON object with an _id")
            yield record


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        for number, row in enumerate(rows, start=1):
            row = [cell.strip() for cell in row]
            if not row or not any(row):
                continue
            if number == 1 and not row[-1].lstrip("-").isdigit():
                continue  # the header: query-id corpus-id score
            if len(row) < 3:
                raise ValueError(f"{path}:{number}: expected query-id, corpus-id, score")
            qrels.setdefault(row[0], {})[row[1]] = int(row[-1])
    return qrels


def documents(dataset: BeirDataset,
              transform: Callable[[str], str] | None = None) -> Iterator[Document]:
    """One Document per corpus record: id ``_id``, text ``title + "\\n\\n" + text``."""
    for doc_id, (title, text) in dataset.corpus.items():
        body = f"{title}\n\n{text}" if title else text
        if transform is not None:
            body = transform(body)
        yield Document(id=doc_id, source=f"{dataset.name}/corpus.jsonl#{doc_id}", text=body,
                       title=title or None)


# ------------------------------------------------------------------------------- embeddings

class CachedEmbedder:
    """An embedder whose vectors are kept in a SQLite file, keyed by model and text.

    It is the wrapped embedder to every check (same ``identity``, ``dim``, ``tokenizer``,
    ``max_tokens``), so contexts built through it are the wrapped embedder's contexts; it only
    makes a second embedding of the same text free. Thread-safe.
    """

    def __init__(self, embedder: Embedder, path: str | Path) -> None:
        self.inner = embedder
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, v BLOB)")
        self._lock = threading.Lock()
        self._prefix: bytes | None = None
        self._identity: EmbedderIdentity | None = None
        self.hits = 0
        self.misses = 0

    def __getattr__(self, name: str) -> Any:  # tokenizer, max_tokens, count_tokens, batch_size
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def identity(self) -> EmbedderIdentity:
        if self._identity is None:  # asked per query by retrieve(); fixed for an embedder
            self._identity = self.inner.identity
        return self._identity

    def _key(self, text: str) -> bytes:
        if self._prefix is None:
            # The whole identity: the revision names the weights and the backend that ran them.
            self._prefix = self.identity.model_dump_json().encode() + b"\0"
        return hashlib.sha256(self._prefix + text.encode("utf-8", "surrogatepass")).digest()

    def embed_array(self, texts: Iterable[str]) -> np.ndarray:
        texts = list(texts)
        keys = [self._key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start:start + 500]
                marks = ",".join("?" * len(part))
                for key, blob in self._db.execute(
                        f"SELECT key, v FROM vectors WHERE key IN ({marks})", part):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        index = {k: i for i, k in enumerate(keys)}
        missing.sort(key=lambda k: len(texts[index[k]]))  # similar lengths: little padding
        step = max(int(getattr(self.inner, "batch_size", 32) or 32), 1)
        for start in range(0, len(missing), step):  # saved per batch: an interrupted run
            part = missing[start:start + step]      # loses at most one batch of work
            fresh = np.asarray(self.inner.embed_array([texts[index[k]] for k in part]),
                               dtype=np.float32)
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                     [(k, v.tobytes()) for k, v in zip(part, fresh)])
                self._db.execute("COMMIT")
            found.update(zip(part, fresh))
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.vstack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"<CachedEmbedder {self.inner!r} at {self.path}>"


# ------------------------------------------------------------------------------- ingestion

def ingest_dataset(dataset: BeirDataset, ctx: Context, *, chunker: Any = None,
                   transform: Callable[[str], str] | None = None,
                   batch_size: int = 64) -> IngestionStats:
    """Ingest the corpus into ``ctx`` (documents already there unchanged are skipped).

    Raises:
        ConfigurationError: ``ctx`` already holds these documents chunked or embedded
            otherwise (another ``chunker``): ingesting would replace every one of them.
    """
    from trails.ingest import ingest_all

    _check_same_settings(dataset, ctx, chunker, transform)
    stats = ingest_all(documents(dataset, transform), ctx=ctx, chunker=chunker,
                       batch_size=batch_size)
    if stats.failed:
        raise RuntimeError(f"{stats.failed} documents of {dataset.name} failed to ingest: "
                           f"{stats.failures[:3]}")
    return stats


def _check_same_settings(dataset: BeirDataset, ctx: Context, chunker: Any,
                         transform: Callable[[str], str] | None) -> None:
    """Refuse to re-ingest a corpus that ``ctx`` holds with other chunking or embedding."""
    from trails.ingest.chunkers import default_chunker
    from trails.ingest.minting import version_of
    from trails.ingest.pipeline import _describe
    from trails.scopes import DEFAULT_SCOPE

    sample = list(itertools.islice(documents(dataset, transform), 3))
    iris = {doc_iri(ctx.base_iri, d.id, DEFAULT_SCOPE): d for d in sample}
    stored = versioned(ctx.vectors, "ingesting a BEIR corpus").current_versions(list(iris))
    if not stored:
        return
    chunker_id = _describe(chunker if chunker is not None else default_chunker(ctx.embedder))
    embedder_id = ctx.embedder.identity.model_dump_json()
    if all(stored[i].version != version_of(iris[i], chunker_id, embedder_id) for i in stored):
        from trails.errors import ConfigurationError

        raise ConfigurationError(
            f"this context holds {dataset.name} chunked or embedded with other settings "
            "(another --chunking or model?); ingesting would replace every document: use the "
            "settings it was built with, or another context directory")


# ------------------------------------------------------------------------------- runs

# A ranked list of chunk hits for one query: (chunk id, score, metadata), best first.
Searcher = Callable[[str], Sequence[Any]]


@dataclass
class EvalResult:
    """One system on one split of one data set: mean of each measure over the split's queries."""

    dataset: str
    split: str
    system: str
    scores: dict[str, float]
    queries: int
    seconds: float
    per_query: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    def __getitem__(self, measure: str) -> float:
        return self.scores[measure]


def max_pool(hits: Iterable[Any], doc_of: Mapping[str, str],
             depth: int = DOC_DEPTH) -> list[str]:
    """Document ids in the order their first (best) chunk appears, at most ``depth``.

    ``hits`` are RetrievalHits or ``(chunk id, score)`` pairs, best first; a hit maps to a
    document through ``metadata["doc_iri"]`` or, failing that, its chunk IRI's document part.
    Hits of unknown documents are skipped.

    >>> doc_of = {"t:doc/a": "a", "t:doc/b": "b"}
    >>> max_pool([("t:doc/b/v/1/c/0", .9), ("t:doc/a/v/1/c/2", .8), ("t:doc/b/v/1/c/1", .7)],
    ...          doc_of)
    ['b', 'a']
    """
    seen: dict[str, None] = {}
    for hit in hits:
        iri, metadata = _hit_parts(hit)
        document = doc_of.get(str(metadata.get("doc_iri") or iri.split("/v/", 1)[0]))
        if document is not None and document not in seen:
            seen[document] = None
            if len(seen) >= depth:
                break
    return list(seen)


def _hit_parts(hit: Any) -> tuple[str, Mapping[str, Any]]:
    if isinstance(hit, tuple):
        return str(hit[0]), (hit[2] if len(hit) > 2 and isinstance(hit[2], Mapping) else {})
    iri = getattr(hit, "iri", None) or getattr(hit, "id", None)
    return str(iri), getattr(hit, "metadata", None) or {}


def score_run(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
              measures: Sequence[str] = MEASURES) -> tuple[dict[str, float],
                                                           dict[str, dict[str, float]]]:
    """Mean of each measure over every query of ``qrels`` (a query with no run scores 0).

    ``run`` maps a query id to document ids, best first; the documents get strictly
    decreasing scores, so trec_eval keeps exactly this order (it sorts by score and breaks
    ties by document id, which would reorder equal scores).

    >>> score_run({"q": ["d3", "d1"]}, {"q": {"d1": 1}})[0]
    {'nDCG@10': 0.6309297535714575, 'R@100': 1.0}
    """
    ir_measures = _ir_measures()
    parsed = [ir_measures.parse_measure(m) for m in measures]
    trec_run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)}
                for q, docs in run.items() if q in qrels and docs}
    trec_qrels = {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    per_query: dict[str, dict[str, float]] = {q: dict.fromkeys(measures, 0.0) for q in qrels}
    names = {str(m): name for m, name in zip(parsed, measures)}
    for metric in ir_measures.iter_calc(parsed, trec_qrels, trec_run):
        if metric.query_id in per_query:
            per_query[metric.query_id][names[str(metric.measure)]] = float(metric.value)
    count = max(len(per_query), 1)
    means = {m: sum(v[m] for v in per_query.values()) / count for m in measures}
    return means, per_query


def _ir_measures() -> Any:
    try:
        import ir_measures
    except ModuleNotFoundError as exc:
        if exc.name not in ("ir_measures", "pytrec_eval"):
            raise
        from trails.errors import MissingExtraError

        raise MissingExtraError("ir-measures", "eval", "scoring retrieval runs") from exc
    return ir_measures


def doc_ids_by_iri(dataset: BeirDataset, ctx: Context, scope: str | None = None) -> dict[str, str]:
    """Document IRI (as ingestion mints it in ``ctx``) -> BEIR document id."""
    from trails.scopes import DEFAULT_SCOPE

    return {doc_iri(ctx.base_iri, doc_id, scope or DEFAULT_SCOPE): doc_id
            for doc_id in dataset.corpus}


def run_system(searcher: Searcher, dataset: BeirDataset, split: str,
               doc_of: Mapping[str, str], *, system: str = "system",
               depth: int = DOC_DEPTH, progress: Callable[[int, int], None] | None = None,
               measures: Sequence[str] = MEASURES) -> EvalResult:
    """Search every query of ``split``, max-pool to documents, and score the run."""
    qrels = dataset.split(split)
    missing = [q for q in qrels if q not in dataset.queries]
    if missing:
        raise ValueError(f"{len(missing)} query ids of {split} are not in queries.jsonl, "
                         f"e.g. {missing[0]!r}")
    started = time.perf_counter()
    run: dict[str, list[str]] = {}
    for done, query_id in enumerate(qrels, start=1):
        run[query_id] = max_pool(searcher(dataset.queries[query_id]), doc_of, depth)
        if progress is not None:
            progress(done, len(qrels))
    means, per_query = score_run(run, qrels, measures)
    return EvalResult(dataset.name, split, system, means, len(qrels),
                      time.perf_counter() - started, per_query)


# ------------------------------------------------------------------------------- systems

# What each system is, for tables and --help.
SYSTEMS = {
    "keyword": "keyword only: BM25 over chunk text (SQLite FTS5)",
    "vector": "vector only: exact cosine over chunk vectors",
    "rrf": "plain reciprocal-rank fusion (k=60) of the vector and keyword rankings",
    "hybrid": "the recommended hybrid: retrieve(mode='hybrid', fusion='auto')",
    "rerank": "the default hybrid, then a cross-encoder over its top hits",
}


def make_searcher(system: str, ctx: Context, *, depth: int = CHUNK_DEPTH,
                  reranker: Any = None, fusion: Any = None) -> Searcher:
    """A function from a query to ranked chunk hits, for one system of :data:`SYSTEMS`.

    ``fusion`` overrides the fusion of ``hybrid`` (a name ``retrieve`` accepts or a callable);
    by default it is :func:`hybrid_fusion`.
    """
    from trails.retrieval.retrieve import retrieve

    if system == "vector":
        return lambda q: retrieve(q, ctx, mode="vector", k=depth)
    if system == "keyword":
        index = _keyword_index(ctx.vectors)
        return lambda q: index.keyword_search(q, depth)
    if system == "rrf":
        return lambda q: retrieve(q, ctx, mode="hybrid", k=depth, fusion="rrf")
    if system in ("hybrid", "rerank"):
        options: dict[str, Any] = {"fusion": hybrid_fusion() if fusion is None else fusion}
        if system == "rerank":
            if reranker is None:
                from trails.errors import ConfigurationError

                raise ConfigurationError("the rerank system needs a cross-encoder model: pass "
                                         "reranker=... (trails eval --reranker DIR)")
            options["steps"] = [reranker]
        return lambda q: retrieve(q, ctx, mode="hybrid", k=depth, **options)
    raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")


def hybrid_fusion() -> str:
    """The fusion the ``hybrid`` system uses: ``"auto"`` (trails' recommended hybrid) where
    ``retrieve`` has it, else plain ``"rrf"``."""
    from trails.retrieval.retrieve import FUSIONS

    return "auto" if "auto" in FUSIONS else "rrf"


def evaluate(dataset: BeirDataset, split: str, ctx: Context, *,
             systems: Sequence[str] = ("keyword", "vector", "rrf", "hybrid"),
             label: str = "", depth: int = CHUNK_DEPTH, reranker: Any = None,
             limit: int | None = None,
             progress: Callable[[str, int, int], None] | None = None) -> list[EvalResult]:
    """Score each system on ``split``; ``ctx`` must hold the ingested corpus.

    Args:
        label: appended to each system's name in the results (e.g. ``"whole doc"``).
        depth: chunks retrieved per query, max-pooled to at most 100 documents.
        limit: score only the split's first ``limit`` queries (a quick look, not a result).
        progress: called as ``progress(system, done, total)`` after each query.
    """
    results = []
    for system in systems:
        searcher = make_searcher(system, ctx, depth=depth, reranker=reranker)
        report = None if progress is None else (
            lambda done, total, s=system: progress(s, done, total))
        results.append(evaluate_searcher(searcher, dataset, split, ctx,
                                         system=f"{system} ({label})" if label else system,
                                         limit=limit, progress=report))
    return results


def evaluate_searcher(searcher: Searcher, dataset: BeirDataset, split: str, ctx: Context, *,
                      system: str, limit: int | None = None,
                      progress: Callable[[int, int], None] | None = None) -> EvalResult:
    """:func:`run_system` for a searcher over ``ctx``'s documents, on the first ``limit``
    queries of ``split`` (all when None)."""
    if limit is not None:
        qrels = dataset.split(split)
        dataset = BeirDataset(dataset.name, dataset.path, dataset.corpus, dataset.queries,
                              {**dataset.qrels, split: dict(list(qrels.items())[:limit])})
    return run_system(searcher, dataset, split, doc_ids_by_iri(dataset, ctx), system=system,
                      progress=progress)


# ------------------------------------------------------------------------------- tables

# Published nDCG@10 on the BEIR test splits, by data set. Sources: MTEB leaderboard
# (all-MiniLM-L6-v2, e5-small-v2, bge-small-en-v1.5), Pyserini's BEIR regressions (BM25 flat),
# QuackIR (BM25 in SQLite FTS5). The RRF line was measured on this project's machine: plain
# RRF (k=60, untuned) of all-MiniLM-L6-v2 and FTS5 BM25 top-100 document lists.
PUBLISHED: dict[str, dict[str, float]] = {
    "all-MiniLM-L6-v2 (MTEB)": {"scifact": 0.645, "nfcorpus": 0.316},
    "BM25 flat (Pyserini)": {"scifact": 0.679, "nfcorpus": 0.322},
    "BM25, SQLite FTS5 (QuackIR)": {"scifact": 0.686, "nfcorpus": 0.322},
    "e5-small-v2 (MTEB)": {"scifact": 0.689, "nfcorpus": 0.325},
    "bge-small-en-v1.5 (MTEB)": {"scifact": 0.713, "nfcorpus": 0.343},
    "RRF k=60 of MiniLM + FTS5 BM25 (reference run)": {"scifact": 0.716, "nfcorpus": 0.353},
}
# The published line each system is compared with.
ANCHORS = {
    "vector": "all-MiniLM-L6-v2 (MTEB)",
    "keyword": "BM25, SQLite FTS5 (QuackIR)",
    "rrf": "RRF k=60 of MiniLM + FTS5 BM25 (reference run)",
    "hybrid": "RRF k=60 of MiniLM + FTS5 BM25 (reference run)",
    "rerank": "RRF k=60 of MiniLM + FTS5 BM25 (reference run)",
}
DATASET_NAMES = {"scifact": "SciFact", "nfcorpus": "NFCorpus"}


def _base_system(name: str) -> str:
    return name.split(" ", 1)[0]


def format_table(results: Sequence[EvalResult], *, published: bool = True,
                 extra_rows: Sequence[tuple[str, dict[str, str]]] = ()) -> str:
    """A Markdown table: one row per system, for each data set nDCG@10, the published
    nDCG@10 of the same kind of system, and Recall@100; then the other published lines.

    ``extra_rows`` are ``(row name, {data set: cell})`` rows appended as they are (for
    systems that could not run, e.g. a reranker without a model).
    """
    datasets = list(dict.fromkeys(r.dataset for r in results))
    for _, cells in extra_rows:
        datasets += [d for d in cells if d not in datasets]
    systems = list(dict.fromkeys(r.system for r in results))
    by_key = {(r.dataset, r.system): r for r in results}
    header = ["system"]
    for d in datasets:
        shown = DATASET_NAMES.get(d, d)
        header += [f"{shown} nDCG@10"] + (["published"] if published else []) + \
            [f"{shown} R@100"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    used: set[str] = set()
    for system in systems:
        row = [system]
        for d in datasets:
            result = by_key.get((d, system))
            row.append("" if result is None else f"{result['nDCG@10']:.3f}")
            if published:
                anchor = ANCHORS.get(_base_system(system))
                value = PUBLISHED.get(anchor or "", {}).get(d)
                if value is not None:
                    used.add(anchor or "")
                row.append("" if value is None else f"{value:.3f}")
            row.append("" if result is None else f"{result['R@100']:.3f}")
        lines.append("| " + " | ".join(row) + " |")
    for name, cells in extra_rows:
        row = [name]
        for d in datasets:
            row += [cells.get(d, "")] + ([""] if published else []) + [""]
        lines.append("| " + " | ".join(row) + " |")
    if published:
        for name, values in PUBLISHED.items():
            if not any(d in values for d in datasets):
                continue
            row = [f"*published: {name}*"]
            for d in datasets:
                row += ["", f"{values[d]:.3f}" if d in values else "", ""]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def find_dataset(name_or_path: str | Path) -> Path:
    """A BEIR folder from a path, or from a name (``scifact``) looked up in
    ``$TRAILS_BEIR_DIR``, then ``shared/data/beir`` in the current folder or its parent."""
    import os

    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    roots = [Path(p) for p in os.environ.get("TRAILS_BEIR_DIR", "").split(os.pathsep) if p]
    roots += [Path("shared/data/beir"), Path("../shared/data/beir")]
    for root in roots:
        if (root / str(name_or_path) / "corpus.jsonl").is_file():
            return root / str(name_or_path)
    raise ValueError(f"no BEIR data set {str(name_or_path)!r}: give a folder holding "
                     "corpus.jsonl, queries.jsonl and qrels/, or a name found in "
                     "$TRAILS_BEIR_DIR or shared/data/beir")


# How a corpus is cut before embedding: "default" is what ingestion does by default
# (sentences packed to 1000 characters, within the model's token limit); "whole" keeps each
# document as one chunk, which the model truncates at its token limit (as MTEB embeds BEIR).
CHUNKINGS = ("default", "whole")


def chunker_for(chunking: str) -> Any:
    """The chunker of a :data:`CHUNKINGS` name (None: ingestion's default chunker)."""
    if chunking == "default":
        return None
    if chunking == "whole":
        from trails.ingest.chunkers import SentenceChunker

        return SentenceChunker(max_chars=10**9, overlap=0)
    raise ValueError(f"unknown chunking {chunking!r}; choose from {', '.join(CHUNKINGS)}")


# ------------------------------------------------------------------------------- fusion studies

def collect_rankings(dataset: BeirDataset, split: str, ctx: Context, *, store: Any = None,
                     depth: int = CHUNK_DEPTH, limit: int | None = None
                     ) -> dict[str, dict[str, Any]]:
    """Each query's vector and keyword chunk rankings, as ``retrieve`` fuses them.

    Returns ``{query id: {"vector": Ranking, "keyword": Ranking}}`` with ``depth`` hits each
    and each ranking's quality set as ``retrieve`` sets it. Fusing these with a fusion function
    is what ``retrieve(mode="hybrid", k=depth, fusion=...)`` does, without searching again per
    fusion setting (see :func:`fused_run`).
    """
    from trails.rank.fusion import Ranking
    from trails.rank.keyword import keyword_quality
    from trails.retrieval.retrieve import retrieve

    vectors = store if store is not None else ctx.vectors
    qrels = dataset.split(split)
    out: dict[str, dict[str, Any]] = {}
    for query_id in list(qrels)[:limit]:
        text = dataset.queries[query_id]
        found = retrieve(text, ctx, mode="vector", k=depth, vector_store=vectors)
        keyword = _keyword_index(vectors).keyword_search(text, depth)
        out[query_id] = {
            "vector": Ranking("vector", [(h.iri, float(h.score)) for h in found],
                              quality=float(found[0].score) if found else None),
            "keyword": Ranking("keyword", [(h.id, float(h.score)) for h in keyword],
                               quality=keyword_quality(text, vectors, keyword)),
        }
    return out


def _keyword_index(store: object) -> KeywordIndex:
    if not isinstance(store, KeywordIndex):
        from trails.errors import ConfigurationError

        raise ConfigurationError(f"{type(store).__name__} has no keyword_search: "
                                 "keyword ranking needs a store with a full-text index")
    return store


def fused_run(rankings: Mapping[str, Mapping[str, Any]],
              fusion: Callable[[Sequence[Any]], list[tuple[str, float]]] | None,
              doc_of: Mapping[str, str], *, only: str | None = None,
              depth: int = DOC_DEPTH) -> dict[str, list[str]]:
    """Document runs from collected rankings: one ranking (``only``) or their fusion."""
    run = {}
    for query_id, lists in rankings.items():
        if only is not None:
            hits = lists[only].hits
        else:
            assert fusion is not None
            hits = fusion(list(lists.values()))
        run[query_id] = max_pool(hits, doc_of, depth)
    return run


def corrupt(text: str, rate: float, seed: int = 0) -> str:
    """``text`` with each letter replaced, with probability ``rate``, by a random letter.

    Deterministic for a given text, rate and seed (a typo/OCR-noise model).

    >>> corrupt("keyword ranking", 0.0)
    'keyword ranking'
    >>> corrupt("keyword ranking", 1.0) != "keyword ranking"
    True
    """
    if rate <= 0:
        return text
    digest = hashlib.sha256(f"{seed}\0{text}".encode("utf-8", "surrogatepass")).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    flips = rng.random(len(text)) < rate
    letters = rng.integers(0, 26, len(text))
    return "".join(chr(97 + int(letters[i])) if flips[i] and c.isalpha() else c
                   for i, c in enumerate(text))


def derived_store(store: VectorStore, *, text: Callable[[str], str] | None = None,
                  vector_noise: float = 0.0, seed: int = 0) -> SqliteVecStore:
    """An in-memory copy of ``store``'s live rows with their keyword text rewritten by
    ``text`` and/or Gaussian noise of norm ~``vector_noise`` added to their vectors.

    For "one poor ranking" experiments: the other ranking stays exactly as it was.
    """
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    copy = SqliteVecStore(":memory:", dim=store.dim, embedder=store.embedder_identity)
    rng = np.random.default_rng(seed)
    ids = store.all_ids()
    for start in range(0, len(ids), 2000):
        rows = store.get(ids[start:start + 2000])
        matrix = np.asarray([r.vector for r in rows], dtype=np.float32)
        if vector_noise:
            noise = rng.standard_normal(matrix.shape).astype(np.float32)
            matrix = matrix + vector_noise * noise / np.sqrt(matrix.shape[1])
        metas = []
        for r in rows:
            meta = dict(r.metadata)
            if text is not None:
                meta["text"] = text(str(meta.get("text") or meta.get("snippet") or ""))
            metas.append(meta)
        copy.add_many([r.id for r in rows], matrix, metas)
    return copy
