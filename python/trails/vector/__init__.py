"""Embedders, vector stores and ``retrieve``. Backends with optional packages load lazily."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trails.retrieval import RetrievalHit, RetrievalResult, retrieve
from trails.vector.embedder import BaseEmbedder, Embedder, EmbedderIdentity
from trails.vector.mock import MockEmbedder
from trails.vector.store import BaseVectorStore, SearchPlan, StoredVector, VectorHit, VectorStore

if TYPE_CHECKING:
    from trails.vector.openai import OpenAIEmbedder
    from trails.vector.qdrant import QdrantStore
    from trails.vector.sentence_transformer import SentenceTransformerEmbedder
    from trails.vector.sqlite_vec import SqliteVecStore

__all__ = [
    "BaseEmbedder",
    "BaseVectorStore",
    "Embedder",
    "EmbedderIdentity",
    "MockEmbedder",
    "OpenAIEmbedder",
    "QdrantStore",
    "RetrievalHit",
    "RetrievalResult",
    "SearchPlan",
    "SentenceTransformerEmbedder",
    "SqliteVecStore",
    "StoredVector",
    "VectorHit",
    "VectorStore",
    "retrieve",
]

# name -> module; imported on first access so `import trails.vector` stays light.
_LAZY = {
    "QdrantStore": "trails.vector.qdrant",
    "SqliteVecStore": "trails.vector.sqlite_vec",
    "SentenceTransformerEmbedder": "trails.vector.sentence_transformer",
    "OpenAIEmbedder": "trails.vector.openai",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'trails.vector' has no attribute {name!r}")
