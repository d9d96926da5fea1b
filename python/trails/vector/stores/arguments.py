"""The checks of a store method's arguments other than vectors: ids, metadata, ``k``, scopes.

Each returns the argument in the form the store works with, or raises
``InvalidArgumentTypeError`` (a wrong type, also a ``TypeError``) or ``InvalidArgumentError``
(a wrong value, also a ``ValueError``) naming the argument and what it takes. A bare string
where a list of ids or scopes belongs is refused, not read as a list of its characters.
"""

from __future__ import annotations

import datetime as dt
import json
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.vector.stores.records import CodedIris, DocumentVersion

__all__ = ["MAX_NAME_BYTES", "check_filters", "check_id", "check_ids", "check_k",
           "check_metadata", "check_metadatas", "check_payload_fields", "check_scopes",
           "check_text", "check_vector", "check_versions", "lone_surrogate_free", "metadata_json", "utf8"]

# The longest id, document IRI or scope a row may have, in UTF-8 bytes, on every store: a
# PostgreSQL B-tree entry (PgVectorStore's key and index on them) holds at most ~2,700.
MAX_NAME_BYTES = 2000


def _json_form(value: object) -> object:
    """What JSON keeps of a value it has no form for: a date, time or datetime as its ISO
    8601 text (``str`` would put a space before a datetime's time), a set as a list of its
    members in one order whatever the process (``str`` lists them in hash order, which changes
    from run to run), anything else as its ``str``."""
    if isinstance(value, (dt.date, dt.time)):  # a datetime is a date
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=_METADATA_JSON)
    return str(value)


# One encoder for every row instead of a new one per call (json.dumps builds one whenever it
# is given options).
_METADATA_JSON = json.JSONEncoder(default=_json_form, sort_keys=True, allow_nan=False).encode


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, (str, int, float)) else type(value).__name__
    return text if len(text) <= 60 else text[:60] + "..."


def utf8(text: str) -> bool:
    """Whether UTF-8 can encode ``text``: False when it holds a lone surrogate
    (``"\\ud800"``), which no store can keep (PostgreSQL and SQLite text are UTF-8)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_name(value: str, name: str, what: str) -> str:
    if not utf8(value):
        raise InvalidArgumentError(
            f"{name} holds a lone surrogate (half of a UTF-16 pair), which no store can keep: "
            f"{_shown(value)}; decode the text it came from with errors='replace'")
    if len(value) * 4 > MAX_NAME_BYTES and len(value.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidArgumentError(
            f"{name} is {len(value.encode('utf-8'))} bytes long (UTF-8): {what} may be at most "
            f"{MAX_NAME_BYTES} bytes on every store; use a shorter one (a hash of it)")
    return value


def check_id(id: object, name: str = "id") -> str:
    """A vector id: a non-empty string UTF-8 can encode, at most :data:`MAX_NAME_BYTES`."""
    if not isinstance(id, str):
        raise InvalidArgumentTypeError(f"{name} must be a non-empty str (a vector id), got "
                                       f"{_shown(id)}")
    if not id:
        raise InvalidArgumentError(f"{name} must be a non-empty str (a vector id), got ''")
    return _check_name(id, name, "a vector id")


def check_ids(ids: object, name: str = "ids") -> Sequence[str]:
    """Strings from an iterable of them (a list or tuple, kept as it is with its type, or a
    set, a generator... read into a list)."""
    if isinstance(ids, (str, bytes, Mapping)) or not isinstance(ids, Iterable):
        raise InvalidArgumentTypeError(
            f"{name} must be a list (or another iterable) of str, got {_shown(ids)}"
            + ("; wrap one in a list" if isinstance(ids, str) else ""))
    if isinstance(ids, CodedIris) and ids.coded is not None:
        return ids  # a filter index's names: strings by construction (a chunk-level 200,000)
    checked = ids if isinstance(ids, (list, tuple)) else list(ids)
    if set(map(type, checked)) <= {str}:  # the usual case, checked in C (a filter's 100,000 ids)
        return checked
    for i, item in enumerate(checked):
        if not isinstance(item, str):
            raise InvalidArgumentTypeError(f"{name}[{i}] must be a str, got {_shown(item)}")
    return checked


def check_metadata(metadata: object, name: str = "metadata") -> dict[str, Any]:
    """A copy of one vector's metadata: a mapping with str keys, or None (empty)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidArgumentTypeError(
            f"{name} must be a mapping of str keys to values (a dict) or None, got "
            f"{_shown(metadata)}")
    for key in metadata:
        if not isinstance(key, str):
            raise InvalidArgumentTypeError(f"{name} keys must be str, got {_shown(key)}")
    for key in _INDEXED_TEXT:
        # What keyword ranking reads: another type had no one meaning across the stores
        # (SQLite indexed its JSON text, the others nothing), so it is refused everywhere.
        value = metadata.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidArgumentTypeError(
                f"{name}[{key!r}] must be a str (the text keyword ranking reads) or None, got "
                f"{_shown(value)}; pass str(value), or keep the value under another key")
        if isinstance(value, str) and not utf8(value):  # stored apart from the metadata
            _check_name(value, f"{name}[{key!r}]", key)
    for key in _NAMES:  # the fields a store keys and indexes rows by
        value = metadata.get(key)
        if isinstance(value, str):
            _check_name(value, f"{name}[{key!r}]", f"{key}")
    return dict(metadata)


_NAMES = ("doc_iri", "scope")


_INDEXED_TEXT = ("text", "snippet")


def check_payload_fields(fields: object) -> dict[str, Any]:
    """``update_payload``'s fields, checked as metadata is, none of them one that says which
    document and version a row is.

    Raises:
        InvalidArgumentTypeError: not a mapping, a key that is no str, keyword text no str.
        InvalidArgumentError: ``doc_iri`` or ``version`` among them.
    """
    checked = check_metadata(fields, "update_payload's fields")
    fixed = sorted(_IDENTITY & set(checked))
    if fixed:
        raise InvalidArgumentError(
            f"update_payload cannot change {', '.join(fixed)}: they say which document and "
            "version a row is; delete the document and add its rows again")
    return checked


_IDENTITY = frozenset({"doc_iri", "version"})


def metadata_json(metadata: Mapping[str, Any], whose: str) -> str:
    """``metadata`` as every store keeps it: JSON text, keys sorted, a value without a JSON
    form as :func:`_json_form` writes it (a date as its ISO text, a set sorted).

    Raises:
        InvalidArgumentError: a NaN or an infinity (no JSON form; it would match no lookup),
            naming ``whose`` metadata it is.
    """
    try:
        text = _METADATA_JSON(metadata)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"{whose} holds a number JSON cannot hold (NaN or infinity): {exc}; store it as a "
            "string or leave it out") from exc
    if "\\ud" in text and not lone_surrogate_free(text):
        raise InvalidArgumentError(
            f"{whose} holds a lone surrogate (half of a UTF-16 pair) in a key or a string, "
            "which no store can keep; decode the text it came from with errors='replace'")
    return text


def lone_surrogate_free(text: str) -> bool:
    """Whether JSON text (ASCII, non-ASCII escaped) holds only whole UTF-16 pairs."""
    return utf8(json.dumps(json.loads(text), ensure_ascii=False))


def check_metadatas(metadata: object, count: int) -> list[dict[str, Any]]:
    """``count`` metadata copies from a sequence of mappings or None (None: all empty)."""
    if metadata is None:
        return [{} for _ in range(count)]
    if isinstance(metadata, (str, bytes, Mapping)) or not isinstance(metadata, Iterable):
        raise InvalidArgumentTypeError(
            "metadata must be a list with one mapping (or None) per id, got "
            f"{_shown(metadata)}" + ("; wrap one mapping in a list"
                                     if isinstance(metadata, Mapping) else ""))
    metas = [check_metadata(m, f"metadata[{i}]") for i, m in enumerate(metadata)]
    if len(metas) != count:
        raise InvalidArgumentError(f"got {count} ids but {len(metas)} metadata entries; pass "
                                   "one mapping (or None) per id")
    return metas


def check_dim(dim: object) -> None:
    """``dim`` as a store's constructor takes it: None (an existing store's own) or an int.

    Raises:
        InvalidArgumentTypeError: anything else (``"64"``, ``64.0``, ``True``).
    """
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
        raise InvalidArgumentTypeError(
            f"dim must be a positive integer (the embedder's dim) or None, got {_shown(dim)}")


def check_identity(identity: object, kind: type) -> None:
    """``identity`` is what a store records of an embedder (``kind``: ``EmbedderIdentity``),
    never the embedder itself.

    Raises:
        InvalidArgumentTypeError: anything else (an embedder: the message says to pass its
            ``.identity``).
    """
    if not isinstance(identity, kind):
        hint = "; pass its .identity" if hasattr(identity, "identity") else ""
        raise InvalidArgumentTypeError(
            f"embedder must be an EmbedderIdentity (an embedder's .identity), got "
            f"{type(identity).__name__}{hint}")


def check_k(k: object) -> int:
    """``k``: an int >= 0 (how many hits)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InvalidArgumentTypeError(f"k must be an int >= 0 (how many hits), got {_shown(k)}")
    if k < 0:
        raise InvalidArgumentError(f"k must be >= 0, got {k}")
    return int(k)


def check_scopes(scopes: object) -> Sequence[str] | None:
    """Scope names as a list, or None (every scope)."""
    return None if scopes is None else check_ids(scopes, "scopes")


def check_text(query: object, name: str = "query") -> str:
    """A text argument (a keyword query)."""
    if not isinstance(query, str):
        raise InvalidArgumentTypeError(f"{name} must be a str, got {_shown(query)}")
    return query


_V = TypeVar("_V")


def check_vector(vector: _V, name: str = "vector") -> _V:
    """A vector's container: no text, mapping or None (numbers are checked by ``as_matrix``)."""
    if vector is None or isinstance(vector, (str, bytes, Mapping)):
        raise InvalidArgumentTypeError(f"{name} must be a sequence of numbers (a list or a "
                                       f"numpy array), got {_shown(vector)}")
    return vector


def check_filters(filters: object) -> Mapping[str, Any]:
    """``delete_where``'s filters: a non-empty mapping."""
    if not isinstance(filters, Mapping):
        raise InvalidArgumentTypeError("filters must be a mapping of metadata keys to values "
                                       f"({{'doc_iri': ...}}), got {_shown(filters)}")
    return filters


def check_versions(versions: object) -> list[DocumentVersion]:
    """``publish``'s document versions: ``DocumentVersion`` records, one version a document.

    Raises:
        InvalidArgumentTypeError: not an iterable of DocumentVersion records.
        InvalidArgumentError: two versions of one document (publishing both kept the rows of
            neither while recording the last as current).
    """
    if isinstance(versions, (str, bytes, Mapping, DocumentVersion)) or not isinstance(
            versions, Iterable):
        raise InvalidArgumentTypeError(
            f"versions must be a list of DocumentVersion records, got {_shown(versions)}")
    checked = list(versions)
    seen: dict[str, str] = {}
    for i, version in enumerate(checked):
        if not isinstance(version, DocumentVersion):
            raise InvalidArgumentTypeError(
                f"versions[{i}] must be a DocumentVersion(doc_iri, version, scope, "
                f"content_hash, chunks), got {_shown(version)}")
        for field in ("doc_iri", "scope"):  # as a row's own
            value = getattr(version, field)
            if not isinstance(value, str):
                raise InvalidArgumentTypeError(
                    f"versions[{i}].{field} must be a str, got {_shown(value)}")
            _check_name(value, f"versions[{i}].{field}", field)
        first = seen.setdefault(version.doc_iri, version.version)
        if first != version.version:
            raise InvalidArgumentError(
                f"versions name document {version.doc_iri!r} twice, as version {first!r} and "
                f"{version.version!r}: publishing both would keep the rows of neither; publish "
                "one version of each document")
    return checked
