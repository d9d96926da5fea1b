"""``load``, ``dump`` and ``to_rdflib`` for any graph, built on two primitives a backend has:
adding quads in one transaction and listing the quads of a scope (or of every graph).

Both backends delegate here, so a file loads and exports the same way into the embedded graph
and into a SPARQL endpoint; :class:`QuadExport` gives both the same ``dump`` and
``to_rdflib``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyoxigraph as ox

from trails.errors import ConfigurationError
from trails.kg.export_paths import OwnFiles, refuse_own_file
from trails.kg.loads import (
    ReplaceOption,
    loaded_before,
    refuse_emptied,
    replacing,
    source_key,
    target_graph,
)
from trails.kg.rdfio import RdfSource, rdf_format, read_quads
from trails.kg.rdflib_bridge import from_rdflib, is_rdflib_graph, to_rdflib
from trails.kg.rdfwrite import write_quads
from trails.kg.reserved import AUDIT_GRAPH_IRI, check_quads
from trails.scopes import DEFAULT_SCOPE, check_known_scopes, normalize_scopes

__all__ = ["QuadExport", "dump_quads", "guard_exports", "load_quads", "rdflib_of"]

_AUDIT = ox.NamedNode(AUDIT_GRAPH_IRI)
# What load() takes: a path, RDF text or bytes, or an rdflib Graph/Dataset.
LoadSource = RdfSource | Any


def load_quads(add: Callable[[list[ox.Quad]], None], source: LoadSource, format: str | None,
               scope: str | None, base_iri: str | None, *, replace: ReplaceOption = False,
               update: Callable[[str], None] | None = None,
               query: Callable[[str], Any] | None = None, allow_empty: bool = False,
               replace_refused: str | None = None) -> int:
    """Parse ``source`` and ``add`` all its quads in one go; or, with ``replace``, ``update``
    the graph in one transaction so that they replace what the same source loaded with
    ``replace`` before, and are recorded for the next one (:mod:`trails.kg.loads`). How many
    quads it holds.

    Raises:
        ValueError: ``format=`` with an rdflib graph (it has no text format to name).
        ConfigurationError: a quad in the audit graph, which trails alone writes; ``replace``
            with RDF that names graphs of its own.
        InvalidArgumentError: ``replace=True`` for RDF text (no file name), or an empty name.
        ConfigurationError: ``replace`` with a source that holds no triples now, over an
            earlier load that held some, without ``allow_empty`` (``query`` counts them); or
            and ``replace_refused``, why this graph cannot replace (nothing is sent).
    """
    given = source
    if is_rdflib_graph(source):
        if format is not None:
            raise ValueError("format= names the format of a file or text; an rdflib graph "
                             "needs none, so leave it out")
        source, format = from_rdflib(source)
    quads = check_quads(read_quads(source, format, scope, base_iri=base_iri))
    key = source_key(given, replace)  # once read: a missing file is said to be one
    target = target_graph(quads, scope)
    if replace and key is not None:
        if update is None:
            raise ConfigurationError("this graph takes no update, so a load cannot replace "
                                     "what it loaded before; nothing was loaded")
        name = key if isinstance(replace, str) else f"the file {key}"
        if replace_refused:
            raise ConfigurationError(f"{name} cannot be loaded with replace here: "
                                     f"{replace_refused}; nothing was loaded")
        if not quads and not allow_empty and query is not None:
            refuse_emptied(name, loaded_before(query, key, target))
        update(replacing(quads, key, target, "the RDF loaded"))
    else:  # not recorded: a plain load of a large file costs what it always did (ADR 0051)
        add(quads)
    return len(quads)


def dump_quads(quads: Callable[[str | None], Iterable[ox.Quad]],
               path: str | os.PathLike[str] | None, format: str | None, scope: str | None,
               prefixes: Mapping[str, str] | None = None, audit: bool = False) -> str | None:
    """Serialise one scope's triples (a triple format, or ``scope=``) or every graph (a
    dataset format without ``scope=``; the audit graph only with ``audit``). A triple format
    without ``scope=`` dumps the default scope. The format comes from ``format``, else
    ``path``'s suffix, else TriG."""
    fmt = rdf_format(format, path) if (format or path) else ox.RdfFormat.TRIG
    wanted = scope if scope is not None or fmt.supports_datasets else DEFAULT_SCOPE
    return write_quads(_audited(quads(wanted), audit), fmt, path, prefixes)


def rdflib_of(quads: Iterable[ox.Quad], audit: bool = False) -> Any:
    """The quads as an ``rdflib.Dataset`` (see :func:`trails.kg.rdflib_bridge.to_rdflib`),
    the audit graph only with ``audit``."""
    return to_rdflib(_audited(quads, audit))


def _audited(quads: Iterable[ox.Quad], audit: bool) -> Iterable[ox.Quad]:
    """The quads, without the audit graph's unless ``audit``: no load takes that graph
    (trails alone writes it), so an export holding it could never be loaded again."""
    return quads if audit else (q for q in quads if q.graph_name != _AUDIT)


class QuadExport:
    """``dump`` and ``to_rdflib`` for a graph that lists the quads of a scope (``_quads``)
    and has its ``prefixes``."""

    prefixes: dict[str, str]
    _own_files = OwnFiles(None)  # what dump must not write over (guard_exports), besides its own

    def _quads(self, scope: str | None) -> Iterable[ox.Quad]:
        """One scope's quads, or every graph's (``scope`` None)."""
        raise NotImplementedError

    def scopes(self) -> list[str]:
        """The scopes that hold triples (the backend's own)."""
        raise NotImplementedError

    def _known(self, scope: str | None) -> str | None:
        """``scope``, refused if it holds nothing: a typo would export an empty graph (and
        replace a good backup with it)."""
        if scope is not None:
            check_known_scopes(normalize_scopes(scope), self.scopes())
        return scope

    def dump(self, path: str | os.PathLike[str] | None = None, format: str | None = None,
             scope: str | None = None, *, audit: bool = False) -> str | None:
        """Export RDF: the text, or None after writing ``path`` (replaced whole).

        TriG, N-Quads or JSON-LD without ``scope`` hold every graph but the audit trail's
        (``urn:trails:audit``, which no load takes: ``audit=True`` adds it); a triple format
        (Turtle, N-Triples, N3, RDF/XML) holds one scope (``scope``, default the default
        scope). The format comes from ``format``, else ``path``'s suffix, else TriG. A
        ``scope`` that holds nothing is an UnknownScopeError (nothing is written); a ``path``
        inside the graph's folder or its context's directory, or beside its vector store, a
        ConfigurationError (it could replace a file of the context; nothing is written).

        >>> from trails.kg.oxigraph import OxigraphGraph
        >>> kg = OxigraphGraph()
        >>> kg.load(b'<https://x/a> <https://schema.org/name> "A" .', scope="legal")
        1
        >>> print(kg.dump(format="turtle", scope="legal"), end="")  # doctest: +ELLIPSIS
        @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
        ...
        <https://x/a> schema:name "A" .
        """
        if path is not None:
            refuse_own_file(path, self._own_files.joined(OwnFiles.of(None, [self])))
        return dump_quads(self._quads, path, format, self._known(scope), self.prefixes, audit)

    def to_rdflib(self, scope: str | None = None, *, audit: bool = False) -> Any:
        """A copy of the graph (or of one scope) as an ``rdflib.Dataset`` backed by an
        in-memory Oxigraph store (``pip install "trails[rdflib]"``); the audit graph only
        with ``audit=True``, as for :meth:`dump`."""
        return rdflib_of(self._quads(self._known(scope)), audit)


def guard_exports(kg: object, directory: str | os.PathLike[str] | None, *parts: object) -> None:
    """Make ``kg.dump(path)`` refuse a path over a file of the context in ``directory`` made
    of ``parts`` (:mod:`trails.kg.export_paths`); a graph of another class is left as it is."""
    if isinstance(kg, QuadExport):
        kg._own_files = kg._own_files.joined(OwnFiles.of(directory, parts))
