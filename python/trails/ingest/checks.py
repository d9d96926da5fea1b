"""What a document and its chunks must be before anything of them is written.

Ingestion checks each document (and its chunks, and its vectors) on its own, before the
batch it joins is committed: a bad one becomes a ``DocumentFailed`` event naming the reason,
the others go on, and nothing about it can fail after the commit point (where a failure would
leave work behind for repair).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from trails.ingest.document import Chunk, Document

__all__ = ["MAX_METADATA_DEPTH", "bad_vectors", "chunk_problem", "document_problem"]

MAX_METADATA_DEPTH = 32  # nesting of lists and mappings in one metadata value


def _surrogate(text: str) -> int | None:
    """The position of the first lone surrogate in ``text`` (not valid Unicode), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _text_problem(value: Any, what: str) -> str | None:
    if not isinstance(value, str):
        return f"its {what} must be a string, got {type(value).__name__}"
    position = _surrogate(value)
    if position is not None:
        return (f"its {what} holds a lone surrogate ({value[position]!r} at character "
                f"{position}), which is not valid Unicode; fix the source's encoding")
    return None


def _value_problem(value: Any, where: str, depth: int, seen: set[int]) -> str | None:
    if depth > MAX_METADATA_DEPTH:
        return f"metadata {where} nests over {MAX_METADATA_DEPTH} levels deep"
    if isinstance(value, str):
        return _text_problem(value, f"metadata {where}")
    if isinstance(value, float) and not math.isfinite(value):
        return f"metadata {where} is {value}, which RDF cannot hold as a number; use a string"
    if isinstance(value, (Mapping, list, tuple, set)):
        if id(value) in seen:
            return f"metadata {where} contains itself"
        seen = seen | {id(value)}
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        for key, item in items:
            if isinstance(value, Mapping) and (problem := _text_problem(
                    str(key), f"metadata key {key!r}")):
                return problem
            if problem := _value_problem(item, f"{where}[{key!r}]", depth + 1, seen):
                return problem
    return None


def document_problem(document: Any) -> str | None:
    """Why ``document`` cannot be ingested, or None.

    >>> document_problem(Document("a.md", "a.md", "fine"))
    >>> document_problem(Document("a.md", "a.md", "bad \\ud800"))
    "its text holds a lone surrogate ('\\\\ud800' at character 4), which is not valid Unicode; fix the source's encoding"
    """
    if not isinstance(document, Document):
        return f"expected a Document, got {type(document).__name__}"
    for what in ("id", "source", "text", "media_type"):
        if problem := _text_problem(getattr(document, what), what):
            return problem
    if not document.id:
        return "its id is empty"
    if document.title is not None and (problem := _text_problem(document.title, "title")):
        return problem
    metadata: Any = document.metadata  # a loader or caller may have put anything there
    if not isinstance(metadata, Mapping):
        return f"its metadata must be a mapping (dict), got {type(metadata).__name__}"
    for key, value in metadata.items():
        if problem := _text_problem(key, "metadata key"):
            return problem
        if problem := _value_problem(value, repr(key), 1, set()):
            return problem
    return None


def chunk_problem(document: Document, chunks: Any) -> str | None:
    """Why a chunker's answer for ``document`` cannot be stored, or None: a list of
    :class:`Chunk` with string texts, distinct integer positions, offsets inside the text."""
    if not isinstance(chunks, Sequence) or isinstance(chunks, (str, bytes)):
        return f"the chunker returned {type(chunks).__name__}, not a list of Chunk"
    positions: set[int] = set()
    size = len(document.text)
    for n, chunk in enumerate(chunks):
        if not isinstance(chunk, Chunk):
            return f"the chunker's item {n} is a {type(chunk).__name__}, not a Chunk"
        if problem := _text_problem(chunk.text, f"chunk {n}'s text"):
            return problem
        for name in ("position", "start", "end"):
            value = getattr(chunk, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                return f"chunk {n}'s {name} must be a non-negative int, got {value!r}"
        if chunk.position in positions:
            return f"the chunker gave position {chunk.position} twice (chunk {n})"
        positions.add(chunk.position)
        if not chunk.start <= chunk.end <= size:
            return (f"chunk {n}'s span {chunk.start}:{chunk.end} is not inside the text "
                    f"(0:{size})")
    return None


def bad_vectors(vectors: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Which rows cannot be stored: NaN or infinity anywhere, or all zeros (no direction)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2:
        return np.ones(len(matrix), dtype=bool)
    finite = np.asarray(np.isfinite(matrix).all(axis=1), dtype=bool)
    zero = np.asarray(np.abs(np.where(finite[:, None], matrix, 0)).sum(axis=1) == 0, dtype=bool)
    return np.asarray(~finite | zero, dtype=bool)
