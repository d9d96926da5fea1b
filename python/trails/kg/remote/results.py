"""What an endpoint sends back, read as the embedded graph returns it; what is sent to it.

Responses become the embedded graph's results (a :class:`QueryResult` of pyoxigraph terms, a
boolean, or triples); quads become ``INSERT DATA`` texts. Nothing here talks to a server.

Readings for Virtuoso 7 (see :mod:`trails.kg.remote.dialect`), harmless elsewhere: an ``ASK``
answered as a one-row result set is a boolean, blank node labels that are not labels
(``nodeID://b10001``) are made labels, and a result cut at the server's row limit
(``X-SPARQL-MaxRows``) is refused (:mod:`trails.kg.remote.paging` reads a plain SELECT's
result in pages instead).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

import pyoxigraph as ox

from trails.errors import ConfigurationError, EndpointRefusedError, SparqlError
from trails.kg.result import QueryResult, Triples

__all__ = ["Response", "batches", "canonical_booleans", "cut_error", "insert_data",
           "insert_requests", "parse_response", "server_message"]

_JSON_RESULTS = "application/sparql-results+json"
_NOT_IN_LABEL = re.compile(r"[^A-Za-z0-9_]")
# Virtuoso's name for the one column of an ASK answered as a result set.
_ASK_COLUMN = "__ASK_RETVAL"

# What a SPARQL query returns: SELECT -> QueryResult, ASK -> bool, CONSTRUCT -> triples.
QueryAnswer = QueryResult | bool | list[ox.Triple]


class Response(Protocol):
    """The parts of an HTTP response read here (``httpx.Response`` is one)."""

    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...
    @property
    def text(self) -> str: ...
    @property
    def reason_phrase(self) -> str: ...


def server_message(response: Response) -> str:
    """The server's explanation (its body, or else the status phrase), cut to 600 characters."""
    text = response.text.strip() or response.reason_phrase
    return text if len(text) <= 600 else text[:600] + "…"


def parse_response(response: Response, url: str, form: str = "SELECT", *,
                   partial: bool = False) -> QueryAnswer:
    """SPARQL results or RDF, by the response's content type; ``form`` is the query's.
    ``partial``: a result the server cut is read as it came (to learn its variables).

    Raises:
        EndpointRefusedError: the body does not parse as its content type, or the type is
            neither (the URL names no SPARQL endpoint, or a proxy answers in its place), or
            it is another kind of answer than ``form`` asks for.
        SparqlError: the server cut the result at its row limit (unless ``partial``).
    """
    limit = response.headers.get("x-sparql-maxrows")
    if limit is not None and not partial:
        raise cut_error(url, limit)
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    content = response.content
    if media == _JSON_RESULTS and b'"bnode"' in content:
        content = _labelled_blank_nodes(content)
    try:
        answer = _parse(content, media)
    except SyntaxError as exc:
        raise EndpointRefusedError(
            f"the SPARQL endpoint {url} sent results that do not parse as {media}: {exc}. "
            f"Check that the URL names a SPARQL endpoint: {_sample(response)}") from exc
    if answer is None:
        raise EndpointRefusedError(
            f"the SPARQL endpoint {url} answered with {media or 'no content type'}, neither "
            "SPARQL results nor RDF. Check that the URL names a SPARQL endpoint, not a web page "
            f"or a proxy's login page: {_sample(response)}")
    if form == "ASK" and isinstance(answer, QueryResult) and answer.variables == [_ASK_COLUMN]:
        return any(row.get(_ASK_COLUMN) for row in answer.rows)
    # Solutions for a CONSTRUCT, triples for a SELECT: no answer to the query asked, which
    # would reach the caller as the wrong kind of value.
    kind, wanted = _ANSWERS.get(form, (QueryResult, "solutions"))
    if not isinstance(answer, kind):
        got = next(words for each, words in _ANSWERS.values() if isinstance(answer, each))
        raise EndpointRefusedError(
            f"the SPARQL endpoint {url} answered {'an' if form[0] in 'AEIOU' else 'a'} "
            f"{form} query with {got} ({media}), not "
            f"{wanted}. Check that the URL names a SPARQL endpoint and that its dialect is "
            "the server's (dialect=)")
    return answer


def cut_error(url: str, limit: str, why: str = "") -> SparqlError:
    """The refusal of a result the server cut at its row limit of ``limit`` rows; ``why``:
    why it was not read in pages instead (:mod:`trails.kg.remote.paging`)."""
    return SparqlError(
        f"the SPARQL endpoint {url} cut the result at its limit of {limit} rows "
        f"(X-SPARQL-MaxRows){why}; trails does not return partial results. Raise the limit "
        "(Virtuoso: ResultSetMaxRows in the [SPARQL] section of virtuoso.ini) or narrow "
        "the query (LIMIT/OFFSET)")


# What each query form is answered with (and, for a message, how it is called).
_ANSWERS: dict[str, tuple[type, str]] = {
    "ASK": (bool, "a boolean"), "CONSTRUCT": (list, "triples"), "DESCRIBE": (list, "triples"),
    "SELECT": (QueryResult, "solutions")}


def _sample(response: Response) -> str:
    """The start of what came instead of an answer, for the message."""
    return f"it sent {server_message(response)[:200]!r}"


_BOOLEAN = ox.NamedNode("http://www.w3.org/2001/XMLSchema#boolean")
_CANONICAL = {"1": ox.Literal("true", datatype=_BOOLEAN), "0": ox.Literal("false", datatype=_BOOLEAN)}


def canonical_booleans(answer: QueryAnswer) -> QueryAnswer:
    """``answer`` with ``"1"``/``"0"`` booleans in their canonical form ``true``/``false``
    (the same values: Virtuoso stores booleans as numbers and writes ``true`` back as ``1``).
    """
    def canonical(term: ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple | None) -> Any:
        if isinstance(term, ox.Literal) and term.datatype == _BOOLEAN:
            return _CANONICAL.get(term.value, term)
        return term

    if isinstance(answer, QueryResult):
        return QueryResult(answer.variables, [{n: canonical(t) for n, t in row.items()}
                                              for row in answer.raw])
    if isinstance(answer, list):
        return Triples(ox.Triple(t.subject, t.predicate, canonical(t.object)) for t in answer)
    return answer


def _labelled_blank_nodes(content: bytes) -> bytes:
    """JSON results whose blank node values are valid labels (``nodeID://b1`` -> ``b1``);
    distinct values stay distinct unless they differ only in characters a label cannot hold."""
    try:
        document = json.loads(content)
        bindings = document["results"]["bindings"]
    except (ValueError, KeyError, TypeError):
        return content  # the parser reports what is wrong
    for row in bindings:
        for term in row.values() if isinstance(row, dict) else ():
            if isinstance(term, dict) and term.get("type") == "bnode":
                term["value"] = _label(str(term.get("value", "")))
    return json.dumps(document).encode("utf-8")


def _label(value: str) -> str:
    value = value.removeprefix("nodeID://")
    return _NOT_IN_LABEL.sub("_", value) or "b"


def _parse(content: bytes, media: str) -> QueryAnswer | None:
    results_format = ox.QueryResultsFormat.from_media_type(media) if media else None
    if results_format is not None:
        parsed = ox.parse_query_results(content, results_format)
        if isinstance(parsed, ox.QueryBoolean):
            return bool(parsed)
        variables = [v.value for v in parsed.variables]
        return QueryResult(variables, [{n: s[n] for n in variables} for s in parsed])
    rdf_format = ox.RdfFormat.from_media_type(media) if media else None
    if rdf_format is not None:
        return Triples(ox.Triple(q.subject, q.predicate, q.object)
                       for q in ox.parse(content, rdf_format))
    return None


def batches(quads: Iterable[ox.Quad], size: int) -> Iterator[list[ox.Quad]]:
    """``quads`` in lists of at most ``size``."""
    batch: list[ox.Quad] = []
    for quad in quads:
        batch.append(quad)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# Virtuoso 7 parses at most ~4,990 triples in one block of an update (its parser's stack:
# "memory exhausted"), and compiles a request's operations that write blank nodes into one code
# vector of at most 32 KB (SQ199, past ~4,000 such triples): triples go in blocks, those with
# blank nodes in operations and requests, of these sizes.
VIRTUOSO_BLOCK = 1000
VIRTUOSO_TEMPLATE = 200
VIRTUOSO_REQUEST = 2000


def insert_data(quads: list[ox.Quad], default_graph: str | None = None, *,
                virtuoso: bool = False) -> str:
    """One update request adding ``quads`` (a ``GRAPH`` block per named graph).

    ``INSERT DATA``, or, when a quad holds a blank node, ``INSERT { ... } WHERE { }``: the same
    quads (one solution: each label is one new node), and the form Virtuoso accepts (its
    ``INSERT DATA`` refuses blank nodes). ``default_graph`` names the graph that holds the
    store's default graph on a server without one of its own. ``virtuoso``: the triples
    without blank nodes go in ``INSERT DATA`` blocks of at most :data:`VIRTUOSO_BLOCK`; those
    with blank nodes in operations of their own, each blank node's triples in one (an
    operation per graph: Virtuoso fails, HTTP 500 SR002, on a template with blank nodes in
    two ``GRAPH`` blocks), about :data:`VIRTUOSO_TEMPLATE` triples each. One blank node in
    two graphs, which would become two nodes, is refused.

    Raises:
        TypeError: a quad's graph is a blank node, which an update cannot name.
        ConfigurationError: ``virtuoso`` and a blank node in two graphs, or a NUL character
            in a literal of a triple with a blank node (Virtuoso cuts it off there).
    """
    by_graph, blanks = _triples(quads, default_graph, virtuoso)
    if virtuoso:
        return " ;\n".join(text for text, _ in _virtuoso_operations(by_graph, blanks))
    for key, rows in blanks.items():
        by_graph.setdefault(key, []).extend(triple for triple, _ in rows)
    parts = [_block(key, triples) for key, triples in by_graph.items()]
    form = "INSERT {\n%s\n} WHERE { }" if blanks else "INSERT DATA {\n%s\n}"
    return form % "\n".join(parts)


def insert_requests(quads: list[ox.Quad], default_graph: str | None = None, *,
                    virtuoso: bool = False) -> list[str]:
    """The update requests adding ``quads``: the one of :func:`insert_data`, or on Virtuoso
    as many as its compiler takes, each with at most about :data:`VIRTUOSO_REQUEST` triples
    written with blank nodes (a request's operations compile into one code vector: SQ199
    past ~4,000 of them). Each request is applied whole; the triples without blank nodes all
    go in the first. Everything is checked before any text is made.

    Raises:
        as :func:`insert_data`.
    """
    if not virtuoso:
        return [insert_data(quads, default_graph)]
    by_graph, blanks = _triples(quads, default_graph, virtuoso)
    requests: list[list[str]] = [[]]
    held = 0
    for operation, size in _virtuoso_operations(by_graph, blanks):
        if size and held and held + size > VIRTUOSO_REQUEST:
            requests.append([])
            held = 0
        requests[-1].append(operation)
        held += size
    return [" ;\n".join(request) for request in requests if request]


Rows = list[tuple[str, tuple[ox.BlankNode, ...]]]


def _triples(quads: list[ox.Quad], default_graph: str | None, virtuoso: bool,
             ) -> tuple[dict[str | None, list[str]], dict[str | None, Rows]]:
    """Each graph's triples as text: those without blank nodes, and those with them (with
    their blank nodes). Raises as :func:`insert_data`."""
    by_graph: dict[str | None, list[str]] = {}
    blanks: dict[str | None, Rows] = {}
    homes: dict[ox.BlankNode, str | None] = {}
    for q in quads:
        graph = q.graph_name
        if isinstance(graph, ox.DefaultGraph):
            key = None if default_graph is None else f"<{default_graph}>"
        elif isinstance(graph, ox.NamedNode):
            key = str(graph)
        else:
            raise TypeError(f"a SPARQL update cannot name the blank-node graph {graph}; "
                            "use an IRI for the graph")
        triple = f"{q.subject} {q.predicate} {q.object} ."
        nodes = tuple(n for n in (q.subject, q.object) if isinstance(n, ox.BlankNode))
        if not nodes:
            by_graph.setdefault(key, []).append(triple)
            continue
        blanks.setdefault(key, []).append((triple, nodes))
        for node in nodes:
            if homes.setdefault(node, key) != key and virtuoso:
                raise ConfigurationError(
                    f"the blank node {node} is in two graphs ({homes[node] or 'default'} and "
                    f"{key or 'default'}); Virtuoso 7 cannot write one blank node into two "
                    "graphs, so nothing of this batch was sent: give it an IRI")
        if virtuoso and isinstance(q.object, ox.Literal) and "\x00" in q.object.value:
            raise ConfigurationError(
                f"the literal {q.object} holds a NUL character, which Virtuoso 7 cuts off in "
                "a triple with a blank node; nothing of this batch was sent: remove the NUL "
                "characters, or give the blank node an IRI")
    return by_graph, blanks


def _virtuoso_operations(by_graph: dict[str | None, list[str]],
                         blanks: dict[str | None, Rows]) -> list[tuple[str, int]]:
    """Virtuoso's operations, each with how many triples with blank nodes it writes: an
    ``INSERT {...} WHERE { }`` per group of them, then the ``INSERT DATA`` of the others, in
    blocks."""
    operations = [(f"INSERT {{\n{_block(key, triples)}\n}} WHERE {{ }}", len(triples))
                  for key, rows in blanks.items() for triples in _together(rows)]
    blocks = [_block(key, triples[at:at + VIRTUOSO_BLOCK])
              for key, triples in by_graph.items() for at in range(0, len(triples), VIRTUOSO_BLOCK)]
    return operations + ([("INSERT DATA {\n" + "\n".join(blocks) + "\n}", 0)] if blocks else [])


def _block(key: str | None, triples: list[str]) -> str:
    return " ".join(triples) if key is None else f"GRAPH {key} {{ {' '.join(triples)} }}"


def _together(rows: list[tuple[str, tuple[ox.BlankNode, ...]]]) -> Iterator[list[str]]:
    """The triples of ``rows`` in groups of about :data:`VIRTUOSO_TEMPLATE`, the triples of
    each blank node in one group (an operation makes a node of each label: two would make
    two). A blank node with more triples than that is one larger group."""
    parent: dict[ox.BlankNode, ox.BlankNode] = {}

    def root(node: ox.BlankNode) -> ox.BlankNode:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for _, nodes in rows:
        for other in nodes[1:]:
            parent[root(other)] = root(nodes[0])
    joined: dict[ox.BlankNode, list[str]] = {}
    for triple, nodes in rows:
        joined.setdefault(root(nodes[0]), []).append(triple)
    group: list[str] = []
    for triples in joined.values():
        if group and len(group) + len(triples) > VIRTUOSO_TEMPLATE:
            yield group
            group = []
        group += triples
    if group:
        yield group
