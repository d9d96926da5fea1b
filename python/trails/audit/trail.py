"""One context's audit trail: record activities without ever failing or blocking a search,
fold them into the audit graph, and read them back (docs/compliance.md, ADR 0018)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import pyoxigraph as ox

from trails.audit.callers import checked_caller, default_caller
from trails.audit.filters import ActivityFilter, date_time, started_at_or_after
from trails.audit.log import AuditLog
from trails.audit.prov import parse_time, quads, read_records
from trails.audit.records import (
    RATINGS,
    ActivityRecord,
    FeedbackRecord,
    new_run_id,
    run_id_of,
    run_iri,
    run_prefix_of,
    started_now,
)
from trails.audit.vocabulary import AUDIT, AUDIT_GRAPH, PROV
from trails.config import AuditConfig
from trails.errors import ContextDamagedError, InvalidArgumentError, StorageError, UnknownRunError
from trails.kg.base import KnowledgeGraph, RevisionGraph, select
from trails.kg.hand_links import minted_links
from trails.kg.reserved import writing_audit_graph
from trails.kg.terms import IRI, check_text

__all__ = ["AUDIT_DIRECTORY", "AuditTrail", "checked_caller", "default_caller"]

log = logging.getLogger("trails.audit")

AUDIT_DIRECTORY = "audit"  # in the context's directory: the log files not folded yet
REJECTED = "rejected.txt"  # there: records that have no RDF form, kept for a person to read
# Quads per graph transaction when folding (whole records): large enough to be fast, small
# enough that the graph's other writer (an ingest) never waits long for a fold.
FOLD_BATCH = 20_000
_RECORD = f"SELECT ?record WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?run <{AUDIT}record> ?record }} }}"
# Runs whose IRI starts with a bound stem: how a short prefix finds its run. A few more than
# one is enough to say a prefix is ambiguous and show some of what it matches.
_PREFIXED = (f"SELECT DISTINCT ?run WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?run <{AUDIT}record> ?r }} "
             "FILTER(STRSTARTS(STR(?run), ?stem)) } LIMIT 6")
_RUN_ID = re.compile(r"[0-9a-f]{32}")  # what new_run_id makes
_FEEDBACK = (f"SELECT ?record WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?feedback <{AUDIT}feedbackOn> ?run ; "
             f"<{AUDIT}record> ?record }} }}")


class AuditTrail:
    """The audit trail of one context: ``record`` appends (never raising), ``fold`` moves what
    was appended into the audit graph (the writer only), ``activities`` and ``get`` read.

    ``enabled`` and ``caller`` may be changed at any time; ``failures`` counts records that
    could not be written (each is logged on the ``trails.audit`` logger).
    """

    def __init__(self, kg: KnowledgeGraph, directory: Path | None, settings: AuditConfig, *,
                 writable: bool, enabled: bool | None = None) -> None:
        self.kg = kg
        self.settings = settings
        self.enabled = settings.enabled if enabled is None else enabled
        self._caller: str | None = None  # None: default_caller() at each record
        self.failures = 0
        self.writable = writable
        self._log = AuditLog(directory / AUDIT_DIRECTORY) if directory is not None else None
        self._memory: list[ActivityRecord] = []  # a context without a directory
        self._lock = threading.Lock()

    @property
    def caller(self) -> str | None:
        """Who this handle's records name when a call names nobody (None: the login name)."""
        return self._caller

    @caller.setter
    def caller(self, caller: str | None) -> None:
        self._caller = None if caller is None else checked_caller(caller)

    def who(self, caller: str | None = None) -> str:
        """Who a record names: ``caller`` when given, else :attr:`caller`, else
        :func:`default_caller`.

        Raises:
            InvalidArgumentError: ``caller`` names nobody (blank, or no string): a record
                must never name someone else, as ``caller or ...`` once did with ``""``.
        """
        if caller is not None:
            return checked_caller(caller)
        return self._caller or default_caller()

    def record(self, record: ActivityRecord) -> bool:
        """Keep ``record``; False (logged, counted, never raised) when it could not be."""
        try:
            if self._log is not None:
                self._log.append(record)
            else:
                with self._lock:
                    self._memory.append(record)
            return True
        except Exception as exc:  # noqa: BLE001 - a search must never fail for its record
            self.failures += 1
            log.warning("could not record audit activity %s (%d failure(s) so far): %s",
                        record.run_id, self.failures, exc)
            return False

    def record_first(self, record: ActivityRecord) -> None:
        """Keep ``record`` before what it records happens (a deletion): on the disk when this
        returns, so no kill can leave the act without its record.

        Raises:
            StorageError: it could not be written; do not go on with the act.
        """
        try:
            if self._log is not None:
                self._log.append(record, sync=True)
            else:
                with self._lock:
                    self._memory.append(record)
        except OSError as exc:
            self.failures += 1
            raise StorageError(
                f"could not record {record.kind} {record.run_id} in the audit log "
                f"{self._log.directory if self._log else ''} ({exc.strerror or exc}), so it "
                "was not done; make the log writable (free space, permissions) and run it "
                "again") from exc

    def pending(self) -> list[ActivityRecord]:
        """Records not yet in the graph."""
        if self._log is None:
            with self._lock:
                return list(self._memory)
        return self._log.pending()

    def set_aside(self) -> int:
        """How many lines the folds kept aside in ``audit/rejected.txt`` (lines that are no
        record this version reads, records with no RDF form): none of them is listed."""
        if self._log is None:
            return 0
        try:
            with open(self._log.directory / REJECTED, "rb") as file:
                return sum(1 for line in file if line.strip())
        except FileNotFoundError:
            return 0

    def fold(self) -> int:
        """Move the pending records into the audit graph (one transaction) and drop those
        past the retention; the number folded. A read-only context cannot: 0.

        Raises:
            StorageError: the graph cannot be written (the records stay pending).
        """
        if not self.writable:
            return 0
        cutoff = self._cutoff()
        if self._log is None:
            with self._lock:
                records, self._memory = self._memory, []
            try:
                self._write(records, cutoff)
            except BaseException:
                with self._lock:
                    self._memory[:0] = records
                raise
            return len(records)
        with self._log.folding(REJECTED, self._count_aside) as records:
            self._write(records, cutoff)
        return len(records)

    def activities(self, *, since: dt.datetime | dt.date | None = None,
                   until: dt.datetime | dt.date | None = None,
                   caller: str | None = None, level: str | None = None,
                   scope: str | None = None, limit: int | None = 100) -> list[ActivityRecord]:
        """Recorded activities, newest first: folded ones (after folding, when this context
        may write) and pending ones. ``since``: only those started at or after it;
        ``until``: only those started before it (a time without an offset is UTC, a date its
        first moment in UTC: ``since=date(2024, 5, 1), until=date(2024, 5, 2)`` is that day).
        ``level``: only those that read a scope of this security level
        (``AuditConfig.levels``, as recorded when each ran). ``scope``: only those that read
        this scope (searches in it, SPARQL queries confined to it or to no scope); like
        ``level``, it leaves out deletions and feedback, which read no scope.

        Raises:
            InvalidArgumentError: ``until`` is not after ``since``, ``level`` lists nothing
                and is no level set now, or an argument is not what it takes.
        """
        wanted = ActivityFilter.checked(since=since, until=until, caller=caller, level=level,
                                        scope=scope, limit=limit)
        self.fold()
        listed = self._pending_then_latest()
        text, bindings = wanted.query()
        found = read_records([str(v) for v in
                              select(self.kg, text, bindings or None).column("record")])
        cutoff = self._cutoff()
        pending = [r for r in listed if wanted.keeps(r, cutoff)]
        # A run's folded record wins over a pending line claiming its id (get() says so).
        merged = {r.run_id: r for r in [*pending, *found]}
        ordered = sorted(merged.values(), key=lambda r: r.started, reverse=True)
        if level is not None and not ordered:
            self._check_level(level)
        return ordered if limit is None else ordered[:limit]

    def _check_level(self, level: str) -> None:
        """A level that lists nothing must be one set now: a typo would read as "no run read
        it". (A level no longer set but kept by older records lists those records.)"""
        known = sorted({*self.settings.levels.values(), *self.settings.digest_levels})
        if level not in known:
            raise InvalidArgumentError(
                f"{level!r} is no security level of this context's scopes now (levels: "
                f"{', '.join(known) or 'none set; trails init --security-level SCOPE=LEVEL'})")

    def resolve(self, run: str) -> str:
        """The whole run id ``run`` names: an id, a run's IRI, or a unique prefix of at least
        four hexadecimal digits (as git takes a commit's).

        Raises:
            InvalidArgumentError: ``run`` is no run id, or a prefix of several runs' (some are
                named: give more digits).
            UnknownRunError: a prefix of no recorded run.
        """
        prefix = run_prefix_of(run)
        if prefix is None:
            return run_id_of(run)
        found = {r.run_id for r in self._pending_then_latest()
                 if r.run_id.startswith(prefix) and started_at_or_after(r, self._cutoff())}
        rows = select(self.kg, _PREFIXED, {"stem": run_iri(prefix)})  # bound, never pasted
        found.update(str(v).removeprefix(run_iri("")) for v in rows.column("run"))
        if len(found) == 1:
            return found.pop()
        if not found:
            raise UnknownRunError(
                f"no recorded run starts with {prefix!r} in this context; list runs with "
                "`trails audit` (records past the retention are gone)")
        shown = ", ".join(sorted(found)[:5])
        raise InvalidArgumentError(
            f"{prefix!r} is the start of several runs ({shown}{', ...' if len(found) > 5 else ''}"
            "); give more of its digits")

    def get(self, run: str) -> ActivityRecord:
        """The activity ``run`` (its id, its IRI ``urn:trails:run:<id>``, or a unique prefix
        of the id: :meth:`resolve`).

        Raises:
            InvalidArgumentError: ``run`` is no run id (nor a run's IRI), or an ambiguous prefix.
            UnknownRunError: no such activity (or it is past the retention).
        """
        run_id = self.resolve(run)
        pending = [r for r in self._pending_then_latest()
                   if r.run_id == run_id and started_at_or_after(r, self._cutoff())]
        rows = select(self.kg, _RECORD, {"run": IRI(run_iri(run_id))})
        found = list({_canonical(r): r for r in read_records([str(v) for v in
                      rows.column("record")]) if r.run_id == run_id}.values())
        if len(found) > 1:  # written past trails' guard: which one ran cannot be told
            raise ContextDamagedError(
                f"the audit graph holds {len(found)} different records of run {run_id}; it was "
                "written outside trails (a run is recorded once): restore the audit graph "
                "from a backup, or compare the records with `trails export --audit`")
        if found:  # folded: a pending line claiming its id is another copy, kept aside
            if pending and _canonical(pending[0]) != _canonical(found[0]):
                log.warning("a pending audit line claims the recorded run %s with other "
                            "content; the recorded one is shown (the next fold keeps the "
                            "line in %s/%s)", run_id, AUDIT_DIRECTORY, REJECTED)
            return found[0]
        if pending:
            return pending[0]
        raise UnknownRunError(
            f"no recorded run {run!r} in this context; list runs with `trails audit` "
            "(records past the retention are gone)")

    def feedback(self, run: str, rating: str, *, note: str | None = None,
                 caller: str | None = None) -> FeedbackRecord:
        """Record what ``caller`` thinks of the recorded run ``run`` (its id or IRI, read as
        :meth:`get` reads it): ``rating`` ``"up"`` or ``"down"``, with an optional ``note``.
        Recorded as its own activity beside the run (on the disk when this returns; the fold
        writes it into the audit graph), whether or not searches are being recorded.

        Raises:
            InvalidArgumentError: ``run`` is no run id, names feedback, or ``rating`` or
                ``note`` is not what it takes.
            UnknownRunError: no such run (nothing is recorded).
            StorageError: the record could not be written.
        """
        if rating not in RATINGS:
            raise InvalidArgumentError(f"rating {rating!r} is not one trails records: give 'up' "
                                       "or 'down' (`trails audit feedback RUN --up|--down`)")
        if note is not None and not isinstance(note, str):
            raise InvalidArgumentError(f"note must be text or None, not {type(note).__name__}")
        if note is not None:
            check_text(note, "note")  # the record must be writable as UTF-8
        rated = self.get(run)
        if isinstance(rated, FeedbackRecord):
            raise InvalidArgumentError(
                f"{rated.run_id} is feedback on the run {rated.run}, not a run; give "
                f"feedback on {rated.run} itself")
        who = self.who(caller)
        moment = started_now()
        record = FeedbackRecord(run_id=new_run_id(), caller=who, started=moment, ended=moment,
                                run=rated.run_id, rating=rating, note=note)
        self.record_first(record)
        return record

    def feedback_on(self, run: str) -> list[FeedbackRecord]:
        """The feedback recorded on the run ``run`` (as :meth:`resolve` reads it), newest
        first.

        Raises:
            UnknownRunError: no such run, and no feedback on it: a mistyped id must not read
                as "nobody said anything".
        """
        run_id = self.resolve(run)
        pending = self._pending_then_latest()
        rows = select(self.kg, _FEEDBACK, {"run": IRI(run_iri(run_id))})
        found = [r for r in [*read_records([str(v) for v in rows.column("record")]),
                             *pending]
                 if isinstance(r, FeedbackRecord) and r.run == run_id
                 and started_at_or_after(r, self._cutoff())]
        unique = {r.run_id: r for r in found}
        if not unique:
            self.get(run_id)  # raises for a run that is not there (feedback may outlive it)
        return sorted(unique.values(), key=lambda r: r.started, reverse=True)

    def _pending_then_latest(self) -> list[ActivityRecord]:
        """The pending records, and then, for a read-only context, its view of the graph
        opened again. The writer's fold writes records into the graph before it deletes their
        files, so each record is in what this read or in the graph as it is now. A view opened
        before the fold has neither, and nothing else renews it (audit writes leave the graph's
        revision alone): a reader's `trails audit` said "no recorded run" of a run it had seen."""
        pending = self.pending()
        refresh = getattr(self.kg, "refresh", None)
        if not self.writable and callable(refresh):
            refresh()
        return pending

    def close(self) -> None:
        """Fold what is pending (a writable context) and release the log file."""
        try:
            self.fold()
        finally:
            if self._log is not None:
                self._log.close()

    def _cutoff(self) -> dt.datetime | None:
        days = self.settings.retention_days
        if days is None:
            return None
        try:
            return dt.datetime.now(dt.UTC) - dt.timedelta(days=days)
        except OverflowError:  # further back than the calendar goes: no record is that old
            return None

    def _write(self, records: Sequence[ActivityRecord], cutoff: dt.datetime | None) -> None:
        quiet = self.kg.unrevised() if isinstance(self.kg, RevisionGraph) else (
            contextlib.nullcontext())
        # The one writer of the audit graph, which holds no chunk link (kg/hand_links.py).
        with quiet, writing_audit_graph(), minted_links():
            batch: list[ox.Quad] = []
            kept = self._recorded([r.run_id for r in records])
            for record in records:
                try:
                    if kept.setdefault(record.run_id, _canonical(record)) != _canonical(record):
                        raise ValueError(f"run {record.run_id} is recorded already, with other "
                                         "content: a run is recorded once")
                    if cutoff is None or parse_time(record.started) >= cutoff:
                        batch.extend(quads(record))
                except (ValueError, TypeError) as exc:  # one bad record must not stop a fold
                    self._reject(record, exc)
                if len(batch) >= FOLD_BATCH:  # whole records per transaction, bounded, so
                    self.kg.extend(batch)     # an ingest's graph writes interleave with a fold
                    batch = []
            if batch:
                self.kg.extend(batch)
            if cutoff is not None:
                self.kg.update(_expired(cutoff))


    def _recorded(self, runs: Sequence[str]) -> dict[str, str]:
        """The records the audit graph holds of ``runs`` (run id -> its canonical JSON)."""
        wanted = sorted({run for run in runs if _RUN_ID.fullmatch(run)})  # never pasted else
        found: dict[str, str] = {}
        for start in range(0, len(wanted), 1000):
            iris = " ".join(f"<{run_iri(run)}>" for run in wanted[start:start + 1000])
            rows = select(self.kg, f"SELECT ?record WHERE {{ VALUES ?run {{ {iris} }} "
                                   f"GRAPH {AUDIT_GRAPH} {{ ?run <{AUDIT}record> ?record }} }}")
            for record in read_records([str(v) for v in rows.column("record")]):
                found.setdefault(record.run_id, _canonical(record))
        return found

    def _count_aside(self, lines: int) -> None:
        self.failures += lines
        log.warning("%d line(s) of the audit log are no record this version reads; kept in %s",
                    lines, AUDIT_DIRECTORY + "/" + REJECTED)

    def _reject(self, record: ActivityRecord, error: Exception) -> None:
        """Keep a record that has no RDF form aside (``audit/rejected``), logged and counted."""
        self.failures += 1
        log.warning("audit record %s cannot go into the graph (%s); kept in %s", record.run_id,
                    error, AUDIT_DIRECTORY + "/" + REJECTED)
        if self._log is not None:
            self._log.keep_aside(record, REJECTED)


def _canonical(record: ActivityRecord) -> str:
    """A record as comparable text (as the graph's ``audit:record`` literal spells it)."""
    return json.dumps(record.to_json(), ensure_ascii=False, sort_keys=True)


# The nodes of an activity (what prov.quads mints under its IRI) from the activity ?run.
_NODES = ("BIND(?run AS ?s)", f"?run <{AUDIT}binding> ?s", f"?run <{PROV}qualifiedUsage> ?s",
          f"?run <{PROV}qualifiedUsage>/<{AUDIT}admittedBy> ?s")


def _expired(cutoff: dt.datetime) -> str:
    """The update dropping every activity started before ``cutoff``, every triple of it and
    of the nodes it owns (bindings, hits, their admitting solutions), then the agents no
    activity names any more; nothing else.

    Each branch finds its own expired activity: a variable bound outside a group is not
    visible inside it, so a branch that only reads ``?run`` would match every triple."""
    expired = f"?run <{PROV}startedAtTime> ?t . FILTER(?t < {date_time(cutoff)})"
    branches = " UNION ".join(f"{{ {expired} {node} }}" for node in _NODES)
    graph = f"GRAPH {AUDIT_GRAPH}"
    return (f"DELETE {{ {graph} {{ ?s ?p ?o }} }} WHERE {{ {graph} {{ {{ {branches} }} "
            f"?s ?p ?o }} }} ;\n"
            f"DELETE {{ {graph} {{ ?agent ?p ?o }} }} WHERE {{ {graph} {{ "
            f"?agent a <{PROV}Agent> FILTER NOT EXISTS {{ ?any <{PROV}wasAssociatedWith> ?agent }} "
            f"?agent ?p ?o }} }}")
