"""Retrieval: ``retrieve()`` (filter with SPARQL, then rank exactly) and composable retrievers."""

from __future__ import annotations

from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.asynchronous import aretrieve
from trails.retrieval.retrieve import FUSIONS, MODES, Mode, retrieve
from trails.retrieval.retrievers import (
    CompositeRetriever,
    GraphRetriever,
    HybridRetriever,
    RerankedRetriever,
    Retriever,
    VectorRetriever,
)

__all__ = [
    "FUSIONS",
    "MODES",
    "CompositeRetriever",
    "GraphRetriever",
    "HybridRetriever",
    "Mode",
    "RerankedRetriever",
    "RetrievalHit",
    "RetrievalResult",
    "Retriever",
    "VectorRetriever",
    "aretrieve",
    "retrieve",
]
