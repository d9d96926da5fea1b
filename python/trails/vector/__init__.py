"""Embedders, vector stores and ``retrieve``. Backends with optional packages load lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_attributes
from trails.vector.embedders.base import BaseEmbedder, Embedder, EmbedderIdentity
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.base import (
    BaseVectorStore,
    SearchPlan,
    StoredVector,
    VectorHit,
    VectorStore,
)

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from trails.records import RetrievalHit, RetrievalResult
    from trails.retrieval import retrieve
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

# Imported on first access, so `import trails.vector` stays light. `retrieve` lives above this
# package: it is here only because users know this path, and resolving it on access keeps
# every import inside the package pointing down.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "RetrievalHit": "trails.records:RetrievalHit",
    "RetrievalResult": "trails.records:RetrievalResult",
    "retrieve": "trails.retrieval:retrieve",
    "QdrantStore": "trails.vector.stores.qdrant:QdrantStore",
    "SqliteVecStore": "trails.vector.stores.sqlite_vec:SqliteVecStore",
    "SentenceTransformerEmbedder":
        "trails.vector.embedders.sentence_transformer:SentenceTransformerEmbedder",
    "OpenAIEmbedder": "trails.vector.embedders.openai:OpenAIEmbedder",
}, __all__)
