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
    >>> evaluate(dataset, "test", ctx, modes=["vector", "keyword", "hybrid"])  # doctest: +SKIP

The ``trails eval`` command and ``benchmarks/eval_beir.py`` call this module.
"""

from __future__ import annotations

import csv
import hashlib
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

if TYPE_CHECKING:
    from trails.context import Context
    from trails.ingest import IngestionStats
    from trails.vector.embedder import Embedder, EmbedderIdentity

__all__ = [
    "BeirDataset",
    "CachedEmbedder",
    "EvalResult",
    "MEASURES",
    "documents",
    "evaluate",
    "format_table",
    "ingest_dataset",
    "load_beir",
    "max_pool",
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
        return self.inner.identity

    def _key(self, text: str) -> bytes:
        if self._prefix is None:
            # The whole identity: the revision names the weights and the backend that ran them.
            self._prefix = self.inner.identity.model_dump_json().encode() + b"\0"
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
        if missing:
            index = {k: i for i, k in enumerate(keys)}
            fresh = np.asarray(self.inner.embed_array([texts[index[k]] for k in missing]),
                               dtype=np.float32)
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                     [(k, v.tobytes()) for k, v in zip(missing, fresh)])
                self._db.execute("COMMIT")
            found.update(zip(missing, fresh))
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
    """Ingest the corpus into ``ctx`` (documents already there unchanged are skipped)."""
    from trails.ingest import ingest_all

    stats = ingest_all(documents(dataset, transform), ctx=ctx, chunker=chunker,
                       batch_size=batch_size)
    if stats.failed:
        raise RuntimeError(f"{stats.failed} documents of {dataset.name} failed to ingest: "
                           f"{stats.failures[:3]}")
    return stats


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
    import ir_measures

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
