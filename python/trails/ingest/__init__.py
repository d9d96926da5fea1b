"""Ingestion: load documents, sanitise, chunk, mint IRIs, embed in batches, commit versions.

>>> from trails.testing import fresh_context
>>> from trails.ingest import Document, ingest_all
>>> with fresh_context() as ctx:
...     ingest_all([Document(id="a", source="a", text="Rails is a web framework.")], ctx=ctx).ingested
1
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

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
    LinkingWarning,
    SourceSkipped,
)
from trails.ingest.pipeline import aingest, ingest, ingest_all

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from trails.ingest.chunkers import SentenceChunker, TokenChunker
    from trails.ingest.loaders import FileLoader
    from trails.ingest.sanitize import RegexRedactor

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
    "LinkingWarning",
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


class _IngestPackage(types.ModuleType):
    """This package, callable as :func:`ingest`.

    ``trails.ingest`` is both this package and the public function ``trails.ingest``: once the
    package is imported (opening a context does), Python binds the name ``ingest`` of the
    ``trails`` module to the package, so ``from trails import ingest`` gives the package.
    Calling it ingests, as the function does, so the public name works whichever one it is.
    """

    __call__ = staticmethod(ingest)


sys.modules[__name__].__class__ = _IngestPackage
