"""rdflib interop: quads to an ``rdflib.Dataset`` and rdflib graphs to quads, as N-Quads.

Both directions go through N-Quads text, written and read by each library's own serialiser
and parser, so rdflib sees exactly the terms it would make from the same file (a plain
string literal is ``Literal("x")``). oxrdflib, the Oxigraph project's rdflib store, was
weighed and not used: version 0.5 hands every plain string back as ``"x"^^xsd:string``, a
term rdflib does not equate with ``Literal("x")``, so graphs compared with
``rdflib.compare.isomorphic`` or ``graph.value(...)`` would silently differ. Needs
``pip install "trails[rdflib]"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyoxigraph as ox

from trails._lazy import require
from trails.errors import ConfigurationError

__all__ = ["from_rdflib", "is_rdflib_graph", "to_rdflib"]


def to_rdflib(quads: Iterable[ox.Quad]) -> Any:
    """The quads as an ``rdflib.Dataset``: the default scope is its default graph, every other
    graph a named graph (a scope's is ``urn:trails:scope:NAME``). A copy: changing it changes
    nothing in trails. rdflib writes non-canonical lexical forms canonically
    (``"01"^^xsd:integer`` becomes ``"1"``), as it does when it parses a file."""
    rdflib = require("rdflib", "to_rdflib()")
    text = ox.serialize(_without_triple_terms(quads), format=ox.RdfFormat.N_QUADS) or b""
    dataset = rdflib.Dataset()
    if text:
        dataset.parse(data=text.decode("utf-8"), format="nquads")
    return dataset


def _without_triple_terms(quads: Iterable[ox.Quad]) -> Iterable[ox.Quad]:
    for quad in quads:
        if isinstance(quad.object, ox.Triple):  # rdflib reads no RDF 1.2 triple term
            raise ConfigurationError(
                f"rdflib cannot hold the RDF 1.2 triple term {quad.object} (of {quad.subject} "
                f"{quad.predicate}); export the graph as TriG or N-Quads instead (kg.dump)")
        yield quad


def is_rdflib_graph(source: object) -> bool:
    """Whether ``source`` is an rdflib ``Graph`` (or ``Dataset``); imports rdflib only for an
    object of a class from rdflib (or derived from one)."""
    if not any(c.__module__.split(".")[0] == "rdflib" for c in type(source).__mro__):
        return False
    rdflib = require("rdflib", "Loading an rdflib graph")
    return isinstance(source, rdflib.Graph)


def from_rdflib(graph: Any) -> tuple[bytes, str]:
    """An rdflib ``Dataset`` as N-Quads, or a ``Graph`` as N-Triples, and that format's name.

    Raises:
        ConfigurationError: a ``ConjunctiveGraph`` that is no ``Dataset`` (rdflib deprecates
            it, and its default graph has a blank-node name): pass an ``rdflib.Dataset``.
    """
    rdflib = require("rdflib", "Loading an rdflib graph")
    if isinstance(graph, rdflib.Dataset):
        return bytes(graph.serialize(format="nquads", encoding="utf-8")), "nquads"
    if graph.context_aware:
        raise ConfigurationError(
            f"cannot load an rdflib {type(graph).__name__}: its default graph has a blank-node "
            "name; copy it into an rdflib.Dataset (or load one rdflib.Graph at a time)")
    return bytes(graph.serialize(format="nt", encoding="utf-8")), "ntriples"
