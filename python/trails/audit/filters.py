"""Which recorded activities :meth:`~trails.audit.trail.AuditTrail.activities` lists: its
options checked once, then asked of the audit graph (SPARQL, every value bound, never pasted:
ADR 0003) and of the records not folded into it yet, alike."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pyoxigraph as ox

from trails.audit.callers import checked_caller
from trails.audit.prov import parse_time
from trails.audit.records import ActivityRecord, SparqlQueryRecord
from trails.audit.vocabulary import AUDIT, AUDIT_GRAPH, PROV, RDFS_LABEL, XSD
from trails.errors import InvalidArgumentError
from trails.scopes import check_scope

__all__ = ["ActivityFilter", "date_time", "moment", "started_at_or_after"]

_RECORDS = (f"SELECT ?record WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?run <{AUDIT}record> ?record ; "
            f"<{PROV}startedAtTime> ?t . {{caller}} {{level}} {{scope}} }} {{since}} {{until}} }} "
            "ORDER BY DESC(?t) {limit}")
_MOST = 2**63  # a LIMIT any SPARQL engine reads
# In the outermost group, where the bound ?since and ?until are seen.
_SINCE = "FILTER(?t >= ?since)"
_UNTIL = "FILTER(?t < ?until)"
_CALLER = f"?run <{PROV}wasAssociatedWith> ?agent . ?agent {RDFS_LABEL} ?caller ."
_LEVEL = f"?run <{AUDIT}securityLevel> ?level ."
# A run read the scope it names, and a SPARQL query confined to no scope read every graph.
_SCOPE = (f"{{ ?run <{AUDIT}scope> ?scope }} UNION {{ ?run a <{AUDIT}SparqlQuery> "
          f"FILTER NOT EXISTS {{ ?run <{AUDIT}scope> ?confined }} }}")


@dataclass(frozen=True)
class ActivityFilter:
    """``activities()``'s options, checked: runs started in ``[since, until)``, by
    ``caller``, that read a scope of security ``level`` / the scope ``scope``."""

    since: dt.datetime | None = None
    until: dt.datetime | None = None
    caller: str | None = None
    level: str | None = None
    scope: str | None = None
    limit: int | None = 100

    @classmethod
    def checked(cls, *, since: object = None, until: object = None, caller: object = None,
                level: object = None, scope: object = None, limit: object = 100
                ) -> ActivityFilter:
        """The filter of these options.

        Raises:
            InvalidArgumentError: naming the option: ``since``/``until`` not a date or a
                datetime, ``until`` not after ``since``, a blank ``caller`` or ``level``, a
                ``scope`` that is no scope's name, or a ``limit`` that is not an int >= 0.
        """
        start, end = moment(since, "since"), moment(until, "until")
        if start is not None and end is not None and end <= start:
            raise InvalidArgumentError(
                f"until ({end.isoformat()}) must be later than since ({start.isoformat()}): "
                "runs are listed from since, included, to until, excluded; swap them")
        if caller is not None:
            checked_caller(caller)  # "" would list nothing, as if nobody had searched
        if level is not None and (not isinstance(level, str) or not level.strip()):
            raise InvalidArgumentError(f"level must be a security level's name; got {level!r}")
        if scope is not None:
            check_scope(scope)  # type: ignore[arg-type]
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise InvalidArgumentError(f"limit must be a whole number of 0 or more, or None "
                                       f"for every record; got {limit!r}")
        return cls(start, end, caller, level, scope, limit)  # type: ignore[arg-type]

    def query(self) -> tuple[str, dict[str, object]]:
        """The SPARQL that lists the folded records, newest first, and its bindings."""
        parts = {"caller": _CALLER, "level": _LEVEL, "scope": _SCOPE, "since": _SINCE,
                 "until": _UNTIL}
        bindings: dict[str, object] = {}
        # A limit past what SPARQL counts (2**64 - 1) is no limit: there are fewer records.
        limited = self.limit is not None and self.limit < _MOST
        text = _RECORDS.replace("{limit}", f"LIMIT {self.limit}" if limited else "")
        for name, pattern in parts.items():
            value = getattr(self, name)
            text = text.replace("{" + name + "}", "" if value is None else pattern)
            if value is not None:
                bindings[name] = date_time(value) if isinstance(value, dt.datetime) else value
        return text, bindings

    def keeps(self, record: ActivityRecord, floor: dt.datetime | None) -> bool:
        """Whether a record not folded yet is listed (none started before ``floor``, the
        retention cutoff, is)."""
        scopes, started = getattr(record, "scopes", []), _started(record)
        floor = max((m for m in (self.since, floor) if m is not None), default=None)
        return ((self.caller is None or record.caller == self.caller)
                and (floor is None or (started is not None and started >= floor))
                and (self.until is None or (started is not None and started < self.until))
                and (self.level is None or self.level in getattr(record, "levels", {}).values())
                and (self.scope is None or self.scope in scopes
                     or (isinstance(record, SparqlQueryRecord) and not scopes)))


def moment(value: object, name: str = "since") -> dt.datetime | None:
    """``value`` in UTC (an offset of seconds, Paris's before 1911, is no xsd:dateTime): a
    naive time is UTC, a date its first moment in UTC.

    Raises:
        InvalidArgumentError: naming ``name``, for anything but None, a date or a datetime.
    """
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        try:
            return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
        except OverflowError:
            raise InvalidArgumentError(f"{name}={value.isoformat()} lies outside the years 1 to "
                                       "9999 in UTC; give a moment within them") from None
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time(), dt.UTC)
    raise InvalidArgumentError(f"{name} must be a datetime or a date, not "
                               f"{type(value).__name__} ({value!r:.40}); e.g. "
                               "datetime.date(2024, 5, 1)")


def date_time(value: dt.datetime) -> ox.Literal:
    return ox.Literal(value.isoformat(), datatype=ox.NamedNode(XSD + "dateTime"))


def started_at_or_after(record: ActivityRecord, floor: dt.datetime | None) -> bool:
    """Whether ``record`` started at or after ``floor`` (a record with no time never is)."""
    started = _started(record)
    return floor is None or (started is not None and started >= floor)


def _started(record: ActivityRecord) -> dt.datetime | None:
    try:
        return parse_time(record.started)
    except (ValueError, TypeError):
        return None
