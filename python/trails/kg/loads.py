"""What a source loaded, so that loading it again can replace it (ADR 0051).

Each load with ``replace`` of a file (or of RDF given a name, ``replace="name"``) whose
triples go into one scope's graph is recorded in a graph of trails' own,
``urn:trails:loaded:<scope>:<digest of the source's name>``, written in the same transaction
as the quads themselves: for each triple a node naming its subject, predicate and object
(``trails:loadedSubject``, ``trails:loadedPredicate``, ``trails:loadedObject``), never the
triple itself, which a query of every graph (no scope given) would then answer twice. No
scope's queries see that graph (as ``urn:trails:minted``). A load without ``replace`` is not
recorded: the record multiplies a load's writes, which a large data set loaded once should
not pay for.

``load(..., replace=True)`` (``trails load --replace``) runs one update: it deletes from
the scope's graph the triples the source's record holds and no other source's record of that
scope holds, drops the record, and inserts the new triples with their new record. A triple
the file still holds is deleted and inserted again in that same transaction, so a reader sees
the old ontology or the new one, never neither; the user's other triples, and every other
scope, are untouched. Blank nodes are matched through the record, which names the very same
nodes, so a removed ``owl:Restriction`` goes too.

A source that holds no triples now, loaded with replace over an earlier load that held some,
is refused (an emptied or truncated file is a mistake far more often than a wish to remove
everything it loaded) unless ``allow_empty=True`` (``--allow-empty``) says so.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from trails.errors import ConfigurationError, InvalidArgumentError
from trails.kg.sparql import TRAILS
from trails.scopes import DEFAULT_SCOPE, scope_graph, scope_of_graph

__all__ = ["LOADED_BASE", "ReplaceOption", "loaded_before", "record_graph", "refuse_emptied",
           "replacing", "source_key", "target_graph"]

LOADED_BASE = "urn:trails:loaded:"
_BLOCK = 300  # loaded triples per block of the insert (with their records' three each)
# What a record's node says of each triple loaded.
_PARTS = tuple(ox.NamedNode(TRAILS + "loaded" + part) for part in ("Subject", "Predicate", "Object"))
ReplaceOption = bool | str


def source_key(source: object, replace: ReplaceOption) -> str | None:
    """The name a load is recorded under: ``replace`` when it is a name, else a file's
    absolute path; None for RDF text or an rdflib graph given no name.

    Raises:
        InvalidArgumentError: ``replace`` is an empty name, or True for a source that is no
            file (the text has no name to find its earlier load by).
    """
    if isinstance(replace, str):
        if not replace.strip():
            raise InvalidArgumentError("replace= names the source whose earlier load this one "
                                       "replaces; got an empty name")
        return replace
    path: str | os.PathLike[str] | None = None
    if isinstance(source, os.PathLike):
        path = source
    elif isinstance(source, str) and "\n" not in source.strip() and len(source) <= 4096:
        path = source.strip() if Path(source.strip()).is_file() else None
    if path is None:
        if replace:
            raise InvalidArgumentError(
                "replace=True replaces what the same file loaded before, but this source is "
                "RDF text, not a file: name it (replace=\"ontology\"), and load it with that "
                "name each time")
        return None
    return str(Path(path).resolve())


def target_graph(quads: list[ox.Quad], scope: str | None) -> ox.NamedNode | ox.DefaultGraph | None:
    """The one scope graph the quads go into, or None when they name other graphs (a TriG
    file's own), which no record covers."""
    if scope is not None:
        return scope_graph(scope)
    graphs = {q.graph_name for q in quads}
    if not graphs:
        return ox.DefaultGraph()
    if len(graphs) == 1:
        (graph,) = graphs
        if isinstance(graph, ox.DefaultGraph) or (
                isinstance(graph, ox.NamedNode) and scope_of_graph(graph.value) is not None):
            return graph
    return None


def _scope_of(target: ox.NamedNode | ox.DefaultGraph) -> str:
    if isinstance(target, ox.DefaultGraph):
        return DEFAULT_SCOPE
    return scope_of_graph(target.value) or DEFAULT_SCOPE


def record_graph(target: ox.NamedNode | ox.DefaultGraph, key: str) -> ox.NamedNode:
    """The graph recording what the source ``key`` loaded into ``target`` (scope names hold
    no ":", so one scope's records share a prefix no other scope's has)."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return ox.NamedNode(f"{LOADED_BASE}{_scope_of(target)}:{digest}")


def loaded_before(query: Callable[[str], Any], key: str,
                  target: ox.NamedNode | ox.DefaultGraph | None) -> int:
    """How many triples the source ``key`` loaded with replace into ``target`` (its record's
    nodes; 0 when it has none)."""
    if target is None:
        return 0
    rows = query(f"SELECT (COUNT(?r) AS ?n) WHERE {{ GRAPH {record_graph(target, key)} "
                 f"{{ ?r {_PARTS[0]} ?s }} }}")
    return int(next(iter(rows))["n"])


def refuse_emptied(name: str, before: int) -> None:
    """Refuse replacing the ``before`` triples ``name`` loaded by none: a file emptied or cut
    short by mistake is far likelier than a wish to remove everything it loaded.

    Raises:
        ConfigurationError: ``before`` is not 0.
    """
    if before:
        raise ConfigurationError(
            f"{name} holds no triples now, and loading it with replace would remove the "
            f"{before} triple{'s' if before != 1 else ''} it loaded before: nothing was "
            "changed. Check the file (emptied or cut short?); to remove them on purpose, load "
            "it with `trails load --replace --allow-empty FILE` (in Python: "
            "kg.load(source, replace=..., allow_empty=True))")


def _held(record: str, node: str = "?r") -> str:
    """A pattern of the triple ``?s ?p ?o`` a record's node names."""
    s, p, o = _PARTS
    return f"{record} {{ {node} {s} ?s ; {p} ?p ; {o} ?o }}"


def replacing(quads: list[ox.Quad], key: str, target: ox.NamedNode | ox.DefaultGraph | None,
              name: str) -> str:
    """The one update that replaces what ``key`` loaded into ``target`` by ``quads``.

    Raises:
        ConfigurationError: the quads name graphs of their own (no one scope to replace in).
    """
    if target is None:
        raise ConfigurationError(
            f"{name} names graphs of its own, and a load replaces what it loaded before only "
            "in one scope: load it into a scope (scope=..., --scope NAME), or without "
            "replace; nothing was loaded")
    record = record_graph(target, key)
    prefix = f"{LOADED_BASE}{_scope_of(target)}:"
    into = ("{ ?s ?p ?o }" if isinstance(target, ox.DefaultGraph)
            else f"{{ GRAPH {target} {{ ?s ?p ?o }} }}")
    where = (f"{{ GRAPH {_held(str(record))} FILTER NOT EXISTS {{ GRAPH {_held('?other', '?x')} "
             f'FILTER(?other != {record} && STRSTARTS(STR(?other), "{prefix}")) }} }}')
    run = uuid.uuid4().hex  # names and a graph no other operation of the request uses
    # Only what a load brings is its own: a triple already in the graph that no load with
    # replace of the scope brought (the user's own, a plain load's, a document's triples) is
    # not recorded, so dropping it from the source never deletes it. Asked first, _BLOCK
    # triples an operation (a VALUES block a Virtuoso parser takes).
    settled = [q for q in quads if not _has_nodes(q)]
    pending = ox.NamedNode(f"urn:trails:loading:{run}")
    s, p, o = _PARTS
    updates = []
    for at in range(0, len(settled), _BLOCK):
        rows = " ".join(f"({q.subject} {q.predicate} {_term(q.object)})"
                        for q in settled[at:at + _BLOCK])
        updates.append(f"INSERT {{ GRAPH {pending} {{ _:n {s} ?s ; {p} ?p ; {o} ?o }} }} WHERE {{ "
                       f"VALUES (?s ?p ?o) {{ {rows} }} FILTER(NOT EXISTS {into} || EXISTS "
                       f"{{ GRAPH {_held('?by', '?was')} FILTER(STRSTARTS(STR(?by), "
                       f'"{prefix}")) }}) }}')
    updates += [f"DELETE {into} WHERE {where}", f"DROP SILENT GRAPH {record}"]
    if quads:
        # Blocks of _BLOCK triples: Virtuoso's parser takes ~4,990 in one.
        blocks = []
        for at in range(0, len(quads), _BLOCK):
            triples = " ".join(f"{q.subject} {q.predicate} {_term(q.object)} ."
                               for q in quads[at:at + _BLOCK])
            blocks.append(triples if isinstance(target, ox.DefaultGraph)
                          else f"GRAPH {target} {{ {triples} }}")
        blocks += _recorded([q for q in quads if _has_nodes(q)], record, run)
        updates.append("INSERT DATA { " + "\n".join(blocks) + " }")
    if settled:
        updates += [f"ADD SILENT {pending} TO {record}", f"DROP SILENT GRAPH {pending}"]
    return " ;\n".join(updates)


def _recorded(quads: list[ox.Quad], graph: ox.NamedNode, run: str) -> list[str]:
    """``GRAPH`` blocks naming each of ``quads`` through a node of its own, an IRI of this
    load (Virtuoso's ``INSERT DATA`` takes no blank node), _BLOCK triples a block."""
    s, p, o = _PARTS
    return [f"GRAPH {graph} {{ " + " ".join(
        f"<urn:trails:loaded-node:{run}:{at + n}> {s} {q.subject} ; {p} {q.predicate} ; "
        f"{o} {_term(q.object)} ." for n, q in enumerate(quads[at:at + _BLOCK])) + " }"
        for at in range(0, len(quads), _BLOCK)]


def _has_nodes(quad: ox.Quad) -> bool:
    """Whether the quad holds a blank node or a triple term: a file's blank nodes are new at
    each load (never already in the graph), and neither goes in a VALUES row."""
    return any(isinstance(term, (ox.BlankNode, ox.Triple))
               for term in (quad.subject, quad.object))


def _term(term: ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple) -> str:
    """``term`` as SPARQL writes it: a triple term in ``<<( )>>`` (its ``str`` has none)."""
    if isinstance(term, ox.Triple):
        return f"<<( {term.subject} {term.predicate} {_term(term.object)} )>>"
    return str(term)
