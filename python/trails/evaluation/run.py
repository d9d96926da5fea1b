"""Running systems over a BEIR data set: ingest the corpus, search every query, score the run.

:func:`ingest_dataset` ingests the corpus into a context with :func:`trails.ingest.ingest_all`
(one Document per record); :func:`evaluate` searches every query of a split with each system of
:data:`SYSTEMS` (through :func:`trails.retrieve`), max-pools chunk hits to documents and scores
the document rankings (:mod:`trails.evaluation.metrics`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from trails.context import Context
from trails.errors import ConfigurationError, InvalidArgumentError
from trails.evaluation.beir import BeirDataset, documents
from trails.evaluation.metrics import DOC_DEPTH, MEASURES, ChunkHit, max_pool, score_run
from trails.ingest import Chunker, IngestionStats, ingest_all
from trails.ingest.chunkers import SentenceChunker, default_chunker
from trails.ingest.chunking import chunker_id as describe_chunker
from trails.ingest.minting import doc_iri, version_of
from trails.rank import Step
from trails.rank.fusion import FusionFn
from trails.retrieval.request import Fusion
from trails.retrieval.retrieve import FUSIONS, retrieve
from trails.scopes import DEFAULT_SCOPE
from trails.vector.stores.base import KeywordIndex, versioned

__all__ = [
    "CHUNKINGS",
    "CHUNK_DEPTH",
    "SYSTEMS",
    "EvalResult",
    "Searcher",
    "chunker_for",
    "doc_ids_by_iri",
    "evaluate",
    "evaluate_searcher",
    "hybrid_fusion",
    "ingest_dataset",
    "keyword_index",
    "make_searcher",
    "run_system",
]

# Chunks retrieved per query to fill DOC_DEPTH documents (several chunks share a document).
CHUNK_DEPTH = 300

# How a corpus is cut before embedding: "default" is what ingestion does by default
# (sentences packed to 1000 characters, within the model's token limit); "whole" keeps each
# document as one chunk, which the model truncates at its token limit (as MTEB embeds BEIR).
CHUNKINGS = ("default", "whole")

# What each system is, for tables and --help.
SYSTEMS = {
    "keyword": "keyword only: BM25 over chunk text (SQLite FTS5)",
    "vector": "vector only: exact cosine over chunk vectors",
    "rrf": "plain reciprocal-rank fusion (k=60) of the vector and keyword rankings",
    "hybrid": "the recommended hybrid: retrieve(mode='hybrid', fusion='auto')",
    "rerank": "the default hybrid, then a cross-encoder over its top hits",
}

# A ranked list of chunk hits for one query, best first.
Searcher = Callable[[str], Sequence[ChunkHit]]


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


# ------------------------------------------------------------------------------- ingestion

def chunker_for(chunking: str) -> Chunker | None:
    """The chunker of a :data:`CHUNKINGS` name (None: ingestion's default chunker)."""
    if chunking == "default":
        return None
    if chunking == "whole":
        return SentenceChunker(max_chars=10**9, overlap=0)
    raise InvalidArgumentError(f"unknown chunking {chunking!r}; choose from {', '.join(CHUNKINGS)}")


def ingest_dataset(dataset: BeirDataset, ctx: Context, *, chunker: Chunker | None = None,
                   transform: Callable[[str], str] | None = None,
                   batch_size: int = 64) -> IngestionStats:
    """Ingest the corpus into ``ctx`` (documents already there unchanged are skipped).

    Raises:
        ConfigurationError: ``ctx`` already holds these documents chunked or embedded
            otherwise (another ``chunker``): ingesting would replace every one of them.
        InvalidArgumentError: a document failed to ingest (the message names it and why).
    """
    _check_same_settings(dataset, ctx, chunker, transform)
    stats = ingest_all(documents(dataset, transform), ctx=ctx, chunker=chunker,
                       batch_size=batch_size)
    if stats.failed:
        # The corpus's content, not a bug of trails: say which records and why.
        shown = "; ".join(f"{source}: {why}" for source, why in stats.failures[:3])
        raise InvalidArgumentError(
            f"{stats.failed} document(s) of {dataset.path / 'corpus.jsonl'} failed to ingest "
            f"({shown}{'; ...' if stats.failed > 3 else ''}); mend those records and run again "
            "(documents already ingested are skipped)")
    return stats


def _check_same_settings(dataset: BeirDataset, ctx: Context, chunker: Chunker | None,
                         transform: Callable[[str], str] | None) -> None:
    """Refuse to re-ingest a corpus that ``ctx`` holds with other chunking or embedding."""
    sample = list(itertools.islice(documents(dataset, transform), 3))
    iris = {doc_iri(ctx.base_iri, d.id, DEFAULT_SCOPE): d for d in sample}
    stored = versioned(ctx.vectors, "ingesting a BEIR corpus").current_versions(list(iris))
    if not stored:
        return
    chunker_id = describe_chunker(chunker if chunker is not None else default_chunker(ctx.embedder))
    embedder_id = ctx.embedder.identity.model_dump_json()
    if all(stored[i].version != version_of(iris[i], chunker_id, embedder_id) for i in stored):
        raise ConfigurationError(
            f"this context holds {dataset.name} chunked or embedded with other settings "
            "(another --chunking or model?); ingesting would replace every document: use the "
            "settings it was built with, or another context directory")


def doc_ids_by_iri(dataset: BeirDataset, ctx: Context, scope: str | None = None) -> dict[str, str]:
    """Document IRI (as ingestion mints it in ``ctx``) -> BEIR document id."""
    return {doc_iri(ctx.base_iri, doc_id, scope or DEFAULT_SCOPE): doc_id
            for doc_id in dataset.corpus}


# ------------------------------------------------------------------------------- systems

def make_searcher(system: str, ctx: Context, *, depth: int = CHUNK_DEPTH,
                  reranker: Step | None = None,
                  fusion: Fusion | FusionFn | None = None) -> Searcher:
    """A function from a query to ranked chunk hits, for one system of :data:`SYSTEMS`.

    ``fusion`` overrides the fusion of ``hybrid`` (a name ``retrieve`` accepts or a callable);
    by default it is :func:`hybrid_fusion`.

    Raises:
        ConfigurationError: ``keyword`` on a store without a keyword index, or ``rerank``
            without a ``reranker``.
        InvalidArgumentError: an unknown system (also a ValueError).
    """
    if system == "vector":
        return lambda q: retrieve(q, ctx, mode="vector", k=depth)
    if system == "keyword":
        index = keyword_index(ctx.vectors)
        return lambda q: index.keyword_search(q, depth)
    if system == "rrf":
        return lambda q: retrieve(q, ctx, mode="hybrid", k=depth, fusion="rrf")
    if system in ("hybrid", "rerank"):
        fuse = hybrid_fusion() if fusion is None else fusion
        steps = _rerank_steps(reranker) if system == "rerank" else []
        return lambda q: retrieve(q, ctx, mode="hybrid", k=depth, fusion=fuse, steps=steps)
    raise InvalidArgumentError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")


def keyword_index(store: object) -> KeywordIndex:
    """``store`` as a :class:`KeywordIndex`, or a ConfigurationError saying what needs it."""
    if not isinstance(store, KeywordIndex):
        raise ConfigurationError(f"{type(store).__name__} has no keyword_search: "
                                 "keyword ranking needs a store with a full-text index")
    return store


def _rerank_steps(reranker: Step | None) -> list[Step]:
    if reranker is None:
        raise ConfigurationError("the rerank system needs a cross-encoder model: pass "
                                 "reranker=... (trails eval --reranker DIR)")
    return [reranker]


def hybrid_fusion() -> Fusion:
    """The fusion the ``hybrid`` system uses: ``"auto"`` (trails' recommended hybrid) where
    ``retrieve`` has it, else plain ``"rrf"``."""
    return "auto" if "auto" in FUSIONS else "rrf"


# ------------------------------------------------------------------------------- runs

def run_system(searcher: Searcher, dataset: BeirDataset, split: str,
               doc_of: Mapping[str, str], *, system: str = "system",
               depth: int = DOC_DEPTH, progress: Callable[[int, int], None] | None = None,
               measures: Sequence[str] = MEASURES) -> EvalResult:
    """Search every query of ``split``, max-pool to documents, and score the run. When the
    queries are documents of the corpus (:attr:`BeirDataset.queries_are_documents`), each
    query's own document is left out of its run, as BEIR and MTEB score ArguAna; a fused
    system still fuses with it (the searcher sees only the query's text).

    Raises:
        InvalidArgumentError: a query id of the split is not in ``queries.jsonl``.
    """
    qrels = dataset.split(split)
    missing = [q for q in qrels if q not in dataset.queries]
    if missing:
        raise InvalidArgumentError(
            f"{len(missing)} query ids of {dataset.path / 'qrels' / split}.tsv are not in "
            f"{dataset.path / 'queries.jsonl'}, e.g. {missing[0]!r}")
    started = time.perf_counter()
    run: dict[str, list[str]] = {}
    ignore_self = dataset.queries_are_documents
    for done, query_id in enumerate(qrels, start=1):
        # One more document pooled, so that dropping the query's own still leaves ``depth``.
        pooled = max_pool(searcher(dataset.queries[query_id]), doc_of, depth + ignore_self)
        run[query_id] = ([d for d in pooled if d != query_id][:depth] if ignore_self
                         else pooled)
        if progress is not None:
            progress(done, len(qrels))
    means, per_query = score_run(run, qrels, measures)
    return EvalResult(dataset.name, split, system, means, len(qrels),
                      time.perf_counter() - started, per_query)


def evaluate(dataset: BeirDataset, split: str, ctx: Context, *,
             systems: Sequence[str] = ("keyword", "vector", "rrf", "hybrid"),
             label: str = "", depth: int = CHUNK_DEPTH, reranker: Step | None = None,
             limit: int | None = None,
             progress: Callable[[str, int, int], None] | None = None) -> list[EvalResult]:
    """Score each system on ``split``; ``ctx`` must hold the ingested corpus.

    Args:
        label: appended to each system's name in the results (e.g. ``"whole doc"``).
        depth: chunks retrieved per query, max-pooled to at most 100 documents.
        limit: score only the split's first ``limit`` queries (a quick look, not a result).
        progress: called as ``progress(system, done, total)`` after each query.

    >>> from trails.evaluation import load_beir, evaluate  # doctest: +SKIP
    >>> dataset = load_beir("data/beir/scifact")  # doctest: +SKIP
    >>> evaluate(dataset, "test", ctx, systems=["keyword", "vector", "hybrid"])  # doctest: +SKIP
    """
    results = []
    for system in systems:
        searcher = make_searcher(system, ctx, depth=depth, reranker=reranker)
        results.append(evaluate_searcher(searcher, dataset, split, ctx,
                                         system=f"{system} ({label})" if label else system,
                                         limit=limit, progress=_per_system(progress, system)))
    return results


def _per_system(progress: Callable[[str, int, int], None] | None,
                system: str) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    return lambda done, total: progress(system, done, total)


def evaluate_searcher(searcher: Searcher, dataset: BeirDataset, split: str, ctx: Context, *,
                      system: str, limit: int | None = None,
                      progress: Callable[[int, int], None] | None = None) -> EvalResult:
    """:func:`run_system` for a searcher over ``ctx``'s documents, on the first ``limit``
    queries of ``split`` (all when None)."""
    dataset = dataset.first_queries(split, limit)
    return run_system(searcher, dataset, split, doc_ids_by_iri(dataset, ctx), system=system,
                      progress=progress)
