"""The HTTP application: :func:`create_app` builds a FastAPI app serving one context.

Routes: ``POST /retrieve``, ``GET|POST /sparql`` (the SPARQL 1.1 Protocol, queries only),
``POST /ingest`` (server-sent events), ``DELETE /documents/{iri}``, ``GET /health``,
``GET /health/ready``, ``GET /metrics``, ``GET /whoami``; the OpenAPI document at
``/openapi.json`` and its pages at ``/docs``. Blocking library calls run in worker threads,
so the event loop keeps answering (``/health``, other queries) while a search or an ingest
runs. docs/service.md describes it for users.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Sequence
from http import HTTPStatus
from typing import Any

from trails._lazy import require

require("fastapi", "trails serve (the HTTP service)")

# (Imported after the check above, which names the extra to install.)
from fastapi import Depends, FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPBearer
from starlette.exceptions import HTTPException

from trails.audit.records import started_now
from trails.context import Context
from trails.errors import AuthenticationError, TrailsError
from trails.rank import Step
from trails.resilience import breakers
from trails.retrieval.request import refusal
from trails.scopes import scopes_elsewhere
from trails.service.documents import delete_confined, ingest_events
from trails.service.feedback import give_feedback, listed_feedback
from trails.service.hosts import ANY_HOST, HostCheck, check_allowed_hosts
from trails.service.injection import check_injection, injected
from trails.service.keys import ApiKey, KeyRing
from trails.service.limits import DEFAULT_MAX_REQUEST_BYTES, BodyLimit, NoContentCoding
from trails.service.methods import HeadAsGet, allowed_methods
from trails.service.metrics import CONTENT_TYPE, ServiceMetrics
from trails.service.models import (
    ErrorBody,
    FeedbackList,
    FeedbackOut,
    FeedbackRequest,
    HealthBody,
    IngestRequest,
    RetrieveRequest,
    RetrieveResponse,
)
from trails.service.problems import (
    error_body,
    no_object_body,
    not_json,
    printable,
    status_of,
    unread_body,
    unreadable_json,
)
from trails.service.requests import (
    confine_dataset,
    dataset_scopes,
    keyed_search,
    record_sparql,
    request_call,
    retrieve_options,
    run_sparql,
)
from trails.service.sparql_protocol import (
    FORM,
    GRAPH_TYPES,
    QUERY_TYPE,
    RESULT_TYPES,
    form_fields,
    parse_sparql_request,
    render_answer,
    service_description,
    with_text_dataset,
)
from trails.service.state import ServiceState
from trails.service.unique_json import loads

__all__ = ["create_app"]

log = logging.getLogger("trails.service")

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in (
        (400, "A bad argument or SPARQL query"), (401, "No API key, or an unknown one"),
        (403, "The key lacks the right or the scope"), (404, "No such document"),
        (409, "The context is read-only or locked"), (503, "A backend is unavailable"))}
# A route that reads a body (every route answers 413 to one too long: this one expects one).
_BODY_ERRORS = {**_ERRORS, 413: {"model": ErrorBody, "description": "The body is longer than "
                                 "the service reads (--max-request-bytes)"},
                415: {"model": ErrorBody, "description": "The body has a Content-Encoding "
                      "(gzip...): the service decodes none"}}
_SPARQL_ERRORS = {**_BODY_ERRORS, 406: {"model": ErrorBody, "description": "No format the "
                                        "Accept header allows can carry the answer"}}


class _UniqueKeysRequest(Request):
    """A request whose JSON body is read by :func:`~trails.service.unique_json.loads`: a key
    given twice is refused (400, through ``on_http``), never read as its last value."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = loads(await self.body())
        return self._json


class _UniqueKeysRoute(APIRoute):
    """Every route's request as a :class:`_UniqueKeysRequest`: one place for every JSON body."""

    def get_route_handler(self) -> Any:
        handler = super().get_route_handler()

        async def with_unique_keys(request: Request) -> Response:
            return await handler(_UniqueKeysRequest(request.scope, request.receive))

        return with_unique_keys


def _sparql_doc(method: str) -> dict[str, Any]:
    """The protocol's parameters and bodies, which FastAPI cannot infer from ``Request``."""
    doc: dict[str, Any] = {
        "parameters": [{"name": name, "in": "query", "required": False,
                        "schema": {"type": "string"}}
                       for name in ("query", "default-graph-uri", "named-graph-uri")],
        "responses": {"200": {
            "description": "SELECT/ASK as SPARQL results, CONSTRUCT/DESCRIBE as RDF, by the "
                           "Accept header; without a query, the service description",
            "content": {media: {} for media in (*RESULT_TYPES, *GRAPH_TYPES)}}},
    }
    if method == "POST":
        doc["requestBody"] = {"required": False, "content": {
            FORM: {"schema": {"type": "object", "properties": {
                "query": {"type": "string"}, "default-graph-uri": {"type": "string"},
                "named-graph-uri": {"type": "string"}}}},
            QUERY_TYPE: {"schema": {"type": "string"}}}}
    return doc


def create_app(ctx_or_dir: Context | str | os.PathLike[str], keys: KeyRing | None, *,
               read_only: bool = False, reranker: Step | None = None,
               extra_keys: tuple[ApiKey, ...] = (), fold_seconds: float = 30.0,
               allowed_hosts: Sequence[str] | None = None,
               max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> FastAPI:
    """A FastAPI application serving one context.

    Args:
        ctx_or_dir: an open context (the caller closes it), or a context directory, opened
            here (read-only with ``read_only``) and closed when the application shuts down.
        keys: the API keys; None serves every request as the anonymous key (bind loopback
            only: :func:`trails.service.runner.serve` checks).
        reranker: the cross-encoder the ``rerank`` step uses, warmed at start-up.
        extra_keys: keys valid for this run (the ``service.json`` token).
        fold_seconds: how often the writer folds the audit log into the audit graph.
        allowed_hosts: more ``Host`` names the service answers (``*``: any). Without keys
            it answers only requests addressed to it (:mod:`trails.service.hosts`: DNS
            rebinding); with keys, any unless these are given.
        max_request_bytes: a longer request body is answered 413 (:mod:`trails.service.limits`).

    Raises:
        ConfigurationError: an allowed host that is no host name, or a ``max_request_bytes``
            that is not a positive integer.
        Everything :meth:`Context.open` raises, for a directory.
    """
    fastapi_app: FastAPI
    if keys is not None and allowed_hosts is None:
        allowed_hosts = [ANY_HOST]  # a key is what a rebound page lacks
    hosts = check_allowed_hosts(allowed_hosts or ())
    BodyLimit(None, max_request_bytes)  # checked before a context is opened
    if isinstance(ctx_or_dir, Context):
        ctx, owned = ctx_or_dir, False
    else:
        ctx, owned = Context.open(ctx_or_dir, read_only=read_only), True
    state = ServiceState(ctx, keys, reranker=reranker, extra_keys=extra_keys)
    metrics = ServiceMetrics()

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        state.start_warmup()
        folding = (None if ctx.read_only
                   else asyncio.create_task(state.fold_periodically(fold_seconds)))
        try:
            yield
        finally:
            if folding is not None:
                folding.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await folding
            await asyncio.to_thread(state.wait_warmup)
            await asyncio.to_thread(state.fold)
            if owned:
                ctx.close()

    fastapi_app = FastAPI(
        title="trails", lifespan=lifespan,
        description="Knowledge-graph plus vector hybrid retrieval over one context: "
                    "retrieve, SPARQL 1.1 Protocol (queries), ingest. docs/service.md.")
    fastapi_app.router.route_class = _UniqueKeysRoute  # before any route is declared
    fastapi_app.state.service = state
    fastapi_app.state.metrics = metrics
    bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
    header_key = APIKeyHeader(name="X-API-Key", auto_error=False)

    def caller(request: Request, _bearer: Any = Depends(bearer),
               _header: Any = Depends(header_key)) -> ApiKey:
        return state.authenticate(request.headers)

    @fastapi_app.middleware("http")
    async def measure(request: Request, call_next: Any) -> Response:
        started = time.perf_counter()
        try:
            response: Response = await call_next(request)
        except Exception as exc:
            log.exception("request %s %s failed", request.method, request.url.path)
            response = JSONResponse(error_body(exc), status_code=status_of(exc))
        # An answer is the caller's key's (and, for /sparql, its Accept header's): no cache
        # may keep it for another caller. X-API-Key, unlike Authorization, does not tell a
        # shared cache so.
        response.headers.setdefault("Cache-Control", "no-store")
        route = request.scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        metrics.observe(template, request.method, response.status_code,
                        time.perf_counter() - started)
        return response

    async def on_error(_: Request, exc: Exception) -> Response:
        status = status_of(exc)
        if status == 500:
            log.error("request failed", exc_info=exc)
        # A realm: some clients (Jena's) cannot read a bare "Bearer" challenge.
        headers = ({"WWW-Authenticate": 'Bearer realm="trails"'}
                   if isinstance(exc, AuthenticationError) else None)
        return JSONResponse(error_body(exc), status_code=status, headers=headers)

    for kind in (TrailsError, ValueError, TypeError, SyntaxError):
        fastapi_app.add_exception_handler(kind, on_error)

    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        if any(tuple(e.get("loc", ()))[:1] == ("body",) for e in errors):
            wrong_type = not_json(request.method, request.url.path,
                                  request.headers.get("content-type"))
            if wrong_type is not None:  # its body was never read as JSON
                return await on_error(request, wrong_type)
        no_object = no_object_body(getattr(request.scope.get("route"), "path", ""), errors)
        if no_object is not None:  # not a field's mistake: say what the body is
            return await on_error(request, no_object)
        if request.url.path == "/retrieve" and errors and errors[0].get("type") != "json_invalid":
            # A search is refused as retrieve() refuses it: the same error, the same message.
            inside = [{**e, "loc": tuple(e.get("loc", ()))[1:]} for e in errors]
            return await on_error(request, refusal(inside, RetrieveRequest))  # type: ignore[arg-type]
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
                          for e in errors[:5])
        if errors and errors[0].get("type") == "json_invalid":  # say what, where, and the fix
            where = unreadable_json(errors[0])
        return JSONResponse({"error": "RequestValidationError", "message": printable(where),
                             "detail": _plain(errors)}, status_code=422)

    fastapi_app.add_exception_handler(RequestValidationError, on_invalid)  # type: ignore[arg-type]

    async def on_http(request: Request, exc: HTTPException) -> Response:
        # The router's own answers (no such route, method not allowed) in the same shape.
        phrase = HTTPStatus(exc.status_code).phrase.replace(" ", "").replace("-", "")
        message, headers = str(exc.detail), dict(exc.headers or {})
        if exc.status_code == 400 and exc.__cause__ is not None and \
                "parsing the body" in message:  # FastAPI's: a JSON body it could not read
            return JSONResponse(unread_body(exc.__cause__), status_code=400)
        if exc.status_code == 405:  # every method of the path, not the first route's alone
            allowed = allowed_methods(fastapi_app.router.routes, request.scope)
            headers["Allow"] = ", ".join(allowed)
            message = f"{request.method} {request.url.path} is not answered: it takes " + \
                " or ".join(allowed)
        return JSONResponse({"error": phrase, "message": message},
                            status_code=exc.status_code, headers=headers or None)

    fastapi_app.add_exception_handler(HTTPException, on_http)  # type: ignore[arg-type]
    # Added last, so they stand outermost: no route, no metric, sees a refused request.
    fastapi_app.add_middleware(HeadAsGet)
    fastapi_app.add_middleware(BodyLimit, max_bytes=max_request_bytes)
    fastapi_app.add_middleware(NoContentCoding)
    fastapi_app.add_middleware(HostCheck, allowed=hosts)

    @fastapi_app.post("/retrieve", response_model=RetrieveResponse, responses=_BODY_ERRORS,
                      summary="Find the k best chunks for a query")
    async def retrieve(body: RetrieveRequest, key: ApiKey = Depends(caller)) -> dict[str, Any]:
        check_injection(body.inject_mode, body.max_tokens, body.template)  # before searching
        result = await asyncio.to_thread(keyed_search, ctx, key, request_call(body, key.label),
                                         lambda: retrieve_options(body, state.reranker))
        answer = {"query": body.query, **result.to_dict()}
        # Why nothing came back, when nothing could: `trails query` says so through a service
        # as in its own process. Only to a key that reads every scope: it covers them all.
        if not result and key.scopes is None and await asyncio.to_thread(ctx.vectors.count) == 0:
            answer["context_empty"] = True
        elif not result and key.scopes is None and body.scopes is None:
            # The default scope was read: why nothing came back, when its documents are all
            # in other scopes.
            answer["scopes_elsewhere"] = await asyncio.to_thread(scopes_elsewhere, ctx) or None
        return injected(result, answer, body.inject_mode, body.max_tokens, body.template)

    async def sparql(request: Request, key: ApiKey = Depends(caller)) -> Response:
        key.require("read")
        body = await request.body() if request.method == "POST" else b""
        params = form_fields(request.scope["query_string"], "the query string")
        endpoint = str(request.url.replace(query=""))
        names = {name for name, _ in params}
        if request.method == "GET" and not names:  # a misspelt ?query= is no such request
            content, media = service_description(endpoint, True, request.headers.get("accept"))
            return Response(content, media_type=media, headers={"Vary": "Accept"})
        parsed = with_text_dataset(parse_sparql_request(
            request.method, request.headers.get("content-type"), params, body),
            ctx.kg.prefixes, endpoint)
        dataset = confine_dataset(ctx, key, parsed)
        started = started_now()
        output = await asyncio.to_thread(run_sparql, ctx, parsed.query, dataset, endpoint)
        # Written before it is recorded: an answer no accepted format carries (406) was none.
        content, media = render_answer(output, request.headers.get("accept"))
        run_id = await asyncio.to_thread(record_sparql, ctx, key.label, parsed.query,
                                         dataset_scopes(dataset), output, started)
        headers = {"Vary": "Accept", **({"Trails-Run-Id": run_id} if run_id else {})}
        return Response(content, media_type=media, headers=headers)

    for path in ("/sparql", "/sparql/"):  # both spellings answer: no redirect to lose a POST
        for method in ("GET", "POST"):
            fastapi_app.add_api_route(
                path, sparql, methods=[method], include_in_schema=path == "/sparql",
                operation_id=f"sparql_{method.lower()}" + ("" if path == "/sparql" else "_slash"),
                summary="SPARQL 1.1 Protocol: queries (updates are refused)",
                openapi_extra=_sparql_doc(method), responses=_SPARQL_ERRORS,
                response_class=Response)

    @fastapi_app.post("/ingest", responses={**_BODY_ERRORS, 200: {
        "description": "Server-sent events: one per ingest event, then a summary",
        "content": {"text/event-stream": {}}}}, response_class=StreamingResponse,
        summary="Ingest documents, streaming progress as server-sent events")
    async def ingest(body: IngestRequest, key: ApiKey = Depends(caller)) -> StreamingResponse:
        key.require("write")
        state.require_writable()
        stream = await ingest_events(state, key, body, metrics)
        return StreamingResponse(stream, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    @fastapi_app.delete("/documents/{iri:path}", responses=_ERRORS,
                        summary="Delete a document (recorded in the audit trail)")
    async def delete_document(iri: str, key: ApiKey = Depends(caller)) -> dict[str, str]:
        key.require("write")
        state.require_writable()
        await delete_confined(state, key, iri)
        return {"deleted": iri}

    @fastapi_app.post("/runs/{run}/feedback", response_model=FeedbackOut,
                      responses=_BODY_ERRORS,
                      summary="Record feedback (up or down, a note) on a recorded run")
    async def feedback(run: str, body: FeedbackRequest,
                       key: ApiKey = Depends(caller)) -> dict[str, Any]:
        return await asyncio.to_thread(give_feedback, ctx, key, run, body.rating, body.note)

    @fastapi_app.get("/runs/{run}/feedback", response_model=FeedbackList, responses=_ERRORS,
                     summary="The feedback recorded on a run, newest first")
    async def feedback_list(run: str, key: ApiKey = Depends(caller)) -> dict[str, Any]:
        return await asyncio.to_thread(listed_feedback, ctx, key, run)

    @fastapi_app.get("/health", response_model=HealthBody, summary="Liveness: always 200")
    async def health() -> dict[str, Any]:
        return _health(state)

    @fastapi_app.get("/health/ready", response_model=HealthBody,
                     responses={503: {"model": HealthBody, "description": "Still warming up"}},
                     summary="Readiness: 200 once the models are warm, 503 before")
    async def ready() -> Response:
        body = _health(state)
        return JSONResponse(body, status_code=200 if body["status"] == "ready" else 503)

    @fastapi_app.get("/metrics", response_class=Response, summary="Prometheus metrics",
                     responses={200: {"content": {CONTENT_TYPE: {}}}})
    async def metrics_text() -> Response:
        return Response(metrics.text(), media_type=CONTENT_TYPE)

    @fastapi_app.get("/whoami", responses=_ERRORS, summary="The calling key's label, rights "
                     "and scopes")
    async def whoami(key: ApiKey = Depends(caller)) -> dict[str, Any]:
        return key.describe()

    return fastapi_app


def _health(state: ServiceState) -> dict[str, Any]:
    warm = state.warmup
    return {"status": warm.status, "read_only": state.read_only,
            "warmup_seconds": warm.seconds, "detail": warm.detail,
            "backends": [{"backend": b.backend, "url": b.url, "circuit": b.state,
                          "failures": b.failures} for b in breakers()]}


def _plain(errors: Any) -> Any:
    """Validation errors as JSON, as FastAPI writes them (the exceptions pydantic puts in
    ``ctx`` as their text), without the input (it can be large)."""
    return jsonable_encoder([{k: v for k, v in dict(e).items() if k != "input"}
                             for e in errors])
