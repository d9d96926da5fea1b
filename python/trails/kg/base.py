"""The knowledge-graph contract: what the engine calls on a graph, and the optional extras.

:class:`KnowledgeGraph` declares every call the engine makes on a graph; both backends
(:class:`~trails.kg.oxigraph.OxigraphGraph`, :class:`~trails.kg.remote.SparqlEndpointGraph`)
implement all of it. What only some graphs can do is a narrower protocol, checked with
``isinstance``:

- :class:`FunctionGraph`: custom SPARQL functions evaluated in this process
  (``trails:similarity``); a remote endpoint cannot call back into Python.
- :class:`NQuadsGraph`: loads N-Quads text in one transaction, the ingest writer's fast path.
- :class:`DatasetGraph`: runs a query over a dataset of any graphs (the SPARQL 1.1 Protocol's
  ``default-graph-uri``/``named-graph-uri``), with a base IRI for relative IRIs.
- :class:`GenerationGraph`: numbers its states, so a filter's answer can be kept until the
  graph changes (a remote endpoint can change at any time unseen).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import pyoxigraph as ox

from trails.errors import SparqlError
from trails.kg.rdfio import RdfSource
from trails.kg.result import QueryResult

__all__ = ["Dataset", "DatasetGraph", "FunctionGraph", "GenerationGraph", "KnowledgeGraph", "NQuadsGraph", "QueryOutput",
           "RevisionGraph", "select"]

# SELECT -> QueryResult, ASK -> bool, CONSTRUCT/DESCRIBE -> triples.
QueryOutput = QueryResult | bool | list[ox.Triple]


@runtime_checkable
class KnowledgeGraph(Protocol):
    """A SPARQL 1.1 graph the engine filters with, writes documents to and checks.

    ``scopes`` confines a query to those scopes' named graphs whatever its text says
    (None: every graph). ``bindings`` are bound as RDF terms, never pasted into the text.
    """

    prefixes: dict[str, str]
    read_only: bool

    def query(
        self, sparql: str, bindings: Mapping[str, Any] | None = None, *,
        scopes: Sequence[str] | None = None,
    ) -> QueryOutput: ...

    def select_iris(
        self, sparql: str, bindings: Mapping[str, Any] | None = None, *,
        scopes: Sequence[str] | None = None,
    ) -> list[str]: ...

    def update(self, sparql: str, bindings: Mapping[str, Any] | None = None) -> None: ...

    def add(self, quad: ox.Quad) -> None: ...

    def extend(self, quads: Iterable[ox.Quad]) -> None: ...

    def bulk_extend(self, quads: Iterable[ox.Quad]) -> None: ...

    def remove_graph(self, graph: ox.NamedNode) -> None: ...

    def scopes(self) -> list[str]: ...

    def load(self, source: RdfSource | Any, format: str | None = None,
             scope: str | None = None, *, base_iri: str | None = None,
             replace: bool | str = False, allow_empty: bool = False) -> int:
        """Add RDF (a path, RDF text or bytes, or an rdflib graph) in one transaction, into
        ``scope``'s graph (default: the default scope); how many quads it held. ``replace``:
        first take away what the same file (or the source of that name) loaded (ADR 0051);
        an empty source takes it all away only with ``allow_empty``."""
        ...

    def dump(self, path: str | os.PathLike[str] | None = None, format: str | None = None,
             scope: str | None = None, *, audit: bool = False) -> str | None:
        """RDF out: every graph (TriG, N-Quads, JSON-LD; the audit graph only with
        ``audit``) or one scope; the text, or None after writing ``path``."""
        ...

    def to_rdflib(self, scope: str | None = None, *, audit: bool = False) -> Any:
        """A copy of the graph (or of one scope) as an ``rdflib.Dataset``."""
        ...

    def __len__(self) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class FunctionGraph(KnowledgeGraph, Protocol):
    """A graph whose queries can call Python functions by IRI."""

    @property
    def functions(self) -> frozenset[str]: ...

    def register_function(
        self, iri: str, fn: Callable[..., Any], *, per_query: bool = False
    ) -> None: ...


@dataclass(frozen=True)
class Dataset:
    """A query's RDF dataset: the graphs whose triples make its default graph (``DefaultGraph``
    for the store's default graph) and the named graphs ``GRAPH`` can reach. It replaces
    whatever ``FROM``/``FROM NAMED`` the query text names."""

    default: tuple[ox.NamedNode | ox.DefaultGraph, ...]
    named: tuple[ox.NamedNode, ...]


@runtime_checkable
class DatasetGraph(KnowledgeGraph, Protocol):
    """A graph that runs a query over a :class:`Dataset` of any of its graphs."""

    def query_dataset(self, sparql: str, dataset: Dataset, *, scopes: Sequence[str],
                      base_iri: str | None = None) -> QueryOutput:
        """``sparql`` over ``dataset`` only (never a ``SERVICE`` call); ``scopes`` are what
        per-query functions may read, ``base_iri`` resolves relative IRIs."""
        ...


@runtime_checkable
class GenerationGraph(KnowledgeGraph, Protocol):
    """A graph that numbers its states: while ``generation`` stays the same, so do its
    triples, and a filter's answer may be reused (``retrieval/candidates.py``)."""

    @property
    def generation(self) -> int: ...


@runtime_checkable
class TsvGraph(KnowledgeGraph, Protocol):
    """A graph that hands a SELECT's solutions over as TSV text (cheaper than a Python term
    per value when many are read)."""

    def select_tsv(self, sparql: str, scopes: Sequence[str] | None = None) -> bytes: ...


@runtime_checkable
class RevisionGraph(KnowledgeGraph, Protocol):
    """A graph whose ``revision`` stamp every write renews, kept with its files (so it means
    the same to every process and across runs); writes inside ``unrevised()`` leave it, for
    records about the graph's use that change nothing a query over documents sees."""

    @property
    def revision(self) -> str | None: ...

    def unrevised(self) -> contextlib.AbstractContextManager[None]: ...


@runtime_checkable
class NQuadsGraph(KnowledgeGraph, Protocol):
    """A graph that loads N-Quads text in one transaction (all or nothing)."""

    def load_nquads(self, text: str) -> None: ...


def select(
    kg: KnowledgeGraph, sparql: str, bindings: Mapping[str, Any] | None = None, *,
    scopes: Sequence[str] | None = None,
) -> QueryResult:
    """Run a SELECT query on ``kg`` and return its solutions.

    Raises:
        SparqlError: ``sparql`` is an ASK, CONSTRUCT or DESCRIBE query.
    """
    output = kg.query(sparql, bindings, scopes=scopes)
    if not isinstance(output, QueryResult):
        raise SparqlError(f"expected a SELECT query, but it returned {type(output).__name__}")
    return output
