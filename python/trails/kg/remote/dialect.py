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
  protocol dataset, and the union view (``scopes=None``), ``len()`` and exports leave
  Virtuoso's own graphs (:data:`VIRTUOSO_SYSTEM_GRAPHS`) out with ``input:*-graph-exclude``
  pragmas and read the default scope's graph as the default graph, not as a named one.
- **The text's dataset is added to the protocol's.** ``FROM``/``FROM NAMED`` in a query add
  graphs to the ``default-graph-uri``/``named-graph-uri`` of the request where the protocol
  says they are replaced, and a request with ``default-graph-uri`` but no ``named-graph-uri``
  lets ``GRAPH`` reach every graph. Scoped queries are sent without their dataset clauses
  (:func:`~trails.kg.remote.rewrite.without_dataset_clauses`, checked by the parser; embedded,
  the scope's dataset overrides them) and always with a named-graph list
  (:data:`NO_NAMED_GRAPH` when the scopes bring no named graph).
- **Whole-store updates do nothing.** ``DROP ALL``, ``CLEAR ALL``, ``DROP NAMED`` and ``CLEAR
  NAMED`` answer HTTP 200 and leave every graph in place: they are refused
  (:class:`SparqlError`) before any request; drop graphs one at a time.
- Answers (read in :mod:`~trails.kg.remote.results`): ``ASK`` comes back as a one-column
  result set (``__ASK_RETVAL``), blank nodes in JSON results as ``nodeID://b10001``, results
  cut at ``ResultSetMaxRows`` are flagged by an ``X-SPARQL-MaxRows`` header (refused, never
  returned short), and a refused permission is HTTP 500 with ``SR186`` (a configuration error).
- Values: ``xsd:double`` comes back in Virtuoso's own lexical form (``"2.5E0"`` as ``"2.5"``,
  the same number); other typed literals, language tags and long strings round-trip exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

from trails.errors import InvalidArgumentError, SparqlError
from trails.kg.remote.rewrite import (
    PROLOGUE_MARK,
    whole_store_operations,
    without_dataset_clauses,
)

__all__ = [
    "DIALECTS",
    "NO_NAMED_GRAPH",
    "VIRTUOSO_DEFAULT_GRAPH",
    "VIRTUOSO_SYSTEM_GRAPHS",
    "Params",
    "check_dialect",
    "dataset",
    "is_permission_error",
    "pragmas",
    "virtuoso_plain",
    "virtuoso_scoped",
    "virtuoso_union",
    "virtuoso_update",
    "with_pragmas",
]

# Protocol parameters of one request: (name, value) pairs, a name may repeat.
Params = list[tuple[str, str]]

DIALECTS = ("standard", "virtuoso")
# The named graph that holds the store's default graph on a server that has none of its own.
VIRTUOSO_DEFAULT_GRAPH = "urn:trails:default-graph"
# A named graph nothing writes to: the named-graph list of a dataset that has no named graph.
NO_NAMED_GRAPH = "urn:trails:no-named-graph"
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


def pragmas(default_graph: str | None = None, *, exclude_default: Iterable[str] = (),
            exclude_named: Iterable[str] = ()) -> str:
    """Virtuoso ``DEFINE`` pragmas: the default graph, and graphs left out of the dataset.

    >>> pragmas("urn:d", exclude_named=["urn:d"])
    'DEFINE input:default-graph-uri <urn:d> DEFINE input:named-graph-exclude <urn:d>'
    """
    parts = [] if default_graph is None else [f"DEFINE input:default-graph-uri <{default_graph}>"]
    parts += [f"DEFINE input:default-graph-exclude <{g}>" for g in exclude_default]
    parts += [f"DEFINE input:named-graph-exclude <{g}>" for g in exclude_named]
    return " ".join(parts)


def with_pragmas(text: str, defines: str, prologue_mark: str) -> str:
    """``text`` (with or without the predeclared-prefix lines) with ``defines`` first.

    Pragmas must come before ``PREFIX``; they go on the prefix line (opened if the text has
    none), so the caller's text still starts on the third line and error positions still map.

    >>> with_pragmas("ASK {}", "DEFINE a:b 1", "#m\\n")
    '#m\\nDEFINE a:b 1\\nASK {}'
    >>> with_pragmas("#m\\nPREFIX x: <y>\\nASK {}", "DEFINE a:b 1", "#m\\n")
    '#m\\nDEFINE a:b 1 PREFIX x: <y>\\nASK {}'
    """
    if not defines:
        return text
    if text.startswith(prologue_mark):
        return f"{prologue_mark}{defines} {text[len(prologue_mark):]}"
    return f"{prologue_mark}{defines}\n{text}"


def dataset(default: list[str], named: list[str]) -> Params:
    """The protocol parameters of a dataset: its default graph's parts and its named graphs."""
    return ([("default-graph-uri", g) for g in default]
            + [("named-graph-uri", g) for g in named])


# -- Virtuoso: query and update texts and datasets ----------------------------------------------

def virtuoso_scoped(text: str, named: list[str], with_default: bool,
                    default_graph: str) -> tuple[str, Params]:
    """A query confined to the scopes whose graphs are ``named`` (and to the default scope's
    ``default_graph`` if ``with_default``): the text without dataset clauses, and a dataset
    that always lists named graphs.

    Raises:
        SparqlError, UnsafeFilterError: as :func:`~trails.kg.remote.rewrite.without_dataset_clauses`.
    """
    default = [*named, default_graph] if with_default else list(named)
    return without_dataset_clauses(text), dataset(default, named or [NO_NAMED_GRAPH])


def virtuoso_union(text: str, default_graph: str) -> str:
    """The union view: every graph but Virtuoso's own in the default graph; the named graphs
    without the default scope's graph (embedded, the default graph is not a named graph)."""
    return with_pragmas(text, pragmas(
        exclude_default=VIRTUOSO_SYSTEM_GRAPHS,
        exclude_named=[*VIRTUOSO_SYSTEM_GRAPHS, default_graph]), PROLOGUE_MARK)


def virtuoso_plain(text: str, default_graph: str) -> str:
    """The store as a dataset: the default scope's graph as the default graph, every other
    graph but Virtuoso's own as the named graphs (to count or export quads)."""
    return with_pragmas(text, pragmas(
        default_graph, exclude_named=[*VIRTUOSO_SYSTEM_GRAPHS, default_graph]), PROLOGUE_MARK)


def virtuoso_update(text: str, default_graph: str) -> str:
    """An update whose default graph is the default scope's graph.

    Raises:
        SparqlError: it drops or clears all graphs at once, which Virtuoso acknowledges
            without doing.
    """
    refused = whole_store_operations(text)
    if refused:
        raise SparqlError(
            f"Virtuoso answers {refused[0]!r} with success and leaves every graph in place, so "
            "trails refuses it; drop the graphs one at a time (DROP GRAPH <...>; CLEAR DEFAULT "
            "for the default scope)")
    return with_pragmas(text, pragmas(default_graph), PROLOGUE_MARK)


def is_permission_error(message: str) -> bool:
    """Whether a server's error text is Virtuoso refusing a permission (``SR186``)."""
    return "SR186" in message
