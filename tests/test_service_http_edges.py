"""What a newcomer's first HTTP calls get wrong, answered with what to fix: a JSON body sent
under another content type (``curl -d`` sends a form's), a method a route does not take."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service_support import bearer, keys, seeded_context
from trails.service.app import create_app
from trails.service.steps import STEP_OPTIONS

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def client(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    with TestClient(create_app(ctx, keys())) as test_client:
        for _ in range(500):
            if test_client.get("/health/ready").status_code == 200:
                break
            time.sleep(0.01)
        yield test_client
    ctx.close()


JSON_ROUTES = [
    ("/retrieve", b'{"query": "glaciers", "k": 2}'),
    ("/ingest", b'{"documents": [{"id": "n1", "text": "Narwhals have tusks."}]}'),
    ("/runs/0123456789abcdef0123456789abcdef/feedback", b'{"rating": "up"}'),
]


@pytest.mark.parametrize("path, body", JSON_ROUTES)
@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain",
                                          "text/json; charset=utf-8", "multipart/form-data"])
def test_a_json_body_sent_as_another_type_is_refused_naming_the_header_to_send(
        client, path, body, content_type):
    """curl -d without -H 'Content-Type: application/json' sends a form, requests.post(data=)
    no type at all: the answer used to be 'Input should be a valid dictionary or object to
    extract fields from' (a 400 from /retrieve, a 422 from the others)."""
    headers = {**bearer("admin"), **({"Content-Type": content_type} if content_type else {})}
    response = client.post(path, content=body, headers=headers)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["error"] == "InvalidArgumentError"
    assert "Content-Type: application/json" in answer["message"]
    sent = repr(content_type.split(";")[0]) if content_type else "no Content-Type"
    assert sent in answer["message"]
    assert "valid dictionary" not in answer["message"]


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "Application/JSON", "application/ld+json"])
def test_a_json_body_sent_as_json_is_read(client, content_type):
    headers = {**bearer("admin"), "Content-Type": content_type}
    body = b'{"query": "glaciers", "k": 2, "scopes": ["alpha"]}'
    response = client.post("/retrieve", content=body,
                           headers=headers)
    assert response.status_code == 200, response.text
    assert len(response.json()["hits"]) == 2


@pytest.mark.parametrize("path, methods", [
    ("/sparql", "GET, HEAD, POST"),
    ("/sparql/", "GET, HEAD, POST"),
    ("/runs/0123456789abcdef0123456789abcdef/feedback", "GET, HEAD, POST"),
    ("/retrieve", "POST"),
    ("/documents/trails://local/doc/x", "DELETE"),
    ("/health", "GET, HEAD"),
])
def test_a_method_a_path_does_not_take_is_a_405_allowing_every_one_it_does(client, path, methods):
    """The Allow header named only the first route's method: GET for /sparql, POST for a run's
    feedback, though both take GET and POST."""
    response = client.request("PUT", path, content=b"x", headers=bearer("admin"))
    assert response.status_code == 405
    assert response.headers["allow"] == methods
    assert response.json()["error"] == "MethodNotAllowed"
    assert methods.replace(", ", " or ") in response.json()["message"]


@pytest.mark.parametrize("path", ["/health", "/health/ready", "/whoami",
                                  "/sparql?query=ASK%7B%7D"])
def test_head_answers_what_get_does_without_the_body(client, path):
    """curl -I .../health was a 405."""
    got = client.get(path, headers=bearer("admin"))
    head = client.head(path, headers=bearer("admin"))
    assert got.status_code == 200, got.text
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]


def test_ranks_in_an_answer_are_integers_as_retrieve_gives_them(client):
    """The response model read every component as a float: ranks came back 1.0, 2.0."""
    response = client.post("/retrieve", json={"query": "glaciers", "k": 2, "scopes": ["alpha"],
                                              "fusion": "rrf"}, headers=bearer("admin"))
    assert response.status_code == 200, response.text
    components = [hit["components"] for hit in response.json()["hits"]]
    assert sorted(c["vector_rank"] for c in components) == [1, 2]
    for part in components:
        ranks = {name: value for name, value in part.items() if name.endswith("_rank")}
        assert ranks and all(type(value) is int for value in ranks.values()), part
        assert type(part["vector"]) is float


def test_an_ingest_into_the_empty_scope_name_is_refused_not_written_to_the_default(client):
    """"scope": "" was read as no scope: the documents went to the default scope, where
    ingest_all(scope="") and a search's "scopes": [""] refuse the name."""
    before = client.post("/sparql", data={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"},
                         headers={**bearer("admin"), "Accept": "text/csv"}).text
    response = client.post("/ingest", json={"scope": "", "documents": [
        {"id": "n1", "text": "Narwhals have tusks."}]}, headers=bearer("admin"))
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "InvalidArgumentError"
    assert "got ''" in response.json()["message"]
    after = client.post("/sparql", data={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"},
                        headers={**bearer("admin"), "Accept": "text/csv"}).text
    assert after == before


@pytest.mark.parametrize("value, sent", [(None, "null"), (["a1", "a2"], "an array")])
def test_a_binding_that_is_no_json_scalar_or_term_says_what_a_binding_is(client, value, sent):
    """null or a list was refused as 'bindings.doc.TermObject: Input should be a valid
    dictionary or instance of TermObject': about a class the caller never named."""
    response = client.post("/retrieve", json={
        "query": "glaciers", "scopes": ["alpha"], "bindings": {"name": value},
        "filter": "SELECT ?doc WHERE { ?doc schema:name ?name }"}, headers=bearer("admin"))
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["error"] == "InvalidArgumentTypeError"
    assert f"binding 'name' is {sent}" in answer["message"]
    assert '{"type": "uri", "value": ' in answer["message"]
    assert "TermObject" not in answer["message"]
    assert ("VALUES ?name" in answer["message"]) == (sent == "an array")


@pytest.mark.parametrize("term, said", [
    ({"type": "bnode", "value": "b0"}, "type: Input should be 'uri' or 'literal'"),
    ({"value": "a1"}, "type: Field required"),
    ({"type": "literal", "value": "a1", "lang": "en"}, "lang: Extra inputs are not permitted"),
])
def test_a_malformed_term_binding_names_the_binding_not_the_schema_class(client, term, said):
    """These were 'bindings.name.TermObject.type: ...': a class of the service's schema."""
    response = client.post("/retrieve", json={
        "query": "glaciers", "scopes": ["alpha"], "bindings": {"name": term},
        "filter": "SELECT ?doc WHERE { ?doc schema:name ?name }"}, headers=bearer("admin"))
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert message.startswith(f"binding 'name' is no SPARQL JSON term ({said})"), message
    assert "TermObject" not in message


@pytest.mark.parametrize("step, said", [
    ("mmr", "steps[0] is 'mmr': a step is an object"),
    ({"name": "mmr", "lambda_": 0.5}, "steps[0] takes name and options, not lambda_"),
])
def test_a_step_written_another_way_says_how_a_step_is_written(client, step, said):
    """A step's option beside its name was 'steps.0.lambda_ is no option of a search; a search
    takes query, mode, k, ...', a bare name 'Input should be a valid dictionary or instance of
    StepSpec'."""
    response = client.post("/retrieve", json={
        "query": "glaciers", "scopes": ["alpha"], "steps": [step]}, headers=bearer("admin"))
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert message.startswith(said), message
    assert '{"name": "mmr", "options": {"lambda_": 0.5}}' in message
    assert "StepSpec" not in message and "option of a search" not in message


def test_every_refusal_in_front_of_the_routes_is_never_cached(tmp_path):
    """docs/service.md: every answer carries Cache-Control: no-store. A keyless service's 421
    (another Host) did not: it is written before the routes' middleware adds the header."""
    ctx = seeded_context(tmp_path / "keyless")
    try:
        with TestClient(create_app(ctx, None)) as keyless:
            refused = keyless.get("/health", headers={"Host": "evil.example"})
            assert refused.status_code == 421
            assert refused.headers["cache-control"] == "no-store"
        with TestClient(create_app(ctx, keys(), max_request_bytes=10)) as capped:
            too_large = capped.post("/retrieve", json={"query": "glaciers" * 10},
                                    headers=bearer("admin"))
            assert too_large.status_code == 413
            assert too_large.headers["cache-control"] == "no-store"
    finally:
        ctx.close()


def test_every_route_the_openapi_document_names_is_served(client):
    """The steps' description said 'GET /steps lists them': a 404."""
    document = client.get("/openapi.json")
    assert document.status_code == 200
    paths = document.json()["paths"]
    named = set(re.findall(r"\b(GET|POST|DELETE) (/[\w/{}.-]*)", document.text))
    assert named, "the document names routes in its descriptions"
    for method, path in sorted(named):
        assert method.lower() in paths.get(path.rstrip("."), {}), f"{method} {path}"


def test_docs_service_md_lists_every_step_with_its_options():
    """The page listed five steps; the service takes six (entities was missing)."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "service.md").read_text()
    steps = page[page.index("- `steps`, each by name"):page.index("An unknown step name")]
    listed = dict(re.findall(r"^  - `(\w+)`: (.*)$", steps, flags=re.MULTILINE))
    assert set(listed) == set(STEP_OPTIONS)
    for name, options in STEP_OPTIONS.items():
        assert all(f"`{option}`" in listed[name] for option in options), name


@pytest.mark.parametrize("value, sent", [(None, "null"), (["a"], "an array")])
def test_the_mcp_retrieve_tool_says_what_a_binding_is(tmp_path, value, sent):
    """null or a list was 'bindings.x.bool: Input should be a valid boolean', the first
    member of the union pydantic tried."""
    mcp = pytest.importorskip("mcp")
    from trails.service.mcp import build_server, chosen_key

    ctx = seeded_context(tmp_path / "kb")
    try:
        server = build_server(ctx, chosen_key(None, None, None))
        with pytest.raises(mcp.server.mcpserver.exceptions.ToolError) as refused:
            asyncio.run(server.call_tool("retrieve", {
                "query": "glaciers", "bindings": {"name": value},
                "filter": "SELECT ?doc WHERE { ?doc schema:name ?name }"}))
    finally:
        ctx.close()
    message = str(refused.value)
    assert f"binding 'name' is {sent}: a binding is a JSON string, number or boolean" in message
    assert "or a SPARQL JSON term" in message and ".bool" not in message


def test_a_misnamed_field_of_a_search_body_names_the_field_meant(client):
    response = client.post("/retrieve", json={"query": "glaciers", "scopes": ["alpha"],
                                              "top_k": 2}, headers=bearer("admin"))
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith(
        "top_k is no option of a search (did you mean k?); a search takes query, ")
