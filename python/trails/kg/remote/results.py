"""What an endpoint sends back, read as the embedded graph returns it; what is sent to it.

Responses become the embedded graph's results (a :class:`QueryResult` of pyoxigraph terms, a
boolean, or triples); quads become ``INSERT DATA`` texts. Nothing here talks to a server.

Readings for Virtuoso 7 (see :mod:`trails.kg.remote.dialect`), harmless elsewhere: an ``ASK``
answered as a one-row result set is a boolean, blank node labels that are not labels
(``nodeID://b10001``) are made labels, and a result cut at the server's row limit
(``X-SPARQL-MaxRows``) is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

import pyoxigraph as ox

from trails.errors import ConfigurationError, EndpointRefusedError, SparqlError
from trails.kg.result import QueryResult, Triples

__all__ = ["Response", "batches", "canonical_booleans", "insert_data", "parse_response",
           "server_message"]

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


def parse_response(response: Response, url: str, form: str = "SELECT") -> QueryAnswer:
    """SPARQL results or RDF, by the response's content type; ``form`` is the query's.

    Raises:
        EndpointRefusedError: the body does not parse as its content type, or the type is
            neither (the URL names no SPARQL endpoint, or a proxy answers in its place), or
            it is another kind of answer than ``form`` asks for.
        SparqlError: the server cut the result at its row limit.
    """
    limit = response.headers.get("x-sparql-maxrows")
    if limit is not None:
        raise SparqlError(
            f"the SPARQL endpoint {url} cut the result at its limit of {limit} rows "
            "(X-SPARQL-MaxRows); trails does not return partial results. Raise the limit "
            "(Virtuoso: ResultSetMaxRows in the [SPARQL] section of virtuoso.ini) or narrow "
            "the query (LIMIT/OFFSET)")
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


def insert_data(quads: list[ox.Quad], default_graph: str | None = None, *,
                virtuoso: bool = False) -> str:
    """One update request adding ``quads`` (a ``GRAPH`` block per named graph).

    ``INSERT DATA``, or, when a quad holds a blank node, ``INSERT { ... } WHERE { }``: the same
    quads (one solution: each label is one new node), and the form Virtuoso accepts (its
    ``INSERT DATA`` refuses blank nodes). ``default_graph`` names the graph that holds the
    store's default graph on a server without one of its own. ``virtuoso``: Virtuoso 7 fails
    (HTTP 500, SR002) on a template with blank nodes in two ``GRAPH`` blocks, so each graph
    with blank nodes gets an operation of its own, and one blank node in two graphs, which
    would become two nodes, is refused.

    Raises:
        TypeError: a quad's graph is a blank node, which an update cannot name.
        ConfigurationError: ``virtuoso`` and a blank node in two graphs, or a NUL character
            in a literal of a graph that also gets blank nodes (Virtuoso cuts it off there).
    """
    by_graph: dict[str | None, list[str]] = {}
    blank = False
    homes: dict[ox.BlankNode, str | None] = {}
    nul: dict[str | None, ox.Literal] = {}
    for q in quads:
        graph = q.graph_name
        blank = blank or isinstance(q.subject, ox.BlankNode) or isinstance(q.object, ox.BlankNode)
        if isinstance(graph, ox.DefaultGraph):
            key = None if default_graph is None else f"<{default_graph}>"
        elif isinstance(graph, ox.NamedNode):
            key = str(graph)
        else:
            raise TypeError(f"a SPARQL update cannot name the blank-node graph {graph}; "
                            "use an IRI for the graph")
        by_graph.setdefault(key, []).append(f"{q.subject} {q.predicate} {q.object} .")
        if isinstance(q.object, ox.Literal) and "\x00" in q.object.value:
            nul.setdefault(key, q.object)
        for node in (q.subject, q.object):
            if isinstance(node, ox.BlankNode) and homes.setdefault(node, key) != key and virtuoso:
                raise ConfigurationError(
                    f"the blank node {node} is in two graphs ({homes[node] or 'default'} and "
                    f"{key or 'default'}); Virtuoso 7 cannot write one blank node into two "
                    "graphs, so nothing of this batch was sent: give it an IRI")
    parts = {key: " ".join(triples) if key is None else f"GRAPH {key} {{ {' '.join(triples)} }}"
             for key, triples in by_graph.items()}
    if not blank:
        return "INSERT DATA {\n" + "\n".join(parts.values()) + "\n}"
    if not virtuoso:
        return "INSERT {\n" + "\n".join(parts.values()) + "\n} WHERE { }"
    with_blanks = set(homes.values())
    for key, literal in nul.items():  # Virtuoso cuts it there in a template, not in DATA
        if key in with_blanks:
            raise ConfigurationError(
                f"the literal {literal} holds a NUL character, which Virtuoso 7 cuts off in an "
                "update that also writes blank nodes; nothing of this batch was sent: remove "
                "the NUL characters, or write this triple in a batch without blank nodes")
    plain = [part for key, part in parts.items() if key not in with_blanks]
    operations = [f"INSERT {{\n{parts[key]}\n}} WHERE {{ }}" for key in parts if key in with_blanks]
    operations += ["INSERT DATA {\n" + "\n".join(plain) + "\n}"] if plain else []
    return " ;\n".join(operations)
