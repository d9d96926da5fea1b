"""The MCP server: ``retrieve`` and read-only ``sparql`` as tools for agents, over stdio.

``trails mcp --db DIR`` serves one context to one MCP client (docs/mcp.md), with the scope
rules of the HTTP service: the process runs as one API key (``--key-label`` from the key
ring, :mod:`trails.service.keys`) or as a read-only key made from ``--scopes`` (neither:
every scope). A tool call that names a scope the key does not grant fails with a tool error
naming it; a filter or a query is confined to the granted scopes' graphs whatever its text
says; updates and SERVICE are refused. Every search is recorded in the audit trail with the
key's label as the caller.

The official Python SDK (``pip install "trails[mcp]"``, 2.x) is imported when the server is
built, never at ``import trails``.
"""

from __future__ import annotations

import contextlib
import datetime as _datetime
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from trails._lazy import require
from trails.audit.records import started_now
from trails.context import Context
from trails.errors import (
    ConfigurationError,
    InvalidArgumentError,
    SparqlError,
    TrailsError,
    UnsafeFilterError,
)
from trails.kg.base import DatasetGraph
from trails.kg.bindings import apply_bindings
from trails.kg.result import QueryResult
from trails.kg.sparql import check_limits, looks_like_update, parses, refuse_service
from trails.kg.terms import check_json_text
from trails.kg.variables import check_bound
from trails.scopes import normalize_scopes
from trails.service import unique_json
from trails.service.injection import check_injection, injected
from trails.service.keys import ApiKey, KeyRing
from trails.service.mcp_arguments import SparqlArguments, ToolArguments, bound_values
from trails.service.requests import (
    dataset_scopes,
    keyed_search,
    record_sparql,
    request_call,
    retrieve_options,
    search_scopes,
    text_dataset,
)

__all__ = ["ANONYMOUS", "MAX_ROWS", "SparqlArguments", "ToolArguments", "answer", "build_server",
           "chosen_key", "read_graph", "run_stdio", "search"]

log = logging.getLogger("trails.mcp")

# The caller the audit trail names when the server runs without an API key.
ANONYMOUS = "mcp"
# A SELECT answers at most this many rows (the rest is counted, not sent): an agent's context
# window is the limit, not the graph.
MAX_ROWS = 1000

T = TypeVar("T")

# What the ``retrieve`` tool answers of each hit (``admitted_by`` only when it has one).
_HIT_FIELDS = ("iri", "score", "title", "date", "source", "snippet", "document", "admitted_by")

_INSTRUCTIONS = (
    "trails searches a knowledge graph of documents and their chunks. Use `retrieve` to find "
    "passages that answer a question, optionally restricted by a SPARQL filter over the "
    "documents' metadata; use `sparql` to read the graph itself (documents are "
    "trails:Document with schema:name as title, chunks trails:Chunk linked to their document "
    "by schema:isPartOf, with schema:text).")


def chosen_key(keys: KeyRing | None, label: str | None, scopes: Sequence[str] | None) -> ApiKey:
    """The key the server runs as: ``label`` from ``keys``, narrowed to ``scopes`` if given;
    without keys a read-only key for ``scopes`` (None: every scope).

    Raises:
        ConfigurationError: a label without keys, keys without a label, a label no key has.
        PermissionDeniedError: the key may not read, or does not grant one of ``scopes``.
        InvalidArgumentError: a malformed scope name.
    """
    wanted = None if scopes is None else normalize_scopes(list(scopes))
    if keys is None:
        if label is not None:
            raise ConfigurationError(
                f"--key-label {label!r} needs the keys it is one of: pass --keys FILE (or set "
                "TRAILS_API_KEYS_FILE or TRAILS_API_KEYS)")
        return ApiKey(ANONYMOUS, "", None if wanted is None else frozenset(wanted),
                      frozenset({"read"}))
    if label is None:
        raise ConfigurationError(
            f"{keys.source} holds keys: choose the one this server runs as with --key-label "
            f"(one of {', '.join(repr(k.label) for k in keys.keys)})")
    found = next((key for key in keys.keys if key.label == label), None)
    if found is None:
        raise ConfigurationError(
            f"no key labelled {label!r} in {keys.source}; its labels are "
            f"{', '.join(repr(k.label) for k in keys.keys)}")
    found.require("read")
    if wanted is None:
        return found
    granted = found.confine(wanted)  # a scope the key does not grant is refused here
    return ApiKey(found.label, found.sha256, None if granted is None else frozenset(granted),
                  frozenset({"read"}))


def search(ctx: Context, key: ApiKey, query: str, **arguments: Any) -> dict[str, Any]:
    """The ``retrieve`` tool: hits with provenance, and how they were found (with the
    evidence block for a prompt under ``inject_mode="prompt_append"``, as over HTTP).
    ``arguments`` are :class:`ToolArguments`' (a request's fields, as JSON spells them).
    A hit carries ``admitted_by`` when it has one (``why``), and ``degraded`` says why an
    answer is not what the call asked for, as over HTTP.

    Raises:
        PermissionDeniedError: a scope the key does not grant.
        InvalidArgumentError, SparqlError, ConfigurationError: as ``retrieve()`` raises them,
            with the same messages.
    """
    return answer(ctx, key, ToolArguments(query=query, **arguments))


def answer(ctx: Context, key: ApiKey, body: ToolArguments) -> dict[str, Any]:
    """:func:`search` for a request already read (the tool reads its arguments whole, so
    that a call without ``query`` is refused as any other mistake is)."""
    check_injection(body.inject_mode, body.max_tokens, body.template)  # before searching
    result = keyed_search(ctx, key, request_call(body, key.label), lambda: {
        **retrieve_options(body, None), "bindings": bound_values(body.bindings)})
    found: Mapping[str, Any] = result.to_dict()
    return injected(result, {
        "hits": [{name: hit[name] for name in _HIT_FIELDS
                  if name != "admitted_by" or hit[name] is not None}
                 for hit in found["hits"]],
        **{name: found[name] for name in (
            "mode", "plan", "filter_path", "candidates", "exhaustive", "rankings",
            "fusion_weights", "notes", "degraded", "run_id")}},
        body.inject_mode, body.max_tokens, body.template)


def read_graph(ctx: Context, key: ApiKey, query: str,
               bindings: Mapping[str, Any] | None = None,
               scopes: Sequence[str] | None = None) -> dict[str, Any]:
    """The ``sparql`` tool: a read-only query confined to the key's scopes.

    Raises:
        PermissionDeniedError: a scope the key does not grant.
        UnsafeFilterError: an update, SERVICE, or a query past the size limits.
        SparqlError: the query does not parse or fails.
        UnboundVariableError: a FILTER variable nothing binds (as ``trails sparql`` says).
    """
    started = started_now()
    confined = search_scopes(ctx, key, scopes)
    if confined is not None and not confined:  # no granted scope holds anything: read them
        confined = key.confine(None)           # all, and find nothing
    check_limits(query)
    refuse_service(query, ctx.kg.prefixes)  # always: even an unscoped key never calls out
    values = bound_values(bindings)
    if parses(query, ctx.kg.prefixes):  # else the query says where it does not parse
        check_bound(query, (values or {}).keys())  # a forgotten binding is no "no rows"
    try:
        # FROM/FROM NAMED name the dataset within the scopes read, as over HTTP (/sparql).
        dataset = text_dataset(ctx, key, query, confined)
        if dataset is not None and isinstance(ctx.kg, DatasetGraph):
            confined = dataset_scopes(dataset)
            output = ctx.kg.query_dataset(apply_bindings(query, values), dataset,
                                          scopes=confined)
        else:
            output = ctx.kg.query(query, values, scopes=confined)
    except SparqlError as exc:
        if looks_like_update(query):
            raise UnsafeFilterError(
                "this server is read-only: SPARQL updates (INSERT, DELETE, LOAD, CLEAR...) "
                "are refused; send a SELECT, ASK, CONSTRUCT or DESCRIBE query") from exc
        raise
    record_sparql(ctx, key.label, query, confined, output, started)
    if isinstance(output, bool):
        return {"boolean": output}
    if isinstance(output, QueryResult):
        rows = [{name: _term(row[name]) for name in output.variables if row[name] is not None}
                for row in list(output)[:MAX_ROWS]]
        return {"variables": list(output.variables), "rows": rows,
                "truncated": max(0, len(output) - MAX_ROWS)}
    triples = list(output)
    return {"triples": [[str(t.subject), str(t.predicate), str(t.object)]
                        for t in triples[:MAX_ROWS]],
            "truncated": max(0, len(triples) - MAX_ROWS)}


def build_server(ctx: Context, key: ApiKey) -> Any:
    """The MCP server (an ``mcp.server.mcpserver.MCPServer``) answering for ``key``.

    Raises:
        MissingExtraError: the ``mcp`` package is not installed.
    """
    sdk = require("mcp.server.mcpserver", "The MCP server (trails mcp)")
    types = require("mcp", "The MCP server (trails mcp)").types
    read_only = types.ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    def retrieve_tool(arguments: dict[str, Any]) -> dict[str, Any]:
        return _as_tool_error(sdk, lambda: answer(ctx, key, ToolArguments(**arguments)))

    retrieve = _request_tool(sdk.tools.Tool.from_function(
        retrieve_tool, name="retrieve", annotations=read_only, description=(
            "Find the passages (chunks) that best answer a question, optionally only among the "
            "candidates a SPARQL filter selects. Returns hits (iri, score, title, date, "
            "source, snippet, document) and the plan that found them.")), ToolArguments)

    def sparql_tool(arguments: dict[str, Any]) -> dict[str, Any]:
        return _as_tool_error(sdk, lambda: read_graph(
            ctx, key, **dict(SparqlArguments(**arguments))))

    sparql = _request_tool(sdk.tools.Tool.from_function(
        sparql_tool, name="sparql", annotations=read_only, description=(
            "Run a read-only SPARQL query on the knowledge graph, confined to the scopes this "
            f"server may read. SELECT returns variables and rows (at most {MAX_ROWS}), ASK a "
            "boolean, CONSTRUCT/DESCRIBE triples.")), SparqlArguments)
    return sdk.MCPServer(name="trails", instructions=_INSTRUCTIONS, tools=[retrieve, sparql])


def _request_tool(tool: Any, model: type[BaseModel]) -> Any:
    """``tool`` (taking ``arguments``) as the SDK's tool whose input schema is ``model``'s
    JSON schema and whose arguments all reach ``arguments`` as sent: the model checks them
    (an unknown one too), with trails' messages, not the SDK."""
    base = require("mcp.server.mcpserver.utilities.func_metadata",
                   "The MCP server (trails mcp)").ArgModelBase

    class Sent(base):  # type: ignore[misc, valid-type]  # a class the SDK builds
        model_config = ConfigDict(extra="allow")

        def model_dump_one_level(self) -> dict[str, Any]:
            return {"arguments": dict(self.model_extra or {})}

    return tool.model_copy(update={
        "parameters": model.model_json_schema(),
        "fn_metadata": tool.fn_metadata.model_copy(update={"arg_model": Sent})})


def run_stdio(ctx: Context, key: ApiKey) -> None:
    """Serve ``ctx`` over stdin/stdout until the client closes the stream. Every request is
    answered: one the SDK could not read (not UTF-8, not JSON, a lone surrogate, no JSON-RPC
    request) gets an error here, under its id, instead of the silence the client would wait
    on forever."""
    server = build_server(ctx, key)
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None or not hasattr(lowlevel, "run"):  # an SDK shaped otherwise
        log.warning("this MCP SDK's server has no low-level run(); unreadable requests go "
                    "unanswered")
        server.run("stdio")
        return
    stdio = require("mcp.server.stdio", "The MCP server (trails mcp)")
    stdio.anyio.run(_serve_stdio, stdio, lowlevel)  # the SDK's own anyio


async def _serve_stdio(stdio: Any, lowlevel: Any) -> None:
    anyio = stdio.anyio
    replies: list[Any] = []  # the stream answers go to, once the transport has made it
    lines = _readable_lines(anyio.wrap_file(sys.stdin.buffer), replies)
    async with stdio.stdio_server(stdin=lines) as (read_stream, write_stream):
        replies.append(write_stream)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


async def _readable_lines(source: Any, replies: list[Any]) -> AsyncIterator[str]:
    """The lines of ``source`` the SDK can read; each other one answered with an error."""
    message = require("mcp.shared.message", "The MCP server (trails mcp)")
    types = require("mcp", "The MCP server (trails mcp)").types
    async for raw in source:
        text, refusal = unreadable(raw)
        if refusal is None:
            yield text
            continue
        request, code, reason = refusal
        if replies:
            await replies[0].send(message.SessionMessage(types.JSONRPCError(
                jsonrpc="2.0", id=request, error=types.ErrorData(code=code, message=reason))))


# JSON-RPC's error codes for a request that cannot be read.
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def unreadable(raw: bytes) -> tuple[str, tuple[int | str | None, int, str] | None]:
    """One line from the client as text, and, when the SDK could not read it, the error to
    answer it with: the request's id (None when it has none), a JSON-RPC code, a message."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "", (_request_id(raw.decode("utf-8", "replace")), PARSE_ERROR,
                    f"the message is not UTF-8 (byte {exc.start}); send it as UTF-8")
    if not text.strip():
        return text, None
    try:
        parsed = unique_json.loads(text)
    except InvalidArgumentError as exc:  # a key given twice: it means two things
        return text, (_unique_id(text), INVALID_REQUEST, str(exc))
    except (ValueError, RecursionError) as exc:
        return text, (None, PARSE_ERROR,
                      f"the message is not JSON ({exc}); send one JSON-RPC message per line")
    request = _request_id(parsed)
    if isinstance(parsed, dict) and "id" in parsed and "method" in parsed and request is None:
        # The SDK reads it as a notification, and a notification gets no answer: the client
        # would wait for one forever.
        return text, (None, INVALID_REQUEST,
                      (f"the request's id is {json.dumps(parsed['id'])}: an MCP request's id "
                       "is a string or an integer (a notification has no id)"))
    try:
        check_json_text(parsed, "message")
    except InvalidArgumentError as exc:
        return text, (request, INVALID_PARAMS, str(exc))
    types = require("mcp", "The MCP server (trails mcp)").types
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "it"
        return text, (request, INVALID_REQUEST,
                      f"the message is no JSON-RPC 2.0 message: {where}: {first['msg']}")
    params = parsed.get("params") if isinstance(parsed, dict) else None
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if isinstance(params, dict) and parsed.get("method") == "tools/call" and \
            not isinstance(arguments, (dict, type(None))):
        # The SDK answers it "Invalid request parameters", naming neither what nor why.
        sent = "an array" if isinstance(arguments, list) else type(arguments).__name__
        return text, (request, INVALID_PARAMS,
                      (f"params.arguments is {sent}: a tool's arguments are an object of "
                       'its argument names and values, e.g. {"query": "..."}'))
    return text, None


def _request_id(message: object) -> int | str | None:
    """The id a reply must carry: the message's, if it is one JSON-RPC allows."""
    if isinstance(message, str):
        with contextlib.suppress(ValueError, RecursionError):
            message = json.loads(message)
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (int, str)) and not isinstance(found, bool) else None


def _unique_id(text: str) -> int | str | None:
    """The id of a message that gives some key twice, if both readings agree on it: an id
    given twice with two values names no one request."""
    last = _request_id(text)
    with contextlib.suppress(ValueError, RecursionError):
        first = json.loads(text, object_pairs_hook=lambda pairs: dict(reversed(pairs)))
        return last if _request_id(first) == last else None
    return None


def _as_tool_error(sdk: Any, call: Callable[[], T]) -> T:
    """``call()``; a failure the caller can fix becomes a tool error carrying its message."""
    try:
        return call()
    except (TrailsError, ValueError) as exc:  # InvalidArgumentError is a ValueError too
        raise sdk.exceptions.ToolError(str(exc) or type(exc).__name__) from exc


def _term(value: Any) -> Any:
    """A SELECT cell as JSON: IRIs and literals as their lexical form, numbers as numbers."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (_datetime.date, _datetime.datetime)):
        return value.isoformat()
    return str(value)
