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
    "Embedder": "trails.vector.embedders.base",
    "EmbedderIdentity": "trails.vector.embedders.base",
    "KnowledgeGraph": "trails.kg",
    "OxigraphGraph": "trails.kg",
    "MockEmbedder": "trails.vector.embedders.mock",
    "RetrievalHit": "trails.records",
    "RetrievalResult": "trails.records",
    "retrieve": "trails.retrieval.retrieve",
    "SqliteVecStore": "trails.vector.stores.sqlite_vec",
    "TrailsError": "trails.errors",
    "VectorHit": "trails.vector.stores.base",
    "VectorStore": "trails.vector.stores.base",
    "Retriever": "trails.retrieval.retrievers",
    "VectorRetriever": "trails.retrieval.retrievers",
    "HybridRetriever": "trails.retrieval.retrievers",
    "GraphRetriever": "trails.retrieval.retrievers",
    "CompositeRetriever": "trails.retrieval.retrievers",
    "RerankedRetriever": "trails.retrieval.retrievers",
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
