"""Embedders, vector stores and ``retrieve``. Backends with optional packages load lazily."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trails.vector.embedders.base import BaseEmbedder, Embedder, EmbedderIdentity
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.base import (
    BaseVectorStore,
    SearchPlan,
    StoredVector,
    VectorHit,
    VectorStore,
)

if TYPE_CHECKING:
    from trails.vector.embedders.openai import OpenAIEmbedder
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder
    from trails.vector.stores.qdrant import QdrantStore
    from trails.vector.stores.sqlite_vec import SqliteVecStore

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
    # Public paths users know; these live above trails.vector, so only resolved on access.
    "RetrievalHit": "trails.records",
    "RetrievalResult": "trails.records",
    "retrieve": "trails.retrieval",
    "QdrantStore": "trails.vector.stores.qdrant",
    "SqliteVecStore": "trails.vector.stores.sqlite_vec",
    "SentenceTransformerEmbedder": "trails.vector.embedders.sentence_transformer",
    "OpenAIEmbedder": "trails.vector.embedders.openai",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'trails.vector' has no attribute {name!r}")
