"""``/sparql``: the SPARQL 1.1 Protocol for queries, through the application, and the
protocol's pure parts (request parsing, content negotiation) on their own."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from fastapi.testclient import TestClient
from pyshacl import validate

from service_support import ALPHA_DOCS, BETA_DOCS, SECRETS, bearer, keys, seeded_context
from trails.audit.records import SparqlQueryRecord
from trails.context import Context
from trails.errors import InvalidArgumentError, PermissionDeniedError
from trails.ingest import Document, ingest_all
from trails.kg import SparqlEndpointGraph
from trails.service.app import create_app
from trails.service.keys import KeyRing
from trails.service.sparql_protocol import (
    GRAPH_TYPES,
    RESULT_TYPES,
    acceptable_types,
    choose_media_type,
    parse_sparql_request,
)
from trails.testing.servers.oxigraph import OxigraphServer
from trails.vector import MockEmbedder, SqliteVecStore

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


@pytest.mark.parametrize(("accept", "written"), [
    ("application/sparql-results+json", b'"its:dir": "rtl"'),
    ("text/tab-separated-values", b'"x"@ar--rtl'),
    ("application/sparql-results+xml", b'its:dir="rtl"')])
def test_a_literal_keeps_its_base_direction_in_every_results_format(client, accept, written):
    response = client.get("/sparql", params={"query": 'SELECT ?t { BIND("x"@ar--rtl AS ?t) }'},
                          headers={**bearer("admin"), "Accept": accept})
    assert written in response.content, response.text
    results_format = ox.QueryResultsFormat.from_media_type(accept)
    term = next(iter(ox.parse_query_results(response.content, format=results_format)))["t"]
    assert (term.language, str(term.direction)) == ("ar", "rtl")


def test_no_cache_keeps_an_answer_for_another_key_or_another_format(client):
    # A key in X-API-Key is no Authorization header to a shared cache: without these headers
    # a caching proxy could hand one key's answer to another, or JSON to a client asking CSV.
    by_header = {"X-API-Key": SECRETS["alpha-reader"]}
    answers = [client.get("/sparql", params={"query": TEXTS}, headers=by_header),
               client.get("/sparql", params={"query": TEXTS},
                          headers={**by_header, "Accept": "text/csv"}),
               client.get("/whoami", headers=by_header),
               client.post("/retrieve", json={"query": "glaciers"}, headers=by_header)]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert answer.headers["cache-control"] == "no-store"
    for answer in answers[:2]:
        assert "accept" in answer.headers["vary"].lower()


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


GRAPH_TEXTS = "SELECT ?t WHERE { GRAPH ?g { ?c schema:text ?t } } ORDER BY ?t"


def test_the_dataset_is_read_as_the_protocol_defines_it(client):
    def texts(query, **dataset):
        return _texts(client.get("/sparql", params={"query": query, **dataset},
                                 headers=bearer("admin")))

    assert texts(TEXTS, **{"default-graph-uri": ALPHA_GRAPH}) == sorted(ALPHA_DOCS.values())
    assert texts(GRAPH_TEXTS, **{"default-graph-uri": ALPHA_GRAPH}) == []  # no named graphs
    assert texts(TEXTS, **{"named-graph-uri": BETA_GRAPH}) == []  # an empty default graph
    assert texts(GRAPH_TEXTS, **{"named-graph-uri": BETA_GRAPH}) == sorted(BETA_DOCS.values())
    mixed = {"default-graph-uri": ALPHA_GRAPH, "named-graph-uri": BETA_GRAPH}
    assert texts(TEXTS, **mixed) == sorted(ALPHA_DOCS.values())
    assert texts(GRAPH_TEXTS, **mixed) == sorted(BETA_DOCS.values())
    both = [("query", TEXTS), ("default-graph-uri", ALPHA_GRAPH),
            ("default-graph-uri", BETA_GRAPH)]
    merged = client.get("/sparql", params=both, headers=bearer("admin"))
    assert _texts(merged) == sorted([*ALPHA_DOCS.values(), *BETA_DOCS.values()])


FROM_BETA = "SELECT ?t FROM <urn:trails:scope:beta> WHERE { ?c schema:text ?t } ORDER BY ?t"


def test_the_querys_own_from_clauses_are_its_dataset_without_a_protocol_one(client):
    def texts(query, label="admin"):
        return _texts(client.get("/sparql", params={"query": query}, headers=bearer(label)))

    beta, alpha = sorted(BETA_DOCS.values()), sorted(ALPHA_DOCS.values())
    assert texts(FROM_BETA) == texts(FROM_BETA, "all-reader") == beta
    assert texts(FROM_BETA.replace("FROM <", "FROM<")) == beta  # no space needed
    assert texts(FROM_BETA.replace("beta", "alpha")) == alpha
    # Prefixed names and relative IRIs resolve as the parser resolves them.
    assert texts("PREFIX sc: <urn:trails:scope:> SELECT ?t FROM sc:beta "
                 "WHERE { ?c schema:text ?t } ORDER BY ?t") == beta
    assert texts("BASE <urn:trails:scope:beta> SELECT ?t FROM <> "
                 "WHERE { ?c schema:text ?t } ORDER BY ?t") == beta
    # FROM NAMED alone: named graphs only, an empty default graph (as SPARQL defines it).
    named = "SELECT ?t FROM NAMED <urn:trails:scope:alpha> WHERE { GRAPH ?g { ?c schema:text ?t } }"
    assert texts(named + " ORDER BY ?t") == alpha
    assert texts(named.replace("NAMED <", "NAMED<") + " ORDER BY ?t") == alpha
    assert texts(named.replace("GRAPH ?g", "") + " ORDER BY ?t") == []
    assert texts(named.replace("?t FROM", "?t FROM <urn:trails:scope:beta> FROM")
                 + " ORDER BY ?t") == alpha
    # A scoped key: a graph outside its scopes reaches nothing, as GRAPH <...> does.
    assert texts(FROM_BETA, "alpha-reader") == []
    assert texts(FROM_BETA.replace("beta", "alpha"), "alpha-reader") == alpha
    # The protocol's dataset still overrides the text's.
    protocol = client.get("/sparql", params={"query": FROM_BETA, "default-graph-uri": ALPHA_GRAPH},
                          headers=bearer("admin"))
    assert _texts(protocol) == alpha


def test_a_graph_on_a_server_takes_from_clauses_that_name_its_scopes(tmp_path):
    # A SparqlEndpointGraph runs queries over whole scopes only (default and named graphs
    # alike): FROM and FROM NAMED naming them both answer; FROM alone cannot be run as SPARQL
    # defines it (no named graphs), so it is refused naming the way, never answered otherwise.
    with OxigraphServer(persistent=False) as server:
        embedder = MockEmbedder(dim=16)
        ctx = Context(kg=SparqlEndpointGraph(server.query_url),
                      vectors=SqliteVecStore(":memory:", dim=16, embedder=embedder.identity),
                      embedder=embedder)
        for scope, docs in (("alpha", ALPHA_DOCS), ("beta", BETA_DOCS)):
            ingest_all([Document(id=name, source=name, text=text) for name, text in docs.items()],
                       ctx=ctx, scope=scope)
        try:
            with TestClient(create_app(ctx, keys())) as client:
                both = client.get("/sparql", headers=bearer("alpha-reader"), params={
                    "query": "SELECT ?t FROM <urn:trails:scope:alpha> FROM NAMED "
                             "<urn:trails:scope:alpha> WHERE { ?c schema:text ?t } ORDER BY ?t"})
                alone = client.get("/sparql", headers=bearer("admin"),
                                   params={"query": FROM_BETA})
        finally:
            ctx.close()
    assert _texts(both) == sorted(ALPHA_DOCS.values())
    assert alone.status_code == 400
    assert "FROM NAMED" in alone.json()["message"]


def test_a_graph_no_scope_holds_is_an_empty_graph_for_a_key_with_every_scope(client):
    response = client.get("/sparql", params={
        "query": TEXTS, "default-graph-uri": "http://example.org/elsewhere"},
        headers=bearer("admin"))
    assert _texts(response) == []


@pytest.mark.parametrize("sent", [
    {"default-graph-uri": "urn:trails:scope:alpah"},
    {"named-graph-uri": "urn:trails:scope:alpah", "default-graph-uri": ALPHA_GRAPH},
    {"query": TEXTS.replace("WHERE", "FROM <urn:trails:scope:alpah> WHERE")}])
def test_a_scope_graph_that_holds_nothing_is_a_typo_named_not_an_empty_answer(client, sent):
    response = client.get("/sparql", params={"query": TEXTS, **sent}, headers=bearer("admin"))
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "UnknownScopeError"
    assert "did you mean 'alpha'" in response.json()["message"]
    # The default scope always exists; a graph outside the scopes' names is a graph like any.
    for graph in ("urn:trails:scope:default", "http://example.org/elsewhere"):
        empty = client.get("/sparql", params={"query": TEXTS, "default-graph-uri": graph},
                           headers=bearer("admin"))
        assert _texts(empty) == []


@pytest.mark.parametrize("sent", [
    {"named-graph-uri": "urn:trails:scope:default", "default-graph-uri": ALPHA_GRAPH},
    {"query": GRAPH_TEXTS.replace("WHERE", "FROM NAMED <urn:trails:scope:default> WHERE")}])
def test_the_default_scope_named_as_a_named_graph_is_said_not_dropped(client, sent):
    # GRAPH cannot reach the store's default graph: the graph was dropped and the answer
    # said nothing of the default scope's triples.
    response = client.get("/sparql", params={"query": GRAPH_TEXTS, **sent},
                          headers=bearer("admin"))
    assert response.status_code == 400, response.text
    assert "default-graph-uri" in response.json()["message"]


OUTSIDE = [BETA_GRAPH, "urn:trails:minted", "urn:trails:audit", "urn:trails:scope:default",
           "http://example.org/nowhere", "urn:trails:scope:nosuchscope"]


@pytest.mark.parametrize("parameter", ["default-graph-uri", "named-graph-uri"])
def test_a_scoped_key_naming_any_graph_outside_its_scopes_is_refused_alike(client, parameter):
    answers = [client.get("/sparql", params={"query": GRAPH_TEXTS, parameter: graph},
                          headers=bearer("alpha-reader")) for graph in OUTSIDE]
    assert {a.status_code for a in answers} == {403}
    # The same words whether the graph exists or not: a refusal tells nothing of the graph.
    assert len({a.json()["message"].replace(g, "GRAPH") for a, g in zip(answers, OUTSIDE)}) == 1


def test_the_default_dataset_holds_the_scopes_only(client):
    for label in ("admin", "alpha-reader"):
        for graph in ("urn:trails:minted", "urn:trails:audit"):
            response = client.get("/sparql", params={
                "query": f"ASK {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}"}, headers=bearer(label))
            assert response.json()["boolean"] is False, (label, graph)
        predicates = client.get("/sparql", params={
            "query": "SELECT DISTINCT ?p WHERE { ?s ?p ?o }"}, headers=bearer(label))
        assert not any("minted" in row["p"]["value"]
                       for row in predicates.json()["results"]["bindings"])


def test_the_same_triple_in_two_scopes_is_two_solutions_and_one_with_distinct(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    for scope in ("alpha", "beta"):
        ctx.kg.load("<urn:x:s> <urn:x:p> <urn:x:o> .", format="nt", scope=scope)
    try:
        with TestClient(create_app(ctx, keys())) as client:
            def rows(query):
                response = client.get("/sparql", params={"query": query},
                                      headers=bearer("all-reader"))
                return response.json()["results"]["bindings"]

            assert len(rows("SELECT ?o WHERE { <urn:x:s> <urn:x:p> ?o }")) == 2
            assert len(rows("SELECT DISTINCT ?o WHERE { <urn:x:s> <urn:x:p> ?o }")) == 1
    finally:
        ctx.close()


@pytest.mark.parametrize("graph", ["not an iri", "urn:trails:scope:a b"])
def test_a_dataset_naming_no_iri_is_a_400(client, graph):
    response = client.get("/sparql", params={"query": TEXTS, "default-graph-uri": graph},
                          headers=bearer("admin"))
    assert response.status_code == 400
    assert "no absolute IRI" in response.json()["message"]


def test_an_update_sent_by_get_is_refused(client):
    for path in ("/sparql", "/sparql/"):
        response = client.get(path, params={"update": "CLEAR ALL"}, headers=bearer("admin"))
        assert response.status_code == 403, path
        assert "updates are refused" in response.json()["message"]


def test_the_path_with_a_slash_answers_without_a_redirect(client):
    response = client.post("/sparql/", content=b"ASK {}", follow_redirects=False, headers={
        **bearer("admin"), "Content-Type": "application/sparql-query"})
    assert response.status_code == 200
    assert response.json()["boolean"] is True


def test_relative_iris_resolve_against_the_endpoint(client):
    response = client.post("/sparql", content=b"CONSTRUCT { <s> <p> 1 } WHERE {}", headers={
        **bearer("admin"), "Content-Type": "application/sparql-query"})
    assert response.status_code == 200, response.text
    (triple,) = ox.parse(response.content, format=ox.RdfFormat.N_TRIPLES)
    assert triple.subject.value == str(client.base_url) + "/s"


CONTROL = 'SELECT ?x WHERE { BIND("a\\u0001b" AS ?x) }'


def test_an_answer_xml_cannot_carry_comes_in_another_accepted_format_or_a_406(client):
    xml_only = client.get("/sparql", params={"query": CONTROL}, headers={
        **bearer("admin"), "Accept": "application/sparql-results+xml"})
    assert xml_only.status_code == 406
    assert "application/sparql-results+json" in xml_only.json()["message"]
    fallback = client.get("/sparql", params={"query": CONTROL}, headers={
        **bearer("admin"), "Accept": "application/sparql-results+xml, */*;q=0.1"})
    assert fallback.status_code == 200
    assert fallback.headers["content-type"].startswith("application/sparql-results+json")
    assert fallback.json()["results"]["bindings"][0]["x"]["value"] == "a\x01b"
    construct = "CONSTRUCT { <urn:s> <urn:p> ?x } WHERE { BIND(\"a\\u000Cb\" AS ?x) }"
    rdf_xml = client.get("/sparql", params={"query": construct}, headers={
        **bearer("admin"), "Accept": "application/rdf+xml"})
    assert rdf_xml.status_code == 406
    plain = client.get("/sparql", params={"query": "SELECT ?x WHERE { BIND(\"ok\" AS ?x) }"},
                       headers={**bearer("admin"), "Accept": "application/sparql-results+xml"})
    assert plain.headers["content-type"].startswith("application/sparql-results+xml")


TRIPLE_TERM = "CONSTRUCT { <urn:s> <urn:p> <<( <urn:a> <urn:b> <urn:c> )>> } WHERE {}"


def test_an_answer_json_ld_cannot_carry_comes_in_another_accepted_format_or_a_406(client):
    # JSON-LD has no RDF 1.2 triple terms: that was a 500, "a bug in trails".
    only = client.get("/sparql", params={"query": TRIPLE_TERM}, headers={
        **bearer("admin"), "Accept": "application/ld+json"})
    assert only.status_code == 406, only.text
    assert "application/ld+json" in only.json()["message"]
    assert "text/turtle" in only.json()["message"]  # a format that can carry it
    fallback = client.get("/sparql", params={"query": TRIPLE_TERM}, headers={
        **bearer("admin"), "Accept": "application/ld+json, text/turtle;q=0.5"})
    assert fallback.status_code == 200
    assert fallback.headers["content-type"].startswith("text/turtle")
    triples = [q.triple for q in ox.parse(fallback.content, format=ox.RdfFormat.TURTLE)]
    assert triples == [ox.Triple(ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), ox.Triple(
        ox.NamedNode("urn:a"), ox.NamedNode("urn:b"), ox.NamedNode("urn:c")))]


def test_an_unknown_key_gets_a_challenge_with_a_realm_and_no_file_path(tmp_path):
    keys_file = tmp_path / "secret-place" / "keys.toml"
    keys_file.parent.mkdir()
    keys_file.write_text(keys_file_text := "[[key]]\nlabel = \"a\"\nsecret = \"s" + "x" * 20
                         + "\"\nscopes = [\"*\"]\n")
    assert keys_file_text
    ctx = seeded_context(tmp_path / "kb")
    try:
        with TestClient(create_app(ctx, KeyRing.load(keys_file))) as client:
            for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789"}):
                response = client.get("/sparql", params={"query": "ASK {}"}, headers=headers)
                assert response.status_code == 401
                assert response.headers["www-authenticate"].startswith("Bearer realm=")
                assert "secret-place" not in response.text
                assert str(tmp_path) not in response.text
    finally:
        ctx.close()


def test_other_content_types_and_bodies_are_400s(client):
    wrong_type = client.post("/sparql", content=b"{}", headers={
        **bearer("admin"), "Content-Type": "application/json"})
    not_utf8 = client.post("/sparql", content=b"\xff\xfe", headers={
        **bearer("admin"), "Content-Type": "application/sparql-query"})
    assert wrong_type.status_code == not_utf8.status_code == 400


CAFE = ("SELECT ?t WHERE { VALUES ?t { %22caf{e}%22 } }".replace(" ", "%20")
        .replace("?", "%3F").replace("{ ", "%7B ").replace(" }", " %7D"))


@pytest.mark.parametrize("e", ["%E9", "%C3"])  # é in Latin-1; half of é in UTF-8
def test_a_query_percent_encoding_bytes_that_are_no_utf8_is_a_400_not_another_query(client, e):
    # Decoded leniently, "caf%E9" became "caf\ufffd": another query than the one sent, whose
    # answer (empty, mostly) looked like the answer to it.
    sent = CAFE.replace("{e}", e)
    answers = [client.get(f"/sparql?query={sent}", headers=bearer("admin")),
               client.post("/sparql", content=f"query={sent}".encode(), headers={
                   **bearer("admin"), "Content-Type": "application/x-www-form-urlencoded"}),
               client.get(f"/sparql?query=ASK%20%7B%7D&default-graph-uri=urn:x:{e}",
                          headers=bearer("admin"))]
    for answer in answers:
        assert answer.status_code == 400, answer.text
        assert "not UTF-8" in answer.json()["message"]
    right = client.get(f"/sparql?query={CAFE.replace('{e}', '%C3%A9')}", headers=bearer("admin"))
    assert right.json()["results"]["bindings"] == [{"t": {"type": "literal", "value": "café"}}]


def test_a_query_file_with_a_byte_order_mark_is_read_without_it(client):
    # curl --data-binary @query.rq of a file saved with a BOM was "does not parse at line 1".
    for content_type, body in (("application/sparql-query", TEXTS.encode()),
                               ("application/x-www-form-urlencoded",
                                f"query={urllib.parse.quote(TEXTS)}".encode())):
        response = client.post("/sparql", content=b"\xef\xbb\xbf" + body, headers={
            **bearer("alpha-reader"), "Content-Type": content_type})
        assert _texts(response) == sorted(ALPHA_DOCS.values())


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


def test_the_dataset_is_the_graphs_each_parameter_names():
    request = parse_sparql_request("GET", None, [
        ("query", "ASK {}"), ("default-graph-uri", ALPHA_GRAPH), ("named-graph-uri", BETA_GRAPH),
        ("default-graph-uri", BETA_GRAPH), ("default-graph-uri", ALPHA_GRAPH)], b"")
    assert (request.default_graphs, request.named_graphs) == (
        [ALPHA_GRAPH, BETA_GRAPH], [BETA_GRAPH])
    only_named = parse_sparql_request("GET", None, [
        ("query", "ASK {}"), ("named-graph-uri", ALPHA_GRAPH)], b"")
    assert (only_named.default_graphs, only_named.named_graphs) == ([], [ALPHA_GRAPH])
    none = parse_sparql_request("GET", None, [("query", "ASK {}")], b"")
    assert (none.default_graphs, none.named_graphs) == (None, None)


def test_a_body_in_another_charset_is_refused():
    with pytest.raises(InvalidArgumentError, match="UTF-16"):
        parse_sparql_request("POST", "application/sparql-query; charset=UTF-16", [],
                             "ASK {}".encode("utf-16"))


@pytest.mark.parametrize(("accept", "expected"), [
    (None, RESULT_TYPES[0]),
    ("*/*", RESULT_TYPES[0]),
    ("application/sparql-results+xml", "application/sparql-results+xml"),
    ("text/*;q=0.5, application/sparql-results+xml;q=0.4", "text/csv"),
    ("image/png", RESULT_TYPES[0]),
    ("application/json;q=0.2, application/sparql-results+json;q=0", "application/json"),
    # The most specific range that names a type decides its q-value (RFC 9110, 12.5.1): a
    # type refused by name is not taken back by */* or type/*, nor raised by them.
    ("application/sparql-results+json;q=0, */*", "application/sparql-results+xml"),
    ("text/csv;q=0, text/*", "text/tab-separated-values"),
    ("*/*;q=0.9, application/sparql-results+json;q=0.1", "application/sparql-results+xml"),
    ("text/*;q=0.3, text/csv;q=0.2, */*;q=0.1", "text/tab-separated-values"),
])
def test_content_negotiation_follows_the_q_values(accept, expected):
    assert choose_media_type(accept, RESULT_TYPES) == expected


def test_a_type_refused_by_name_is_never_answered_whatever_else_is_accepted():
    accept = "application/sparql-results+json;q=0, application/json;q=0, */*"
    assert acceptable_types(accept, RESULT_TYPES) == [
        "application/sparql-results+xml", "text/csv", "text/tab-separated-values"]
    assert acceptable_types("text/turtle;q=0, text/*", GRAPH_TYPES) == ["text/n3"]


def test_graph_answers_default_to_n_triples():
    assert choose_media_type("application/sparql-results+json", GRAPH_TYPES) == (
        "application/n-triples")


# -- the audit trail -----------------------------------------------------------------------------

SHAPES = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit-shapes.ttl", format="turtle")
ONTOLOGY = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit.ttl", format="turtle")
AUDIT = rdflib.Namespace("https://trails.dev/ns/audit#")


def test_a_query_answered_406_is_not_recorded_as_answered(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    try:
        with TestClient(create_app(ctx, keys(), fold_seconds=3600)) as client:
            refused = client.get("/sparql", params={"query": CONTROL}, headers={
                **bearer("admin"), "Accept": "application/sparql-results+xml"})
            records = [r for r in ctx.audit.pending() if isinstance(r, SparqlQueryRecord)]
    finally:
        ctx.close()
    assert refused.status_code == 406
    assert "trails-run-id" not in refused.headers
    assert records == []  # the client got no answer: the trail says none was given


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
            "admin", "ASK", ["default", "alpha", "beta"], 1)  # every scope it read
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
