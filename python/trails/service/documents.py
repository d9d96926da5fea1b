"""Writes through the service: an ingest streamed as server-sent events, and a deletion,
each confined to the scopes the caller's key grants and taking the writer's turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Iterator
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

    Raises:
        PermissionDeniedError: the key does not grant the scope written to.
        InvalidArgumentError: a malformed scope or document.
        Whatever :func:`trails.ingest.pipeline.ingest` raises before its first event.
    """
    scope = check_scope(body.scope or DEFAULT_SCOPE)
    key.confine([scope])
    documents = _documents(body)
    await state.write_lock.acquire()
    try:
        events = ingest(documents, ctx=state.ctx, scope=scope)
        first = await asyncio.to_thread(_next, events)
    except BaseException:
        state.write_lock.release()
        metrics.failures.inc()
        raise
    return _stream(state, events, first, metrics)


def _next(events: Iterator[IngestEvent]) -> IngestEvent | None:
    return next(events, None)


async def _stream(state: ServiceState, events: Iterator[IngestEvent], first: IngestEvent | None,
                  metrics: ServiceMetrics) -> AsyncIterator[bytes]:
    stats = IngestionStats()
    event = first
    try:
        while event is not None:
            stats.record(event)
            _count(event, metrics)
            data = event_json(event)
            yield _sse(data["kind"], data)
            event = await asyncio.to_thread(_next, events)
        summary = {"kind": "summary", **dataclasses.asdict(stats)}
        yield _sse("summary", summary)
    except Exception as exc:
        log.exception("ingest stopped")
        metrics.failures.inc()
        yield _sse("error", {"kind": "error", **error_body(exc)})
    finally:
        try:
            _close(events)
        finally:
            state.write_lock.release()


def _close(events: Iterator[IngestEvent]) -> None:
    """Stop the pipeline where it is (a client that went away): what was committed stays."""
    close = getattr(events, "close", None)
    try:
        if close is not None:
            close()
    except ValueError:  # still running in its worker thread: it stops at its next event
        log.warning("an abandoned ingest is still finishing its current step")


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
    async with state.write_lock:
        scopes = await asyncio.to_thread(document_scopes, state.ctx, iri)
        if not scopes:
            raise absent
        try:
            key.confine(sorted(scopes))
        except PermissionDeniedError:
            raise absent from None
        deleted = await asyncio.to_thread(state.ctx.delete_document, iri, caller=key.label)
    if not deleted:
        raise absent
