"""After a search: why each hit was allowed, the audit record, hooks and a log record.

Nothing here may fail or noticeably slow the search it observes: a record that cannot be
written is logged and counted (``ctx.audit.failures``), a hook that raises is logged, and
what is recorded is built from values the search already has (one extra graph query, for the
filter's solutions, only when a filter ran and they are wanted).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trails.audit import HitRecord, SearchRecord, new_run_id, query_digest
from trails.audit.records import started_now
from trails.errors import EndpointUnavailableError
from trails.kg.base import RevisionGraph
from trails.kg.bindings import check_bindings
from trails.records import RetrievalResult
from trails.retrieval.filter_entities import filter_entities
from trails.retrieval.replaying import REPLAYING
from trails.retrieval.why import admitting_solutions
from trails.tracing import LOG_TEXT
from trails.vector.stores.base import RevisionedStore, VectorStore

if TYPE_CHECKING:
    from trails.config import AuditConfig
    from trails.context import Context
    from trails.retrieval.request import SearchRequest

__all__ = ["LOG_TEXT", "NO_FALLBACK", "REFUSED", "REPLAYING", "RetrieveEvent", "SearchCall", "observe",
           "record_refusal", "revisions"]

log = logging.getLogger("trails.retrieve")

# The plan of a search refused after its arguments were read; its note says why.
REFUSED = "refused"
# How a record spells fallback=None (a failure of the vector side is raised), as JSON does.
NO_FALLBACK = "none"

# Query text goes to log records (and spans) only when TRAILS_LOG_TEXT is set: logs travel
# further than the graph.


@dataclass(frozen=True)
class SearchCall:
    """What a ``retrieve()`` was asked, as the audit trail and a replay need it."""

    query: str
    mode: str
    k: int
    sparql_filter: str | None
    bindings: Mapping[str, Any] | None
    scopes: Sequence[str]
    fusion: object
    steps: Sequence[object] = ()
    min_score: float | None = None
    fallback: str | None = "auto"
    caller: str | None = None
    why: bool | None = None
    now: dt.datetime | None = None  # given, not the clock's: the answer is "as of" it
    searched: str | None = None  # the rewriter's standalone query, when it made one
    replay_of: str | None = None
    started: str = ""
    embedder: str | None = None
    revisions: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def asked(cls, request: SearchRequest, caller: str | None = None,
              **recorded: Any) -> SearchCall:
        """What ``request`` asks, as the trail records it; ``recorded`` adds what the search
        learnt (when it started, the scopes it read, the revisions, the embedder)."""
        return cls(**{"query": request.query, "mode": request.mode, "k": request.k,
                      "sparql_filter": request.filter, "bindings": request.bindings,
                      "scopes": list(request.scopes or ()), "fusion": request.fusion,
                      "steps": request.steps, "min_score": request.min_score,
                      "fallback": request.fallback, "caller": caller, "why": request.why, "now": request.now, **recorded})


@dataclass(frozen=True)
class RetrieveEvent:
    """What an ``on_retrieve`` hook is given: the result, the call, how long it took."""

    result: RetrievalResult
    call: SearchCall
    seconds: float
    caller: str


def revisions(ctx: Context | None, store: VectorStore) -> dict[str, str | None]:
    """The graph's and the store's revision stamps now (call inside the read's snapshot)."""
    graph = None if ctx is None else ctx.kg
    return {"graph": graph.revision if _is(graph, RevisionGraph) else None,  # type: ignore[union-attr]
            "store": _store_revision(store)}


def _store_revision(store: VectorStore) -> str | None:
    """The store's stamp; None when it has none, or when it is unreachable (an answer that
    fell back to keywords is still recorded, as of an unknown store state)."""
    if not _is(store, RevisionedStore):
        return None
    try:
        return store.revision()  # type: ignore[attr-defined, no-any-return]
    except EndpointUnavailableError:
        return None


_KNOWN: dict[tuple[type, type], bool] = {}


def _is(part: object, protocol: type) -> bool:
    """``isinstance(part, protocol)``, decided once per class: a runtime protocol's check
    walks every member, which on every search costs more than the record itself."""
    key = (type(part), protocol)
    known = _KNOWN.get(key)
    if known is None:
        known = _KNOWN[key] = isinstance(part, protocol)
    return known


_NO_FILTER = ("why=True gives each hit the filter's solution that admitted it; this search "
              "has no filter, so no hit has one (admitted_by is None)")


def observe(result: RetrievalResult, ctx: Context | None, call: SearchCall, seconds: float,
            ended: str) -> RetrievalResult:
    """``result``, with each hit's admitting solution when wanted, recorded, announced."""
    if ctx is None:
        return result
    trail = ctx.audit
    caller = trail.who(call.caller)
    explain = call.sparql_filter is not None and (
        call.why if call.why is not None else trail.enabled and trail.settings.why)
    if explain and call.sparql_filter is not None:
        solutions = admitting_solutions(ctx.kg, call.sparql_filter, call.bindings, call.scopes,
                                        list(result))
        result = _with_hits(result, [dataclasses.replace(h, admitted_by=s)
                                     for h, s in zip(result, solutions, strict=True)])
    elif call.why:  # asked for, and nothing to give: said, not silent
        result = _with_hits(result, list(result), notes=[*result.notes, _NO_FILTER])
    if trail.enabled:
        record = _record(result, call, caller, ended, trail.settings)
        if call.sparql_filter:
            record = dataclasses.replace(record, entities=filter_entities(
                ctx.kg, call.sparql_filter, check_bindings(call.bindings or {}), call.scopes))
        if trail.record(record):
            result = _with_hits(result, list(result), run_id=record.run_id)
    _announce(ctx, RetrieveEvent(result, call, seconds, caller))
    return result


def record_refusal(ctx: Context, call: SearchCall, error: BaseException) -> str | None:
    """Record a search refused after its arguments were read (a scope not granted, a filter
    that does not parse, a backend down): the trail keeps every search, whatever its answer.
    Plan :data:`REFUSED`, no hits, a note naming the error. Its run id, or None when the
    context does not audit or the record could not be built or written (logged, never
    raised: the refusal is what the caller hears about)."""
    trail = ctx.audit
    if not trail.enabled:
        return None
    message = " ".join(str(error).split()) or type(error).__name__
    refused = RetrievalResult([], mode=call.mode, plan=REFUSED, candidates=0, exhaustive=True,
                              notes=[f"refused: {type(error).__name__}: {message}"])
    try:
        try:
            if call.bindings:
                check_bindings(call.bindings)
        except (TypeError, ValueError):  # the bindings may be why it was refused
            call = dataclasses.replace(call, bindings=None)
        record = _record(refused, call, trail.who(call.caller), started_now(), trail.settings)
    except Exception:
        log.exception("a refused search could not be recorded")
        return None
    return record.run_id if trail.record(record) else None


def _record(result: RetrievalResult, call: SearchCall, caller: str, ended: str,
            settings: AuditConfig) -> SearchRecord:
    terms = check_bindings(call.bindings) if call.bindings else {}
    keep_text = settings.query_text == "full" and not settings.digest_only(call.scopes)
    return SearchRecord(
        run_id=new_run_id(), caller=caller, started=call.started, ended=ended,
        query_sha256=query_digest(call.query), query=call.query if keep_text else None,
        rewritten_sha256=None if call.searched is None else query_digest(call.searched),
        rewritten=call.searched if keep_text else None,
        mode=call.mode, k=call.k, filter=call.sparql_filter,
        bindings={name: str(term) for name, term in terms.items()},
        scopes=list(call.scopes), levels=settings.levels_of(call.scopes),
        fusion=_name(call.fusion),
        steps=[_name(s) or "" for s in call.steps], min_score=call.min_score,
        fallback=NO_FALLBACK if call.fallback is None else str(call.fallback),
        # A refused search may hold the `now` it was refused for (text that is no moment, a
        # datetime without an offset); a moment is kept in UTC, as every record's time is.
        as_of=_utc(call.now),
        plan=result.plan, candidates=result.candidates, exhaustive=result.exhaustive,
        filter_path=result.filter_path,
        fusion_weights=dict(result.fusion_weights) or None, notes=list(result.notes),
        embedder=call.embedder, graph_revision=call.revisions.get("graph"),
        store_revision=call.revisions.get("store"), replay_of=call.replay_of or REPLAYING.get(),
        hits=[HitRecord(rank=rank, iri=h.iri, score=h.score, document=h.document,
                        components=dict(h.components), admitted_by=h.admitted_by)
              for rank, h in enumerate(result, 1)])


def _name(part: object) -> str | None:
    """A fusion or step as the record names it: its name, or its class's."""
    if part is None or isinstance(part, str):
        return part
    name = getattr(part, "name", None)  # a step or fusion object may name itself
    if isinstance(name, str):
        return name
    function = getattr(part, "func", part)  # functools.partial
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', type(part).__qualname__)}"


def _announce(ctx: Context, event: RetrieveEvent) -> None:
    result, call = event.result, event.call
    scores = [h.score for h in result if h.score is not None]
    extra = {"mode": call.mode, "k": call.k, "min_score": call.min_score, "hits": len(result),
             "top_score": max(scores, default=None), "lowest_score": min(scores, default=None),
             "candidates": result.candidates, "plan": result.plan,
             "seconds": round(event.seconds, 6), "run_id": result.run_id, "caller": event.caller}
    if log.isEnabledFor(logging.INFO):
        if os.environ.get(LOG_TEXT) and not ctx.audit.settings.digest_only(call.scopes):
            extra["query"] = call.query
        log.info("retrieve %s", " ".join(f"{k}={v}" for k, v in extra.items()),
                 extra={"trails": extra})
    for hook in list(ctx.on_retrieve):
        _call(hook, event)


def _call(hook: Callable[[RetrieveEvent], object], event: RetrieveEvent) -> None:
    try:
        hook(event)
    except Exception:  # an observer must not fail the search it observes
        log.exception("an on_retrieve hook raised; the search answered anyway")


def _with_hits(result: RetrievalResult, hits: list[Any], run_id: str | None = None,
               notes: list[str] | None = None) -> RetrievalResult:
    copy = RetrievalResult(hits, mode=result.mode, plan=result.plan,
                           candidates=result.candidates, exhaustive=result.exhaustive,
                           rankings=result.rankings,
                           notes=result.notes if notes is None else notes,
                           fusion_weights=result.fusion_weights,
                           run_id=run_id if run_id is not None else result.run_id,
                           query=result.query)
    copy.filter_path = result.filter_path
    return copy


def _utc(now: object) -> str | None:
    """``now`` as ISO 8601 UTC text when it names a moment in UTC's calendar; a datetime
    without an offset as it was given (the search it belongs to was refused); else None."""
    if not isinstance(now, dt.datetime):
        return None
    if now.utcoffset() is None:
        return now.isoformat()
    try:
        return now.astimezone(dt.UTC).isoformat()
    except OverflowError:  # refused too: outside the years 1 to 9999 in UTC
        return now.isoformat()
