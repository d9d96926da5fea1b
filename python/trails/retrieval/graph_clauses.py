"""Why a filter selected nothing, when a ``GRAPH`` clause names no graph the scopes hold.

A filter runs on the searched scopes' graphs alone (adr/0006): the default scope is the
store's default graph, scope ``legal`` the named graph ``<urn:trails:scope:legal>``; these
named graphs are the only ones a ``GRAPH`` clause can match. So searching the default scope,
``GRAPH ?g { ?iri schema:isPartOf ?doc }`` matches nothing (the default graph is no named
graph), and so does ``GRAPH <urn:trails:scope:legal> { … }`` unless ``legal`` is searched.
Only for a filter that selected nothing, :func:`graph_notes` names each such clause, with
what to write instead. A clause that need not match for the filter to (in an ``OPTIONAL``,
``MINUS``, ``EXISTS``, ``UNION`` branch or subquery) gives no note, nor does ``GRAPH ?g``
when a searched scope has a named graph: it may match nothing for other reasons.

:func:`required` is the test, shared with retrieval/mismatched.py's comparisons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyoxigraph as ox

from trails.kg.base import KnowledgeGraph, select
from trails.kg.bindings import check_bindings
from trails.kg.sparql_text import code_only, iris_only
from trails.kg.variables import _closing
from trails.scopes import DEFAULT_SCOPE, SCOPE_BASE, scope_of_graph

__all__ = ["graph_notes", "required"]

_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)
_GRAPH = re.compile(r"\bGRAPH\s+([?$]\w+|<[^<>\s]*>|[A-Za-z][\w.-]*:[\w%.-]*|:[\w%.-]+)\s*\{",
                    re.IGNORECASE)
# A group that need not match for the one around it to: its keyword ends the text before it.
_OPTIONAL_GROUP = re.compile(r"\b(?:OPTIONAL|MINUS|EXISTS|UNION|SERVICE(?:\s+SILENT)?\s+\S+)$",
                             re.IGNORECASE)
_UNION_NEXT = re.compile(r"\s*UNION\b", re.IGNORECASE)
_SUBQUERY = re.compile(r"\s*SELECT\b", re.IGNORECASE)


def required(code: str, start: int, at: int) -> bool:
    """Whether the query's solutions all match the pattern at ``at``: every group around it
    (from ``start``, the query's body) is a plain or ``GRAPH`` group, none an ``OPTIONAL``,
    ``MINUS``, ``(NOT) EXISTS`` or ``SERVICE`` group, a ``UNION`` branch or a subquery (which
    an aggregate answers even when nothing matched)."""
    opened: list[int] = []
    for index in range(start, at):
        if code[index] == "{":
            opened.append(index)
        elif code[index] == "}" and opened:
            opened.pop()
    for open_at in opened:
        before = code[start:open_at].rstrip()
        if _OPTIONAL_GROUP.search(before[-40:]) or _SUBQUERY.match(code, open_at + 1):
            return False
        if _UNION_NEXT.match(code, _closing(code, open_at, "{", "}") + 1):
            return False
    return True


def graph_notes(kg: KnowledgeGraph, sparql_filter: str, bindings: Mapping[str, Any] | None,
                scopes: Sequence[str] | None) -> list[str]:
    """A note for each ``GRAPH`` clause the filter needs that no graph of ``scopes`` can match."""
    if scopes is None:  # the administrator's view: every graph
        return []
    code = code_only(sparql_filter)
    body = _SELECT.search(code)
    if body is None:
        return []
    named = {SCOPE_BASE + s for s in scopes if s != DEFAULT_SCOPE}
    searched = f"the scope{'s' if len(scopes) > 1 else ''} {', '.join(scopes)}"
    notes = []
    for match in _GRAPH.finditer(iris_only(sparql_filter), body.start()):
        if not required(code, body.start(), match.start()):
            continue
        name = match.group(1)
        if name[0] in "?$" and name[1:] not in (bindings or {}):
            if not named:
                notes.append(
                    f"nothing matched: GRAPH {name} {{ ... }} matches only named graphs, and "
                    f"{searched} has none: the default scope's triples are in the default "
                    "graph, which patterns outside any GRAPH clause match; drop the GRAPH "
                    "clause and keep its patterns, or pass scope= a named scope to search "
                    "its graph")
            continue
        iri = _iri(kg, sparql_filter[:body.start()], name, bindings, scopes)
        if iri is None or iri in named:
            continue
        shown = name if name == f"<{iri}>" else f"{name} (<{iri}>)"
        notes.append(f"nothing matched: GRAPH {shown} {_why_not(iri, searched)}")
    return list(dict.fromkeys(notes))


def _iri(kg: KnowledgeGraph, prologue: str, name: str, bindings: Mapping[str, Any] | None,
         scopes: Sequence[str]) -> str | None:
    """The IRI a clause's graph name stands for (written, or bound); None for another term."""
    term: object
    if name[0] in "?$":
        term = check_bindings({name[1:]: (bindings or {})[name[1:]]})[name[1:]]
    else:
        try:
            term = select(kg, f"{prologue}\nSELECT ?t WHERE {{ BIND({name} AS ?t) }}",
                          scopes=scopes).raw[0].get("t")
        except Exception:  # noqa: BLE001 - a name the probe cannot read says nothing
            return None
    return term.value if isinstance(term, ox.NamedNode) else None


def _why_not(iri: str, searched: str) -> str:
    scope = scope_of_graph(iri)
    if scope == DEFAULT_SCOPE:
        return ("names no graph: the default scope's triples are in the default "
                "graph, which patterns outside any GRAPH clause match; drop the GRAPH clause "
                "and keep its patterns")
    if scope:
        return (f"is the graph of the scope {scope}, and the filter reads only "
                f"{searched}; pass scope={scope!r} (or a list naming it) to search it")
    return (f"is no graph of {searched}: a filter reads only the searched scopes' "
            "graphs (the default scope's is the default graph, scope NAME's "
            f"<{SCOPE_BASE}NAME>); drop the GRAPH clause and keep its patterns, or name the "
            "graph of a scope passed in scope=")
