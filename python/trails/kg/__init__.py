"""The knowledge graph: a protocol, the embedded Oxigraph store, and term conversion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from trails._lazy import lazy_attributes
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


# Lazily, so that ``import trails.kg`` loads no HTTP client.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "SparqlEndpointGraph": "trails.kg.remote:SparqlEndpointGraph",
}, __all__)


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
