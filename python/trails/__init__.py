"""trails: knowledge-graph plus vector hybrid retrieval. Filter with SPARQL, then rank exactly.

>>> import trails
>>> "retrieve" in trails.__all__
True
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "CompositeRetriever",
    "Context",
    "Document",
    "Embedder",
    "EmbedderIdentity",
    "GraphRetriever",
    "HybridRetriever",
    "IngestionStats",
    "KnowledgeGraph",
    "MockEmbedder",
    "OxigraphGraph",
    "QueryRewriter",
    "RerankedRetriever",
    "Reranker",
    "RetrievalHit",
    "RetrievalResult",
    "Retriever",
    "SqliteVecStore",
    "TrailsError",
    "VectorHit",
    "VectorRetriever",
    "VectorStore",
    "__version__",
    "ingest",
    "ingest_all",
    "retrieve",
    "set_default_context",
]

# Every public name resolves on first use: `import trails` loads nothing heavy.
_LAZY = {
    "Context": "trails.context",
    "set_default_context": "trails.context",
    "Embedder": "trails.vector.embedder",
    "EmbedderIdentity": "trails.vector.embedder",
    "KnowledgeGraph": "trails.kg",
    "OxigraphGraph": "trails.kg",
    "MockEmbedder": "trails.vector.mock",
    "RetrievalHit": "trails.retrieval",
    "RetrievalResult": "trails.retrieval",
    "retrieve": "trails.retrieval",
    "SqliteVecStore": "trails.vector.sqlite_vec",
    "TrailsError": "trails.errors",
    "VectorHit": "trails.vector.store",
    "VectorStore": "trails.vector.store",
    "Retriever": "trails.retrievers",
    "VectorRetriever": "trails.retrievers",
    "HybridRetriever": "trails.retrievers",
    "GraphRetriever": "trails.retrievers",
    "CompositeRetriever": "trails.retrievers",
    "RerankedRetriever": "trails.retrievers",
    "Reranker": "trails.rank",
    "QueryRewriter": "trails.rank.rewrite",
    "Document": "trails.ingest",
    "Chunk": "trails.ingest",
    "IngestionStats": "trails.ingest",
    "ingest": "trails.ingest",
    "ingest_all": "trails.ingest",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'trails' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
