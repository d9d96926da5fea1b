"""trails: knowledge-graph plus vector hybrid retrieval. Filter with SPARQL, then rank exactly.

>>> import trails
>>> "retrieve" in trails.__all__
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_attributes

__version__ = "0.1.0"

# What the lazy names below resolve to, for type checkers. `import X as X`: a name kept at the
# top level for programs written against it (its home is the package it names), still
# exported to type checkers though __all__ no longer lists it.
if TYPE_CHECKING:
    from trails.context import Context, set_default_context
    from trails.errors import TrailsError
    from trails.ingest import Chunk, Document, IngestionStats, ingest, ingest_all
    from trails.kg import KnowledgeGraph as KnowledgeGraph
    from trails.kg.oxigraph import OxigraphGraph as OxigraphGraph
    from trails.rank import Reranker as Reranker
    from trails.rank.rewrite import QueryRewriter as QueryRewriter
    from trails.records import RetrievalHit, RetrievalResult
    from trails.retrieval.asynchronous import aretrieve
    from trails.retrieval.replay import replay
    from trails.retrieval.request import SearchRequest
    from trails.retrieval.retrieve import retrieve
    from trails.retrieval.retrievers import (
        CompositeRetriever,
        GraphRetriever,
        HybridRetriever,
        RerankedRetriever,
        Retriever,
        VectorRetriever,
    )
    from trails.vector.embedders.base import Embedder as Embedder
    from trails.vector.embedders.base import EmbedderIdentity as EmbedderIdentity
    from trails.vector.embedders.mock import MockEmbedder as MockEmbedder
    from trails.vector.stores.base import VectorHit as VectorHit
    from trails.vector.stores.base import VectorStore as VectorStore
    from trails.vector.stores.sqlite_vec import SqliteVecStore as SqliteVecStore

# What a newcomer meets: ingest, search, the values they pass and get back, the retrievers.
# The parts (graphs, stores, embedders, steps) live in trails.kg, trails.vector, trails.rank.
__all__ = [
    "Chunk",
    "CompositeRetriever",
    "Context",
    "Document",
    "GraphRetriever",
    "HybridRetriever",
    "IngestionStats",
    "RerankedRetriever",
    "RetrievalHit",
    "RetrievalResult",
    "Retriever",
    "SearchRequest",
    "TrailsError",
    "VectorRetriever",
    "__version__",
    "aretrieve",
    "ingest",
    "ingest_all",
    "replay",
    "retrieve",
    "set_default_context",
]

# Every public name resolves on first use: `import trails` loads nothing heavy.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "Context": "trails.context:Context",
    "set_default_context": "trails.context:set_default_context",
    "Embedder": "trails.vector.embedders.base:Embedder",
    "EmbedderIdentity": "trails.vector.embedders.base:EmbedderIdentity",
    "KnowledgeGraph": "trails.kg:KnowledgeGraph",
    "OxigraphGraph": "trails.kg.oxigraph:OxigraphGraph",
    "MockEmbedder": "trails.vector.embedders.mock:MockEmbedder",
    "RetrievalHit": "trails.records:RetrievalHit",
    "RetrievalResult": "trails.records:RetrievalResult",
    "retrieve": "trails.retrieval.retrieve:retrieve",
    "aretrieve": "trails.retrieval.asynchronous:aretrieve",
    "replay": "trails.retrieval.replay:replay",
    "SearchRequest": "trails.retrieval.request:SearchRequest",
    "SqliteVecStore": "trails.vector.stores.sqlite_vec:SqliteVecStore",
    "TrailsError": "trails.errors:TrailsError",
    "VectorHit": "trails.vector.stores.base:VectorHit",
    "VectorStore": "trails.vector.stores.base:VectorStore",
    "Retriever": "trails.retrieval.retrievers:Retriever",
    "VectorRetriever": "trails.retrieval.retrievers:VectorRetriever",
    "HybridRetriever": "trails.retrieval.retrievers:HybridRetriever",
    "GraphRetriever": "trails.retrieval.retrievers:GraphRetriever",
    "CompositeRetriever": "trails.retrieval.retrievers:CompositeRetriever",
    "RerankedRetriever": "trails.retrieval.retrievers:RerankedRetriever",
    "Reranker": "trails.rank:Reranker",
    "QueryRewriter": "trails.rank.rewrite:QueryRewriter",
    "Document": "trails.ingest:Document",
    "Chunk": "trails.ingest:Chunk",
    "IngestionStats": "trails.ingest:IngestionStats",
    "ingest": "trails.ingest:ingest",
    "ingest_all": "trails.ingest:ingest_all",
}, __all__)
