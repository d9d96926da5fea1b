"""``/sparql``: the SPARQL 1.1 Protocol for queries, through the application, and the
protocol's pure parts (request parsing, content negotiation) on their own."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from fastapi.testclient import TestClient
from pyshacl import validate

from service_support import ALPHA_DOCS, BETA_DOCS, bearer, keys, seeded_context
from trails.audit.records import SparqlQueryRecord
from trails.errors import InvalidArgumentError, PermissionDeniedError
from trails.service.app import create_app
from trails.service.sparql_protocol import (
    GRAPH_TYPES,
    RESULT_TYPES,
    choose_media_type,
    parse_sparql_request,
)

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent

TEXTS = "SELECT ?t WHERE { ?c schema:text ?t } ORDER BY ?t"
ALPHA_GRAPH, BETA_GRAPH = "urn:trails:scope:alpha", "urn:trails:scope:beta"


@pytest.fixture
def client(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    with TestClient(create_app(ctx, keys())) as test_client:
        yield test_client
    ctx.close()


def _texts(response) -> list[str]:
    assert response.status_code == 200, response.text
    parsed = ox.parse_query_results(response.content, format=ox.QueryResultsFormat.JSON)
    return [solution["t"].value for solution in parsed]


def test_get_select_answers_sparql_json_over_every_scope_for_an_unscoped_key(client):
    response = client.get("/sparql", params={"query": TEXTS}, headers=bearer("all-reader"))
    assert response.headers["content-type"].startswith("application/sparql-results+json")
    assert _texts(response) == sorted([*ALPHA_DOCS.values(), *BETA_DOCS.values()])


def test_form_post_and_sparql_query_post_give_the_same_answer(client):
    form = client.post("/sparql", data={"query": TEXTS}, headers=bearer("alpha-reader"))
    direct = client.post("/sparql", content=TEXTS.encode(), headers={
        **bearer("alpha-reader"), "Content-Type": "application/sparql-query"})
    assert _texts(form) == _texts(direct) == sorted(ALPHA_DOCS.values())


def test_ask_in_xml_and_csv_by_accept(client):
    xml = client.get("/sparql", params={"query": "ASK { ?s ?p ?o }"}, headers={
        **bearer("admin"), "Accept": "application/sparql-results+xml"})
    assert xml.headers["content-type"].startswith("application/sparql-results+xml")
    assert bool(ox.parse_query_results(xml.content, format=ox.QueryResultsFormat.XML)) is True
    csv = client.get("/sparql", params={"query": TEXTS}, headers={
        **bearer("alpha-reader"), "Accept": "text/csv;q=0.9, application/xml;q=0.1"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[1:] == sorted(ALPHA_DOCS.values())


@pytest.mark.parametrize("media", ["text/turtle", "application/n-triples",
                                   "application/n-quads", "application/rdf+xml"])
def test_construct_answers_rdf_in_the_accepted_format(client, media):
    query = "CONSTRUCT { ?c <urn:says> ?t } WHERE { ?c schema:text ?t }"
    response = client.get("/sparql", params={"query": query},
                          headers={**bearer("alpha-reader"), "Accept": media})
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == media
    quads = list(ox.parse(response.content, format=ox.RdfFormat.from_media_type(media)))
    assert sorted(q.object.value for q in quads) == sorted(ALPHA_DOCS.values())


@pytest.mark.parametrize("request_kwargs", [
    {"data": {"update": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}},
    {"data": {"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}},
    {"data": {"query": "PREFIX x: <urn:x#> DELETE WHERE { ?s ?p ?o }"}},
    {"content": b"DROP ALL", "headers": {"Content-Type": "application/sparql-update"}},
])
def test_updates_are_refused_and_change_nothing(client, request_kwargs):
    headers = {**bearer("admin"), **request_kwargs.pop("headers", {})}
    response = client.post("/sparql", headers=headers, **request_kwargs)
    assert response.status_code == 403
    assert "updates are refused" in response.json()["message"]
    still = client.get("/sparql", params={"query": TEXTS}, headers=bearer("admin"))
    assert len(_texts(still)) == len(ALPHA_DOCS) + len(BETA_DOCS)


def test_service_is_refused_for_every_key(client):
    query = "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }"
    for label in ("admin", "alpha-reader"):
        response = client.get("/sparql", params={"query": query}, headers=bearer(label))
        assert response.status_code == 400
        assert "SERVICE" in response.json()["message"]


def test_a_bad_query_is_a_400_naming_the_parse_error(client):
    response = client.get("/sparql", params={"query": "SELECT ?x WHERE { ?x"},
                          headers=bearer("admin"))
    assert response.status_code == 400
    assert response.json()["error"] == "SparqlError"
    assert "parse" in response.json()["message"]


def test_a_get_without_query_describes_the_service(client):
    response = client.get("/sparql", headers=bearer("admin"))
    assert response.status_code == 200
    triples = list(ox.parse(response.content, format=ox.RdfFormat.N_TRIPLES))
    objects = {t.object.value for t in triples}
    assert "http://www.w3.org/ns/sparql-service-description#UnionDefaultGraph" in objects


def test_the_dataset_may_name_scope_graphs_and_is_still_confined_to_the_key(client):
    alpha_only = client.get("/sparql", params={
        "query": TEXTS, "default-graph-uri": ALPHA_GRAPH, "named-graph-uri": ALPHA_GRAPH},
        headers=bearer("admin"))
    assert _texts(alpha_only) == sorted(ALPHA_DOCS.values())
    refused = client.get("/sparql", params={
        "query": TEXTS, "default-graph-uri": BETA_GRAPH, "named-graph-uri": BETA_GRAPH},
        headers=bearer("alpha-reader"))
    assert refused.status_code == 403


@pytest.mark.parametrize("params", [
    {"default-graph-uri": "http://example.org/elsewhere",
     "named-graph-uri": "http://example.org/elsewhere"},
    {"default-graph-uri": ALPHA_GRAPH},
    {"named-graph-uri": ALPHA_GRAPH},
])
def test_a_dataset_it_cannot_honour_is_a_400(client, params):
    response = client.get("/sparql", params={"query": TEXTS, **params}, headers=bearer("admin"))
    assert response.status_code == 400


def test_other_content_types_and_bodies_are_400s(client):
    wrong_type = client.post("/sparql", content=b"{}", headers={
        **bearer("admin"), "Content-Type": "application/json"})
    not_utf8 = client.post("/sparql", content=b"\xff\xfe", headers={
        **bearer("admin"), "Content-Type": "application/sparql-query"})
    assert wrong_type.status_code == not_utf8.status_code == 400


# -- the protocol's pure parts -------------------------------------------------------------------

def test_parse_reads_each_way_of_sending_a_query():
    assert parse_sparql_request("GET", None, [("query", "ASK {}")], b"").query == "ASK {}"
    assert parse_sparql_request("POST", "application/x-www-form-urlencoded; charset=UTF-8", [],
                                b"query=ASK+%7B%7D").query == "ASK {}"
    assert parse_sparql_request("POST", "application/sparql-query", [],
                                "ASK { ?s ?p \"é\" }".encode()).query == "ASK { ?s ?p \"é\" }"
    with pytest.raises(InvalidArgumentError, match="more than one"):
        parse_sparql_request("GET", None, [("query", "ASK {}"), ("query", "ASK {}")], b"")
    with pytest.raises(InvalidArgumentError, match="no SPARQL query"):
        parse_sparql_request("GET", None, [], b"")
    with pytest.raises(PermissionDeniedError):
        parse_sparql_request("GET", None, [("update", "CLEAR ALL")], b"")


def test_the_dataset_becomes_the_scopes_it_names():
    request = parse_sparql_request("GET", None, [
        ("query", "ASK {}"), ("default-graph-uri", ALPHA_GRAPH), ("named-graph-uri", ALPHA_GRAPH),
        ("default-graph-uri", BETA_GRAPH), ("named-graph-uri", BETA_GRAPH)], b"")
    assert request.scopes == ["alpha", "beta"]
    assert parse_sparql_request("GET", None, [("query", "ASK {}")], b"").scopes is None


@pytest.mark.parametrize(("accept", "expected"), [
    (None, RESULT_TYPES[0]),
    ("*/*", RESULT_TYPES[0]),
    ("application/sparql-results+xml", "application/sparql-results+xml"),
    ("text/*;q=0.5, application/sparql-results+xml;q=0.4", "text/csv"),
    ("image/png", RESULT_TYPES[0]),
    ("application/json;q=0.2, application/sparql-results+json;q=0", "application/json"),
])
def test_content_negotiation_follows_the_q_values(accept, expected):
    assert choose_media_type(accept, RESULT_TYPES) == expected


def test_graph_answers_default_to_n_triples():
    assert choose_media_type("application/sparql-results+json", GRAPH_TYPES) == (
        "application/n-triples")


# -- the audit trail -----------------------------------------------------------------------------

SHAPES = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit-shapes.ttl", format="turtle")
ONTOLOGY = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit.ttl", format="turtle")
AUDIT = rdflib.Namespace("https://trails.dev/ns/audit#")


def test_each_answered_query_is_recorded_with_the_key_label(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    try:
        with TestClient(create_app(ctx, keys(), fold_seconds=3600)) as client:
            select = client.get("/sparql", params={"query": TEXTS},
                                headers=bearer("alpha-reader"))
            ask = client.post("/sparql", data={"query": "ASK { ?s ?p ?o }"},
                              headers=bearer("admin"))
            refused = client.post("/sparql", data={"update": "CLEAR ALL"},
                                  headers=bearer("admin"))
            pending = ctx.audit.pending()
        assert refused.status_code == 403
        records = {r.run_id: r for r in pending if isinstance(r, SparqlQueryRecord)}
        assert len(records) == 2  # the refused update answered nothing: nothing recorded
        mine = records[select.headers["trails-run-id"]]
        assert (mine.caller, mine.form, mine.scopes, mine.answers, mine.query) == (
            "alpha-reader", "SELECT", ["alpha"], len(ALPHA_DOCS), TEXTS)
        theirs = records[ask.headers["trails-run-id"]]
        assert (theirs.caller, theirs.form, theirs.scopes, theirs.answers) == (
            "admin", "ASK", [], 1)
        assert ctx.audit.pending() == []  # the service folded them as it shut down
        triples = ctx.kg.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <urn:trails:audit> "
                               "{ ?s ?p ?o } }")
    finally:
        ctx.close()
    graph = rdflib.Graph().parse(data="".join(f"{t.subject} {t.predicate} {t.object} .\n"
                                              for t in triples), format="nt")
    ok, _, report = validate(graph, shacl_graph=SHAPES, inference="none")
    assert ok, report
    runs = set(graph.subjects(rdflib.RDF.type, AUDIT.SparqlQuery))
    assert len(runs) == 2
    prov = rdflib.Namespace("http://www.w3.org/ns/prov#")
    labels = {str(graph.value(graph.value(run, prov.wasAssociatedWith), rdflib.RDFS.label))
              for run in runs}
    assert labels == {"alpha-reader", "admin"}
    used = {p for p in graph.predicates() if str(p).startswith(str(AUDIT))}
    used |= {o for o in graph.objects(None, rdflib.RDF.type) if str(o).startswith(str(AUDIT))}
    declared = set(ONTOLOGY.subjects(rdflib.RDF.type, rdflib.RDF.Property)) | set(
        ONTOLOGY.subjects(rdflib.RDF.type, rdflib.RDFS.Class))
    assert used <= declared, used - declared
