"""The MCP tools called in-process, as the SDK calls them for a client (docs/mcp.md): every
mistake in a call is a tool error saying what to fix, an argument the tool does not take is
refused rather than ignored, and the ``retrieve`` tool answers what ``POST /retrieve`` does of
how its hits were found (``admitted_by`` with ``why``, ``degraded``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from trails import Context
from trails.ingest import Document, ingest_all
from trails.service.mcp import build_server, chosen_key
from trails.testing import MockEmbedder

mcp = pytest.importorskip("mcp")

DOC = "trails://local/doc/glacier-doc"


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Any:
    with Context.open(tmp_path_factory.mktemp("kb") / "kb",
                      embedder=MockEmbedder(dim=16)) as ctx:
        stats = ingest_all([Document("glacier-doc", "mem", "Glaciers retreat every summer.",
                                     title="Glaciers")], ctx=ctx)
        assert stats.ingested == 1
        yield build_server(ctx, chosen_key(None, None, None))


def call(server: Any, tool: str, arguments: dict[str, Any]) -> Any:
    return asyncio.run(server.call_tool(tool, arguments))


def refusal(server: Any, tool: str, arguments: dict[str, Any]) -> str:
    with pytest.raises(mcp.server.mcpserver.exceptions.ToolError) as raised:
        call(server, tool, arguments)
    return str(raised.value)


def structured(result: Any) -> dict[str, Any]:
    """A tool's structured answer, whichever shape this SDK version returns it in."""
    if isinstance(result, tuple):
        return result[1]
    return result.structured_content if hasattr(result, "structured_content") else result


@pytest.mark.parametrize("arguments", [{}, {"k": 3}])
def test_retrieve_without_a_query_says_the_query_is_required(tools, arguments):
    message = refusal(tools, "retrieve", arguments)
    assert message.startswith("Error executing tool retrieve: ")
    assert "query" in message and "required" in message


@pytest.mark.parametrize(("arguments", "named"), [
    ({"query": "SELECT ?s WHERE { ?s ?p ?o FILTER(?s = ?doc) }",
      "binding": {"doc": f"<{DOC}>"}}, "binding"),
    ({"query": "SELECT ?s WHERE { ?s ?p ?o }", "scope": ["default"]}, "scope"),
    ({"query": "ASK { ?s ?p ?o }", "limit": 5}, "limit"),
])
def test_sparql_refuses_an_argument_it_does_not_take_instead_of_ignoring_it(
        tools, arguments, named):
    message = refusal(tools, "sparql", arguments)
    assert f"{named} is no argument of the sparql tool" in message
    assert "query, bindings, scopes" in message


@pytest.mark.parametrize(("arguments", "named"), [
    ({"query": 5}, "query"),
    ({"query": "ASK { ?s ?p ?o }", "scopes": "default"}, "scopes"),
    ({"query": "ASK { ?s ?p ?o }", "bindings": ["x"]}, "bindings"),
    ({}, "query"),
])
def test_sparql_argument_mistakes_name_the_argument_in_one_line(tools, arguments, named):
    message = refusal(tools, "sparql", arguments)
    assert message.startswith(f"Error executing tool sparql: {named}: ")
    assert "\n" not in message and "pydantic" not in message


def test_the_sparql_tools_schema_takes_no_other_argument(tools):
    listed = {tool.name: tool for tool in asyncio.run(tools.list_tools())}
    schema = listed["sparql"].input_schema if hasattr(listed["sparql"], "input_schema") \
        else listed["sparql"].inputSchema
    assert schema.get("additionalProperties") is False
    assert set(schema["properties"]) == {"query", "bindings", "scopes"}
    assert schema["required"] == ["query"]


def test_the_sparql_tool_still_answers_with_its_arguments(tools):
    found = structured(call(tools, "sparql", {
        "query": "SELECT ?t WHERE { ?d schema:name ?t }", "bindings": {"d": f"<{DOC}>"}}))
    assert found["rows"] == [{"t": "Glaciers"}]


def test_retrieve_answers_the_admitting_solution_and_degraded_as_over_http(tools):
    found = structured(call(tools, "retrieve", {
        "query": "glaciers", "why": True,
        "filter": "SELECT ?doc WHERE { ?doc schema:name ?name }"}))
    assert found["hits"], found
    assert found["hits"][0]["admitted_by"] == {"doc": f"<{DOC}>", "name": '"Glaciers"'}
    assert found["degraded"] == []
    plain = structured(call(tools, "retrieve", {"query": "glaciers"}))
    assert "admitted_by" not in plain["hits"][0]  # nothing admitted it: no empty field


@pytest.fixture(scope="module")
def dated_title(tmp_path_factory) -> Any:
    """A document whose title is a string that looks like a date."""
    with Context.open(tmp_path_factory.mktemp("kb") / "kb",
                      embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("release", "mem", "Release notes for the spring.",
                             title="2024-01-01"),
                    Document("other", "mem", "Other notes.", title="Other")], ctx=ctx)
        yield build_server(ctx, chosen_key(None, None, None))


TITLED = "SELECT ?d WHERE { ?d schema:name ?t }"
AS_STRING = {"type": "literal", "value": "2024-01-01"}


def test_a_string_that_looks_like_a_date_binds_as_a_string_when_its_term_says_so(dated_title):
    as_term = structured(call(dated_title, "sparql", {"query": TITLED,
                                                      "bindings": {"t": AS_STRING}}))
    assert as_term["rows"] == [{"d": "trails://local/doc/release"}]
    # A bare string is typed by its look, as `trails query --bind` types it: a date.
    as_date = structured(call(dated_title, "sparql", {"query": TITLED,
                                                      "bindings": {"t": "2024-01-01"}}))
    assert as_date["rows"] == []


def test_the_retrieve_tool_takes_the_same_term_objects(dated_title):
    found = structured(call(dated_title, "retrieve", {
        "query": "notes", "filter": TITLED.replace("?d", "?doc"), "bindings": {"t": AS_STRING}}))
    assert {hit["document"] for hit in found["hits"]} == {"trails://local/doc/release"}


def test_a_typed_literal_binds_with_its_datatype(dated_title):
    query = "SELECT ?d WHERE { ?d trails:chunkCount ?n }"
    one = {"type": "literal", "value": "1",
           "datatype": "http://www.w3.org/2001/XMLSchema#integer"}
    found = structured(call(dated_title, "sparql", {"query": query, "bindings": {"n": one}}))
    assert len(found["rows"]) == 2
    as_string = structured(call(dated_title, "sparql", {
        "query": query, "bindings": {"n": {"type": "literal", "value": "1"}}}))
    assert as_string["rows"] == []


@pytest.mark.parametrize(("term", "said"), [
    ({"type": "literal"}, "value: Field required"),
    ({"type": "bnode", "value": "b0"}, "type: Input should be 'uri' or 'literal'"),
    ({"type": "uri", "value": "not an iri"}, "not an iri"),
    ({"type": "literal", "value": "x", "lang": "en"}, "lang: Extra inputs are not permitted"),
])
def test_a_malformed_term_object_names_the_binding_and_the_mistake(dated_title, term, said):
    for tool, arguments in (("sparql", {"query": TITLED}),
                            ("retrieve", {"query": "notes", "filter": TITLED})):
        message = refusal(dated_title, tool, {**arguments, "bindings": {"t": term}})
        assert said in message, (tool, message)
        assert "\n" not in message and "Traceback" not in message


def test_a_sparql_call_that_forgets_a_binding_is_refused_not_answered_empty(tools):
    """As `trails sparql` without its --bind: a FILTER variable nothing binds makes every
    solution fail, and "no rows" would read as an answer."""
    query = "SELECT ?d WHERE { ?d a trails:Document FILTER(?d != ?skip) }"
    message = refusal(tools, "sparql", {"query": query})
    assert "?skip is used in" in message and "never bound" in message
    answered = structured(call(tools, "sparql", {"query": query,
                                                 "bindings": {"skip": "<urn:x:other>"}}))
    assert answered["rows"] == [{"d": DOC}]
