"""Ingestion: load documents, sanitise, chunk, mint IRIs, embed in batches, commit versions.

>>> from trails.testing import fresh_context
>>> from trails.ingest import Document, ingest_all
>>> with fresh_context() as ctx:
...     ingest_all([Document(id="a", source="a", text="Rails is a web framework.")], ctx=ctx).ingested
1
"""

from __future__ import annotations

import importlib
from typing import Any

from trails.ingest.document import Chunk, Chunker, Document, Loader, LoadFailure, Sanitizer
from trails.ingest.events import (
    BatchEmbedded,
    DocumentFailed,
    DocumentIngested,
    DocumentSkipped,
    DocumentStarted,
    EmbeddingFailed,
    IngestEvent,
    IngestionStats,
)
from trails.ingest.pipeline import aingest, ingest, ingest_all

__all__ = [
    "BatchEmbedded",
    "Chunk",
    "Chunker",
    "Document",
    "DocumentFailed",
    "DocumentIngested",
    "DocumentSkipped",
    "DocumentStarted",
    "EmbeddingFailed",
    "FileLoader",
    "IngestEvent",
    "IngestionStats",
    "LoadFailure",
    "Loader",
    "RegexRedactor",
    "Sanitizer",
    "SentenceChunker",
    "TokenChunker",
    "aingest",
    "ingest",
    "ingest_all",
]

_LAZY = {
    "FileLoader": "trails.ingest.loaders",
    "SentenceChunker": "trails.ingest.chunkers",
    "TokenChunker": "trails.ingest.chunkers",
    "RegexRedactor": "trails.ingest.sanitize",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'trails.ingest' has no attribute {name!r}")
