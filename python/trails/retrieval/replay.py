"""Run a recorded search again and say what changed (``trails replay RUN``).

The search runs with the recorded query, mode, ``k``, filter, bindings, scopes, fusion,
``min_score``, ``fallback`` (``"auto"``, the default, for a record from before it was kept:
a note says so), ``why`` when its hits kept their admissions, and, when the search was given one (``now``), the moment expiries were judged
at; it is itself recorded (``prov:wasInformedBy`` the original). The report lists the hits that kept their rank, moved, are new or are gone, and whether the graph, the store or
the embedder changed since (their revision stamps and identity); its notes say when the filter
admitted another number of chunks or ran another path (``RetrievalResult.filter_path``),
when either answer was degraded by a failed backend, when a hit found again was admitted by
other values of the filter's variables than it was (its document re-dated), and why a gone
hit is gone when the trail or the graph tells (deleted, expired, a new version). Post-ranking
steps are objects, not records: a search that had steps is replayed without them, and the report says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pyoxigraph as ox

from trails.audit import DeletionRecord, SearchRecord, query_digest
from trails.audit.prov import parse_time, read_records
from trails.audit.vocabulary import AUDIT, AUDIT_GRAPH, PROV
from trails.context import Context
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.keywords import named_keywords
from trails.kg.base import RevisionGraph, select
from trails.kg.terms import term_of
from trails.records import RetrievalResult
from trails.retrieval.arguments import check_query
from trails.retrieval.degraded import Fallback
from trails.retrieval.expired import expired_now
from trails.retrieval.recording import NO_FALLBACK, REFUSED, REPLAYING
from trails.retrieval.request import Fusion
from trails.retrieval.retrieve import FUSIONS, known_scopes, retrieve
from trails.scopes import DEFAULT_SCOPE
from trails.vector.stores.base import RevisionedStore

__all__ = ["ReplayReport", "replay"]


@dataclass(frozen=True)
class ReplayReport:
    """What a replay found: the original record, the new result, and the differences."""

    original: SearchRecord
    result: RetrievalResult
    same: list[str] = field(default_factory=list)  # chunk IRIs at the same rank
    moved: list[tuple[str, int, int]] = field(default_factory=list)  # iri, old rank, new rank
    new: list[tuple[str, int]] = field(default_factory=list)  # iri, new rank
    gone: list[tuple[str, int]] = field(default_factory=list)  # iri, old rank
    changed: dict[str, bool | None] = field(default_factory=dict)  # graph/store/embedder
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.moved or self.new or self.gone)

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON-ready values: the run and its replay's ids, the verdict,
        the hits same, moved, new and gone (with their ranks), what changed since and the
        notes; ``result``: the new answer whole (:meth:`RetrievalResult.to_dict`: its hits
        with their scores, the plan and filter path). ``trails replay --json`` prints it."""
        return {"run": self.original.run_id, "replay": self.result.run_id,
                "identical": self.identical, "same": list(self.same),
                **{name: [list(item) for item in getattr(self, name)]
                   for name in ("moved", "new", "gone")},
                "changed": dict(self.changed), "notes": list(self.notes),
                "result": self.result.to_dict()}

    def __repr__(self) -> str:
        """The verdict, not the records (the dataclass's repr printed both whole first)."""
        again = "" if self.result.run_id is None else f" as {self.result.run_id}"
        verdict = (f"the same answer ({len(self.same)} hits)" if self.identical else
                   f"the answer changed ({len(self.new)} new, {len(self.gone)} gone, "
                   f"{len(self.moved)} moved)")
        parts = [f"{part} changed" for part, flag in self.changed.items() if flag]
        parts += [f"{len(self.notes)} note(s) in .notes"] if self.notes else []
        return f"<ReplayReport of {self.original.run_id}{again}: {verdict}" + "".join(
            f"; {part}" for part in parts) + ">"


@named_keywords()
def replay(ctx: Context, run: str, *, query: str | None = None,
           caller: str | None = None) -> ReplayReport:
    """Run the recorded search ``run`` again on ``ctx`` and compare.

    ``query``: the query text, needed when the context kept only its SHA-256 (it must match).

    Raises:
        InvalidArgumentTypeError: ``ctx`` is no Context (the arguments swapped, say).
        UnknownRunError: no such run in this context's audit trail.
        InvalidArgumentError: the run is no search, its query text was not kept and none (or
            another) was given, or its fusion was a function that cannot be named again.
    """
    if not isinstance(ctx, Context):
        raise InvalidArgumentTypeError(
            "replay() takes the context first: replay(ctx, run)" if isinstance(run, Context)
            else f"replay() takes a trails Context first (Context.open(...)), then the run "
                 f"id; got {type(ctx).__name__}")
    record = ctx.audit.get(run)
    if not isinstance(record, SearchRecord):
        raise InvalidArgumentError(f"run {run!r} is a {record.kind}, not a search: only searches "
                                   "can be replayed")
    text = _query(record, query)
    fusion = record.fusion
    if fusion is not None and fusion not in FUSIONS:
        raise InvalidArgumentError(
            f"run {run!r} fused with {fusion!r}, a function that cannot be called again by "
            f"name; replay takes only the named fusions ({', '.join(FUSIONS)}) or none")
    notes = [(f"not replayed: the post-ranking steps {', '.join(record.steps)} (steps are "
              "objects, not records)")] if record.steps else []
    if record.rewritten_sha256 is not None:
        notes.append("replayed the query the run's rewriter made of the conversation, as it "
                     "was searched (no rewriter runs again)")
    if record.mode != "graph" and not text.strip():
        notes.append("the run's query was empty, which a search in this mode is now refused "
                     "for (a record from before the rule): replayed as it ran")
    if record.fallback is None:
        notes.append("the run's fallback was not recorded (a record from before it was kept): "
                     "replayed with the default, fallback='auto'")
    emptied = sorted(set(record.scopes) - set(known_scopes(ctx, record.scopes)) - {DEFAULT_SCOPE})
    if emptied:
        notes.append(f"the scope(s) {', '.join(emptied)} hold nothing now (their documents were "
                     "deleted or pruned since the run)")
    with _replaying(record.iri):
        result = retrieve(text, ctx, mode=record.mode, k=record.k,  # type: ignore[arg-type]
                          sparql_filter=record.filter,
                          bindings={n: term_of(v) for n, v in record.bindings.items()} or None,
                          scope=record.scopes or None, fusion=cast("Fusion | None", fusion),
                          caller=caller,
                          min_score=record.min_score, fallback=_fallback(record),
                          now=None if record.as_of is None else parse_time(record.as_of),
                          # a run whose hits kept admissions asked for them (why=True, or
                          # a trail keeping them): its replay asks too, to compare them
                          why=True if any(hit.admitted_by for hit in record.hits) else None)
    return _compare(ctx, record, result, notes)


def _fallback(record: SearchRecord) -> Fallback | None:
    """The fallback the run asked for ("auto", the default, when its record does not say)."""
    if record.fallback is None:
        return "auto"
    # A recorded fallback is one retrieve() took (and checks again).
    return None if record.fallback == NO_FALLBACK else cast("Fallback", record.fallback)


def _query(record: SearchRecord, query: str | None) -> str:
    """The text the run ranked by: its rewritten query when a rewriter made one (the
    conversation and the rewriter are not records, and a model may rewrite otherwise
    today), else its query; ``query`` is checked against the digest kept of that text."""
    rewritten = record.rewritten_sha256 is not None
    kept, digest = ((record.rewritten, record.rewritten_sha256) if rewritten
                    else (record.query, record.query_sha256))
    what = "the query its rewriter made of the conversation" if rewritten else "its query"
    if query is None:
        if kept is None:
            raise InvalidArgumentError(
                f"run {record.run_id} kept only the SHA-256 of {what} (audit query_text "
                "'sha256'); give that text to replay it (--query TEXT)")
        return kept
    if query_digest(check_query(query)) != digest:
        raise InvalidArgumentError(
            f"the query given is not {what}, which run {record.run_id} searched for (its "
            "SHA-256 differs); give the exact text")
    return query


def _compare(ctx: Context, record: SearchRecord, result: RetrievalResult,
             notes: list[str]) -> ReplayReport:
    before = {h.iri: h.rank for h in record.hits}
    after = {h.iri: rank for rank, h in enumerate(result, 1)}
    report = ReplayReport(
        original=record, result=result,
        same=[i for i, r in after.items() if before.get(i) == r],
        moved=[(i, before[i], r) for i, r in after.items() if i in before and before[i] != r],
        new=[(i, r) for i, r in after.items() if i not in before],
        gone=[(i, r) for i, r in before.items() if i not in after],
        changed=_changes(ctx, record),
        notes=notes + _degraded_notes(record, result) + _filter_notes(record, result)
        + _admission_notes(record, result) + _gone_notes(ctx, record, result))
    return report


def _gone_notes(ctx: Context, record: SearchRecord, result: RetrievalResult) -> list[str]:
    """Why each gone hit is gone, when the trail or the graph can tell: its document was
    deleted since the run (the deletion's record is named), has expired, or holds a new
    version, whose chunk is found instead. A hit ranked out or no longer admitted gets none."""
    found = {h.iri for h in result}
    gone = [h for h in record.hits if h.iri not in found and h.document]
    if not gone:
        return []
    now = {h.document: rank for rank, h in enumerate(result, 1)
           if h.document and h.iri not in {g.iri for g in record.hits}}
    deleted = _deletions(ctx, record, {h.document for h in gone if h.document})
    moment = None if record.as_of is None else parse_time(record.as_of)
    expired = expired_now(ctx.kg, ctx.vectors, moment).documents
    notes = []
    for hit in gone:
        document, was = hit.document, f"{hit.iri} (rank {hit.rank} then) is gone"
        if document in now:
            notes.append(f"{was}: its document {document} holds a new version since the run, "
                         f"found at rank {now[document]} now")
        elif document in expired:
            notes.append(f"{was}: its document {document} has expired")
        elif document in deleted:
            notes.append(f"{was}: its document {document} was deleted since the run (deletion "
                         f"{deleted[document].run_id}, reason {deleted[document].reason})")
    return notes


def _admission_notes(record: SearchRecord, result: RetrievalResult) -> list[str]:
    """The hits found again that the filter let through by other values than then (a
    document re-dated, say): the same chunk at the same rank is then another answer to
    defend. Only hits both answers know the admitting solution of are compared."""
    now = {h.iri: h.admitted_by for h in result if h.admitted_by}
    notes = []
    for hit in record.hits:
        then, again = hit.admitted_by, now.get(hit.iri)
        if not then or not again or then == again:
            continue
        changed = "; ".join(f"{name} {then.get(name, 'unbound')} then, "
                            f"{again.get(name, 'unbound')} now"
                            for name in sorted({*then, *again}) if then.get(name) != again.get(name))
        notes.append(f"{hit.iri} (rank {hit.rank} then) was admitted by other values: {changed}")
    return notes


def _degraded_notes(record: SearchRecord, result: RetrievalResult) -> list[str]:
    """Which of the two answers a failed backend degraded (a keyword fallback, a skip), and
    whether the run was refused rather than answered (the service's records of a scope not
    granted): otherwise their differences would read as changes of the context."""
    refused = [f"the run was refused, not answered ({note})" for note in record.notes
               if record.plan == REFUSED and note.startswith("refused: ")]
    return (refused + [f"the run's answer was degraded: {why}" for why in record.degraded]
            + [f"this replay's answer is degraded: {why}" for why in result.degraded])


def _filter_notes(record: SearchRecord, result: RetrievalResult) -> list[str]:
    """What changed in how the filter was answered: how many chunks it admitted, and the
    path it took (a record from before paths were kept names none)."""
    if record.filter is None:
        return []
    notes = []
    if record.candidates is not None and result.candidates != record.candidates:
        notes.append(f"the filter admitted {_chunks(record.candidates)} then, "
                     f"{_chunks(result.candidates)} now")
    if record.filter_path is not None and result.filter_path != record.filter_path:
        notes.append(f"the filter ran {record.filter_path} then, {result.filter_path} now")
    return notes


def _deletions(ctx: Context, record: SearchRecord, documents: set[str],
               ) -> dict[str, DeletionRecord]:
    """The deletion recorded first since the run of each of ``documents`` that has one:
    pending ones, then those in the graph (one query over the documents, not the trail)."""
    rows = select(ctx.kg, f"SELECT ?record WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?run a "
                          f"<{AUDIT}Deletion> ; <{PROV}invalidated> ?doc ; <{AUDIT}record> "
                          f"?record }} VALUES ?doc {{ {_iris(documents)} }} }}")
    found = [*ctx.audit.pending(), *read_records([str(v) for v in rows.column("record")])]
    deleted: dict[str, DeletionRecord] = {}
    for activity in sorted(found, key=lambda r: r.started, reverse=True):
        if isinstance(activity, DeletionRecord) and activity.started >= record.started:
            deleted.update((d, activity) for d in activity.documents if d in documents)
    return deleted


def _iris(documents: set[str]) -> str:
    """The documents as SPARQL IRIs (a text that is none is left out, never pasted)."""
    written = []
    for document in sorted(documents):
        with contextlib.suppress(ValueError):
            written.append(str(ox.NamedNode(document)))
    return " ".join(written)


def _chunks(count: int | None) -> str:
    return "no count" if count is None else f"{count} chunk{'' if count == 1 else 's'}"


def _changes(ctx: Context, record: SearchRecord) -> dict[str, bool | None]:
    """For the graph, the store and the embedder: changed since the run (None: unknown)."""
    graph = ctx.kg.revision if isinstance(ctx.kg, RevisionGraph) else None
    store = ctx.vectors.revision() if isinstance(ctx.vectors, RevisionedStore) else None
    return {
        "graph": None if graph is None or record.graph_revision is None
        else graph != record.graph_revision,
        "store": None if store is None or record.store_revision is None
        else store != record.store_revision,
        "embedder": None if record.embedder is None
        else ctx.embedder.identity.describe() != record.embedder,
    }


@contextlib.contextmanager
def _replaying(iri: str) -> Iterator[None]:
    token = REPLAYING.set(iri)
    try:
        yield
    finally:
        REPLAYING.reset(token)
