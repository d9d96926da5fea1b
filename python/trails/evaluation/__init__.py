"""Retrieval quality on BEIR-layout data sets: nDCG@10 and Recall@100 through the real pipeline.

:func:`evaluate` takes a context holding the ingested corpus (:func:`ingest_dataset`: one
Document per record, ``id`` = ``_id``, text = title, a blank line, then the text), retrieves
every query of a split with :func:`trails.retrieve`, maps chunk hits to document ids (a
document scores as its best chunk, in first-occurrence order) and scores the document rankings
with ``ir-measures`` (trec_eval's nDCG and recall, as BEIR and MTEB use).

- :mod:`~trails.evaluation.beir`: find and load a data set, its records as Documents;
- :mod:`~trails.evaluation.metrics`: max-pooling and scoring;
- :mod:`~trails.evaluation.run`: ingestion, the systems compared, runs over a split;
- :mod:`~trails.evaluation.report`: Markdown tables beside the published figures.

The ``trails eval`` command calls this package; the benchmark scripts build their studies on
it (their own helpers live in ``benchmarks/``).
"""

from __future__ import annotations

from trails.evaluation.beir import BeirDataset, documents, find_dataset, load_beir
from trails.evaluation.metrics import DOC_DEPTH, MEASURES, max_pool, score_run
from trails.evaluation.report import DATASET_NAMES, PUBLISHED, format_table
from trails.evaluation.run import (
    CHUNK_DEPTH,
    CHUNKINGS,
    SYSTEMS,
    EvalResult,
    chunker_for,
    doc_ids_by_iri,
    evaluate,
    evaluate_searcher,
    hybrid_fusion,
    ingest_dataset,
    make_searcher,
    run_system,
)

__all__ = [
    "CHUNKINGS",
    "CHUNK_DEPTH",
    "DATASET_NAMES",
    "DOC_DEPTH",
    "MEASURES",
    "PUBLISHED",
    "SYSTEMS",
    "BeirDataset",
    "EvalResult",
    "chunker_for",
    "doc_ids_by_iri",
    "documents",
    "evaluate",
    "evaluate_searcher",
    "find_dataset",
    "format_table",
    "hybrid_fusion",
    "ingest_dataset",
    "load_beir",
    "make_searcher",
    "max_pool",
    "run_system",
    "score_run",
]
