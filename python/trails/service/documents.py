"""Writes through the service: an ingest streamed as server-sent events, and a deletion,
each confined to the scopes the caller's key grants and taking the writer's turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import pyoxigraph as ox

from trails.context import Context
from trails.errors import InvalidArgumentError, PermissionDeniedError, UnknownDocumentError
from trails.ingest.document import Document
from trails.ingest.events import (
    DocumentFailed,
    DocumentIngested,
    DocumentMetadataUpdated,
    DocumentSkipped,
    IngestEvent,
    IngestionStats,
)
from trails.ingest.pipeline import ingest
from trails.kg.base import select
from trails.kg.terms import IRI
from trails.scopes import DEFAULT_SCOPE, check_scope
from trails.service.keys import ApiKey
from trails.service.metrics import ServiceMetrics
from trails.service.models import IngestRequest
from trails.service.problems import error_body
from trails.service.state import ServiceState
from trails.vector.stores.base import VersionedStore

__all__ = ["delete_confined", "document_scopes", "event_json", "ingest_events"]

log = logging.getLogger("trails.service")
_OUTCOMES = {DocumentIngested: "ingested", DocumentSkipped: "skipped",
             DocumentFailed: "failed", DocumentMetadataUpdated: "metadata_updated"}


def event_json(event: IngestEvent) -> dict[str, Any]:
    """An ingest event as JSON: ``kind`` (``document_ingested``...) and its fields."""
    name = type(event).__name__
    kind = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
    return {"kind": kind, **dataclasses.asdict(event)}


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, default=str)}\n\n".encode()


def _documents(body: IngestRequest) -> list[Document]:
    return [Document(id=str(d.id or d.source), source=str(d.source or d.id), text=d.text,
                     title=d.title, metadata=dict(d.metadata)) for d in body.documents]


async def ingest_events(state: ServiceState, key: ApiKey, body: IngestRequest,
                        metrics: ServiceMetrics) -> AsyncIterator[bytes]:
    """The server-sent events of an ingest: one per pipeline event, then ``summary`` (or
    ``error`` if the run stopped). What can be refused is refused before the first byte.

    The whole run happens in one worker thread, in the writer's turn, which passes on only
    when that thread is done: a client that goes away stops the run at its next event (what
    was committed stays), and the next write waits until it has stopped.

    Raises:
        PermissionDeniedError: the key does not grant the scope written to.
        InvalidArgumentError: a malformed scope or document.
        Whatever :func:`trails.ingest.pipeline.ingest` raises before its first event.
    """
    scope = check_scope(DEFAULT_SCOPE if body.scope is None else body.scope)  # "" is no name
    key.confine([scope])
    run = _IngestRun(state.ctx, _documents(body), scope, asyncio.get_running_loop())
    await state.start_write(run.run)
    try:
        first = await run.events.get()
    except BaseException:
        run.stop.set()  # the request went away before its first event
        raise
    if isinstance(first, BaseException):
        metrics.failures.inc()
        raise first
    return _stream(run, first, metrics)


_END = object()  # the run is over


class _IngestRun:
    """One ingest, run to its end (or to the event after its client left) in one thread,
    handing each event to the event loop as it comes."""

    def __init__(self, ctx: Context, documents: list[Document], scope: str,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.ctx, self.documents, self.scope, self.loop = ctx, documents, scope, loop
        self.events: asyncio.Queue[Any] = asyncio.Queue()
        self.stop = threading.Event()  # set when nobody reads the events any more
        self.stats = IngestionStats()  # its clock starts with the request

    def run(self) -> None:
        try:
            events = ingest(self.documents, ctx=self.ctx, scope=self.scope)
            try:
                for event in events:
                    self._hand(event)
                    if self.stop.is_set():
                        log.warning("an ingest's client went away; it stopped after its "
                                    "current step (what was committed stays)")
                        break
            finally:
                close = getattr(events, "close", None)  # a generator: it cleans up now, in
                if close is not None:                   # the thread it runs in
                    close()
        except Exception as exc:  # noqa: BLE001 - raised or streamed on the request's side
            self._hand(exc)
        else:
            self._hand(_END)

    def _hand(self, item: object) -> None:
        try:
            self.loop.call_soon_threadsafe(self.events.put_nowait, item)
        except RuntimeError:  # the event loop is gone (shutdown): nobody reads on
            self.stop.set()


async def _stream(run: _IngestRun, first: IngestEvent,
                  metrics: ServiceMetrics) -> AsyncIterator[bytes]:
    stats = run.stats
    item: Any = first
    try:
        while item is not _END:
            if isinstance(item, BaseException):
                log.error("ingest stopped", exc_info=item)
                metrics.failures.inc()
                yield _sse("error", {"kind": "error", **error_body(item)})
                return
            stats.record(item)
            _count(item, metrics)
            data = event_json(item)
            yield _sse(data["kind"], data)
            item = await run.events.get()
        yield _sse("summary", {"kind": "summary", **dataclasses.asdict(stats)})
    finally:
        run.stop.set()  # done, or the client went away: the run stops at its next event


def _count(event: object, metrics: ServiceMetrics) -> None:
    outcome = _OUTCOMES.get(type(event))
    if outcome is not None:
        metrics.documents.labels(outcome).inc()
    if isinstance(event, DocumentIngested):
        metrics.chunks.inc(event.chunks)


def document_scopes(ctx: Context, iri: str) -> set[str]:
    """The scopes that hold the document ``iri`` (its vectors' or its triples')."""
    scopes = {str(s) for s in select(ctx.kg, "SELECT ?s WHERE { ?doc trails:scope ?s }",
                                     {"doc": IRI(iri)}).column("s")}
    if isinstance(ctx.vectors, VersionedStore):
        record = ctx.vectors.current_versions([iri]).get(iri)
        if record is not None:
            scopes.add(record.scope)
    return scopes


async def delete_confined(state: ServiceState, key: ApiKey, iri: str) -> None:
    """Delete the document ``iri``, recorded in the audit trail with the key's label.

    Raises:
        InvalidArgumentError: ``iri`` is no IRI.
        UnknownDocumentError: no such document in the scopes the key grants (a document of
            another scope is answered as absent: its existence is not the caller's to know).
    """
    try:
        ox.NamedNode(iri)
    except ValueError:
        raise InvalidArgumentError(f"{iri!r} is no IRI; pass the document's full IRI "
                                   "(percent-encoded in the path)") from None
    absent = UnknownDocumentError(
        f"no document {iri} in the scopes this key grants; the documents' IRIs are the "
        "'document' of retrieve hits")

    def delete() -> bool:
        scopes = document_scopes(state.ctx, iri)
        if not scopes:
            return False
        try:
            key.confine(sorted(scopes))
        except PermissionDeniedError:  # another scope's: answered as absent
            return False
        return state.ctx.delete_document(iri, caller=key.label)

    if not await state.write(delete):
        raise absent
