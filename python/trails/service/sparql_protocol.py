"""The SPARQL 1.1 Protocol, query side: reading a request, and writing its answer in the
format the client accepts.

Pure functions over text and pyoxigraph terms (no HTTP framework), so every rule is tested
without a server. A request's dataset (``default-graph-uri``, ``named-graph-uri``) may name
scope graphs only, the same ones as default and as named graphs: that is the dataset
``kg.query(..., scopes=...)`` builds, so such a request runs as those scopes (still confined
to the caller's key). Anything else is refused rather than answered over another dataset.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from trails.errors import InvalidArgumentError, PermissionDeniedError
from trails.kg.result import QueryResult
from trails.kg.terms import sparql_json
from trails.scopes import SCOPE_BASE, check_scope, scope_of_graph

__all__ = ["SparqlRequest", "choose_media_type", "parse_sparql_request", "render_answer",
           "service_description"]

FORM = "application/x-www-form-urlencoded"
QUERY_TYPE = "application/sparql-query"
UPDATE_TYPE = "application/sparql-update"
RESULTS_JSON = "application/sparql-results+json"

# Media types offered, the first of each list the default.
RESULT_TYPES = (RESULTS_JSON, "application/sparql-results+xml", "text/csv",
                "text/tab-separated-values", "application/json")
GRAPH_TYPES = ("application/n-triples", "text/turtle", "application/n-quads",
               "application/trig", "application/rdf+xml", "application/ld+json", "text/n3")
_RESULTS_FORMAT = {
    RESULTS_JSON: ox.QueryResultsFormat.JSON, "application/json": ox.QueryResultsFormat.JSON,
    "application/sparql-results+xml": ox.QueryResultsFormat.XML,
    "text/csv": ox.QueryResultsFormat.CSV,
    "text/tab-separated-values": ox.QueryResultsFormat.TSV}
_QUAD_FORMATS = ("application/n-quads", "application/trig")
_UPDATE_REFUSAL = (
    "this endpoint answers SPARQL queries only: updates are refused. Add documents with "
    "POST /ingest and remove them with DELETE /documents/{iri}")


@dataclass(frozen=True)
class SparqlRequest:
    """A query, and the scopes its dataset names (None: the protocol named no dataset)."""

    query: str
    scopes: list[str] | None


def parse_sparql_request(method: str, content_type: str | None,
                         params: Sequence[tuple[str, str]], body: bytes) -> SparqlRequest:
    """The query a protocol request carries: ``GET ?query=``, a form POST with ``query=``,
    or a POST of ``application/sparql-query``.

    Raises:
        PermissionDeniedError: the request is an update.
        InvalidArgumentError: no query, two queries, a body that is no UTF-8, another
            content type, or a dataset that is not a set of scope graphs.
    """
    media = (content_type or "").split(";")[0].strip().lower()
    fields = list(params)
    query: str | None = None
    if method == "POST":
        if media == UPDATE_TYPE:
            raise PermissionDeniedError(_UPDATE_REFUSAL)
        text = _utf8(body)
        if media == FORM:
            fields += urllib.parse.parse_qsl(text, keep_blank_values=True)
        elif media == QUERY_TYPE:
            query = text
        else:
            raise InvalidArgumentError(
                f"a SPARQL POST is {FORM} (query=...) or {QUERY_TYPE}; got "
                f"{media or 'no content type'!r}")
    names = [name for name, _ in fields]
    if "update" in names:
        raise PermissionDeniedError(_UPDATE_REFUSAL)
    queries = [value for name, value in fields if name == "query"]
    if query is not None:
        queries.append(query)
    if not queries:
        raise InvalidArgumentError("no SPARQL query: send it as ?query=..., a form field "
                                   f"query=..., or a {QUERY_TYPE} body")
    if len(queries) > 1:
        raise InvalidArgumentError("more than one SPARQL query in one request; send one")
    if not queries[0].strip():
        raise InvalidArgumentError("the SPARQL query is empty")
    defaults = [value for name, value in fields if name == "default-graph-uri"]
    named = [value for name, value in fields if name == "named-graph-uri"]
    return SparqlRequest(queries[0], _dataset_scopes(defaults, named))


def _utf8(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"the request body is not UTF-8 ({exc.reason} at byte "
                                   f"{exc.start}); send UTF-8") from None


def _dataset_scopes(defaults: list[str], named: list[str]) -> list[str] | None:
    if not defaults and not named:
        return None
    if set(defaults) != set(named):
        raise InvalidArgumentError(
            "default-graph-uri and named-graph-uri must name the same graphs here (the scopes "
            "to query, each as both); leave both out to query every scope your key grants")
    scopes = []
    for graph in dict.fromkeys(defaults):
        scope = scope_of_graph(graph)
        try:
            if scope is None:
                raise ValueError("not a scope graph")
            scopes.append(check_scope(scope))
        except ValueError:
            raise InvalidArgumentError(
                f"the dataset names {graph!r}, which is no scope's graph; name scopes as "
                f"{SCOPE_BASE}NAME") from None
    return scopes


def choose_media_type(accept: str | None, offered: Sequence[str]) -> str:
    """The offered type the ``Accept`` header prefers (q-values, ``type/*``, ``*/*``); the
    first offered when it names none of them (a lenient answer beats a 406)."""
    best, best_q = offered[0], 0.0
    for position, item in enumerate((accept or "").split(",")):
        parts = [part.strip() for part in item.split(";")]
        media = parts[0].lower()
        quality = 1.0
        for parameter in parts[1:]:
            key, _, value = parameter.partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        for candidate in offered:
            if _matches(media, candidate) and quality > best_q:
                best, best_q = candidate, quality - position * 1e-6  # earlier wins ties
                break
    return best


def _matches(pattern: str, media: str) -> bool:
    if pattern in ("*/*", media):
        return True
    kind, _, sub = pattern.partition("/")
    return sub == "*" and media.startswith(kind + "/")


def render_answer(output: QueryResult | bool | Sequence[ox.Triple],
                  accept: str | None) -> tuple[bytes, str]:
    """The answer's bytes and media type: SELECT and ASK as SPARQL results (JSON, XML, CSV,
    TSV), CONSTRUCT and DESCRIBE as RDF (N-Triples, Turtle, N-Quads, TriG, RDF/XML, JSON-LD,
    N3), whichever ``accept`` prefers."""
    if isinstance(output, (QueryResult, bool)):
        media = choose_media_type(accept, RESULT_TYPES)
        document = _results_json(output)
        if _RESULTS_FORMAT[media] is ox.QueryResultsFormat.JSON:
            return json.dumps(document).encode("utf-8"), media
        parsed = ox.parse_query_results(json.dumps(document).encode("utf-8"),
                                        format=ox.QueryResultsFormat.JSON)
        return parsed.serialize(format=_RESULTS_FORMAT[media]) or b"", media
    media = choose_media_type(accept, GRAPH_TYPES)
    rdf_format = ox.RdfFormat.from_media_type(media)
    if rdf_format is None:  # every offered type is one pyoxigraph knows
        raise InvalidArgumentError(f"no RDF format for {media!r}")
    items: list[Any] = list(output)
    if media in _QUAD_FORMATS:
        items = [ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in items]
    return ox.serialize(items, format=rdf_format) or b"", media


def _results_json(output: QueryResult | bool) -> dict[str, Any]:
    if isinstance(output, bool):
        return {"head": {}, "boolean": output}
    rows = [{name: sparql_json(term) for name, term in row.items() if term is not None}
            for row in output.raw]
    return {"head": {"vars": list(output.variables)}, "results": {"bindings": rows}}


def service_description(endpoint: str, union_default: bool) -> bytes:
    """The SPARQL service description (N-Triples) a GET without a query answers: what the
    endpoint speaks, and whether its default graph is the union of the scopes queried."""
    sd = "http://www.w3.org/ns/sparql-service-description#"
    node, kind = ox.NamedNode(endpoint), ox.NamedNode(
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    triples = [ox.Triple(node, kind, ox.NamedNode(sd + "Service")),
               ox.Triple(node, ox.NamedNode(sd + "endpoint"), node),
               ox.Triple(node, ox.NamedNode(sd + "supportedLanguage"),
                         ox.NamedNode(sd + "SPARQL11Query"))]
    if union_default:
        triples.append(ox.Triple(node, ox.NamedNode(sd + "feature"),
                                 ox.NamedNode(sd + "UnionDefaultGraph")))
    return ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) or b""
