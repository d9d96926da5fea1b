"""Looking rows up by what their metadata says, without a vector search.

- :class:`BackReferences`: the capability of a store whose rows may name their graph resource
  in ``metadata["iri"]`` under another id (ADR 0028).
- :class:`MetadataLookups`: ``find(filters, limit)`` and ``count(filters)`` (the retrieval
  runtime's Store protocol), derived by a scan that a store replaces with a query
  (``_matching``); :func:`metadata_matches` and :func:`json_equal` are their equality.
"""

from __future__ import annotations

import abc
import datetime
import math
import numbers
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from trails.errors import InvalidArgumentError
from trails.vector.stores import arguments
from trails.vector.stores.records import StoredVector

__all__ = ["BackReferences", "MetadataLookups", "check_keys", "checked_filters", "json_equal",
           "metadata_matches", "storable"]

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a metadata key find and count accept


@runtime_checkable
class BackReferences(Protocol):
    """A store whose rows may name their graph resource in ``metadata["iri"]`` under another
    id (the trails.vector design's back-reference, :func:`~.records.back_reference`).
    Retrieval matches a filter's candidates on it: ``retrieval/back_references.py``."""

    def has_back_references(self) -> bool:
        """Whether some live row's ``metadata["iri"]`` is a string other than its id (when
        none is, a row's id is its IRI and candidates can be passed to ``search`` as they are)."""
        ...

    def rows_named(self, iris: Iterable[str]) -> dict[str, str]:
        """``{id: back-reference}`` of the live rows whose back-reference, or whose document
        (``doc_iri``), is one of ``iris`` (only the latter for a ``DocumentIris``)."""
        ...


class MetadataLookups(abc.ABC):
    """``find`` and the filtered ``count`` of :class:`~.base.BaseVectorStore`."""

    @abc.abstractmethod
    def get(self, ids: Iterable[str]) -> list[StoredVector]: ...

    @abc.abstractmethod
    def all_ids(self) -> list[str]: ...

    @abc.abstractmethod
    def metadata(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]: ...

    def find(self, filters: Mapping[str, Any], limit: int = 1) -> list[StoredVector]:
        """Up to ``limit`` live rows whose metadata holds every filter's value, by id; no
        vector search (the retrieval runtime's metadata-only lookup).

        Equality is typed, as JSON values compare: ``1 != True != "1"``, and numbers by value
        (``1 == 1.0``); ``None`` matches a stored null, never a missing key; lists and
        objects compare element by element. Values go through JSON as stored metadata does
        (a date matches its ISO string). Keys are identifiers, as in ``delete_where``.

        >>> from trails.vector.stores.sqlite_vec import SqliteVecStore
        >>> store = SqliteVecStore(dim=2)
        >>> store.add_many(["a", "b"], [[1, 0], [0, 1]], [{"n": 1}, {"n": True}])
        >>> [row.id for row in store.find({"n": 1.0})], store.count({"n": True})
        (['a'], 1)
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidArgumentError(f"limit must be an int >= 0, got {limit!r}")
        checked = self._checked_filters(filters, "find")
        if limit == 0 or not storable(checked):
            return []
        return self.get(self._matching(checked, limit))

    def _count_matching(self, filters: Mapping[str, Any]) -> int:
        """``count(filters)``: how many rows :meth:`find` would find without a limit."""
        checked = self._checked_filters(filters, "count")
        return len(self._matching(checked, None)) if storable(checked) else 0

    def _matching(self, filters: dict[str, Any], limit: int | None) -> list[str]:
        """The ids of the first ``limit`` (None: all) live rows matching checked ``filters``,
        by id. This default reads every row; a store overrides it with a query."""
        matched: list[str] = []
        ids = sorted(self.all_ids())
        for start in range(0, len(ids), 1000):
            part = self.metadata(ids[start:start + 1000])
            matched += [id for id in ids[start:start + 1000]
                        if id in part and metadata_matches(part[id], filters)]
            if limit is not None and len(matched) >= limit:
                break
        return matched[:limit]

    @staticmethod
    def _checked_filters(filters: Mapping[str, Any], purpose: str) -> dict[str, Any]:
        """``filters`` with identifier keys, their values as stored metadata holds them."""
        if not isinstance(filters, Mapping):
            raise InvalidArgumentError(
                f"{purpose} takes a mapping of metadata keys to values, got {filters!r}")
        return checked_filters(filters, purpose, scalars=False)


# What each lookup compares, said in its refusals.
_SCALARS = "a str, int, float, bool, None or date"
_TAKES = {False: f"{_SCALARS}, or a list or dict of them",
          True: "one str, int, float, bool or date per key (None matches nothing)"}
_PROMOTED = ("doc_iri", "scope")  # delete_where compares the fields stores promote: strings


def checked_filters(filters: Mapping[str, Any], purpose: str, *, scalars: bool
                    ) -> dict[str, Any]:
    """``filters`` (a mapping) with identifier keys and each value in its JSON form, as
    stored metadata holds it: a numpy number as the number, a date as its ISO text (metadata
    is stored so), a tuple as a list. Every store's ``find``, ``count`` and (``scalars``)
    ``delete_where`` refuse the same values through this one check.

    Raises:
        InvalidArgumentError: naming the key and what ``purpose`` compares: a value no JSON
            value holds (a set, bytes, a Decimal, an object...), a NaN or infinity (equal to
            nothing), with ``scalars`` a list or dict, or a ``doc_iri``/``scope`` that is not
            a str.
    """
    check_keys(filters)
    checked: dict[str, Any] = {}
    for key, value in filters.items():
        if scalars and key in _PROMOTED and not (value is None or isinstance(value, str)):
            raise InvalidArgumentError(
                f"metadata filter {key!r}: {purpose} compares a str (a {key}) or None, got "
                f"{_shown(value)}")
        checked[key] = _json_value(value, key, purpose, scalars)
    return checked


def storable(value: Any) -> bool:
    """Whether a row can hold ``value`` (checked filters, or one of their values): False when
    a string in it holds a lone surrogate, which no store keeps (UTF-8 has no form for it),
    so a lookup by it matches nothing on every store."""
    if isinstance(value, str):
        return value.isascii() or arguments.utf8(value)
    if isinstance(value, Mapping):
        return all(storable(k) and storable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(storable(item) for item in value)
    return True


def _json_value(value: Any, key: str, purpose: str, scalars: bool) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):  # equal to nothing, and no JSON form: a mistake
            raise InvalidArgumentError(
                f"metadata filter {key!r}: {value!r} is a number JSON cannot hold (NaN or "
                f"infinity), so it matches no stored metadata; {purpose} compares "
                f"{_TAKES[scalars]}")
        return float(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()  # stored metadata holds a date as this text
    if not scalars and isinstance(value, (list, tuple)):
        return [_json_value(item, key, purpose, scalars) for item in value]
    if not scalars and isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: _json_value(v, key, purpose, scalars) for k, v in value.items()}
    raise InvalidArgumentError(
        f"metadata filter {key!r}: {purpose} compares {_TAKES[scalars]}, got {_shown(value)}")


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:60] + '...'}"


def check_keys(filters: Mapping[str, Any]) -> None:
    """Refuse a filter key that is not an identifier (``[A-Za-z_][A-Za-z0-9_]*``): keys go
    into a store's query as JSON paths."""
    for key in filters:
        if not isinstance(key, str) or not _KEY.match(key):
            raise InvalidArgumentError(
                f"metadata key {key!r} must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")


def metadata_matches(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` holds every filter's value, compared as JSON values
    (:func:`json_equal`); a missing key matches nothing, not even ``None``."""
    return all(key in metadata and json_equal(metadata[key], value)
               for key, value in filters.items())


def json_equal(a: Any, b: Any) -> bool:
    """Typed JSON equality: booleans, numbers, strings and null are distinct kinds
    (``1 != True != "1"``), numbers compare by value (``1 == 1.0``), lists and objects
    element by element.

    >>> json_equal(1, 1.0), json_equal(1, True), json_equal([1, {"a": None}], [1.0, {"a": None}])
    (True, False, True)
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and bool(a == b)
