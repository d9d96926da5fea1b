"""The knowledge graph: a protocol, the embedded Oxigraph store, and term conversion."""

from __future__ import annotations

from typing import Any

from trails.kg.base import FunctionGraph, KnowledgeGraph, NQuadsGraph, QueryOutput, select
from trails.kg.oxigraph import OxigraphGraph
from trails.kg.result import QueryResult
from trails.kg.sparql import PREFIXES, TRAILS, check_filter
from trails.kg.terms import IRI, to_python, to_term

__all__ = [
    "IRI",
    "PREFIXES",
    "TRAILS",
    "FunctionGraph",
    "KnowledgeGraph",
    "NQuadsGraph",
    "OxigraphGraph",
    "QueryOutput",
    "QueryResult",
    "SparqlEndpointGraph",
    "check_filter",
    "select",
    "to_python",
    "to_term",
]


def __getattr__(name: str) -> Any:
    # Lazily, so that ``import trails.kg`` does not import httpx (the ``remote`` extra).
    if name == "SparqlEndpointGraph":
        from trails.kg.remote import SparqlEndpointGraph

        return SparqlEndpointGraph
    raise AttributeError(f"module 'trails.kg' has no attribute {name!r}")
