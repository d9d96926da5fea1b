"""Recency decay: newer documents keep more of their score."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.rank._steps import (
    H,
    asked_at,
    by_score,
    check_scored,
    check_setting,
    key,
    need_ctx,
    predicate_node,
    rescored,
    scoped_rows,
    value,
    values,
)

if TYPE_CHECKING:
    from trails.parts import ContextParts

__all__ = ["RecencyDecay", "decay_factor", "decayed"]
DAY = 86_400.0


def decay_factor(age_days: float | None, horizon_days: float, floor: float) -> float:
    """``max(floor, 1 − age/horizon)``; the future counts as age 0, no date as the floor.

    >>> decay_factor(15, 60, 0.5), decay_factor(45, 60, 0.5), decay_factor(None, 60, 0.5)
    (0.75, 0.5, 0.5)
    """
    if age_days is None:
        return floor
    return max(floor, 1.0 - max(age_days, 0.0) / horizon_days)


def decayed(score: float, factor: float) -> float:
    """The score moved down by ``1 − factor`` of its size: ``score × factor`` when it is
    positive, ``score × (2 − factor)`` when negative (a cross-encoder logit), so decay never
    raises a score.

    >>> decayed(0.8, 0.5), decayed(-2.0, 0.5)
    (0.4, -3.0)
    """
    return score - abs(score) * (1.0 - factor)


class RecencyDecay:
    """A retrieve step: ``score × max(floor, 1 − age_days / horizon_days)``, then re-sorted.

    The date is ``predicate`` (default ``schema:dateCreated``, set from a document's
    ``date``/``created`` metadata) of the chunk's document, read with one SPARQL query per
    scope. A document with several dates counts its newest. Component ``recency`` holds the
    factor. Hits whose document has no date get the ``floor``: undated is treated as old,
    so a dated hit is never beaten by an equally relevant hit that merely lacks a date.
    Dates in the future count as today.

    Args:
        horizon_days: the age at which the factor reaches 0 (before the floor).
        floor: the smallest factor, in [0, 1].
        now: the reference time (a date or datetime). None: the ``now`` of the ``retrieve``
            call it is a step of (the moment that call judges expiries at, so a search
            repeated ``as of`` a moment ranks as it did then), else the time of each call.
            Naive datetimes and dates are taken as UTC.
        predicate: ``prefix:name`` with a predeclared prefix, or a full IRI.

    >>> RecencyDecay(horizon_days=30, floor=0.25)
    RecencyDecay(horizon_days=30, floor=0.25, now=None, predicate='schema:dateCreated')
    """

    def __init__(self, horizon_days: float = 60, floor: float = 0.5,
                 now: dt.date | dt.datetime | None = None,
                 predicate: str = "schema:dateCreated") -> None:
        check_setting("horizon_days", horizon_days, above=0)
        check_setting("floor", floor, at_least=0, at_most=1)
        if now is not None and not isinstance(now, dt.date):  # a datetime is a date too
            raise InvalidArgumentTypeError(f"now must be a date, a datetime or None, got "
                                           f"{type(now).__name__} {now!r:.80}")
        if isinstance(now, dt.datetime) and now.tzinfo is not None:
            try:
                now.astimezone(dt.UTC)
            except OverflowError:
                raise InvalidArgumentError(f"now={now.isoformat()} lies outside the years 1 to "
                                           "9999 in UTC; pass a moment within them") from None
        self.horizon_days, self.floor, self.now = horizon_days, floor, now
        self.predicate = predicate
        self._node = predicate_node(predicate)

    def __call__(self, query: str, hits: Sequence[H], ctx: ContextParts | None = None) -> list[H]:
        ctx = need_ctx(ctx, "RecencyDecay")
        check_scored(hits, "RecencyDecay")
        dates = self.dates(ctx, hits)
        now = _utc(self.now if self.now is not None
                   else asked_at() or dt.datetime.now(dt.UTC))
        out = []
        for hit in hits:
            when = dates.get(key(hit))
            age = None if when is None else (now - when).total_seconds() / DAY
            factor = decay_factor(age, self.horizon_days, self.floor)
            out.append(rescored(hit, decayed(hit.score or 0.0, factor), recency=factor))  # checked above
        return by_score(out)

    def dates(self, ctx: ContextParts, hits: Sequence[Any]) -> dict[tuple[str, str], dt.datetime]:
        """The newest date of each hit's document, as an aware UTC datetime, by (scope, iri)."""
        rows = scoped_rows(ctx, hits, lambda group: (
            f"SELECT ?c ?d WHERE {{ {values('c', (h.iri for h in group))} "
            f"?c schema:isPartOf ?doc . ?doc {self._node} ?d }}"))
        found: dict[tuple[str, str], dt.datetime] = {}
        for scope, row in rows:
            when = _as_datetime(value(row["d"]))
            chunk = (scope, row["c"].value)
            if when is not None and (chunk not in found or when > found[chunk]):
                found[chunk] = when
        return found

    def __repr__(self) -> str:
        return (f"RecencyDecay(horizon_days={self.horizon_days}, floor={self.floor}, "
                f"now={self.now!r}, predicate={self.predicate!r})")


def _as_datetime(raw: Any) -> dt.datetime | None:
    """A date, datetime or ISO string as an aware UTC datetime; anything else None."""
    if isinstance(raw, str):
        try:
            raw = dt.datetime.fromisoformat(raw)
        except ValueError:
            return None
    if isinstance(raw, (dt.date, dt.datetime)):
        return _utc(raw)
    return None


def _utc(when: dt.date | dt.datetime) -> dt.datetime:
    """``when`` in UTC; a moment past the years 1 to 9999 in UTC (xsd:dateTime holds
    9999-12-31T23:00:00-12:00) as the nearest one Python holds, which ranks the same."""
    if not isinstance(when, dt.datetime):
        when = dt.datetime(when.year, when.month, when.day)
    if when.tzinfo is None:
        return when.replace(tzinfo=dt.UTC)
    try:
        return when.astimezone(dt.UTC)
    except OverflowError:
        offset = when.utcoffset() or dt.timedelta(0)
        return (dt.datetime.max if offset < dt.timedelta(0) else dt.datetime.min).replace(
            tzinfo=dt.UTC)
