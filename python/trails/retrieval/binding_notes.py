"""Notes for bindings that look like what they are not: a string binding that reads as an IRI
never equals one, and one that reads as a date never compares with one, which would read as
"nothing matched". A string is a string however it was given: ``"2024-01-01"`` in Python, a
JSON string or a plain SPARQL JSON literal term over HTTP, a recorded binding replayed (an
``xsd:string`` literal): each gets the same note."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pyoxigraph as ox

from trails.kg.terms import IRI
from trails.records import RetrievalResult

__all__ = ["noted", "string_notes"]

_ABSOLUTE_IRI = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://\S+|urn:\S+)$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
                       r"(?:Z|[+-]\d{2}:\d{2})?$")
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def _plain_string(value: Any) -> str | None:
    """The text of a binding that binds a plain string (an ``xsd:string`` literal), else None.

    >>> _plain_string("a"), _plain_string(ox.Literal("a")), _plain_string(IRI("urn:x"))
    ('a', 'a', None)
    >>> _plain_string(ox.Literal("a", language="en")), _plain_string(3)
    (None, None)
    """
    if isinstance(value, IRI):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, ox.Literal) and value.datatype.value == _XSD_STRING:
        return value.value
    return None


def noted(result: RetrievalResult, bindings: Mapping[str, Any] | None,
          notes: list[str]) -> RetrievalResult:
    """``result`` with ``notes``, and a note for each string binding that looks like an IRI or
    a date: bound as a string, it never equals an IRI nor compares with a date in the graph,
    which reads as "nothing matched"."""
    notes.extend(string_notes(bindings))
    if not notes:
        return result
    return RetrievalResult(list(result), mode=result.mode, plan=result.plan,
                           candidates=result.candidates, exhaustive=result.exhaustive,
                           rankings=result.rankings, notes=[*result.notes, *notes],
                           fusion_weights=result.fusion_weights)


def string_notes(bindings: Mapping[str, Any] | None) -> list[str]:
    """A note for each string binding that looks like an IRI or a date (``trails sparql``
    gives them with an empty answer, as a search does)."""
    notes: list[str] = []
    for name, bound in (bindings or {}).items():
        value = _plain_string(bound)
        if value is None:
            continue
        if _ABSOLUTE_IRI.match(value):
            notes.append(f"binding {name!r} is the string {value!r}, which never matches an "
                         f"IRI; to match the resource bind trails.kg.IRI({value!r}) (--bind "
                         f"{name}=<{value}>)")
        elif _ISO_DATE.match(value):
            notes.append(f"binding {name!r} is the string {value!r}, which never compares with "
                         "a date or dateTime; to compare as one bind a datetime.date or "
                         f"datetime.datetime (--bind {name}={value})")
    return notes
