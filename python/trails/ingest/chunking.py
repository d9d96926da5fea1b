"""What decides a document's chunks, as a string that is part of its version."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import is_dataclass
from typing import cast

import numpy as np

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.document import Chunk, Chunker, Document, FingerprintedChunker, content_hash

__all__ = ["chunker_id", "chunking_of", "chunks_made"]


def chunks_made(chunker: Chunker, document: Document) -> list[Chunk]:
    """``chunker.chunk(document)`` as a list (each item checked later, with the spans:
    ``chunk_problem``).

    Raises:
        InvalidArgumentTypeError: it returned no list of chunks (None, one Chunk, a str),
            named as such rather than as Python's "object is not iterable".
    """
    made = chunker.chunk(document)
    if isinstance(made, (str, bytes, Mapping, Chunk)) or not isinstance(made, Iterable):
        what = "None" if made is None else f"one {type(made).__name__}"
        raise InvalidArgumentTypeError(
            f"{type(chunker).__name__}.chunk() returned {what}, not a list of "
            "trails.ingest.Chunk (one for each piece of the text)")
    return list(made)


# A description longer than this is kept as its digest: it is hashed into every version.
_LONGEST_DESCRIPTION = 1000


def chunker_id(chunker: Chunker) -> str:
    """A stable description of a chunker's settings: part of every document version.

    Without a ``fingerprint`` and not a dataclass, a chunker is described by its attributes
    (``__slots__`` too) that are numbers, strings, booleans, or lists, tuples, sets and dicts
    of those: a changed list of separators is a new version, whose documents are chunked
    again rather than skipped as current. Other attributes (a compiled pattern, a model) say
    nothing stable across runs and are left out.
    """
    fingerprint = _fingerprint(chunker)
    if fingerprint is not None:
        return fingerprint
    described: object = chunker  # any chunker may be a dataclass: its repr lists its fields
    if is_dataclass(described):
        return repr(chunker)
    settings: dict[str, object] = {}
    for name, value in sorted(_attributes(chunker)):
        if isinstance(value, (int, float, str, bool)):
            settings[name] = value
        elif isinstance(value, (list, tuple, set, frozenset, dict)):
            with contextlib.suppress(_Undescribed):
                settings[name] = _canonical(value, 0)
    text = f"{type(chunker).__qualname__}{settings}"
    if len(text) <= _LONGEST_DESCRIPTION:
        return text
    return f"{type(chunker).__qualname__}#sha256:{hashlib.sha256(text.encode()).hexdigest()}"


def _fingerprint(chunker: Chunker) -> str | None:
    """The chunker's own ``fingerprint`` (None: it has none). One that raises, or gives no
    string, is refused before anything is written: every version would otherwise be named by
    something other than the settings its author meant."""
    if inspect.getattr_static(chunker, "fingerprint", None) is None:
        return None  # (looked up without running it: a property raising AttributeError too)
    try:
        given = cast(FingerprintedChunker, chunker).fingerprint
    except Exception as exc:  # the user's own code: any failure is theirs to see, named
        raise InvalidArgumentError(
            f"{type(chunker).__name__}.fingerprint raised {type(exc).__name__}: {exc}; a "
            "chunker's fingerprint must give a str naming the settings that decide its "
            "chunks") from exc
    if given is not None and not isinstance(given, str):
        raise InvalidArgumentTypeError(
            f"{type(chunker).__name__}.fingerprint gave {type(given).__name__}, not a str; "
            "make it a property returning a str naming the settings that decide its chunks")
    return given


def _attributes(chunker: object) -> list[tuple[str, object]]:
    """An object's attributes: its ``__dict__`` and its ``__slots__`` (vars() has no slots)."""
    found = dict(getattr(chunker, "__dict__", {}))
    for kind in type(chunker).__mro__:
        slots = getattr(kind, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(chunker, name):
                found.setdefault(name, getattr(chunker, name))
    return list(found.items())


class _Undescribed(Exception):
    """A setting holding something with no stable description."""


def _canonical(value: object, depth: int) -> object:
    """``value`` with sets and dicts in a fixed order, so equal settings read alike."""
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    if depth > 16:  # deeper than any setting, or a container holding itself
        raise _Undescribed
    if isinstance(value, (list, tuple)):
        items = [_canonical(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(item, depth + 1) for item in value), key=repr)
    if isinstance(value, dict):
        pairs = [(_canonical(k, depth + 1), _canonical(v, depth + 1)) for k, v in value.items()]
        return dict(sorted(pairs, key=lambda pair: repr(pair[0])))
    raise _Undescribed


def chunking_of(document: Document, chunker: str) -> str:
    """What decides ``document``'s chunks: ``chunker`` (its :func:`chunker_id`), or the
    spans of the chunks the document came with, and the vectors given with them (new
    vectors for the same text are a new version, not a document skipped as current)."""
    if document.chunks is None:
        return chunker
    spans = ",".join(f"{getattr(c, 'start', '?')}-{getattr(c, 'end', '?')}"
                     for c in document.chunks)
    vectors = [getattr(c, "vector", None) for c in document.chunks]
    if any(v is not None for v in vectors):  # without any, the version it always had
        digest = hashlib.sha256()
        for vector in vectors:
            digest.update(_vector_bytes(vector) + b"\x00")
        spans += ";vectors:" + digest.hexdigest()
    return "given:" + content_hash(spans)


def _vector_bytes(vector: object) -> bytes:
    """A given vector as its float32 bytes (as it would be stored); what it is written as
    when it is no vector of numbers (it fails its document later, with the reason)."""
    if vector is None:
        return b"-"
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return b"f" + np.asarray(vector, dtype=np.float32).tobytes()
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float
        return b"r" + repr(vector).encode("utf-8", "backslashreplace")
