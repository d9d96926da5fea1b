"""The records stores return: search hits, stored vectors, search plans, document versions."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["DocumentIris", "DocumentVersion", "SearchPlan", "StoredVector", "VectorHit"]


class DocumentIris(tuple[str, ...]):
    """Candidate IRIs that are documents: a store's ``search(ids=...)`` and
    ``keyword_search`` rank each one's chunks and never read one as a vector id (a filter
    evaluated over documents may also select other resources, which have no chunks).
    ``generation``: the graph generation the filter read (None: not known)."""

    generation: int | None = None


class VectorHit(NamedTuple):
    """One search result: cosine similarity in [-1, 1], higher is better."""

    id: str
    score: float
    metadata: dict[str, Any]


class StoredVector(NamedTuple):
    id: str
    vector: list[float]
    metadata: dict[str, Any]


class SearchPlan(NamedTuple):
    """How a store answered a search, so short results are never ambiguous.

    ``name`` is the plan (``full-scan``, ``gather``, ``masked-scan``, ``ann+exact-fallback``...),
    ``candidates`` how many vectors were eligible, ``exhaustive`` whether every eligible vector
    was scored exactly.
    """

    name: str
    candidates: int
    exhaustive: bool


class DocumentVersion(NamedTuple):
    """The current version of one ingested document, as the vector store records it."""

    doc_iri: str
    version: str
    scope: str
    content_hash: str
    chunks: int
