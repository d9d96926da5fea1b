"""How a SPARQL server departs from the protocol as trails uses it: ``standard`` or ``virtuoso``.

``standard`` (``oxigraph serve``, Jena Fuseki...) needs nothing here. Virtuoso Open Source 7
differs in ways a client must know (each seen on 7.2.5, Debian's package, and each held by the
graph contract suite, ``tests/test_kg_contract.py``):

- **No default graph of its own.** A query without a dataset reads every graph as its default
  graph (Virtuoso's own graphs included) and ``GRAPH ?g`` ranges over all of them; an update
  without ``GRAPH`` fails ("No plain default graph specified in the preamble"). The store's
  default graph (the ``default`` scope) is therefore the named graph ``default_graph_uri``
  (:data:`VIRTUOSO_DEFAULT_GRAPH` unless given): quads in the default graph are written there,
  updates name it in a ``DEFINE input:default-graph-uri`` pragma, scoped queries list it in the
  protocol dataset. ``len()``, exports and the graph listing read ``GRAPH ?g`` without
  Virtuoso's own graphs (:data:`VIRTUOSO_SYSTEM_GRAPHS`), the default scope's graph read back
  as the default graph; the union view (``scopes=None``) is :func:`virtuoso_union`. Virtuoso's
  ``input:*-graph-exclude`` pragmas cannot help: they also hide constant ``GRAPH <g>``
  patterns, and ``named-graph-exclude`` empties a default graph set by a pragma.
- **The text's dataset is added to the protocol's.** ``FROM``/``FROM NAMED`` in a query add
  graphs to the ``default-graph-uri``/``named-graph-uri`` of the request where the protocol
  says they are replaced. Scoped queries are sent without their dataset clauses
  (:func:`~trails.kg.remote.rewrite.without_dataset_clauses`, checked by the parser; embedded,
  the scope's dataset overrides them), with the scopes' graphs as ``default-graph-uri``.
- **GRAPH is not confined by a dataset.** With a protocol dataset, ``ASK { GRAPH <g> {...} }``
  is true for a graph outside it (or one that does not exist), ``COUNT`` over such a pattern
  is not zero and a ``FILTER`` beside it is ignored; without ``named-graph-uri``, ``GRAPH``
  reaches every graph. A scoped query that uses ``GRAPH`` is refused
  (:class:`UnsafeFilterError`) before any request; the union view (``scopes=None``) keeps it.
- **A default graph hides the named graphs from updates.** An update whose default graph is
  set has no named graphs unless they are listed: ``update()`` names the graphs its text names
  after ``GRAPH`` (:func:`update_graphs`) in ``DEFINE input:named-graph-uri`` pragmas, and
  lists the store's graphs first (one query) only for ``GRAPH ?var``.
- **Blank nodes.** ``INSERT DATA`` refuses them, a template with blank nodes in two ``GRAPH``
  blocks fails (HTTP 500, SR002) and a template cuts a literal at a NUL character: see
  :func:`~trails.kg.remote.results.insert_data`.
- **Whole-store updates do nothing.** ``DROP ALL``, ``CLEAR ALL``, ``DROP NAMED`` and ``CLEAR
  NAMED`` answer HTTP 200 and leave every graph in place: they are refused
  (:class:`SparqlError`) before any request; drop graphs one at a time.
- Answers (read in :mod:`~trails.kg.remote.results`): ``ASK`` comes back as a one-column
  result set (``__ASK_RETVAL``), blank nodes in JSON results as ``nodeID://b10001``, results
  cut at ``ResultSetMaxRows`` are flagged by an ``X-SPARQL-MaxRows`` header (a plain SELECT
  is read again in pages, :mod:`~trails.kg.remote.paging`; any other is refused, never
  returned short), and a refused permission is HTTP 500 with ``SR186`` (a configuration error).
- Values: ``xsd:double`` comes back in Virtuoso's own lexical form (``"2.5E0"`` as ``"2.5"``,
  the same number), booleans as ``1``/``0`` (read back as ``true``/``false``); other typed
  literals, language tags and long strings round-trip exactly. ``BASE`` after ``PREFIX`` does
  not parse: a ``BASE`` that starts a query goes before the predeclared prefixes.
  ``"x"^^xsd:string`` in a query matches none of the strings trails writes (RDF 1.1 makes it
  the term ``"x"``): queries are sent with it written ``"x"`` (:func:`plain_strings`).
  ``sameTerm(?s, "x")`` holds of none of them either, and a date compares with a dateTime
  (SPARQL: never); neither is made up for.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from trails.errors import InvalidArgumentError, SparqlError, UnsafeFilterError
from trails.kg.remote.rewrite import (
    PROLOGUE_MARK,
    exclude_graphs,
    graph_terms,
    hoist_base,
    uses_graph,
    whole_store_operations,
    without_dataset_clauses,
)
from trails.kg.sparql_text import _OPAQUE, STRING, iris_only

__all__ = [
    "DIALECTS",
    "EMPTY_GRAPH",
    "VIRTUOSO_DEFAULT_GRAPH",
    "VIRTUOSO_REPLACE",
    "VIRTUOSO_SYSTEM_GRAPHS",
    "Params",
    "check_dialect",
    "dataset",
    "is_permission_error",
    "permission_hint",
    "plain_strings",
    "pragmas",
    "refuse_whole_store_updates",
    "update_graphs",
    "virtuoso_scoped",
    "virtuoso_store_select",
    "virtuoso_union",
    "virtuoso_update",
    "with_pragmas",
]

_PREFIX_DECLARATION = re.compile(r"PREFIX\s+([^\s:]*):\s*<([^<>\s]*)>", re.IGNORECASE)
_LOCAL_NAME = re.compile(r"[\w.-]*")
_XSD = "http://www.w3.org/2001/XMLSchema#"
# A string typed xsd:string (by IRI or by a prefixed name), else a string, an IRI or a comment
# (left as they are: what they hold is not code).
_TYPED_STRING = re.compile(rf"(?P<literal>{STRING})\s*\^\^\s*(?P<type><{_XSD}string>"
                           r"|(?:[A-Za-z][\w.-]*)?:string(?![\w-]|\.[\w-]))|" + _OPAQUE.pattern)

# Why a load with replace (ADR 51) is refused on Virtuoso 7: its one update asks of each
# triple whether the graph held it, which Virtuoso answers with nothing (so nothing would be
# recorded, and nothing replaced) or refuses past ~1,200 triples (SP031, its SQL too long);
# and its blank nodes would go into two graphs in one operation, which Virtuoso cannot write.
VIRTUOSO_REPLACE = ("Virtuoso 7 cannot run the one update a replace is (it answers the "
                    "question of which triples the graph held with nothing, and cannot write "
                    "a blank node into two graphs); load without replace, after removing what "
                    "the earlier load added (DROP or DELETE it in an update of your own)")

# Protocol parameters of one request: (name, value) pairs, a name may repeat.
Params = list[tuple[str, str]]

DIALECTS = ("standard", "virtuoso")
# The named graph that holds the store's default graph on a server that has none of its own.
VIRTUOSO_DEFAULT_GRAPH = "urn:trails:default-graph"
# A graph nothing writes to: the default graph of the union view of an empty store.
EMPTY_GRAPH = "urn:trails:no-graph"
# The graphs every new Virtuoso database holds for itself (its RDF views, LDP, URIQA).
VIRTUOSO_SYSTEM_GRAPHS = (
    "http://www.openlinksw.com/schemas/virtrdf#",
    "http://www.w3.org/ns/ldp#",
    "http://localuriqaserver/sparql",
)


def check_dialect(dialect: str) -> str:
    """``dialect`` if trails knows it.

    Raises:
        InvalidArgumentError: it does not.
    """
    if dialect not in DIALECTS:
        raise InvalidArgumentError(
            f"unknown SPARQL server dialect {dialect!r}; use one of {', '.join(DIALECTS)} "
            "('virtuoso' for Virtuoso 7, 'standard' for every other SPARQL 1.1 server)")
    return dialect


def pragmas(default_graph: str, named: Iterable[str] = ()) -> str:
    """Virtuoso ``DEFINE`` pragmas: the default graph, and the named graphs.

    >>> pragmas("urn:d", ["urn:g"])
    'DEFINE input:default-graph-uri <urn:d> DEFINE input:named-graph-uri <urn:g>'
    """
    return " ".join([f"DEFINE input:default-graph-uri <{default_graph}>",
                     *(f"DEFINE input:named-graph-uri <{g}>" for g in dict.fromkeys(named))])


def with_pragmas(text: str, defines: str, prologue_mark: str = PROLOGUE_MARK) -> str:
    """``text`` (with or without the predeclared-prefix lines) with ``defines`` first.

    Virtuoso takes pragmas, then ``BASE``, then ``PREFIX`` (a ``BASE`` after a ``PREFIX`` does
    not parse): the pragmas and a ``BASE`` that starts the caller's text go on the prefix line
    (opened if the text has none), so the caller's text still starts on the third line, its
    columns unchanged, and error positions still map.

    >>> with_pragmas("ASK {}", "DEFINE a:b 1", "#m\\n")
    '#m\\nDEFINE a:b 1\\nASK {}'
    >>> with_pragmas("#m\\nPREFIX x: <y>\\nBASE <z> ASK {}", "DEFINE a:b 1", "#m\\n")
    '#m\\nDEFINE a:b 1 BASE <z> PREFIX x: <y>\\n         ASK {}'
    """
    prefixes, caller = "", text
    if text.startswith(prologue_mark):
        prefixes, _, caller = text[len(prologue_mark):].partition("\n")
    base, caller = hoist_base(caller)
    line = " ".join(part for part in (defines, base, prefixes) if part)
    if not line:
        return text
    return f"{prologue_mark}{line}\n{caller}"


def dataset(default: list[str], named: list[str]) -> Params:
    """The protocol parameters of a dataset: its default graph's parts and its named graphs."""
    return ([("default-graph-uri", g) for g in default]
            + [("named-graph-uri", g) for g in named])


# -- Virtuoso: query and update texts and datasets ----------------------------------------------

def virtuoso_scoped(text: str, named: list[str], with_default: bool,
                    default_graph: str) -> tuple[str, Params]:
    """A query confined to the scopes whose graphs are ``named`` (and to the default scope's
    ``default_graph`` if ``with_default``): the text without dataset clauses, and the scopes'
    graphs as the default graph of the protocol dataset.

    ``GRAPH`` is refused: with a protocol dataset Virtuoso 7.2 does not hold it to the named
    graphs (seen: ``ASK { GRAPH <g> { ?s ?p ?o } }`` true for a graph outside the dataset, or
    that does not exist; ``COUNT`` over such a pattern not zero; a ``FILTER`` beside it
    ignored), so no rewrite of the text can be trusted to confine it.

    Raises:
        SparqlError: the query does not parse (as SPARQL 1.1).
        UnsafeFilterError: it uses GRAPH or SERVICE.
    """
    stripped = with_pragmas(without_dataset_clauses(plain_strings(text)), "")  # BASE first
    if uses_graph(stripped):
        raise UnsafeFilterError(
            "a query confined to scopes cannot use GRAPH on Virtuoso: Virtuoso 7 does not hold "
            "GRAPH to the scopes' graphs (ASK and COUNT see other graphs), so trails refuses it; "
            "query the scopes without GRAPH (each scope's triples form the default graph), or "
            "use scopes=None to see every graph")
    default = [*named, default_graph] if with_default else list(named)
    return stripped, dataset(default, [])


def virtuoso_union(text: str, default_graph: str,
                   store_graphs: Callable[[], list[str]]) -> tuple[str, Params]:
    """The union view: a query without GRAPH gets the store's graphs (``store_graphs()``, one
    more query) as its default graph. One with GRAPH is sent without a dataset (a dataset
    breaks GRAPH, see :func:`virtuoso_scoped`), each ``GRAPH`` skipping Virtuoso's graphs and
    the default scope's (embedded, the default graph is not a named graph); its default graph
    is then every graph, Virtuoso's own included (the ``input:*-graph-exclude`` pragmas that
    would leave them out also hide constant ``GRAPH <g>`` patterns).

    Raises:
        SparqlError, UnsafeFilterError: as :func:`~trails.kg.remote.rewrite.exclude_graphs`.
    """
    text = plain_strings(text)
    if uses_graph(text):
        excluded = exclude_graphs(text, [*VIRTUOSO_SYSTEM_GRAPHS, default_graph])
        return with_pragmas(excluded, ""), []
    return with_pragmas(text, ""), dataset(store_graphs() or [EMPTY_GRAPH], [])


def plain_strings(text: str) -> str:
    """``text`` with each ``"..."^^xsd:string`` written ``"..."``: one term in RDF 1.1, but
    Virtuoso 7 matches the typed form with none of the strings trails writes (seen:
    ``?doc meta:status "final"^^xsd:string`` selects nothing, ``"final"`` the document). A
    prefixed name is rewritten only where every declaration of its prefix names XSD."""
    declared: dict[str, set[str]] = {}
    for name, iri in _PREFIX_DECLARATION.findall(iris_only(text)):
        declared.setdefault(name, set()).add(iri)

    def plain(found: re.Match[str]) -> str:
        kind = found.group("type")
        if found.group("literal") is None or (
                kind[0] != "<" and declared.get(kind[: -len(":string")]) != {_XSD}):
            return found.group()
        return found.group("literal")

    return _TYPED_STRING.sub(plain, text)


def virtuoso_store_select(projection: str) -> str:
    """``SELECT projection`` over the quads ``?s ?p ?o ?g`` of every graph but Virtuoso's own,
    the default scope's graph among them (to count or export the store's quads)."""
    own = ", ".join(f"<{g}>" for g in VIRTUOSO_SYSTEM_GRAPHS)
    return f"SELECT {projection} WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER(?g NOT IN ({own})) }}"


def virtuoso_update(text: str, default_graph: str, named: Iterable[str]) -> str:
    """An update whose default graph is the default scope's graph and whose named graphs
    (for ``GRAPH`` in its ``WHERE``) are ``named``: with a default graph, Virtuoso gives an
    update no named graph unless they are listed."""
    return with_pragmas(text, pragmas(default_graph, [g for g in named if g != default_graph]))


def update_graphs(text: str) -> list[str] | None:
    """The graphs an update names after ``GRAPH`` (IRIs, or prefixed names it declares), or
    None when one is a variable or cannot be read for sure: then every graph must be listed.

    >>> update_graphs("PREFIX t: <urn:t:> DELETE WHERE { GRAPH t:m { ?s ?p ?o } GRAPH <urn:a> {} }")
    ['urn:t:m', 'urn:a']
    >>> update_graphs("DELETE WHERE { GRAPH ?g { ?s ?p ?o } }") is None
    True
    """
    declared: dict[str, str] = {}
    for name, iri in _PREFIX_DECLARATION.findall(text):
        if declared.setdefault(name, iri) != iri:
            return None  # declared twice (or in a string): no guessing
    names = []
    for term in graph_terms(text):
        prefix, colon, local = term.partition(":")
        if term.startswith("<") and ":" in term:
            names.append(term[1:-1])
        elif colon and prefix in declared and _LOCAL_NAME.fullmatch(local):
            names.append(declared[prefix] + local)
        else:
            return None  # a variable, a relative IRI or an escaped name
    return names


def refuse_whole_store_updates(text: str) -> None:
    """Raise if the update ``text`` drops or clears all graphs at once.

    Raises:
        SparqlError: it does; Virtuoso acknowledges that without doing it.
    """
    refused = whole_store_operations(text)
    if refused:
        raise SparqlError(
            f"Virtuoso answers {refused[0]!r} with success and leaves every graph in place, so "
            "trails refuses it; drop the graphs one at a time (DROP GRAPH <...>; CLEAR DEFAULT "
            "for the default scope)")


def is_permission_error(message: str) -> bool:
    """Whether a server's error text is Virtuoso refusing a permission (``SR186``)."""
    return "SR186" in message


def permission_hint(message: str) -> str:
    """How to give Virtuoso's anonymous endpoint the permission ``message`` says it lacks."""
    if not is_permission_error(message):
        return ""
    return (" Virtuoso: grant updates to the anonymous endpoint (isql: GRANT SPARQL_UPDATE TO "
            '"SPARQL";) or send credentials to /sparql-auth (auth=httpx.DigestAuth(...)).')
