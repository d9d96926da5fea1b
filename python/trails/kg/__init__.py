"""The knowledge graph: a protocol, the embedded Oxigraph store, and term conversion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from trails.kg.oxigraph import OxigraphGraph
from trails.kg.result import QueryResult
from trails.kg.sparql import PREFIXES, TRAILS, check_filter
from trails.kg.terms import IRI, to_python, to_term

__all__ = [
    "IRI",
    "PREFIXES",
    "TRAILS",
    "KnowledgeGraph",
    "OxigraphGraph",
    "QueryResult",
    "SparqlEndpointGraph",
    "check_filter",
    "to_python",
    "to_term",
]


def __getattr__(name: str) -> Any:
    # Lazily, so that ``import trails.kg`` does not import httpx (the ``remote`` extra).
    if name == "SparqlEndpointGraph":
        from trails.kg.remote import SparqlEndpointGraph

        return SparqlEndpointGraph
    raise AttributeError(f"module 'trails.kg' has no attribute {name!r}")


@runtime_checkable
class KnowledgeGraph(Protocol):
    """What the engine needs from a graph: queries, updates and the retrieval filter."""

    def query(
        self, sparql: str, bindings: Mapping[str, Any] | None = None, *, scopes: Sequence[str] | None = None
    ) -> Any: ...

    def select_iris(
        self, sparql: str, bindings: Mapping[str, Any] | None = None, *, scopes: Sequence[str] | None = None
    ) -> list[str]: ...

    def update(self, sparql: str, bindings: Mapping[str, Any] | None = None) -> None: ...

    def extend(self, quads: Any) -> None: ...

    def close(self) -> None: ...
