"""The knowledge graph: a protocol, the embedded Oxigraph store, and term conversion."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_attributes
from trails.kg.base import FunctionGraph, KnowledgeGraph, NQuadsGraph, QueryOutput, select
from trails.kg.oxigraph import OxigraphGraph
from trails.kg.result import QueryResult, Triples
from trails.kg.sparql import PREFIXES, TRAILS, check_filter
from trails.kg.terms import IRI, to_python, to_term

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from trails.kg.remote import SparqlEndpointGraph

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
    "Triples",
    "check_filter",
    "select",
    "to_python",
    "to_term",
]


# Lazily, so that ``import trails.kg`` loads no HTTP client.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "SparqlEndpointGraph": "trails.kg.remote:SparqlEndpointGraph",
}, __all__)

