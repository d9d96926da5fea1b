"""One search, one refusal: a request is checked by ``trails.SearchRequest`` wherever it comes
from, so Python's ``retrieve()``, the request model itself and ``POST /retrieve`` accept the
same requests and refuse the same ones with the same error and message (ADR 0043)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import typer
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from _cli import run_trails
from service_support import KEYS_TOML, bearer, keys, seeded_context
from trails import SearchRequest, retrieve
from trails.cli import app
from trails.cli.arguments import SEARCH_OPTIONS, search_fields
from trails.errors import InvalidArgumentError, TrailsError
from trails.retrieval.arguments import MAX_K
from trails.retrieval.recording import SearchCall
from trails.service.app import create_app
from trails.service.keys import KeyRing
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
    {"now": "2100-01-01T00:00:00+00:00"},
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
    # JSON has no datetime: a value of another type is refused as Python refuses it
    {"now": 5},
    {"now": True},
    {"now": ["2100-01-01T00:00:00+00:00"]},
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


# -- the terminal too: one table, four ways in --------------------------------------------------

# A filter whose ?skip the cases bind; the seeded documents are named a1, a2, b1, b2.
SKIPPING = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d schema:name ?n . "
            "FILTER(?n != ?skip) }")
# (the request as Python and JSON give it, the same request as `trails query` options, the
# words of its refusal). The words are written here, not taken from the code.
REFUSED = [
    ({"k": 0}, ["-k", "0"], "k must be an int from 1 to 1000000, got 0"),
    ({"k": -3}, ["-k", "-3"], "k must be an int from 1 to 1000000, got -3"),
    ({"k": 1_000_001}, ["--k", "1000001"], "k must be an int from 1 to 1000000, got 1000001"),
    ({"k": 2.5}, ["-k", "2.5"], "k must be an int from 1 to 1000000, got float 2.5"),
    ({"k": "ten"}, ["-k", "ten"], "k must be an int from 1 to 1000000, got str 'ten'"),
    ({"mode": "psychic"}, ["--mode", "psychic"],
     "mode must be one of 'vector', 'graph', 'hybrid'; got 'psychic'"),
    ({"fusion": "best"}, ["--fusion", "best"],
     "fusion must be None, a callable or one of ('rrf', 'weighted', 'auto'); got 'best'"),
    ({"fallback": "retry"}, ["--fallback", "retry"],
     ("fallback must be 'auto' (hybrid queries fall back to keywords when the vector side "
      "fails), 'keyword' (vector queries too), 'skip' (an empty answer that says why) or None "
      "(raise); got 'retry'")),
    ({"min_score": float("nan")}, ["--min-score", "nan"],
     "min_score must be a number, got NaN; pass None for no threshold"),
    ({"min_score": "high"}, ["--min-score", "high"],
     "min_score must be a number (a threshold on the final score) or None, got str 'high'"),
    ({"min_score": 10**400}, ["--min-score", "1" + "0" * 400],
     "min_score must be a number a float can hold, got 1000000000"),
    ({"mode": "graph", "filter": SKIPPING, "bindings": {"skip": "a1"}, "min_score": 0.5},
     ["--mode", "graph", "--sparql", SKIPPING, "--bind", "skip=a1", "--min-score", "0.5"],
     "min_score does not apply to mode='graph': graph hits have no score"),
    ({"mode": "graph"}, ["--mode", "graph"],
     "mode='graph' needs a sparql_filter selecting the IRIs to return"),
    ({"mode": "vector", "filter": SKIPPING}, ["--mode", "vector", "--sparql", SKIPPING],
     "mode='vector' ranks every vector and takes no sparql_filter"),
    ({"bindings": {"skip": "a1"}}, ["--bind", "skip=a1"],
     "bindings were given without a sparql_filter to bind them in"),
    ({"filter": SKIPPING, "bindings": {"bad_name!": 1}}, ["--sparql", SKIPPING, "--bind",
                                                          "bad_name!=1"],
     "binding name 'bad_name!' is not a SPARQL variable name"),
    ({"scopes": ["no such scope!"]}, ["--scope", "no such scope!"],
     "scope: scope names are 1-128 characters of letters, digits"),
    ({"scopes": ["gamma"]}, ["--scope", "gamma"],
     "unknown scope 'gamma'; the scopes that exist: alpha, beta, default"),
    ({"now": "yesterday"}, ["--now", "yesterday"],
     "now='yesterday' is no ISO 8601 date-time; write e.g. 2026-01-01T00:00:00+00:00"),
    ({"now": "2026-01-01T00:00:00"}, ["--now", "2026-01-01T00:00:00"],
     "has no offset, so it names no moment"),
    ({"filter": "SELECT ?iri WHERE { ?iri "}, ["--sparql", "SELECT ?iri WHERE { ?iri "],
     "the SPARQL filter does not parse: at line 1, column 26"),
]
ANSWERED = [
    ({"k": 1}, ["-k", "1"]),
    ({"mode": "vector", "k": 3}, ["--mode", "vector", "-k", "3"]),
    ({"fusion": "rrf"}, ["--fusion", "rrf"]),
    ({"fusion": "none"}, ["--fusion", "none"]),
    ({"fallback": "skip"}, ["--fallback", "skip"]),
    ({"min_score": -1.0}, ["--min-score", "-1"]),
    ({"now": "2100-01-01T00:00:00+00:00"}, ["--now", "2100-01-01T00:00:00+00:00"]),
    ({"filter": SKIPPING, "bindings": {"skip": "a1"}, "why": True},
     ["--sparql", SKIPPING, "--bind", "skip=a1", "--why"]),
    ({"mode": "graph", "filter": SKIPPING, "bindings": {"skip": "a2"}},
     ["--mode", "graph", "--sparql", SKIPPING, "--bind", "skip=a2"]),
]


@pytest.fixture(scope="module")
def terminal_db(tmp_path_factory) -> Any:
    """A directory holding the same documents as ``service``'s, for ``trails query``."""
    db = tmp_path_factory.mktemp("terminal") / "kb"
    seeded_context(db).close()
    return db


def _trails_query(db: Any, options: list[str]) -> Any:
    return run_trails("--db", db, "query", "alpine", *options)


def _first_trails_error(error: BaseException) -> BaseException:
    """The error the MCP tool refused with (the SDK wraps it)."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, TrailsError):
        cause = cause.__cause__
    assert cause is not None, error
    return cause


def _four_refusals(service: Any, server: Any, db: Any, request: dict[str, Any],
                   options: list[str]) -> dict[str, str]:
    ctx, client = service
    refusals = {}
    with pytest.raises(TrailsError) as raised:
        _python(ctx, request)
    refusals["python"] = str(raised.value)
    answer = client.post("/retrieve", content=json.dumps({"query": "alpine", **request}),
                         headers={**bearer("admin"), "Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    refusals["http"] = answer.json()["message"]
    with pytest.raises(Exception) as tool_error:
        _mcp(server, request)
    refusals["mcp"] = str(_first_trails_error(tool_error.value))
    terminal = _trails_query(db, options)
    assert terminal.returncode == 1, terminal.stdout
    assert "Traceback" not in terminal.stderr
    [line] = terminal.stderr.splitlines()
    refusals["terminal"] = line.removeprefix("Error: ")
    # The terminal says a message on one line: compare the words, whatever spaces them.
    return {way: " ".join(message.split()) for way, message in refusals.items()}


@pytest.mark.parametrize(("request_", "options", "words"), REFUSED, ids=lambda v: repr(v)[:60])
def test_a_mistake_is_refused_in_the_same_words_in_python_http_mcp_and_the_terminal(
        service, mcp_server, terminal_db, request_, options, words):
    refusals = _four_refusals(service, mcp_server, terminal_db, request_, options)
    assert all(words in message for message in refusals.values()), refusals
    assert len(set(refusals.values())) == 1, refusals


@pytest.mark.parametrize(("request_", "options"), ANSWERED, ids=lambda v: repr(v)[:60])
def test_a_good_request_gets_the_same_hits_in_python_http_mcp_and_the_terminal(
        service, mcp_server, terminal_db, request_, options):
    ctx, client = service
    request = {"scopes": ["alpha"], **request_}
    python = [hit.iri for hit in _python(ctx, request)]
    http = _http(client, request)
    assert http.status_code == 200, http.text
    mcp = _mcp(mcp_server, request)
    assert not mcp.is_error, mcp.content
    terminal = _trails_query(terminal_db, ["--scope", "alpha", *options, "--json"])
    assert terminal.returncode == 0, terminal.stderr
    assert python, "the seeded context answers every one of these"
    assert [h["iri"] for h in http.json()["hits"]] == python
    assert [h["iri"] for h in mcp.structured_content["hits"]] == python
    assert [h["iri"] for h in json.loads(terminal.stdout)["hits"]] == python


def test_every_field_of_a_search_is_an_option_of_trails_query():
    """A field added to the request is an option of the command, or this fails (the steps
    are Python callables or named service steps: not a command line's)."""
    command = typer.main.get_command(app).commands["query"]  # type: ignore[attr-defined]
    flags = {flag for param in command.params for flag in param.opts}
    assert set(SEARCH_OPTIONS) == set(SearchRequest.model_fields) - {"query", "steps"}
    assert all(set(option) <= flags for option in SEARCH_OPTIONS.values())
    shown = CliRunner().invoke(app, ["query", "--help"], env={"COLUMNS": "200"}).stdout
    for choice in ("vector", "graph", "hybrid", "rrf", "weighted", "keyword", "skip",
                   "1,000,000"):
        assert choice in shown


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.integers().filter(lambda n: not 1 <= n <= MAX_K).map(str),
                 st.floats(allow_nan=False).map(repr), st.text(max_size=8)))
def test_any_bad_k_in_the_terminal_is_refused_as_the_request_refuses_it(tmp_path_factory, k):
    """Whatever ``-k`` is given, the terminal says what the request says of the value it
    reads as JSON would (before any context is opened)."""
    value = search_fields("alpine", {"k": k})["k"]
    if isinstance(value, int) and 1 <= value <= MAX_K:
        return
    with pytest.raises(InvalidArgumentError) as refused:
        SearchRequest(query="alpine", k=value)
    db = tmp_path_factory.getbasetemp() / "nothing-here"
    result = CliRunner().invoke(app, ["--db", str(db), "query", "alpine", "-k", k])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {' '.join(str(refused.value).split())}\n"


# -- a key whose scopes hold nothing yet: a mistake is still refused ---------------------------

UNSEARCHED = [  # mistakes the request alone cannot see: the filter's, and the search's own
    {"filter": SKIPPING},                                    # ?skip bound nowhere
    {"filter": FILTER, "bindings": {"skipp": "a1"}},         # a binding naming no variable
    {"filter": "SELECT ?iri WHERE { ?iri schem:name ?n }"},  # a prefix nobody declared
    {"filter": "ASK { ?s ?p ?o }"},
    {"now": "yesterday"},
    {"now": "2026-01-01T00:00:00"},
    {"mode": "graph"},
    {"mode": "vector", "filter": FILTER},
    {"bindings": {"skip": "a1"}},
]
EMPTY_KEY = ('[[key]]\nlabel = "gamma-reader"\nsecret = "gamma-secret-0123456789"\n'
             'scopes = ["gamma"]\nrights = ["read"]\n')


@pytest.fixture(scope="module")
def keyed_clients(service) -> Any:
    """The service's context served with a key for alpha (which holds documents) and one
    for gamma (which holds nothing)."""
    ring = KeyRing.parse(f"{EMPTY_KEY}\n{KEYS_TOML}", source="the test keys")
    with TestClient(create_app(service[0], ring)) as client:
        yield client


@pytest.mark.parametrize("options", UNSEARCHED, ids=repr)
def test_a_key_whose_scopes_hold_nothing_is_refused_as_one_whose_scopes_hold_documents(
        keyed_clients, options):
    """Nothing to search is no reason to take a mistake for an answer: the same request is
    refused in the same words whether the key's scopes hold documents or not yet."""
    answers = {}
    for label, secret in (("alpha", "alpha-secret-0123456789"),
                          ("gamma", "gamma-secret-0123456789")):
        answer = keyed_clients.post("/retrieve", json={"query": "alpine", **options},
                                    headers={"Authorization": f"Bearer {secret}"})
        answers[label] = (answer.status_code, answer.json().get("error"),
                          answer.json().get("message"))
    assert answers["alpha"][0] == 400, answers
    assert answers["gamma"] == answers["alpha"]


# -- the published schema says what is accepted ------------------------------------------------

SCOPES = [  # each accepted or refused by the check of a scope's name, whatever the context holds
    ("alpha", True), (["alpha"], True), (["alpha", "beta"], True), (["a.b-c_9"], True),
    ([], False), ([""], False), (["élan"], False), (["-alpha"], False), (["al pha"], False),
    ("", False), (["a" * 129], False), (["alpha", 3], False), (3, False),
]


@pytest.mark.parametrize(("scopes", "well_formed"), SCOPES, ids=repr)
def test_the_openapi_schema_of_scopes_accepts_what_the_service_accepts(service, scopes,
                                                                       well_formed):
    """A client that checks its body against /openapi.json sends what the service reads: a
    scope name, or a non-empty list of them, each of the form a scope name has."""
    jsonschema = pytest.importorskip("jsonschema")
    _, client = service
    document = client.get("/openapi.json").json()
    schema = {**document["components"]["schemas"]["RetrieveRequest"],
              "components": document["components"]}
    body = {"query": "alpine", "scopes": scopes}
    valid = jsonschema.Draft202012Validator(schema).is_valid(body)
    answer = _http(client, {"scopes": scopes})
    # well formed: the check of names passes (a9.b-c_9 holds nothing here: 400 UnknownScope)
    named = answer.status_code == 200 or answer.json()["error"] == "UnknownScopeError"
    assert named == well_formed, answer.text
    assert valid == well_formed, schema["properties"]["scopes"]


@pytest.mark.parametrize("options", BAD, ids=repr)
def test_a_request_read_with_pydantics_own_readers_is_refused_as_python_refuses_it(service,
                                                                                    options):
    """``SearchRequest.model_validate`` and ``model_validate_json`` (how a request kept as JSON
    is read back) build a request too: the same refusal, never pydantic's ValidationError."""
    python = _refusal(lambda: _python(service[0], options))
    body = {"query": "alpine", **options}
    assert _refusal(lambda: SearchRequest.model_validate(body)) == python
    assert _refusal(lambda: SearchRequest.model_validate_json(json.dumps(body))) == python


def test_a_request_kept_as_json_reads_back_as_itself():
    request = SearchRequest(query="alpine", k=3, fusion="none", fallback="none",
                            scopes=["alpha"], now="2100-01-01T00:00:00+00:00")
    assert SearchRequest.model_validate_json(request.model_dump_json()) == request


def test_a_retriever_takes_json_s_none_as_retrieve_does(service):
    """``"none"`` is None for fusion and fallback wherever a search is asked, a saved one too."""
    ctx, _ = service
    from trails import HybridRetriever, VectorRetriever

    hybrid = HybridRetriever(ctx, scope="alpha", fusion="none", fallback="none")
    assert (hybrid.fusion, hybrid.fallback) == (None, None)
    assert [(h.iri, h.score) for h in hybrid.retrieve("alpine")] == [
        (h.iri, h.score) for h in retrieve("alpine", ctx, scope="alpha", fusion=None)]
    assert VectorRetriever(ctx, fallback="none").fallback is None
