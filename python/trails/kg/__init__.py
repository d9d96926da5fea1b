"""The knowledge graph: a protocol, the embedded Oxigraph store, and term conversion."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_attributes
from trails.kg.sparql import PREFIXES, TRAILS, check_filter
from trails.kg.terms import IRI, to_python, to_term

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from trails.kg.base import FunctionGraph, KnowledgeGraph, NQuadsGraph, QueryOutput, select
    from trails.kg.oxigraph import OxigraphGraph
    from trails.kg.remote import SparqlEndpointGraph
    from trails.kg.result import QueryResult, Triples

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


# Lazily, so that importing a light module of the package (``trails.kg.terms``, what the
# command line reads ``--bind`` values with) loads neither the store (numpy, its columns) nor
# an HTTP client.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "FunctionGraph": "trails.kg.base:FunctionGraph",
    "KnowledgeGraph": "trails.kg.base:KnowledgeGraph",
    "NQuadsGraph": "trails.kg.base:NQuadsGraph",
    "QueryOutput": "trails.kg.base:QueryOutput",
    "select": "trails.kg.base:select",
    "OxigraphGraph": "trails.kg.oxigraph:OxigraphGraph",
    "QueryResult": "trails.kg.result:QueryResult",
    "Triples": "trails.kg.result:Triples",
    "SparqlEndpointGraph": "trails.kg.remote:SparqlEndpointGraph",
}, __all__)

