"""``trails mcp`` (trails.service.mcp, docs/mcp.md) driven by a real MCP client: the SDK's
stdio_client and ClientSession launch the command as a subprocess and call its tools.

Two scopes hold one document each, with words that appear nowhere else, so a leak from the
other scope shows in any answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _cli import run_trails
from trails import Context
from trails.audit.records import query_digest
from trails.cli import app
from trails.errors import InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.kg import SparqlEndpointGraph
from trails.service.keys import digest
from trails.service.mcp import chosen_key, read_graph
from trails.testing.servers.oxigraph import OxigraphServer
from trails.vector import MockEmbedder, SqliteVecStore

mcp = pytest.importorskip("mcp")

PUBLIC_WORD, SECRET_WORD = "heliotrope", "marmalade"
SECRET = "s3cret-analyst-key-123"


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "kb"
    result = CliRunner().invoke(app, ["--db", str(path), "init", "--model", "mock:32"])
    assert result.exit_code == 0, result.output
    with Context.open(path) as ctx:
        for scope, word in (("public", PUBLIC_WORD), ("finance", SECRET_WORD)):
            stats = ingest_all([Document(f"{scope}-doc", "mem", f"The {word} report, {scope}.",
                                         title=f"{scope} title")], ctx=ctx, scope=scope)
            assert stats.ingested == 1
    return path


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    path.write_text(f'[[key]]\nlabel = "analyst"\nsha256 = "{digest(SECRET)}"\n'
                    'scopes = ["public"]\nrights = ["read"]\n\n'
                    '[[key]]\nlabel = "public-and-hr"\nsecret = "third-secret-12345"\n'
                    'scopes = ["public", "hr"]\n\n'
                    '[[key]]\nlabel = "writer"\nsecret = "another-secret-1234"\n'
                    'scopes = ["*"]\nrights = ["write"]\n')
    return path


SERVER_ENV = {**os.environ, "TRAILS_API_KEYS": "", "TRAILS_API_KEYS_FILE": ""}


class Sessions:
    """One ``trails mcp ARGS`` per set of arguments, launched through the SDK's stdio client on
    first use and kept for the module: a server's start-up is not what these tests check, and
    each test reads its own words, keys and audit records, so one process serves them all.

    The SDK's client lives in one event loop on a thread of its own; a session is opened and
    closed in one task (its cancel scopes ask that) and the tests' calls are tasks of that loop.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.sessions: dict[tuple[str, ...], Any] = {}
        self.held: list[tuple[asyncio.Event, asyncio.Future[None]]] = []

    def run(self, args: list[str], calls) -> Any:
        """``calls(session)`` against the server started with ``args``."""
        if tuple(args) not in self.sessions:
            self.sessions[tuple(args)] = self._wait(self._open(args))
        return self._wait(calls(self.sessions[tuple(args)]))

    def _wait(self, coroutine) -> Any:
        return asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(coroutine, timeout=120), self.loop).result()

    async def _open(self, args: list[str]) -> Any:
        params = mcp.StdioServerParameters(
            command=sys.executable, args=["-m", "trails.cli", "mcp", *args], env=SERVER_ENV)
        opened: asyncio.Future[Any] = self.loop.create_future()
        stop = asyncio.Event()

        async def hold() -> None:
            try:
                async with mcp.stdio_client(params) as (read, write), \
                        mcp.ClientSession(read, write) as session:
                    await session.initialize()
                    opened.set_result(session)
                    await stop.wait()
            except BaseException as error:
                if not opened.done():
                    opened.set_exception(error)
                raise

        self.held.append((stop, asyncio.ensure_future(hold())))
        return await opened

    def close(self) -> None:
        async def close_all() -> None:
            for stop, _ in self.held:
                stop.set()
            await asyncio.gather(*(held for _, held in self.held), return_exceptions=True)

        try:
            self._wait(close_all())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(60)
            self.loop.close()


@pytest.fixture(scope="module")
def sessions() -> Iterator[Sessions]:
    shared = Sessions()
    yield shared
    shared.close()


def payload(result) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error, result
    return " ".join(block.text for block in result.content)


def test_the_tools_are_listed_with_their_arguments(sessions, kb):
    async def calls(session):
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in sessions.run(["--db", str(kb)], calls)}
    assert set(tools) == {"retrieve", "sparql"}
    assert {"query", "mode", "k", "filter", "bindings", "scopes", "min_score"} <= set(
        tools["retrieve"].input_schema["properties"])
    assert tools["retrieve"].input_schema["required"] == ["query"]
    assert set(tools["retrieve"].input_schema["properties"]["mode"]["enum"]) == {
        "vector", "graph", "hybrid"}
    assert {"query", "bindings", "scopes"} <= set(tools["sparql"].input_schema["properties"])
    assert all(tool.annotations.read_only_hint for tool in tools.values())


def test_retrieve_and_sparql_answer_from_the_context(sessions, kb):
    async def calls(session):
        found = await session.call_tool("retrieve", {
            "query": f"the {PUBLIC_WORD} report", "scopes": ["public"], "k": 3,
            "filter": "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name ?t "
                      "FILTER(?t = ?title) }",
            "bindings": {"title": "public title"}})
        rows = await session.call_tool("sparql", {
            "query": "SELECT ?doc ?title WHERE { ?doc a trails:Document ; schema:name "
                     "?title } ORDER BY ?title"})
        asked = await session.call_tool("sparql", {"query": "ASK { ?s ?p ?o }",
                                                   "scopes": ["finance"]})
        doc = payload(rows)["rows"][0]["doc"]  # bound as an IRI, not as a string
        named = await session.call_tool("sparql", {
            "query": "SELECT ?title WHERE { ?d schema:name ?title }",
            "bindings": {"d": f"<{doc}>"}})
        return payload(found), payload(rows), payload(asked), payload(named)

    found, rows, asked, named = sessions.run(["--db", str(kb)], calls)
    [hit] = found["hits"]
    assert PUBLIC_WORD in hit["snippet"] and hit["title"] == "public title"
    assert hit["iri"].startswith("trails://") and isinstance(hit["score"], float)
    assert found["mode"] == "hybrid" and found["candidates"] == 1 and found["plan"]
    assert [row["title"] for row in rows["rows"]] == ["finance title", "public title"]
    assert asked == {"boolean": True}
    assert named["rows"] == [{"title": "finance title"}]


TITLES_FROM = ("SELECT ?title FROM <urn:trails:scope:{}> WHERE {{ ?doc a trails:Document ; "
               "schema:name ?title }}")


def test_a_querys_from_clauses_are_its_dataset_within_the_scopes_read(sessions, kb, keys):
    # As over HTTP: FROM names the graphs the query reads (those the key grants), where it
    # used to be replaced by every scope read, answering from graphs it did not name.
    async def calls(session):
        return [payload(await session.call_tool("sparql", {"query": TITLES_FROM.format(s)}))
                for s in ("finance", "public")]

    finance, public = sessions.run(["--db", str(kb)], calls)
    assert [row["title"] for row in finance["rows"]] == ["finance title"]
    assert [row["title"] for row in public["rows"]] == ["public title"]
    outside, mine = sessions.run(
        ["--db", str(kb), "--keys", str(keys), "--key-label", "analyst"], calls)
    assert outside["rows"] == []  # another scope's graph reaches nothing, as GRAPH <...>
    assert [row["title"] for row in mine["rows"]] == ["public title"]


def test_from_clauses_on_a_graph_that_cannot_read_them_are_refused_not_replaced():
    # A graph on a SPARQL server confines a query to scopes by the protocol's dataset, which
    # replaces FROM: the answer came from every scope read, whatever FROM said.
    with OxigraphServer(persistent=False) as server:
        embedder = MockEmbedder(dim=16)
        ctx = Context(kg=SparqlEndpointGraph(server.query_url),
                      vectors=SqliteVecStore(":memory:", dim=16, embedder=embedder.identity),
                      embedder=embedder)
        try:
            for scope, word in (("public", PUBLIC_WORD), ("finance", SECRET_WORD)):
                ingest_all([Document(f"{scope}-doc", "mem", f"The {word} report.",
                                     title=f"{scope} title")], ctx=ctx, scope=scope)
            key = chosen_key(None, None, ["public", "finance"])
            with pytest.raises(InvalidArgumentError, match="scopes argument"):
                read_graph(ctx, key, TITLES_FROM.format("finance"))
            rows = read_graph(ctx, key, TITLES_FROM.split(" FROM")[0] + " WHERE { ?doc a "
                              "trails:Document ; schema:name ?title } ORDER BY ?title",
                              scopes=["finance"])
        finally:
            ctx.close()
    assert rows["rows"] == [{"title": "finance title"}]


def test_a_key_reads_only_its_scopes(sessions, kb, keys):
    async def calls(session):
        outside = await session.call_tool("retrieve", {"query": SECRET_WORD,
                                                       "scopes": ["finance"]})
        graph_outside = await session.call_tool("sparql", {"query": "ASK { ?s ?p ?o }",
                                                           "scopes": ["finance"]})
        # A filter and a query that name the other scope's graph see nothing of it.
        leak = await session.call_tool("retrieve", {
            "query": SECRET_WORD, "mode": "graph",
            "filter": "SELECT ?iri WHERE { GRAPH ?g { ?iri a trails:Chunk } }"})
        rows = await session.call_tool("sparql", {
            "query": f'SELECT ?s ?o WHERE {{ GRAPH ?g {{ ?s ?p ?o FILTER(CONTAINS(STR(?o), '
                     f'"{SECRET_WORD}")) }} }}'})
        mine = await session.call_tool("retrieve", {"query": PUBLIC_WORD})
        return (error_text(outside), error_text(graph_outside), payload(leak), payload(rows),
                payload(mine))

    outside, graph_outside, leak, rows, mine = sessions.run(
        ["--db", str(kb), "--keys", str(keys), "--key-label", "analyst"], calls)
    for message in (outside, graph_outside):
        assert "'finance'" in message and "analyst" in message
    assert all("finance" not in hit["iri"] for hit in leak["hits"])
    assert len(leak["hits"]) == 1  # the public chunk only
    assert rows["rows"] == []
    assert SECRET_WORD not in json.dumps([leak, rows, mine])
    assert [PUBLIC_WORD in hit["snippet"] for hit in mine["hits"]] == [True]


def test_a_key_granting_an_empty_scope_still_searches_and_errors_name_only_its_scopes(
        sessions, kb, keys):
    async def calls(session):
        found = await session.call_tool("retrieve", {"query": PUBLIC_WORD})
        rows = await session.call_tool("sparql", {
            "query": "SELECT ?title WHERE { ?doc schema:name ?title }"})
        typo = await session.call_tool("retrieve", {"query": "x", "scopes": ["publik"]})
        return payload(found), payload(rows), error_text(typo)

    found, rows, typo = sessions.run(
        ["--db", str(kb), "--keys", str(keys), "--key-label", "public-and-hr"], calls)
    assert [PUBLIC_WORD in hit["snippet"] for hit in found["hits"]] == [True]
    assert [row["title"] for row in rows["rows"]] == ["public title"]
    assert "'publik'" in typo and "'public'" in typo  # the suggestion, among its own scopes
    assert "finance" not in typo  # another tenant's scope is never named


def test_scopes_option_confines_a_server_without_keys(sessions, kb):
    async def calls(session):
        refused = await session.call_tool("sparql", {"query": "ASK { ?s ?p ?o }",
                                                     "scopes": ["finance"]})
        rows = await session.call_tool("sparql", {
            "query": "SELECT ?title WHERE { ?doc schema:name ?title }"})
        return error_text(refused), payload(rows)

    refused, rows = sessions.run(["--db", str(kb), "--scopes", "public"], calls)
    assert "'finance'" in refused
    assert [row["title"] for row in rows["rows"]] == ["public title"]


@pytest.mark.parametrize("update", [
    'INSERT DATA { <urn:x> <urn:p> "v" }',
    "DELETE WHERE { ?s ?p ?o }",
    "CLEAR ALL",
])
def test_updates_are_refused_and_change_nothing(sessions, kb, update):
    async def calls(session):
        refused = await session.call_tool("sparql", {"query": update})
        count = await session.call_tool("sparql", {
            "query": "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"})
        return error_text(refused), payload(count)

    before = _triples(kb)
    refused, count = sessions.run(["--db", str(kb)], calls)
    assert "read-only" in refused and "update" in refused.lower()
    assert count["rows"][0]["n"] == before == _triples(kb)


def test_service_is_refused(sessions, kb):
    async def calls(session):
        return error_text(await session.call_tool("sparql", {
            "query": "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }"}))

    assert "SERVICE" in sessions.run(["--db", str(kb)], calls)


def test_bad_arguments_are_tool_errors_that_say_what_to_fix(sessions, kb):
    async def calls(session):
        return [error_text(await session.call_tool("retrieve", arguments)) for arguments in (
            {"query": "x", "filter": "SELECT ?iri WHERE { ?iri "},
            {"query": "x", "scopes": ["nonexistent"]},
            {"query": "x", "mode": "telepathy"},
        )]

    broken, unknown, mode = sessions.run(["--db", str(kb)], calls)
    assert "parse" in broken
    assert "nonexistent" in unknown
    assert "hybrid" in mode  # the modes it may be


def test_searches_are_in_the_audit_trail_under_the_keys_label(sessions, kb, keys):
    async def calls(session):
        return payload(await session.call_tool("retrieve", {"query": PUBLIC_WORD}))

    found = sessions.run(["--db", str(kb), "--keys", str(keys), "--key-label", "analyst"], calls)
    assert found["run_id"]
    with Context.open(kb) as ctx:
        record = ctx.audit.get(found["run_id"])
    assert record.caller == "analyst"
    assert record.scopes == ["public"]


@pytest.mark.parametrize(("args", "message", "where"), [
    (["--key-label", "analyst"], "--keys", "a process of its own"),
    (["--key-label", "nobody", "--keys", "KEYS"], "nobody", "here"),
    (["--keys", "KEYS"], "--key-label", "here"),
    (["--key-label", "writer", "--keys", "KEYS"], "read", "here"),
    (["--key-label", "analyst", "--keys", "KEYS", "--scopes", "finance"], "finance", "here"),
])
def test_a_misconfigured_server_exits_1_with_one_line(kb, keys, args, message, where):
    """One refusal in a real process (its exit code, nothing but the line on stderr); the
    others run the same entry point here (tests/_cli.py), where a traceback shows as well."""
    argv = ["mcp", "--db", str(kb), *[str(keys) if a == "KEYS" else a for a in args]]
    run = run_trails(*argv, env=SERVER_ENV) if where == "here" else subprocess.run(
        [sys.executable, "-m", "trails.cli", *argv], capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL, check=False, env=SERVER_ENV)
    assert run.returncode == 1, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]
    assert run.stdout == ""


def _triples(kb: Path) -> int:
    with Context.open(kb, read_only=True) as ctx:
        return ctx.kg.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")[0]["n"]


# -- every call is answered, every search recorded (issue: hardening, third round) -----------

class RawServer:
    """``trails mcp`` spoken to line by line, for what the SDK's client would not send."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trails.cli", "mcp", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=SERVER_ENV)
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}))
        assert self.answer()["id"] == 0
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        import selectors
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise AssertionError("the server never answered")
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


LONE = "\\ud800"
SURROGATE_CALLS = [
    ("retrieve", '{"query": "x%s"}'),
    ("retrieve", '{"query": "x", "filter": "SELECT ?iri WHERE { ?iri ?p \\"%s\\" }"}'),
    ("retrieve", ('{"query": "x", "filter": "SELECT ?iri WHERE { ?iri ?p ?o }", '
                 '"bindings": {"o": "%s"}}')),
    ("retrieve", ('{"query": "x", "filter": "SELECT ?iri WHERE { ?iri ?p ?o }", '
                 '"bindings": {"o%s": "v"}}')),
    ("retrieve", '{"query": "x", "scopes": ["public%s"]}'),
    ("retrieve", '{"query": "x", "mode": "%s"}'),
    ("sparql", '{"query": "ASK { ?s ?p \\"%s\\" }"}'),
    ("sparql", '{"query": "ASK { ?s ?p ?o }", "bindings": {"o": "%s"}}'),
    ("sparql", '{"query": "ASK { ?s ?p ?o }", "scopes": ["%s"]}'),
    ("%s", '{"query": "x"}'),
]


@pytest.fixture(scope="module")
def raw_server(kb) -> Iterator[RawServer]:
    """One server for the raw lines: each test checks it still answers after its own."""
    server = RawServer(["--db", str(kb)])
    yield server
    server.close()


def still_answers(server: RawServer) -> None:
    server.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
        "name": "retrieve", "arguments": {"query": PUBLIC_WORD, "scopes": ["public"]}}}))
    answer = server.answer()
    assert answer["id"] == 99 and answer["result"]["structuredContent"]["hits"], answer


def test_a_lone_surrogate_in_any_argument_is_answered_with_an_error(raw_server):
    for n, (tool, arguments) in enumerate(SURROGATE_CALLS, 1):
        name, given = tool.replace("%s", LONE), arguments.replace("%s", LONE)
        raw_server.send(f'{{"jsonrpc": "2.0", "id": {n}, "method": "tools/call", "params": '
                        f'{{"name": "{name}", "arguments": {given}}}}}')
        answer = raw_server.answer()
        assert answer["id"] == n
        assert "surrogate" in json.dumps(answer), answer
        assert "error" in answer or answer["result"]["isError"], answer
    still_answers(raw_server)


@pytest.mark.parametrize("line", [
    (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "retrieve", '
    b'"arguments": {"query": "\xed\xa0\x80"}}}'),                       # a surrogate as UTF-8
    (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "retrieve", '
    b'"arguments": {"query": "\xff"}}}'),                               # no UTF-8 at all
    b'{"jsonrpc": "2.0", "id": 5, "method": 7}',                        # no JSON-RPC request
])
def test_a_request_the_protocol_cannot_read_is_answered_by_id(raw_server, line):
    raw_server.send(line)
    answer = raw_server.answer()
    assert answer["id"] == 5 and answer["error"]["message"], answer
    still_answers(raw_server)


@pytest.mark.parametrize(("sent", "shown"), [
    ("null", "null"), ("1.5", "1.5"), ("true", "true"), ("NaN", "NaN"), ('["a"]', '["a"]')])
def test_a_request_whose_id_is_no_string_or_integer_is_answered(raw_server, sent, shown):
    # The SDK read it as a notification, which gets no answer: the client waited forever.
    raw_server.send(f'{{"jsonrpc": "2.0", "id": {sent}, "method": "ping"}}')
    answer = raw_server.answer(timeout=20)
    assert answer["id"] is None and answer["error"]["code"] == -32600, answer
    assert f"the request's id is {shown}: an MCP request's id is a string or an integer" in (
        answer["error"]["message"])
    still_answers(raw_server)


@pytest.mark.parametrize(("arguments", "sent"), [
    ('"deploy"', "str"), ('["deploy"]', "an array"), ("3", "int")])
def test_tool_arguments_that_are_no_object_are_answered_naming_them(raw_server, arguments,
                                                                     sent):
    raw_server.send(f'{{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": '
                    f'{{"name": "retrieve", "arguments": {arguments}}}}}')
    answer = raw_server.answer()
    assert answer["id"] == 6, answer
    assert answer["error"]["code"] == -32602
    assert f"params.arguments is {sent}: a tool's arguments are an object" in (
        answer["error"]["message"])
    still_answers(raw_server)


@pytest.mark.parametrize(("arguments", "key"), [
    ('{"query": "deploy", "query": "secrets"}', '"query"'),
    (('{"query": "x", "filter": "SELECT ?iri WHERE { ?iri ?p ?o }", '
      '"bindings": {"o": "a", "o": "b"}}'), '"o"'),
])
def test_a_key_given_twice_is_answered_naming_it_not_read_as_its_last_value(
        raw_server, arguments, key):
    # A tool call whose arguments said two things was run with the last one, silently.
    raw_server.send(f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
                    f'{{"name": "retrieve", "arguments": {arguments}}}}}')
    answer = raw_server.answer()
    assert answer["id"] == 7 and answer["error"]["code"] == -32600, answer
    assert f"the key {key} more than once" in answer["error"]["message"]
    still_answers(raw_server)


def test_an_id_given_twice_is_answered_under_no_id(raw_server):
    # Two ids name no one request: the error goes to neither.
    raw_server.send('{"jsonrpc": "2.0", "id": 8, "id": 9, "method": "tools/call", "params": '
                    '{"name": "retrieve", "arguments": {"query": "x"}}}')
    answer = raw_server.answer()
    assert answer["id"] is None and 'the key "id" more than once' in answer["error"]["message"]
    still_answers(raw_server)


@pytest.fixture(scope="module")
def empty_keys(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    path.write_text('[[key]]\nlabel = "hr-only"\nsecret = "hr-only-secret-1234"\n'
                    'scopes = ["hr"]\n\n'
                    '[[key]]\nlabel = "public-hr"\nsecret = "public-hr-secret-12"\n'
                    'scopes = ["public", "hr"]\n')
    return path


def _searches(kb: Path, caller: str) -> list[Any]:
    with Context.open(kb, read_only=True) as ctx:
        return [r for r in ctx.audit.activities(caller=caller, limit=None) if r.kind == "search"]


def test_a_search_in_scopes_that_hold_nothing_is_recorded(sessions, kb, empty_keys):
    async def calls(session):
        return await session.call_tool("retrieve", {"query": "unheard-of words"})

    sessions.run(["--db", str(kb), "--keys", str(empty_keys), "--key-label", "hr-only"], calls)
    records = _searches(kb, "hr-only")
    assert [r.query for r in records] == ["unheard-of words"]
    assert records[0].hits == []


@pytest.mark.parametrize(("arguments", "expected"), [
    ({"query": "refused one", "scopes": ["hr"]}, "'hr'"),
    ({"query": "refused two", "scopes": ["finance"]}, "'finance'"),
    ({"query": "refused three", "filter": "SELECT ?iri WHERE { ?iri "}, "parse"),
])
def test_a_search_refused_after_parsing_is_recorded(sessions, kb, empty_keys, arguments,
                                                    expected):
    async def calls(session):
        return error_text(await session.call_tool("retrieve", arguments))

    message = sessions.run(["--db", str(kb), "--keys", str(empty_keys), "--key-label",
                           "public-hr"], calls)
    assert expected in message
    assert "finance" not in message or arguments.get("scopes") == ["finance"]
    [record] = [r for r in _searches(kb, "public-hr") if r.query == arguments["query"]]
    assert record.plan == "refused" and record.hits == []


def test_sparql_queries_are_recorded_as_over_http(sessions, kb, keys):
    asked = "ASK { ?recorded ?p ?o }"

    async def calls(session):
        return payload(await session.call_tool("sparql", {"query": asked}))

    assert sessions.run(["--db", str(kb), "--keys", str(keys), "--key-label", "analyst"],
                       calls) == {"boolean": True}
    with Context.open(kb, read_only=True) as ctx:
        records = [r for r in ctx.audit.activities(caller="analyst", limit=None)
                   if r.kind == "sparql" and r.query_sha256 == query_digest(asked)]
    assert [(r.form, r.scopes, r.answers) for r in records] == [("ASK", ["public"], 1)]
