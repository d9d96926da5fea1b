"""What an endpoint sends back, read as the embedded graph returns it; what is sent to it.

Responses become the embedded graph's results (a :class:`QueryResult` of pyoxigraph terms, a
boolean, or triples); quads become ``INSERT DATA`` texts. Nothing here talks to a server.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

import pyoxigraph as ox

from trails.errors import SparqlError
from trails.kg.result import QueryResult

__all__ = ["Response", "batches", "insert_data", "parse_response", "server_message"]

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


def parse_response(response: Response, url: str) -> QueryAnswer:
    """SPARQL results or RDF, by the response's content type.

    Raises:
        SparqlError: the body does not parse as its content type, or the type is neither.
    """
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        answer = _parse(response.content, media)
    except SyntaxError as exc:
        raise SparqlError(f"the SPARQL endpoint {url} sent results that do not parse as "
                          f"{media}: {exc}") from exc
    if answer is None:
        raise SparqlError(f"the SPARQL endpoint {url} answered with "
                          f"{media or 'no content type'}, neither SPARQL results nor RDF")
    return answer


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
        return [ox.Triple(q.subject, q.predicate, q.object) for q in ox.parse(content, rdf_format)]
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


def insert_data(quads: list[ox.Quad]) -> str:
    """One ``INSERT DATA`` update adding ``quads`` (a ``GRAPH`` block per named graph).

    Raises:
        TypeError: a quad's graph is a blank node, which an update cannot name.
    """
    by_graph: dict[str | None, list[str]] = {}
    for q in quads:
        graph = q.graph_name
        if isinstance(graph, ox.DefaultGraph):
            key = None
        elif isinstance(graph, ox.NamedNode):
            key = str(graph)
        else:
            raise TypeError(f"a SPARQL update cannot name the blank-node graph {graph}; "
                            "use an IRI for the graph")
        by_graph.setdefault(key, []).append(f"{q.subject} {q.predicate} {q.object} .")
    parts = [" ".join(triples) if key is None else f"GRAPH {key} {{ {' '.join(triples)} }}"
             for key, triples in by_graph.items()]
    return "INSERT DATA {\n" + "\n".join(parts) + "\n}"
