"""The SPARQL 1.1 Protocol, query side: reading a request, and writing its answer in the
format the client accepts.

Pure functions over text and pyoxigraph terms (no HTTP framework), so every rule is tested
without a server. A request's dataset (``default-graph-uri``, ``named-graph-uri``) is read as
the protocol defines it: the graphs named as default make the default graph, those named as
named are the named graphs; :func:`trails.service.requests.confine_dataset` then checks them
against the caller's key.
"""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from trails.errors import InvalidArgumentError, NotAcceptableError, PermissionDeniedError
from trails.kg.result import QueryResult, results_json
from trails.kg.sparql_text import code_only, iris_only
from trails.scopes import SCOPE_BASE

__all__ = ["SparqlRequest", "acceptable_types", "choose_media_type", "form_fields",
           "parse_sparql_request", "render_answer", "service_description", "with_text_dataset"]

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
_XML_TYPES = ("application/sparql-results+xml", "application/rdf+xml")
# What XML 1.0 forbids, even escaped: C0 controls but tab, newline and carriage return.
_NOT_IN_XML = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")
# A dataset clause (read in the text with its strings and comments blanked, IRIs kept) and
# the query form that ends the prologue (read with IRIs blanked too).
_DATASET_CLAUSE = re.compile(  # "FROM<g>" needs no space: an IRI ends a keyword
    r"(?<![?$:@\w.-])FROM(?:\s+|(?=<))(NAMED(?:\s+|(?=<)))?(<[^>]*>|[^\s{}<]+)",
    re.IGNORECASE)
_FROM = re.compile(r"(?<![?$:@\w.-])FROM(?![\w:-])", re.IGNORECASE)
_FORM = re.compile(r"(?<![?$:@\w.-])(SELECT|ASK|CONSTRUCT|DESCRIBE)(?![\w:-])", re.IGNORECASE)
_UPDATE_REFUSAL = (
    "this endpoint answers SPARQL queries only: updates are refused. Add documents with "
    "POST /ingest and remove them with DELETE /documents/{iri}")


@dataclass(frozen=True)
class SparqlRequest:
    """A query and the dataset the request names: the graph IRIs of its default graph and
    its named graphs (both None: the request named no dataset; one named, the other empty),
    named by the protocol or, without one, by the query's ``FROM``/``FROM NAMED``."""

    query: str
    default_graphs: list[str] | None = None
    named_graphs: list[str] | None = None
    in_text: bool = False  # the dataset is the query's FROM/FROM NAMED, not the protocol's


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
        charset = re.search(r";\s*charset\s*=\s*\"?([^\s;\"]+)", content_type or "", re.IGNORECASE)
        if charset and charset.group(1).lower() not in ("utf-8", "utf8"):
            raise InvalidArgumentError(
                f"the request body is {charset.group(1)}; send it as UTF-8 (charset=UTF-8)")
        text = _utf8(body)
        if media == FORM:
            fields += form_fields(text, "the request body")
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
        others = sorted({name for name in names} - {"default-graph-uri", "named-graph-uri"})
        sent = (f" (the request has {', '.join(map(repr, others))}, which this endpoint does not "
                "read)" if others else "")
        raise InvalidArgumentError(f"no SPARQL query{sent}: send it as ?query=..., a form field "
                                   f"query=..., or a {QUERY_TYPE} body")
    if len(queries) > 1:
        raise InvalidArgumentError("more than one SPARQL query in one request; send one")
    if not queries[0].strip():
        raise InvalidArgumentError("the SPARQL query is empty")
    defaults = _graph_iris(fields, "default-graph-uri")
    named = _graph_iris(fields, "named-graph-uri")
    if not defaults and not named:
        return SparqlRequest(queries[0])
    return SparqlRequest(queries[0], defaults, named)


def with_text_dataset(request: SparqlRequest, prefixes: Mapping[str, str],
                      base_iri: str | None) -> SparqlRequest:
    """``request`` with the dataset its query's ``FROM``/``FROM NAMED`` clauses name, when
    the protocol names none (a protocol dataset overrides them): the graphs of ``FROM`` make
    the default graph and those of ``FROM NAMED`` are the named graphs, as SPARQL defines
    it, rather than the key's scopes (an answer from other graphs than those the query
    names). Prefixed names and relative IRIs resolve as the parser resolves them.

    Raises:
        InvalidArgumentError: a clause whose graph is no IRI.
    """
    if request.default_graphs is not None or request.named_graphs is not None:
        return request
    text = request.query
    keywords = len(_FROM.findall(code_only(text)))
    if not keywords:
        return request
    form = _FORM.search(code_only(text))
    prologue = text[:form.start()] if form else ""
    clauses = list(_DATASET_CLAUSE.finditer(iris_only(text)))
    graphs: tuple[list[str], list[str]] = ([], [])
    for clause in clauses:
        iri = _resolved(prologue, clause.group(2), prefixes, base_iri)
        graphs[bool(clause.group(1))].append(iri)
    if len(clauses) != keywords:
        raise InvalidArgumentError(
            "the FROM clauses of this query could not be read; name its graphs with "
            "default-graph-uri and named-graph-uri instead")
    return dataclasses.replace(request, default_graphs=list(dict.fromkeys(graphs[0])),
                               named_graphs=list(dict.fromkeys(graphs[1])), in_text=True)


def _resolved(prologue: str, term: str, prefixes: Mapping[str, str],
              base_iri: str | None) -> str:
    """The IRI ``term`` (``<...>`` or a prefixed name) names after ``prologue``, as the
    parser reads it (evaluated on an empty store: a VALUES of one term)."""
    try:
        solutions = ox.Store().query(f"{prologue} SELECT ?g {{ VALUES ?g {{ {term} }} }}",
                                     prefixes=dict(prefixes), base_iri=base_iri)
        graph = next(iter(solutions))["g"] if isinstance(solutions, ox.QuerySolutions) else None
    except (SyntaxError, ValueError, StopIteration):
        graph = None
    if not isinstance(graph, ox.NamedNode):
        raise InvalidArgumentError(
            f"FROM {term} names no graph: a dataset clause takes an IRI (<...> or a "
            "prefixed name)")
    return graph.value


def form_fields(encoded: str | bytes, where: str) -> list[tuple[str, str]]:
    """The fields of URL-encoded ``encoded`` (a query string, a form body; ``where`` names
    it), each decoded as UTF-8 strictly: a byte that is no UTF-8 (``caf%E9`` for "café" in
    Latin-1) would otherwise become U+FFFD, and the query ask for another text than sent.

    Raises:
        InvalidArgumentError: a field that is no UTF-8, percent-encoded or not.
    """
    text = encoded if isinstance(encoded, str) else _utf8(encoded, where)
    try:
        return urllib.parse.parse_qsl(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"{where} percent-encodes bytes that are not UTF-8 ({exc.reason}: "
            f"{exc.object[exc.start:exc.end]!r}); percent-encode the UTF-8 bytes of the text "
            "(é is %C3%A9)") from None


def _utf8(body: bytes, where: str = "the request body") -> str:
    """``body`` as UTF-8 text, without the byte-order mark an editor may have put first (a
    query file saved on Windows): the parser would stop at it with no word of why."""
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"{where} is not UTF-8 ({exc.reason} at byte "
                                   f"{exc.start}); send UTF-8") from None


def _graph_iris(fields: Sequence[tuple[str, str]], parameter: str) -> list[str]:
    """The distinct graph IRIs a dataset parameter names, each checked to be an IRI."""
    iris = list(dict.fromkeys(value.strip() for name, value in fields if name == parameter))
    for iri in iris:
        try:
            ox.NamedNode(iri)
        except ValueError:
            raise InvalidArgumentError(
                f"{parameter}={iri!r} is no absolute IRI; name a graph by its IRI, e.g. "
                f"{SCOPE_BASE}NAME for a scope") from None
    return iris


def choose_media_type(accept: str | None, offered: Sequence[str]) -> str:
    """The offered type the ``Accept`` header prefers (q-values, ``type/*``, ``*/*``); the
    first offered when it names none of them (:func:`render_answer` answers a 406 then)."""
    return next(iter(acceptable_types(accept, offered)), offered[0])


def acceptable_types(accept: str | None, offered: Sequence[str]) -> list[str]:
    """The offered types the ``Accept`` header allows (q > 0), most preferred first; every
    offered type, in order, without a header."""
    if not (accept or "").strip():
        return list(offered)
    # Each offered type's q-value is the most specific range's that names it (RFC 9110,
    # 12.5.1): text/csv;q=0 refuses CSV whatever */* or text/* allows.
    decided: dict[str, tuple[int, float, int]] = {}  # type -> (specificity, q, position)
    for position, item in enumerate((accept or "").split(",")):
        parts = [part.strip() for part in item.split(";")]
        media = parts[0].lower()
        weight = 1.0
        for parameter in parts[1:]:
            key, _, value = parameter.partition("=")
            if key.strip() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        for candidate in offered:
            specific = _specificity(media, candidate)
            known = decided.get(candidate)
            if specific and (known is None or (specific, weight) > known[:2]):
                decided[candidate] = (specific, weight, position)
    quality = {candidate: weight - position * 1e-6 - rank * 1e-9  # earlier wins ties
               for rank, candidate in enumerate(offered)
               if candidate in decided
               for _, weight, position in [decided[candidate]] if weight > 0}
    return sorted(quality, key=lambda media: -quality[media])


def _specificity(pattern: str, media: str) -> int:
    """How specifically the range ``pattern`` names ``media``: 3 by name, 2 as type/*, 1 as
    */*, 0 not at all."""
    if pattern == media:
        return 3
    if pattern == "*/*":
        return 1
    kind, _, sub = pattern.partition("/")
    return 2 if sub == "*" and media.startswith(kind + "/") else 0


def render_answer(output: QueryResult | bool | Sequence[ox.Triple],
                  accept: str | None) -> tuple[bytes, str]:
    """The answer's bytes and media type: SELECT and ASK as SPARQL results (JSON, XML, CSV,
    TSV), CONSTRUCT and DESCRIBE as RDF (N-Triples, Turtle, N-Quads, TriG, RDF/XML, JSON-LD,
    N3), whichever ``accept`` prefers among those that can carry it (XML 1.0 cannot carry
    most control characters, JSON-LD no RDF 1.2 triple term: such an answer comes in the
    next format accepted).

    Raises:
        NotAcceptableError: the ``Accept`` header allows none of the formats offered for
            the answer, or no format it allows can carry the answer; names those that can.
    """
    offered = RESULT_TYPES if isinstance(output, (QueryResult, bool)) else GRAPH_TYPES
    wanted = acceptable_types(accept, offered)
    if not wanted:  # a header naming only other formats: a 200 in one would be misread
        answer = "results" if offered is RESULT_TYPES else "RDF"
        raise NotAcceptableError(
            f"the Accept header ({' '.join(str(accept).split())!r}) allows none of the formats "
            f"this query's {answer} come in; accept one of {', '.join(offered)} (or */*)")
    reasons: dict[str, str] = {}
    for media in wanted:
        content, reason = _written(output, media)
        if reason is None:
            return content, media
        reasons[media] = reason
    carriers = [media for media in offered
                if media not in reasons and _written(output, media)[1] is None]
    raise NotAcceptableError(
        f"the answer cannot be written as {'; '.join(f'{m} ({r})' for m, r in reasons.items())}"
        f"; accept one of {', '.join(carriers)}")


def _written(output: QueryResult | bool | Sequence[ox.Triple],
             media: str) -> tuple[bytes, str | None]:
    """The answer as ``media``, or why that format cannot carry it."""
    try:
        content = _serialize(output, media)
    except (OSError, ValueError) as exc:  # pyoxigraph: "JSON-LD does not support RDF 1.2"
        return b"", str(exc)
    if media in _XML_TYPES and _NOT_IN_XML.search(content):
        return b"", "the answer holds a control character, which XML 1.0 cannot carry"
    return content, None


def _serialize(output: QueryResult | bool | Sequence[ox.Triple], media: str) -> bytes:
    if isinstance(output, (QueryResult, bool)):
        document = json.dumps(results_json(output)).encode("utf-8")
        if _RESULTS_FORMAT[media] is ox.QueryResultsFormat.JSON:
            return document
        parsed = ox.parse_query_results(document, format=ox.QueryResultsFormat.JSON)
        return parsed.serialize(format=_RESULTS_FORMAT[media]) or b""
    rdf_format = ox.RdfFormat.from_media_type(media)
    if rdf_format is None:  # every offered type is one pyoxigraph knows
        raise InvalidArgumentError(f"no RDF format for {media!r}")
    items: list[Any] = list(output)
    if media in _QUAD_FORMATS:
        items = [ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in items]
    return ox.serialize(items, format=rdf_format) or b""


def service_description(endpoint: str, union_default: bool,
                        accept: str | None = None) -> tuple[bytes, str]:
    """The SPARQL service description a GET without a query answers (what the endpoint
    speaks, and whether its default graph is the union of the scopes queried), and its media
    type: in the RDF format ``accept`` prefers, as :func:`render_answer` writes any graph.

    Raises:
        NotAcceptableError: ``accept`` allows no RDF format.
    """
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
    return render_answer(triples, accept)
