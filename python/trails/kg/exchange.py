"""``load``, ``dump`` and ``to_rdflib`` for any graph, built on two primitives a backend has:
adding quads in one go and listing the quads of a scope (or of every graph).

Both backends delegate here, so a file loads and exports the same way into the embedded graph
and into a SPARQL endpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import pyoxigraph as ox

from trails._lazy import require
from trails.kg.rdfio import RdfSource, from_rdflib, rdf_format, read_quads, to_rdflib, write_quads

__all__ = ["dump_quads", "load_quads", "rdflib_of"]


def load_quads(add: Callable[[list[ox.Quad]], None], source: RdfSource | Any,
               format: str | None, scope: str | None, base_iri: str | None) -> int:
    """Parse ``source`` (a path, RDF text or bytes, or an rdflib graph) and ``add`` its quads
    in one go; how many quads were read."""
    if not isinstance(source, (str, bytes, os.PathLike)):
        rdflib = require("rdflib", "loading an rdflib graph")
        if not isinstance(source, rdflib.Graph):
            raise TypeError("load() takes a path, RDF text or bytes, or an rdflib Graph; got "
                            f"{type(source).__name__}")
        source, format = from_rdflib(source)
    quads = read_quads(source, format, scope, base_iri=base_iri)
    add(quads)
    return len(quads)


def dump_quads(quads: Callable[[str | None], Iterable[ox.Quad]],
               path: str | os.PathLike[str] | None, format: str | None,
               scope: str | None) -> str | None:
    """Serialise one scope's triples (a triple format, or ``scope=``) or every graph (a
    dataset format without ``scope=``). A triple format without ``scope=`` dumps the default
    scope. The format comes from ``format``, else ``path``'s suffix, else TriG."""
    fmt = rdf_format(format, str(path)) if (format or path) else ox.RdfFormat.TRIG
    wanted = scope if scope is not None or fmt.supports_datasets else "default"
    return write_quads(quads(wanted), fmt, path)


def rdflib_of(quads: Iterable[ox.Quad]) -> Any:
    return to_rdflib(quads)
