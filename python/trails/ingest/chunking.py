"""What decides a document's chunks, as a string that is part of its version."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import is_dataclass

import numpy as np

from trails.errors import InvalidArgumentTypeError
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


def chunker_id(chunker: Chunker) -> str:
    """A stable description of a chunker's settings: part of every document version."""
    if isinstance(chunker, FingerprintedChunker) and isinstance(chunker.fingerprint, str):
        return chunker.fingerprint
    described: object = chunker  # any chunker may be a dataclass: its repr lists its fields
    if is_dataclass(described):
        return repr(chunker)
    settings = {k: v for k, v in sorted(vars(chunker).items()) if isinstance(v, (int, float, str, bool))}
    return f"{type(chunker).__qualname__}{settings}"


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
