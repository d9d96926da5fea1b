"""Mistakes a client developer makes against a running service (a real server on loopback, a
real HTTP client): each is a 4xx whose JSON body says what was wrong and how to fix it, never
a 200 in another format or a silent non-answer."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import httpx
import pytest
import rdflib

from service_support import SECRETS, bearer, keys, live_server, seeded_context
from trails.service.app import create_app

SD = rdflib.Namespace("http://www.w3.org/ns/sparql-service-description#")

SELECT = "SELECT ?d WHERE { ?d a trails:Document } LIMIT 1"
CONSTRUCT = "CONSTRUCT { ?d a trails:Document } WHERE { ?d a trails:Document } LIMIT 1"


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator[httpx.Client]:
    ctx = seeded_context(tmp_path_factory.mktemp("kb") / "kb")
    try:
        with live_server(create_app(ctx, keys(), fold_seconds=3600)) as url, \
                httpx.Client(base_url=url, headers=bearer("admin"), timeout=30) as client:
            yield client
    finally:
        ctx.close()


def _refused(response: httpx.Response, status: int, *words: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) >= {"error", "message"}
    for word in words:
        assert word in body["message"], body["message"]
    return str(body["message"])


@pytest.mark.parametrize(("query", "accept", "offered"), [
    (SELECT, "text/html", "application/sparql-results+json"),
    (SELECT, "image/png", "text/tab-separated-values"),
    (SELECT, "text/csv;q=0", "text/csv"),  # q=0: "not CSV", answered in CSV's stead before
    (CONSTRUCT, "text/csv", "text/turtle"),
    (CONSTRUCT, "application/sparql-results+json", "application/n-triples"),
])
def test_an_accept_header_naming_no_offered_format_is_a_406_naming_those_offered(
        service, query, accept, offered):
    answer = service.get("/sparql", params={"query": query}, headers={"Accept": accept})
    _refused(answer, 406, repr(accept), offered)
    assert answer.headers.get("trails-run-id") is None  # no answer was given


@pytest.mark.parametrize(("query", "accept", "media"), [
    (SELECT, "text/html, */*;q=0.1", "application/sparql-results+json"),  # a browser's
    (SELECT, "text/*", "text/csv"),
    (CONSTRUCT, "text/turtle, application/sparql-results+json", "text/turtle"),
])
def test_an_accept_header_allowing_an_offered_format_gets_it(service, query, accept, media):
    answer = service.get("/sparql", params={"query": query}, headers={"Accept": accept})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith(media)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_misspelt_query_parameter_is_named_not_answered_with_the_service_description(
        service, method):
    sent = {"params": {"qeury": SELECT}} if method == "GET" else {"data": {"qeury": SELECT}}
    _refused(service.request(method, "/sparql", **sent), 400, "no SPARQL query", "'qeury'")


def test_a_get_without_parameters_still_answers_the_service_description(service):
    answer = service.get("/sparql")
    assert answer.status_code == 200
    assert "sparql-service-description#Service" in answer.text


@pytest.mark.parametrize(("accept", "media"), [
    ("text/turtle", "text/turtle"), ("application/rdf+xml", "application/rdf+xml"),
    ("application/ld+json", "application/ld+json"), ("*/*", "application/n-triples"),
])
def test_the_service_description_comes_in_the_format_accepted(service, accept, media):
    """As any other RDF the endpoint answers: the Accept header chooses its format."""
    answer = service.get("/sparql", headers={"Accept": accept})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith(media)
    graph = rdflib.Graph().parse(data=answer.text, format=media)
    assert (None, rdflib.RDF.type, SD.Service) in graph


def test_a_service_description_in_no_format_accepted_is_a_406(service):
    answer = service.get("/sparql", headers={"Accept": "text/html"})
    _refused(answer, 406, "text/turtle")


@pytest.mark.parametrize(("body", "held", "error"), [
    (b"", "nothing", "InvalidArgumentError"),
    (b'["how do we deploy?"]', "an array", "InvalidArgumentTypeError"),
    (b'"how do we deploy?"', "a string", "InvalidArgumentTypeError"),
    (b"null", "null", "InvalidArgumentTypeError"),
    (b"5", "a number", "InvalidArgumentTypeError"),
])
def test_a_search_body_that_is_no_object_says_what_a_search_is(service, body, held, error):
    answer = service.post("/retrieve", content=body, headers={"Content-Type": "application/json"})
    said = _refused(answer, 400)
    assert answer.json()["error"] == error
    assert said == ('a search is one JSON object such as {"query": "how do we deploy?", '
                    f'"k": 5}}; the request body holds {held}')


@pytest.mark.parametrize(("path", "example"), [
    ("/ingest", '{"documents": [{"id": "handbook", "text": "..."}], "scope": "public"}'),
    ("/runs/" + "0" * 32 + "/feedback", '{"rating": "up", "note": "..."}')])
@pytest.mark.parametrize(("body", "held"), [
    (b"", "nothing"), (b"null", "null"), (b'[{"id": "a", "text": "t"}]', "an array")])
def test_a_body_that_is_no_object_says_what_the_route_reads(service, path, example, body, held):
    # As a search's does; these said "body: Field required" or "Input should be a valid
    # dictionary or object to extract fields from", naming neither what to send nor why.
    answer = service.post(path, content=body, headers={"Content-Type": "application/json"})
    said = _refused(answer, 400)
    assert said.endswith(f"is one JSON object such as {example}; the request body holds {held}")


@pytest.mark.parametrize("path", ["/retrieve", "/ingest", "/runs/" + "0" * 32 + "/feedback"])
def test_a_body_that_is_no_json_says_where_and_why(service, path):
    answer = service.post(path, content=b'{"query": ', headers={
        "Content-Type": "application/json"})
    _refused(answer, 422, "no JSON", "Expecting value", "character 10", "send one JSON object")


@pytest.mark.parametrize("path", ["/retrieve", "/ingest"])
def test_a_json_body_that_is_no_utf8_says_so(service, path):
    answer = service.post(path, content=b'{"query": "caf\xe9"}', headers={
        "Content-Type": "application/json"})
    _refused(answer, 400, "not UTF-8", "byte 14", "UTF-8")


@pytest.mark.parametrize(("path", "body", "key"), [
    ("/retrieve", b'{"query": "deploy", "query": "secrets"}', '"query"'),
    ("/retrieve", (b'{"query": "x", "bindings": {"v": {"type": "uri", "value": "urn:a", '
                   b'"value": "urn:b"}}}'), '"value"'),                     # nested two deep
    ("/ingest", b'{"documents": [{"id": "a", "text": "one", "text": "two"}]}', '"text"'),
    ("/runs/" + "0" * 32 + "/feedback", b'{"rating": 1, "rating": -1}', '"rating"'),
])
def test_a_json_body_giving_a_key_twice_is_refused_naming_it(service, path, body, key):
    # Such a body was read as its last value for the key: a request kept as evidence must
    # mean one thing to every reader of it.
    answer = service.post(path, content=body, headers={"Content-Type": "application/json"})
    _refused(answer, 400, f"the key {key} more than once", "give each key once")
    assert answer.json()["error"] == "InvalidArgumentError"


def test_a_json_body_holding_an_integer_too_long_to_read_says_so(service):
    # It was refused as a body that "cannot be read as JSON (ValueError)": no word of why.
    body = b'{"query": "x", "k": ' + b"9" * 5000 + b"}"
    answer = service.post("/retrieve", content=body, headers={"Content-Type": "application/json"})
    _refused(answer, 400, "an integer of more than 4,300 digits", "send a shorter number")


def test_a_json_body_nested_too_deep_says_so(service):
    body = b'{"query": "x", "bindings": {"v": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    answer = service.post("/retrieve", content=body, headers={"Content-Type": "application/json"})
    _refused(answer, 400, "too deep")


@pytest.mark.parametrize("headers", [
    [("Authorization", f"Bearer {SECRETS['alpha-reader']}"), ("X-API-Key", SECRETS["admin"])],
    [("Authorization", f"Bearer {SECRETS['alpha-reader']}"),
     ("Authorization", f"Bearer {SECRETS['admin']}")],
])
def test_a_request_presenting_two_different_keys_is_refused(service, headers):
    # It was answered as the first key its headers held, and recorded under that key's label:
    # which key a request was made with depended on the order of its headers.
    with httpx.Client(base_url=service.base_url, timeout=30) as bare:
        answer = bare.get("/whoami", headers=httpx.Headers(headers))
        _refused(answer, 401, "2 different API keys", "send the one key")
        same = [("Authorization", f"Bearer {SECRETS['admin']}"), ("X-API-Key", SECRETS["admin"])]
        assert bare.get("/whoami", headers=httpx.Headers(same)).json()["label"] == "admin"


@pytest.mark.parametrize(("path", "content_type", "body"), [
    ("/retrieve", "application/json", b'{"query": "deploy"}'),
    ("/sparql", "application/sparql-query", b"ASK {}"),
])
@pytest.mark.parametrize("coding", ["gzip", "br", "identity, deflate"])
def test_a_body_with_a_content_coding_is_refused_naming_it(service, path, content_type, body,
                                                          coding):
    # The service decodes no coding: a gzipped body was "not UTF-8 (invalid start byte at
    # byte 1)", and a plain one labelled gzip was read as plain, though it means something
    # else to every reader that decodes it as its header says.
    for sent in (gzip.compress(body), body):
        answer = service.post(path, content=sent, headers={
            "Content-Type": content_type, "Content-Encoding": coding})
        # RFC 9110, 15.5.16: an unsupported content coding is a 415 saying which it takes
        _refused(answer, 415, f"Content-Encoding: {coding.removeprefix('identity, ')}",
                 "send the body uncompressed")
        assert answer.headers["accept-encoding"] == "identity"
    plain = service.post(path, content=body, headers={"Content-Type": content_type,
                                                      "Content-Encoding": "identity"})
    assert plain.status_code == 200, plain.text


def test_the_openapi_document_states_the_406_413_and_415_the_service_answers(service):
    paths = service.get("/openapi.json").json()["paths"]
    for method in ("get", "post"):
        assert "406" in paths["/sparql"][method]["responses"]
    for path in ("/retrieve", "/ingest", "/sparql", "/runs/{run}/feedback"):
        assert {"413", "415"} <= set(paths[path]["post"]["responses"]), path
    refused = service.get("/sparql", params={"query": SELECT}, headers={"Accept": "text/html"})
    schema = paths["/sparql"]["get"]["responses"]["406"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    assert set(refused.json()) == {"error", "message"}
