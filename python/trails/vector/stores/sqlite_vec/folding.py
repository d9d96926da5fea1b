"""How a row's metadata is kept: the JSON without the fields the row's other columns already
say (schema m007, ADR 0050).

Ingestion gives every chunk's vector ``iri`` (its id), ``doc_iri``, ``version`` and ``scope``
(each also a column) and ``snippet`` (the first 280 characters of ``text``, itself a column):
~470 of a chunk's ~520 bytes of JSON repeated what the row holds anyway. :func:`fold` leaves
out each such field whose value its column gives back exactly, and records which in
``items.folded``: a bit per field, and the snippet's length above them. :func:`unfold` puts
them back, so every reader sees the metadata as it was given. A field is folded only when
equal to what its column would give back; anything else stays in the JSON as written.
Rows written before m007 have ``folded = 0``: their JSON is whole.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ROW", "fold", "folded_bits", "sql_field", "unfold"]

# The field -> (bit, the SQL giving its value back). The snippet's bit says "a prefix of the
# text"; its length (in characters, as Python and SQLite's substr count them) is folded >> 8.
_FIELDS = {
    "iri": (1, "id"),
    "doc_iri": (2, "doc_iri"),
    "version": (4, "version"),
    "scope": (8, "scope"),
    "snippet": (16, "substr(text, 1, folded >> 8)"),
}
_LENGTH_SHIFT = 8
# What a reader selects to rebuild a row's metadata with :func:`unfold` (after the id).
ROW = "metadata, text, folded, doc_iri, version, scope"


def fold(id: str, metadata: dict[str, Any], text: str | None, doc_iri: str | None,
         version: str | None, scope: str) -> tuple[dict[str, Any], int]:
    """``metadata`` (its ``text`` already taken out) without the fields its row's columns say,
    and the ``folded`` value naming them.

    >>> fold("c1", {"iri": "c1", "snippet": "ab", "position": 0}, "abc", None, None, "default")
    ({'position': 0}, 529)
    >>> fold("c1", {"iri": "other", "snippet": "xy"}, "abc", None, None, "default")
    ({'iri': 'other', 'snippet': 'xy'}, 0)
    """
    columns = {"iri": id, "doc_iri": doc_iri, "version": version, "scope": scope}
    kept, folded = {}, 0
    for key, value in metadata.items():
        if key in columns and type(value) is str and value == columns[key]:
            folded |= _FIELDS[key][0]
        elif (key == "snippet" and type(value) is str and text is not None
              and text.startswith(value)):
            folded |= _FIELDS[key][0] | len(value) << _LENGTH_SHIFT
        else:
            kept[key] = value
    return kept, folded


def unfold(id: str, metadata: str, text: str | None, folded: int, doc_iri: str | None,
           version: str | None, scope: str | None) -> dict[str, Any]:
    """The metadata as the caller gave it: the JSON, the folded fields from their columns,
    and ``text`` from its column.

    >>> unfold("c1", '{"position": 0}', "abc", 529, None, None, "default")
    {'position': 0, 'iri': 'c1', 'snippet': 'ab', 'text': 'abc'}
    """
    loaded: dict[str, Any] = json.loads(metadata)
    if folded:
        columns = {"iri": id, "doc_iri": doc_iri, "version": version, "scope": scope,
                   "snippet": (text or "")[:folded >> _LENGTH_SHIFT]}
        for key, (bit, _) in _FIELDS.items():
            if folded & bit:
                loaded[key] = columns[key]
    if text is not None:
        loaded["text"] = text
    return loaded


def folded_bits(keys: set[str] | frozenset[str]) -> int:
    """The bits of ``folded`` that name any of ``keys`` (the snippet's length included)."""
    bits = 0
    for key in keys & _FIELDS.keys():
        bits |= _FIELDS[key][0] | (~0 << _LENGTH_SHIFT if key == "snippet" else 0)
    return bits


def sql_field(key: str) -> tuple[str, str]:
    """SQL for a metadata field's JSON type and value in a row, folded or not (``key`` a
    plain name, as every payload field is)."""
    kind, value = f"json_type(metadata, '$.{key}')", f"metadata ->> '$.{key}'"
    if key not in _FIELDS:
        return kind, value
    bit, column = _FIELDS[key]
    return (f"CASE WHEN folded & {bit} THEN 'text' ELSE {kind} END",
            f"CASE WHEN folded & {bit} THEN {column} ELSE {value} END")
