"""Ingestion: load documents, sanitise, chunk, mint IRIs, embed in batches, commit versions.

>>> from trails.testing import fresh_context
>>> from trails.ingest import Document, ingest_all
>>> with fresh_context() as ctx:
...     ingest_all([Document(id="a", source="a", text="Rails is a web framework.")], ctx=ctx).ingested
1
"""

from __future__ import annotations

from trails._lazy import lazy_attributes
from trails.ingest.document import Chunk, Chunker, Document, Loader, LoadFailure, Sanitizer
from trails.ingest.events import (
    BatchEmbedded,
    DocumentFailed,
    DocumentIngested,
    DocumentMetadataUpdated,
    DocumentPruned,
    DocumentSkipped,
    DocumentStarted,
    DocumentWarning,
    EmbeddingFailed,
    IngestEvent,
    IngestionStats,
    SourceSkipped,
)
from trails.ingest.pipeline import aingest, ingest, ingest_all

__all__ = [
    "BatchEmbedded",
    "Chunk",
    "Chunker",
    "Document",
    "DocumentFailed",
    "DocumentIngested",
    "DocumentMetadataUpdated",
    "DocumentPruned",
    "DocumentSkipped",
    "DocumentStarted",
    "DocumentWarning",
    "EmbeddingFailed",
    "FileLoader",
    "IngestEvent",
    "IngestionStats",
    "LoadFailure",
    "Loader",
    "RegexRedactor",
    "Sanitizer",
    "SentenceChunker",
    "SourceSkipped",
    "TokenChunker",
    "aingest",
    "ingest",
    "ingest_all",
]

__getattr__, __dir__ = lazy_attributes(__name__, {
    "FileLoader": "trails.ingest.loaders:FileLoader",
    "SentenceChunker": "trails.ingest.chunkers:SentenceChunker",
    "TokenChunker": "trails.ingest.chunkers:TokenChunker",
    "RegexRedactor": "trails.ingest.sanitize:RegexRedactor",
}, __all__)
