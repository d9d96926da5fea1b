"""Your own RDF in and out: formats, reading a file or text into quads, writing quads.

Both graph backends load and dump through these functions, so a file reads the same into the
embedded graph and into a SPARQL endpoint. Formats are pyoxigraph's: Turtle, TriG, N-Triples,
N-Quads, N3, RDF/XML and JSON-LD.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from trails._lazy import require
from trails.errors import ConfigurationError, RdfSyntaxError
from trails.scopes import DEFAULT_SCOPE, scope_graph

__all__ = ["FORMATS", "RDF_SUFFIXES", "RdfSource", "from_rdflib", "rdf_format", "read_quads",
           "to_rdflib", "write_quads"]

# Names a user may give (--format, format=), each with pyoxigraph's format.
FORMATS: dict[str, ox.RdfFormat] = {
    "turtle": ox.RdfFormat.TURTLE, "ttl": ox.RdfFormat.TURTLE,
    "trig": ox.RdfFormat.TRIG,
    "ntriples": ox.RdfFormat.N_TRIPLES, "nt": ox.RdfFormat.N_TRIPLES,
    "nquads": ox.RdfFormat.N_QUADS, "nq": ox.RdfFormat.N_QUADS,
    "n3": ox.RdfFormat.N3,
    "rdfxml": ox.RdfFormat.RDF_XML, "rdf": ox.RdfFormat.RDF_XML, "xml": ox.RdfFormat.RDF_XML,
    "owl": ox.RdfFormat.RDF_XML,
    "jsonld": ox.RdfFormat.JSON_LD, "json-ld": ox.RdfFormat.JSON_LD,
}
# File suffixes that hold RDF: ingestion refuses them (they are facts, not documents).
RDF_SUFFIXES = frozenset({".ttl", ".trig", ".nt", ".nq", ".n3", ".rdf", ".owl", ".jsonld"})

# A path (str paths must name an existing file), RDF text or bytes.
RdfSource = str | bytes | os.PathLike[str]


def rdf_format(format: str | None, name: str | None = None) -> ox.RdfFormat:
    """The format named by ``format``, else guessed from the file ``name``'s suffix.

    >>> rdf_format(None, "facts.ttl").name, rdf_format("nquads").name
    ('Turtle', 'N-Quads')
    """
    if format is not None:
        found = FORMATS.get(format.lower())
        if found is None:
            raise ConfigurationError(
                f"unknown RDF format {format!r}; use one of {', '.join(sorted(FORMATS))}")
        return found
    suffix = Path(name).suffix.lower().lstrip(".") if name else ""
    if suffix in FORMATS:
        return FORMATS[suffix]
    raise ConfigurationError(
        f"cannot tell the RDF format of {name or 'this text'!r}; pass format= (--format) as one "
        f"of {', '.join(sorted(FORMATS))}, or use a file suffix: "
        f"{', '.join(sorted(RDF_SUFFIXES))}")


def read_quads(source: RdfSource, format: str | None = None, scope: str | None = None,
               *, base_iri: str | None = None) -> list[ox.Quad]:
    """Parse ``source`` (a path, or RDF text/bytes) into quads, all or nothing.

    Triples go into ``scope``'s graph (the default scope when None). A dataset format's
    quads keep the graphs they name; ``scope=`` with one is refused, since it would have to
    move them. Blank nodes get fresh labels, so loading twice never merges them with others.

    Raises:
        RdfSyntaxError: the input does not parse (the message names the line and column).
        ConfigurationError: the format cannot be told, or ``scope=`` with a dataset format.
    """
    path, data = _input(source)
    fmt = rdf_format(format, path.name if path else None) if format or path else (
        ox.RdfFormat.TURTLE)  # text without a format: Turtle (it reads N-Triples too)
    if fmt.supports_datasets and scope is not None:
        raise ConfigurationError(
            f"{fmt.name} names its own graphs, so scope= cannot place it; load it without "
            "scope=, or use a triple format (Turtle, N-Triples...) for one scope")
    target = scope_graph(scope or DEFAULT_SCOPE)
    name = str(path) if path else "the RDF text"
    try:
        quads = list(ox.parse(data, format=fmt, base_iri=base_iri, rename_blank_nodes=True))
    except SyntaxError as exc:
        raise RdfSyntaxError(f"{name} is not valid {fmt.name}: {exc}") from exc
    if fmt.supports_datasets:
        return quads
    return [ox.Quad(q.subject, q.predicate, q.object, target) for q in quads]


def _input(source: RdfSource) -> tuple[Path | None, bytes]:
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                          and _is_file(source)):
        path = Path(source)
        try:
            return path, path.read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if isinstance(source, bytes):
        return None, source
    if isinstance(source, str):
        return None, source.encode("utf-8")
    raise TypeError(f"load() takes a path, RDF text or bytes, got {type(source).__name__}")


def _is_file(text: str) -> bool:
    try:
        return len(text) < 4096 and Path(text).is_file()
    except (OSError, ValueError):
        return False


def write_quads(quads: Iterable[ox.Quad], format: ox.RdfFormat,
                path: str | os.PathLike[str] | None) -> str | None:
    """Serialise ``quads`` (triples when ``format`` holds one graph); text, or None after
    writing ``path``."""
    items: list[Any] = list(quads)
    if not format.supports_datasets:
        items = [ox.Triple(q.subject, q.predicate, q.object) for q in items]
    data = ox.serialize(items, format=format, prefixes=None) or b""
    if path is None:
        return data.decode("utf-8")
    Path(path).write_bytes(data)
    return None


def to_rdflib(quads: Iterable[ox.Quad]) -> Any:
    """The quads as an ``rdflib.Dataset`` (needs rdflib: ``pip install "trails[rdflib]"``)."""
    rdflib = require("rdflib", "to_rdflib()")
    dataset = rdflib.Dataset()
    dataset.parse(data=write_quads(quads, ox.RdfFormat.N_QUADS, None), format="nquads")
    return dataset


def from_rdflib(graph: Any) -> tuple[bytes, str]:
    """An rdflib ``Graph`` (N-Triples) or ``Dataset`` (N-Quads) as bytes and the format name
    to load them with."""
    rdflib = require("rdflib", "loading an rdflib graph")
    fmt = "nquads" if isinstance(graph, rdflib.ConjunctiveGraph) else "ntriples"
    data = graph.serialize(format="nquads" if fmt == "nquads" else "nt", encoding="utf-8")
    return bytes(data), fmt
