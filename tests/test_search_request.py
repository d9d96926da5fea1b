"""One search, one refusal: a request is checked by ``trails.SearchRequest`` wherever it comes
from, so Python's ``retrieve()``, the request model itself and ``POST /retrieve`` accept the
same requests and refuse the same ones with the same error and message (ADR 0043)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service_support import bearer, keys, seeded_context
from trails import SearchRequest, retrieve
from trails.errors import InvalidArgumentError
from trails.retrieval.arguments import MAX_K
from trails.retrieval.recording import SearchCall
from trails.service.app import create_app
from trails.service.mcp import build_server, chosen_key
from trails.service.models import RetrieveRequest

# Python's spelling of an option that JSON spells otherwise.
PYTHON_NAMES = {"filter": "sparql_filter", "scopes": "scope"}
FILTER = "SELECT ?iri WHERE { ?iri ?p ?o }"

GOOD = [
    {"k": 1001},
    {"k": 1},
    {"mode": "vector", "k": 3},
    {"fusion": "rrf"},
    {"fallback": "skip"},
    {"why": False},
    {"now": "2026-01-01T00:00:00+00:00"},
]
BAD = [
    {"k": 0},
    {"k": 1_000_001},
    {"k": True},
    {"k": "ten"},
    {"k": 2.0},
    {"mode": "psychic"},
    {"fusion": "best"},
    {"fusion": 3},
    {"fallback": "retry"},
    {"scopes": ["no such scope!"]},
    {"scopes": []},
    {"bindings": {"x": 1}},
    {"bindings": ["x"]},
    {"min_score": "high"},
    {"mode": "graph"},
    {"mode": "vector", "filter": FILTER},
    {"mode": "graph", "filter": FILTER, "min_score": 0.5},
    {"why": "yes"},
    {"now": "yesterday"},
    {"now": "2026-01-01T00:00:00"},
]


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Any:
    ctx = seeded_context(tmp_path_factory.mktemp("kb"))
    with TestClient(create_app(ctx, keys())) as client:
        yield ctx, client


@pytest.fixture(scope="module")
def mcp_server(service) -> Any:
    pytest.importorskip("mcp")
    return build_server(service[0], chosen_key(None, None, None))


def _python(ctx: Any, options: dict[str, Any]) -> Any:
    return retrieve("alpine", ctx, **{PYTHON_NAMES.get(n, n): v for n, v in options.items()})


def _http(client: TestClient, options: dict[str, Any]) -> Any:
    return client.post("/retrieve", json={"query": "alpine", **options},
                       headers=bearer("admin"))


def _mcp(server: Any, options: dict[str, Any]) -> Any:
    """The ``retrieve`` tool called in-process, as the SDK calls it for a client."""
    return asyncio.run(server.call_tool("retrieve", {"query": "alpine", **options}))


def _refusal(call: Any) -> tuple[str, str]:
    with pytest.raises(InvalidArgumentError) as raised:
        call()
    return type(raised.value).__name__, str(raised.value)


def _mcp_refusal(server: Any, options: dict[str, Any]) -> tuple[str, str]:
    """The tool error a client reads, and the error it carries."""
    with pytest.raises(Exception) as raised:
        _mcp(server, options)
    cause = raised.value
    while cause.__cause__ is not None:
        cause = cause.__cause__
    assert str(raised.value) == f"Error executing tool retrieve: {cause}"
    return type(cause).__name__, str(cause)


@pytest.mark.parametrize("options", BAD, ids=repr)
def test_a_bad_request_gets_the_same_refusal_everywhere(service, options):
    ctx, client = service
    python = _refusal(lambda: _python(ctx, options))
    assert _refusal(lambda: SearchRequest(query="alpine", **options)) == python
    answer = _http(client, options)
    assert answer.status_code == 400, answer.text
    assert (answer.json()["error"], answer.json()["message"]) == python


@pytest.mark.parametrize("options", GOOD, ids=repr)
def test_a_good_request_gets_the_same_answer_everywhere(service, options):
    ctx, client = service
    python = _python(ctx, {"scopes": ["alpha"], **options})
    answer = _http(client, {"scopes": ["alpha"], **options})
    assert answer.status_code == 200, answer.text
    assert [h["iri"] for h in answer.json()["hits"]] == [h.iri for h in python]


@pytest.mark.parametrize("options", BAD + [{"top_k": 3}], ids=repr)
def test_the_mcp_tool_refuses_a_bad_request_as_python_does(service, mcp_server, options):
    ctx, _ = service
    python = _refusal(lambda: _python(ctx, options) if "top_k" not in options
                      else SearchRequest(query="alpine", **options))
    mcp = _mcp_refusal(mcp_server, options)
    if "top_k" in options:  # the tool names its own fields too (inject_mode, ...)
        assert mcp[0] == python[0] and mcp[1].startswith(python[1])
    else:
        assert mcp == python


@pytest.mark.parametrize("options", GOOD, ids=repr)
def test_the_mcp_tool_answers_a_good_request_as_python_does(service, mcp_server, options):
    ctx, _ = service
    python = _python(ctx, {"scopes": ["alpha"], **options})
    answer = _mcp(mcp_server, {"scopes": ["alpha"], **options})
    assert not answer.is_error, answer.content
    assert [h["iri"] for h in answer.structured_content["hits"]] == [h.iri for h in python]


def test_the_mcp_schema_is_the_requests_schema(mcp_server):
    """Every field of the request is an argument of the tool, with its type, limits,
    choices, default and description."""
    [tool] = [t for t in asyncio.run(mcp_server.list_tools()) if t.name == "retrieve"]
    published = tool.input_schema["properties"]
    request = SearchRequest.model_json_schema()["properties"]
    assert set(request) <= set(published)
    # These are spelt as JSON spells them (terms by value, steps by name, now as text).
    for name in set(request) - {"bindings", "steps", "now"}:
        assert published[name] == request[name], name
    assert (published["k"]["minimum"], published["k"]["maximum"]) == (1, MAX_K)
    assert tool.input_schema["required"] == ["query"]
    assert tool.input_schema.get("additionalProperties") is False


def test_an_unknown_field_is_refused_by_the_request_and_over_http(service):
    _, client = service
    refused = _refusal(lambda: SearchRequest(query="alpine", top_k=3))
    answer = _http(client, {"top_k": 3})
    assert answer.status_code == 400
    assert answer.json()["error"] == refused[0] == "InvalidArgumentError"
    assert "top_k" in refused[1] and "top_k" in answer.json()["message"]


def test_the_request_is_frozen_and_the_body_is_the_request():
    request = SearchRequest(query="alpine", k=3)
    with pytest.raises(ValueError):
        request.k = 4  # type: ignore[misc]
    assert issubclass(RetrieveRequest, SearchRequest)
    assert set(SearchRequest.model_fields) <= set(RetrieveRequest.model_fields)


def test_the_audit_call_is_what_the_request_asks():
    request = SearchRequest(query="alpine", k=7, filter=FILTER, bindings={"x": 1},
                            scopes=["alpha"], fusion="rrf", min_score=0.25, why=True)
    call = SearchCall.asked(request, "ana", started="2026-01-01T00:00:00Z")
    assert (call.query, call.mode, call.k, call.sparql_filter, dict(call.bindings or {}),
            list(call.scopes), call.fusion, list(call.steps), call.min_score, call.caller,
            call.why, call.started) == (
        "alpine", "hybrid", 7, FILTER, {"x": 1}, ["alpha"], "rrf", [], 0.25, "ana", True,
        "2026-01-01T00:00:00Z")


def test_every_step_the_service_builds_can_be_asked_for(service):
    """A step the service knows is accepted in a request (the body's list of names is the
    one build_steps keeps); an unknown one is refused naming the steps."""
    _, client = service
    for name in ("entities", "mmr", "recency"):
        answer = _http(client, {"scopes": ["alpha"], "steps": [{"name": name}]})
        assert answer.status_code == 200, (name, answer.text)
    refused = _http(client, {"steps": [{"name": "psychic"}]})
    assert refused.status_code == 400
    assert "psychic" in refused.json()["message"] and "entities" in refused.json()["message"]
    schema = RetrieveRequest.model_json_schema()
    step = schema["$defs"]["StepSpec"]["properties"]["name"]
    assert "entities" in step["enum"]
