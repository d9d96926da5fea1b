"""When a document expires: its own ``expires`` field, or its scope's retention rule.

An expired document is gone for retrieval (never a candidate, in any mode) from the moment
of its expiry, and ``trails prune --expired`` deletes it. Two sources give a document an
expiry; when both do, the earlier one holds (a rule is a policy's longest life, a
document's own date may cut it shorter):

- ``expires`` in its metadata (Markdown front matter, a ``Document``'s metadata): a date
  (``2025-01-31``: expired from the start of that day, UTC) or a datetime with an offset
  (``2025-01-31T17:00:00+01:00``). A datetime without an offset names no moment and is
  refused, as is anything else.
- a retention rule of its scope (``Context.open(dir, retention={"tmp": "P30D"})``, kept in
  ``trails.json``): ISO 8601 days after the document's own date (``date``, ``created`` or
  ``dateCreated``, written as ``schema:dateCreated``). Retention runs from the record's date,
  not from the time it was ingested: re-ingesting a corpus (a rebuild, a restore, a new
  embedder) must not extend any document's life. A document of a scope with a rule and no
  date cannot be given an expiry, so it is refused rather than kept forever.

The expiry is written on the document as ``trails:expires``, an ``xsd:dateTime`` in UTC, so
SPARQL sees it; it is part of the document's manifest, so changing ``expires`` or the rule
and ingesting again rewrites it as a metadata update.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.kg.base import KnowledgeGraph, select
from trails.scopes import check_scope
from trails.vector.stores.base import VersionedStore

__all__ = [
    "EXPIRES",
    "EXPIRES_KEY",
    "ExpiredDocument",
    "Owners",
    "check_retention",
    "document_expiry",
    "expired_documents",
    "expired_in_scopes",
    "expiry_problem",
    "parse_expiry",
    "retention_days",
    "store_owners",
    "utc_now",
]

EXPIRES_KEY = "expires"
EXPIRES = "https://trails.dev/ns#expires"
_FORMAT = ("a date (2025-01-31: expired from the start of that day, UTC) or a datetime with "
           "an offset (2025-01-31T17:00:00+01:00), within the years 1 to 9999 in UTC")
_PERIOD = re.compile(r"^P(\d{1,6})D$")
# The expiries first, the type checked per expiry: written as one pattern, an on-disk graph
# walked every document's type for each question (0.8 s at 20,000 documents, none expiring,
# against 1 ms), the cost of every fresh process's first search.
# A blank node a user typed trails:Document is no document trails can delete.
# Asked of one scope's graph at a time, of the documents that graph says are that scope's:
# a triple loaded into another scope's graph says nothing about when a document expires.
_EXPIRIES = (f"SELECT ?doc ?expires WHERE {{ ?doc <{EXPIRES}> ?expires ; trails:scope ?scope "
             "FILTER(isIRI(?doc) && STR(?scope) = ?own) FILTER EXISTS { ?doc a trails:Document } }")

# The scope each of some documents is recorded in by the vector store (its version records):
# what a graph's claim that a document is its scope's is checked against.
Owners = Callable[[Sequence[str]], Mapping[str, str]]


class ExpiredDocument(NamedTuple):
    """A document whose expiry has passed: its IRI and when it expired (UTC)."""

    iri: str
    expires: dt.datetime


def utc_now(now: dt.datetime | None = None) -> dt.datetime:
    """``now`` (default: the current time) as an aware UTC datetime.

    Raises:
        InvalidArgumentTypeError: ``now`` is not a datetime.
        InvalidArgumentError: ``now`` has no offset (it names no moment).
    """
    if now is None:
        return dt.datetime.now(dt.UTC)
    if not isinstance(now, dt.datetime):
        raise InvalidArgumentTypeError(f"now must be a datetime with an offset, got "
                                       f"{type(now).__name__}")
    if now.utcoffset() is None:
        raise InvalidArgumentError(f"now={now.isoformat()} has no offset, so it names no "
                                   "moment; pass an aware datetime (datetime.now(UTC))")
    try:
        return now.astimezone(dt.UTC)
    except OverflowError:  # 9999-12-31T23:00-12:00 is in the year 10000, UTC
        raise InvalidArgumentError(f"now={now.isoformat()} lies outside the years 1 to 9999 "
                                   "in UTC; pass a moment within them") from None


def parse_expiry(value: object) -> dt.datetime:
    """``value`` (a date, an aware datetime, or ISO 8601 text of one) as a UTC datetime.

    >>> parse_expiry("2025-01-31")
    datetime.datetime(2025, 1, 31, 0, 0, tzinfo=datetime.timezone.utc)
    >>> parse_expiry("2025-01-31T17:00:00+01:00")
    datetime.datetime(2025, 1, 31, 16, 0, tzinfo=datetime.timezone.utc)

    Raises:
        InvalidArgumentError: anything else, naming the value and the format expected.
    """
    moment = _moment(value)
    if moment is None:
        raise InvalidArgumentError(f"expires: {value!r} is not {_FORMAT}")
    return moment


def _moment(value: object) -> dt.datetime | None:
    if isinstance(value, str):
        text = value.strip()
        try:
            value = (dt.date.fromisoformat(text) if len(text) == 10
                     else dt.datetime.fromisoformat(text))
        except ValueError:
            return None
    if isinstance(value, dt.datetime):
        if value.utcoffset() is None:
            return None
        try:
            return value.astimezone(dt.UTC)
        except OverflowError:  # 0001-01-01T00:00+14:00 is in the year 0, UTC: no moment
            return None
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    return None


def retention_days(period: object) -> int:
    """The days of an ISO 8601 period of days (``"P30D"``).

    Raises:
        InvalidArgumentError: any other value.
    """
    match = _PERIOD.match(period) if isinstance(period, str) else None
    if match is None:
        raise InvalidArgumentError(f"retention period {period!r} is not ISO 8601 days; write "
                                   "it as P<days>D, e.g. \"P30D\" for 30 days")
    return int(match.group(1))


def check_retention(rules: object) -> dict[str, str]:
    """``rules`` (scope name -> ISO 8601 days) checked, as a plain dict.

    Raises:
        InvalidArgumentTypeError: ``rules`` is not a mapping.
        InvalidArgumentError: a malformed scope name or period, named in the message.
    """
    if not isinstance(rules, Mapping):
        raise InvalidArgumentTypeError(f"retention must map scope names to periods such as "
                                       f"{{\"tmp\": \"P30D\"}}, got {type(rules).__name__}")
    checked: dict[str, str] = {}
    for scope, period in rules.items():
        try:
            name = check_scope(scope) if isinstance(scope, str) else None
        except ValueError as exc:
            raise InvalidArgumentError(f"retention: {exc}") from None
        if name is None:
            raise InvalidArgumentError(f"retention: scope {scope!r} is not a scope name")
        retention_days(period)
        checked[name] = period
    return checked


def document_expiry(metadata: Mapping[str, Any], created: dt.date | None, scope: str,
                    retention: Mapping[str, str] | None) -> dt.datetime | None:
    """When a document expires (the earlier of its ``expires`` and its scope's rule counted
    from ``created``), or None. Values :func:`expiry_problem` refuses count as absent."""
    found = [moment for moment in (_moment(metadata.get(EXPIRES_KEY)),
                                   _retained(created, (retention or {}).get(scope)))
             if moment is not None]
    return min(found, default=None)


def _retained(created: dt.date | None, period: str | None) -> dt.datetime | None:
    """The end of a retention ``period`` counted from ``created``, or None: no rule, no date,
    or an end past the year 9999 (no expiry Python can hold: the document outlives it)."""
    base = _base(created)
    if period is None or base is None:
        return None
    try:
        return base + dt.timedelta(days=retention_days(period))
    except OverflowError:
        return None


def _base(created: dt.date | None) -> dt.datetime | None:
    """The moment a retention period counts from: the document's date (a date without a
    time is its start, a datetime without an offset is read as UTC)."""
    if isinstance(created, dt.datetime) and created.utcoffset() is None:
        return created.replace(tzinfo=dt.UTC)
    return _moment(created)


def expiry_problem(metadata: Mapping[str, Any], created: dt.date | None, scope: str,
                   retention: Mapping[str, str] | None) -> str | None:
    """Why a document's expiry cannot be known (a malformed ``expires``, or a scope with a
    retention rule and no date to count from), or None."""
    value = metadata.get(EXPIRES_KEY)
    if value is not None and _moment(value) is None:
        return f"{EXPIRES_KEY}: {value!r} is not {_FORMAT}"
    period = (retention or {}).get(scope)
    if period is not None and value is None and _base(created) is None:
        return (f"scope {scope!r} keeps documents {period} after their date, and this one has "
                "none; give it a date (front matter date: 2025-01-31) or an expires: field")
    return None


def store_owners(store: object) -> Owners | None:
    """The scopes ``store`` records documents in (None: a store that records no versions)."""
    if not isinstance(store, VersionedStore):
        return None
    return lambda iris: {iri: version.scope
                         for iri, version in store.current_versions(iris).items()}


def expired_documents(kg: KnowledgeGraph, now: dt.datetime, owners: Owners | None = None,
                      ) -> tuple[list[ExpiredDocument], dt.datetime | None, dt.datetime | None]:
    """The documents of every scope expired at ``now`` (by IRI), the latest of their expiries
    and the next expiry still to come: the answer holds, for the same graph, from the one to
    the other.

    A document's expiry is read in its own scope's graph only (``owners``, when given, says
    which scope each document is recorded in; a graph that claims another's is not heard).

    Raises:
        StorageError, SparqlError: the graph cannot be read.
    """
    found, upcoming = expired_in_scopes(kg, now, owners)
    expired = [document for document, _ in found]
    latest = max((e.expires for e in expired), default=None)
    return expired, latest, upcoming


def expired_in_scopes(kg: KnowledgeGraph, now: dt.datetime, owners: Owners | None = None,
                      ) -> tuple[list[tuple[ExpiredDocument, str]], dt.datetime | None]:
    """The documents expired at ``now``, each with the scope whose graph expires it, sorted
    by IRI, and the next expiry still to come."""
    earliest: dict[tuple[str, str], dt.datetime] = {}  # a user may have added another expiry
    upcoming: dt.datetime | None = None                # in the scope: the first holds
    for scope in kg.scopes():  # one at a time: a remote endpoint may not confine to several
        for row in select(kg, _EXPIRIES, {"own": scope}, scopes=[scope]):
            moment = _moment(row["expires"])
            if moment is None:  # a user's own malformed triple: it names no moment
                continue
            if moment <= now:
                key = (str(row["doc"]), scope)
                earliest[key] = min(moment, earliest.get(key, moment))
            elif upcoming is None or moment < upcoming:
                upcoming = moment
    if owners is not None and earliest:
        recorded = owners(sorted({iri for iri, _ in earliest}))
        earliest = {(iri, scope): moment for (iri, scope), moment in earliest.items()
                    if (recorded.get(iri) or scope) == scope}  # no record: the graph's word
    found: dict[str, tuple[ExpiredDocument, str]] = {}
    for (iri, scope), moment in sorted(earliest.items()):
        if iri not in found or moment < found[iri][0].expires:
            found[iri] = (ExpiredDocument(iri, moment), scope)
    return sorted(found.values()), upcoming
