"""A document's date: ``dateCreated``, ``created`` or ``date`` in its metadata, the value
written as ``schema:dateCreated``: a date, or a datetime with its offset (one without an
offset is UTC)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

__all__ = ["DATE_KEYS", "date_created", "date_problems"]

DATE_KEYS = ("dateCreated", "created", "date")


def date_problems(metadata: Mapping[str, Any]) -> list[str]:
    """What is wrong with the date fields of ``metadata``: one message per value that is
    not a date (the document then has no ``schema:dateCreated`` from it), and one when two
    of them name different dates.

    >>> date_problems({"date": "2024-13-45"})
    ["date: '2024-13-45' is not a date; use ISO 8601 (2024-05-01 or 2024-05-01T10:20:30+00:00). It is kept as meta:date, and date filters will not see this document"]
    >>> date_problems({"date": "2024-05-01", "title": "x"})
    []
    """
    found = [f"{key}: {metadata[key]!r} is not a date; use ISO 8601 (2024-05-01 or "
             f"2024-05-01T10:20:30+00:00). It is kept as meta:{key}, and date filters will not "
             "see this document"
             for key in DATE_KEYS if key in metadata and metadata[key] is not None
             and _as_date(metadata[key]) is None]
    return found + _disagreeing(metadata)


def _disagreeing(metadata: Mapping[str, Any]) -> list[str]:
    """A message when two date keys name different dates: one of them is the document's
    date, and which one should not go unsaid.

    >>> _disagreeing({"date": "2024-01-01", "created": "2023-06-01"})
    ["created: 2023-06-01 and date: 2024-01-01 differ; the document's date (schema:dateCreated, what date filters and retention read) is created's, 2023-06-01. Keep one of them, or make them agree"]
    """
    dated = [(key, found) for key in DATE_KEYS
             if (found := _as_date(metadata.get(key))) is not None]
    if len({(type(found), found) for _, found in dated}) < 2:
        return []
    shown = " and ".join(f"{key}: {found.isoformat()}" for key, found in dated)
    key, first = dated[0]
    return [(f"{shown} differ; the document's date (schema:dateCreated, what date filters and "
             f"retention read) is {key}'s, {first.isoformat()}. Keep one of them, or make them "
             "agree")]


def _as_date(value: Any) -> dt.date | dt.datetime | None:
    """A date, or a datetime with its offset; one without an offset is read as UTC, as
    retention and the audit read it: XSD leaves a dateTime without a zone incomparable with
    any moment within 14 hours of it, so date filters on either side would drop it."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text)
        except ValueError:
            return None
    if isinstance(value, dt.datetime):
        return value if value.utcoffset() is not None else value.replace(tzinfo=dt.UTC)
    return value if isinstance(value, dt.date) else None


def date_created(metadata: Mapping[str, Any]) -> dt.date | dt.datetime | None:
    """``date``/``created``/``dateCreated`` from metadata, as a date or datetime (else None)."""
    for key in DATE_KEYS:
        found = _as_date(metadata.get(key))
        if found is not None:
            return found
    return None
