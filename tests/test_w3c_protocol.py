"""The W3C SPARQL 1.1 Protocol test suite (vendored, see tests/vendor/w3c-sparql11-protocol),
every case's requests sent as written to a live service, with and without API keys.

The manifest describes each request as HTTP: a method, a path starting ``/sparql/``, headers
and a body in a given character encoding; and each response by its status class, its format
(boolean, tabular, RDF) and, for ASK, its answer. The graphs a case names (``ut:graphData``)
are loaded under the IRIs it names them by. The update cases ask for a change; the endpoint
refuses every update (docs/service.md), so for them the runner checks a 4xx and that no
graph changed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyoxigraph as ox
import pytest
import rdflib
from rdflib.collection import Collection

from service_support import SECRETS, bearer, keys, live_server
from trails import Context
from trails.service.app import create_app
from trails.vector.embedders.mock import MockEmbedder

pytestmark = pytest.mark.timeout(300)

SUITE = Path(__file__).resolve().parent / "vendor" / "w3c-sparql11-protocol"
MF = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
HT = rdflib.Namespace("http://www.w3.org/2011/http#")
HTS = rdflib.Namespace("http://www.w3.org/2011/http-statusCodes#")
CNT = rdflib.Namespace("http://www.w3.org/2011/content#")
UT = rdflib.Namespace("http://www.w3.org/2009/sparql/tests/test-update#")

RESULTS = {"application/sparql-results+json": ox.QueryResultsFormat.JSON,
           "application/json": ox.QueryResultsFormat.JSON,
           "application/sparql-results+xml": ox.QueryResultsFormat.XML,
           "text/csv": ox.QueryResultsFormat.CSV,
           "text/tab-separated-values": ox.QueryResultsFormat.TSV}


@dataclass(frozen=True)
class Exchange:
    """One request of a case, as the manifest writes it, and what its answer must be."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None
    statuses: frozenset[str]  # the status classes allowed: "2", "3", "4", "5"
    boolean: bool | None
    form: str | None  # "boolean", "tabular", "RDF"


@dataclass(frozen=True)
class Case:
    name: str
    graphs: dict[str, Path]  # graph IRI -> the file that holds its triples
    exchanges: tuple[Exchange, ...]

    @property
    def is_update(self) -> bool:
        return self.name.startswith("update_")


def _list(graph: rdflib.Graph, node: Any) -> list[Any]:
    return list(Collection(graph, node)) if node is not None else []


def _exchange(graph: rdflib.Graph, request: Any) -> Exchange:
    body = graph.value(request, HT.body)
    content = None
    if body is not None:
        encoding = str(graph.value(body, CNT.characterEncoding) or "UTF-8")
        content = str(graph.value(body, CNT.chars)).encode(encoding)
    headers = {str(graph.value(h, HT.fieldName)): str(graph.value(h, HT.fieldValue))
               for h in _list(graph, graph.value(request, HT.headers))}
    response = graph.value(request, HT.resp)
    statuses = frozenset(str(s).removeprefix(str(HTS.StatusCode))[0]
                         for s in graph.objects(response, MF.expectedStatus))
    boolean = graph.value(response, MF.expectedBoolean)
    form = graph.value(response, MF.expectedFormat)
    return Exchange(str(graph.value(request, HT.methodName)),
                    str(graph.value(request, HT.absolutePath)), headers, content, statuses,
                    None if boolean is None else bool(boolean.toPython()),
                    None if form is None else str(form))


def _cases() -> list[Case]:
    graph = rdflib.Graph().parse(SUITE / "manifest.ttl", format="turtle",
                                 publicID=(SUITE / "manifest.ttl").as_uri())
    manifest = next(graph.subjects(rdflib.RDF.type, MF.Manifest))
    cases = []
    for entry in _list(graph, graph.value(manifest, MF.entries)):
        data = {str(graph.value(d, rdflib.RDFS.label)):
                Path(str(graph.value(d, UT.graph)).removeprefix("file://"))
                for d in graph.objects(entry, UT.graphData)}
        action = graph.value(entry, MF.action)
        requests = _list(graph, graph.value(action, HT.requests))
        cases.append(Case(str(entry).rpartition("#")[2], data,
                          tuple(_exchange(graph, r) for r in requests)))
    return cases


CASES = _cases()
GRAPHS = {iri: path for case in CASES for iri, path in case.graphs.items()}


def test_the_vendored_suite_is_read_whole():
    # 34 cases in the manifest: 27 about queries (and refusals), 7 asking for updates.
    assert len(CASES) == 34
    assert sum(not case.is_update for case in CASES) == 27
    assert all(case.exchanges for case in CASES)
    assert sorted(GRAPHS) == [f"http://kasei.us/2009/09/sparql/data/data{n}.rdf"
                              for n in (1, 2, 3)]


@pytest.fixture(scope="module", params=["anonymous", "key"])
def service(request, tmp_path_factory) -> Iterator[tuple[str, dict[str, str], Context]]:
    ctx = Context.open(tmp_path_factory.mktemp("kb"), embedder=MockEmbedder(dim=8))
    for iri, path in GRAPHS.items():
        ctx.kg.extend(ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(iri))
                      for t in ox.parse(path=path, format=ox.RdfFormat.N_TRIPLES))
    with_keys = request.param == "key"
    headers = bearer("all-reader") if with_keys else {}
    assert not with_keys or SECRETS["all-reader"] in headers["Authorization"]
    with live_server(create_app(ctx, keys() if with_keys else None)) as base:
        deadline = time.monotonic() + 30
        while httpx.get(base + "/health/ready").status_code != 200:
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.02)
        yield base, headers, ctx
    ctx.close()


def _send(base: str, auth: dict[str, str], exchange: Exchange) -> httpx.Response:
    # The path as written, query string and all: httpx must not re-encode it.
    url = httpx.URL(base + exchange.path.partition("?")[0],
                    query=exchange.path.partition("?")[2].encode())
    return httpx.request(exchange.method, url, headers={**exchange.headers, **auth},
                         content=exchange.body, follow_redirects=False, timeout=60)


def _check_answer(exchange: Exchange, response: httpx.Response) -> None:
    media = response.headers.get("content-type", "").split(";")[0].strip()
    if exchange.form in ("boolean", "tabular"):
        assert media in RESULTS, media
        answer = ox.parse_query_results(response.content, format=RESULTS[media])
        if exchange.form == "boolean":
            assert isinstance(answer, ox.QueryBoolean)
            if exchange.boolean is not None:
                assert bool(answer) is exchange.boolean
        else:
            assert isinstance(answer, ox.QuerySolutions)
            assert list(answer)  # SELECT (1 AS ?value) {} has one solution
    elif exchange.form == "RDF":
        rdf_format = ox.RdfFormat.from_media_type(media)
        assert rdf_format is not None, media
        list(ox.parse(response.content, format=rdf_format))  # well-formed


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_w3c_protocol_case(case: Case, service):
    base, auth, ctx = service
    before = _data(ctx)
    for exchange in case.exchanges:
        response = _send(base, auth, exchange)
        if case.is_update:  # refused, whatever the manifest hoped for
            assert 400 <= response.status_code < 500, (exchange.path, response.text)
            break
        assert str(response.status_code)[0] in exchange.statuses, (
            exchange.method, exchange.path, response.status_code, response.text)
        if response.status_code < 300:
            _check_answer(exchange, response)
    assert _data(ctx) == before  # no case changes the data


def _data(ctx: Context) -> set[tuple[str, ...]]:
    """Every quad but the audit trail's (which records the queries answered)."""
    rows = ctx.kg.query("SELECT ?s ?p ?o ?g WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } "
                        "FILTER(?g != <urn:trails:audit>) } }")
    return {tuple(str(v) for v in row.values()) for row in rows.rows}
