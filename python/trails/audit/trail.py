"""One context's audit trail: record activities without ever failing or blocking a search,
fold them into the audit graph, and read them back (docs/compliance.md, ADR 0018)."""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import pyoxigraph as ox

from trails.audit.log import AuditLog
from trails.audit.prov import quads, read_records
from trails.audit.records import ActivityRecord, run_iri
from trails.audit.vocabulary import AUDIT, AUDIT_GRAPH, PROV, XSD
from trails.config import AuditConfig
from trails.errors import UnknownRunError
from trails.kg.base import KnowledgeGraph, RevisionGraph, select

__all__ = ["AUDIT_DIRECTORY", "AuditTrail", "default_caller"]

log = logging.getLogger("trails.audit")

AUDIT_DIRECTORY = "audit"  # in the context's directory: the log files not folded yet
REJECTED = "rejected.txt"  # there: records that have no RDF form, kept for a person to read
# Quads per graph transaction when folding (whole records): large enough to be fast, small
# enough that the graph's other writer (an ingest) never waits long for a fold.
FOLD_BATCH = 20_000
_RECORDS = (f"SELECT ?record WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?run <{AUDIT}record> ?record ; "
            f"<{PROV}startedAtTime> ?t . {{filters}} }} }} ORDER BY DESC(?t) {{limit}}")


def default_caller() -> str:
    """Who is searching when nobody says: ``TRAILS_CALLER``, else the login name."""
    named = os.environ.get("TRAILS_CALLER", "").strip()
    if named:
        return named
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        return "unknown"


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
        self.caller: str | None = None  # None: default_caller() at each record
        self.failures = 0
        self.writable = writable
        self._log = AuditLog(directory / AUDIT_DIRECTORY) if directory is not None else None
        self._memory: list[ActivityRecord] = []  # a context without a directory
        self._lock = threading.Lock()

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

    def pending(self) -> list[ActivityRecord]:
        """Records not yet in the graph."""
        if self._log is None:
            with self._lock:
                return list(self._memory)
        return self._log.pending()

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
        with self._log.folding() as records:
            self._write(records, cutoff)
        return len(records)

    def activities(self, *, since: dt.datetime | None = None, caller: str | None = None,
                   limit: int | None = 100) -> list[ActivityRecord]:
        """Recorded activities, newest first: folded ones (after folding, when this context
        may write) and pending ones."""
        self.fold()
        filters = []
        moment = None if since is None else (
            since if since.tzinfo else since.replace(tzinfo=dt.timezone.utc))
        if moment is not None:
            filters.append(f"FILTER(?t >= {ox.Literal(moment.isoformat(), datatype=ox.NamedNode(XSD + 'dateTime'))})")
        if caller is not None:
            filters.append(f"?run <{PROV}wasAssociatedWith> ?agent . "
                           f"?agent <http://www.w3.org/2000/01/rdf-schema#label> {ox.Literal(caller)}")
        text = _RECORDS.replace("{filters}", " ".join(filters)).replace(
            "{limit}", "" if limit is None else f"LIMIT {int(limit)}")
        found = read_records([str(v) for v in select(self.kg, text).column("record")])
        pending = [r for r in self.pending()
                   if (caller is None or r.caller == caller)
                   and (moment is None or dt.datetime.fromisoformat(r.started) >= moment)]
        merged = {r.run_id: r for r in [*found, *pending]}
        ordered = sorted(merged.values(), key=lambda r: r.started, reverse=True)
        return ordered if limit is None else ordered[:limit]

    def get(self, run: str) -> ActivityRecord:
        """The activity ``run`` (its id, or its IRI ``urn:trails:run:<id>``).

        Raises:
            UnknownRunError: no such activity (or it is past the retention).
        """
        run_id = run.rsplit(":", 1)[-1].strip()
        for record in self.pending():
            if record.run_id == run_id:
                return record
        rows = select(self.kg, f"SELECT ?record WHERE {{ GRAPH {AUDIT_GRAPH} {{ "
                               f"<{run_iri(run_id)}> <{AUDIT}record> ?record }} }}")
        found = read_records([str(v) for v in rows.column("record")])
        if not found:
            raise UnknownRunError(
                f"no recorded run {run!r} in this context; list runs with `trails audit` "
                "(records past the retention are gone)")
        return found[0]

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
        return dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days)

    def _write(self, records: Sequence[ActivityRecord], cutoff: dt.datetime | None) -> None:
        kept = [r for r in records
                if cutoff is None or dt.datetime.fromisoformat(r.started) >= cutoff]
        quiet = self.kg.unrevised() if isinstance(self.kg, RevisionGraph) else (
            contextlib.nullcontext())
        with quiet:
            batch: list[ox.Quad] = []
            for record in kept:
                try:
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


    def _reject(self, record: ActivityRecord, error: Exception) -> None:
        """Keep a record that has no RDF form aside (``audit/rejected``), logged and counted."""
        self.failures += 1
        log.warning("audit record %s cannot go into the graph (%s); kept in %s", record.run_id,
                    error, AUDIT_DIRECTORY + "/" + REJECTED)
        if self._log is not None:
            self._log.keep_aside(record, REJECTED)


def _expired(cutoff: dt.datetime) -> str:
    """The update dropping every activity started before ``cutoff`` with what hangs off it."""
    moment = ox.Literal(cutoff.isoformat(), datatype=ox.NamedNode(XSD + "dateTime"))
    return (f"DELETE {{ GRAPH {AUDIT_GRAPH} {{ ?s ?p ?o }} }} WHERE {{ GRAPH {AUDIT_GRAPH} {{ "
            f"?run <{PROV}startedAtTime> ?t . FILTER(?t < {moment}) "
            f"{{ BIND(?run AS ?s) }} UNION {{ ?run <{AUDIT}binding> ?s }} UNION "
            f"{{ ?run <{PROV}qualifiedUsage> ?s }} UNION "
            f"{{ ?run <{PROV}qualifiedUsage> ?u . ?u <{AUDIT}admittedBy> ?s }} "
            f"?s ?p ?o }} }}")
