"""What ingestion checks before a document can reach a commit.

A commit writes a whole batch of documents (ADR 0005), so anything that could make one
document fail there would fail the others with it, or, after the commit point, leave a
version half written for ``verify --repair`` to delete. Every check on what a document, its
chunker or the embedder produced therefore runs here, before the document joins a batch:
each returns why the document cannot be written (it then fails alone) or None.

>>> document_problem(Document("a", "mem", "fine text"))
>>> document_problem(Document("a", "mem", "bad \\ud800 text"))
"text holds a lone surrogate '\\\\ud800' at offset 4, which UTF-8 cannot encode (a bad decode or a JSON \\\\ud800 escape?); remove it or decode the source properly"
"""

from __future__ import annotations

import datetime as dt
import numbers
import os
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt
import pyoxigraph as ox

from trails.errors import ConfigurationError, InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.dates import date_problems
from trails.ingest.document import Chunk, Document
from trails.ingest.linking import Mention, ScopeLinker, check_linker
from trails.ingest.minting import check_base_iri
from trails.keywords import unknown_keywords
from trails.kg.terms import check_text
from trails.scopes import DEFAULT_SCOPE, check_scope
from trails.vector.embedders.base import EmbedderIdentity, declared_price
from trails.vector.stores.arguments import MAX_NAME_BYTES

__all__ = [
    "FILE_OPTIONS",
    "INGEST_ARGUMENTS",
    "MAX_METADATA_DEPTH",
    "MAX_METADATA_VALUES",
    "FileOptions",
    "check_ingest_arguments",
    "chunk_problem",
    "document_problem",
    "given_vectors",
    "iri_problem",
    "linked",
    "mention_problem",
    "printable",
    "record_prefix",
    "shown",
    "vector_problems",
]

# Metadata nested deeper than this (lists in lists, dicts in dicts) is refused: no real
# record needs it, and a cycle (a list holding itself) would otherwise never end.
MAX_METADATA_DEPTH = 32
# At most this many metadata values per document (list items count one each, dict values
# too): each becomes a triple, and an alias-expanded YAML list could hold billions.
MAX_METADATA_VALUES = 100_000

_PLAIN = (str, bool, float, Decimal, dt.date, dt.time, ox.NamedNode, ox.Literal,
          numbers.Integral)
_KINDS = ("str, int, float, bool, Decimal, date, datetime, time, None, trails.kg.IRI, or a "
          "list, set or dict of these")


def printable(text: object) -> str:
    """``text`` as a str that any terminal can print: lone surrogates become ``\\udcff``."""
    shown = text if isinstance(text, str) else repr(text)
    return shown if shown.isascii() else shown.encode("utf-8", "backslashreplace").decode()


def shown(value: object, limit: int = 100) -> str:
    """``repr(value)``, cut to ``limit`` characters: for messages naming a value."""
    try:
        text = printable(repr(value))
    except Exception:  # noqa: BLE001 - an int too long to print, a broken __repr__
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def document_problem(document: Document) -> str | None:
    """Why ``document`` cannot be written (a field of the wrong type, text UTF-8 cannot
    hold, metadata with no RDF form), or None."""
    for name in ("id", "source", "text", "media_type", "title", "origin"):
        value = getattr(document, name, None)
        if value is None and name in ("title", "origin"):
            continue
        if not isinstance(value, str):
            return f"{name} must be a str, got {type(value).__name__}"
        try:
            check_text(value, name)
        except InvalidArgumentError as exc:
            return str(exc)
    if not document.id:
        return "the document has an empty id"
    return metadata_problem(document.metadata)


# A chunk's IRI is its document's and ``/v/<16 hex>/c/<position>``: room kept for that suffix.
_CHUNK_SUFFIX_BYTES = 64


def iri_problem(iri: str) -> str | None:
    """Why a document IRI is too long for its chunks' IRIs to be vector ids (at most
    :data:`~trails.vector.stores.arguments.MAX_NAME_BYTES` on every store), or None."""
    most = MAX_NAME_BYTES - _CHUNK_SUFFIX_BYTES
    size = len(iri.encode("utf-8"))
    if size <= most:
        return None
    return (f"its IRI is {size} bytes long (UTF-8); a document IRI may be at most {most} bytes, "
            f"so that its chunks' IRIs fit the {MAX_NAME_BYTES} bytes every store keeps of an "
            "id: use a shorter id (a hash of it)")


def document_warnings(document: Document) -> list[str]:
    """What is kept but not understood in ``document``: a date that is no date, no text.
    A record of a file that holds several (``notes.jsonl#7``) is named, as its source is
    the file (:func:`record_prefix`)."""
    found = date_problems(document.metadata)
    if not document.text.strip():
        found.append("no text: the document is recorded with no chunk, so no search will "
                     "find it (an empty file, or a PDF of scanned pages without a text layer)")
    return [record_prefix(document) + problem for problem in found]


def record_prefix(document: Document) -> str:
    """``document ID: `` for a record of a file that holds several, else nothing."""
    return f"document {shown(document.id)}: " if "#" in document.id else ""


def metadata_problem(metadata: object) -> str | None:
    """Why ``metadata`` cannot become triples, or None. Walked without recursion, so
    depth and size are checked before anything recurses into it."""
    if not isinstance(metadata, Mapping):
        return f"metadata must be a mapping of fields, got {type(metadata).__name__}"
    if len(metadata) > MAX_METADATA_VALUES:
        return _too_many()
    todo: list[tuple[str, Any, int]] = []
    for key, value in metadata.items():
        if not isinstance(key, str):
            return f"metadata key {shown(key)} is a {type(key).__name__}; keys are strings"
        try:
            check_text(key, f"metadata key {key!r}")
        except InvalidArgumentError as exc:
            return str(exc)
        todo.append((key, value, 1))
    seen = 0
    while todo:
        key, value, depth = todo.pop()
        seen += 1
        if seen + len(todo) > MAX_METADATA_VALUES:
            return _too_many()
        if depth > MAX_METADATA_DEPTH:
            return (f"metadata {printable(key)!r} is nested more than {MAX_METADATA_DEPTH} "
                    "levels deep (or holds itself); flatten it")
        if isinstance(value, str):
            try:
                check_text(value, f"metadata {printable(key)!r}")
            except InvalidArgumentError as exc:
                return str(exc)
        elif isinstance(value, (list, tuple, set, frozenset)):
            if len(value) > MAX_METADATA_VALUES:
                return _too_many()
            todo.extend((key, item, depth + 1) for item in value)
        elif isinstance(value, dict):
            if len(value) > MAX_METADATA_VALUES:
                return _too_many()
            for inner, item in value.items():
                if not isinstance(inner, str):
                    return (f"metadata {printable(key)!r} holds a dict key {shown(inner)} "
                            f"({type(inner).__name__}); a dict is written as JSON, whose keys "
                            "are strings")
                todo.append((key, inner, depth + 1))
                todo.append((key, item, depth + 1))
        elif value is not None and not _plain(value):
            return (f"metadata {printable(key)!r} holds a value of type {type(value).__name__}, "
                    f"which has no RDF form; use {_KINDS} (or str(value))")
    return None


def _plain(value: object) -> bool:
    if isinstance(value, numbers.Real) and not isinstance(value, (float, numbers.Integral)):
        return not isinstance(value, numbers.Rational)  # numpy floats, not Fractions
    return isinstance(value, _PLAIN)


def _too_many() -> str:
    return (f"metadata holds more than {MAX_METADATA_VALUES} values; keep large data in the "
            "text or in your own triples")


def chunk_problem(document: Document, chunks: Sequence[object]) -> str | None:
    """Why a chunker's output for ``document`` cannot be written, or None.

    Chunks must be :class:`Chunk` records with int positions ``0, 1, ...`` in order, spans
    ``0 <= start < end <= len(text)`` whose ``text`` is ``document.text[start:end]``, in the
    order of the text: each starts and ends no earlier than the one before (chunks may
    overlap, as the default chunker's do, but not go back nor sit inside the one before). A
    document with text needs at least one chunk; an empty or blank one may have none.
    """
    text = document.text
    if not chunks and text.strip():
        return ("no chunks for a document with text, which would then never be found; give "
                "at least one chunk")
    before: Chunk | None = None
    for index, chunk in enumerate(chunks):
        where = f"chunk {index}"
        if not isinstance(chunk, Chunk):
            return f"{where} is a {type(chunk).__name__}, not a trails.ingest.Chunk"
        for name in ("position", "start", "end"):
            value = getattr(chunk, name)
            if isinstance(value, bool) or not isinstance(value, int):
                return f"{where} has {name}={shown(value)}, not an int"
        if chunk.position != index:
            return (f"{where} has position {shown(chunk.position)}; positions must be 0, 1, 2, "
                    "... in order (a repeated position would give two chunks one IRI)")
        if not 0 <= chunk.start < chunk.end <= len(text):
            return (f"{where} spans [{shown(chunk.start)}, {shown(chunk.end)}), which is empty "
                    f"or outside the text (0 to {len(text)})")
        if before is not None and (chunk.start < before.start or chunk.end < before.end):
            return (f"{where} spans [{chunk.start}, {chunk.end}), which goes back from chunk "
                    f"{index - 1} [{before.start}, {before.end}): chunks follow the text, each "
                    "starting and ending no earlier than the one before (they may overlap)")
        if not isinstance(chunk.text, str) or chunk.text != text[chunk.start:chunk.end]:
            return f"{where}'s text is not the document's text[{chunk.start}:{chunk.end}]"
        before = chunk
    return None


def vector_problems(vectors: object, count: int, dim: int,
                    ) -> tuple[npt.NDArray[np.float32], list[str | None]]:
    """The embedder's output as float32 rows, and for each row why it cannot be stored (a
    wrong length, NaN or infinity, all zeros: cosine is undefined) or None.

    Rows that are bad are zeros in the array; ``count`` rows are expected (fewer or more is
    a ValueError, which fails the whole batch as any embedder failure does)."""
    rows: list[Any] = list(vectors)  # type: ignore[call-overload]
    if len(rows) != count:
        raise ValueError(f"embedder returned {len(rows)} vectors for {count} texts")
    out = np.zeros((count, dim), dtype=np.float32)
    problems: list[str | None] = []
    with np.errstate(over="ignore", invalid="ignore"):  # float32 overflow is reported below
        for index, row in enumerate(rows):
            try:
                vector = np.asarray(row, dtype=np.float32)
            except OverflowError:  # an int beyond any float: refused as a float32 overflow is
                vector = np.full(dim, np.inf, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                problems.append(f"the embedder returned no vector of numbers ({exc})")
                continue
            if vector.shape != (dim,):
                problems.append(f"the embedder returned a vector of shape {vector.shape}, "
                                f"not ({dim},)")
            elif not np.isfinite(vector).all():
                problems.append("the embedder returned a vector holding NaN or infinity "
                                "(or a value beyond float32)")
            elif not vector.any():
                problems.append("the embedder returned an all-zero vector (its cosine "
                                "similarity is undefined)")
            else:
                out[index] = vector
                problems.append(None)
    return out, problems


def given_vectors(document: Document, chunks: Sequence[Chunk], identity: EmbedderIdentity,
                  ) -> tuple[dict[int, npt.NDArray[np.float32]], str | None]:
    """The vectors ``chunks`` came with (``Chunk.vector``), by chunk index, checked against
    the context's embedder ``identity``; or why they cannot be stored."""
    given = [(index, chunk.vector) for index, chunk in enumerate(chunks)
             if chunk.vector is not None]
    if not given:
        return {}, None
    made_by = document.embedded_by
    if made_by is None:
        return {}, ("its chunks come with vectors but embedded_by names no embedder: pass "
                    "embedded_by=<the embedder that made them>.identity")
    if not made_by.compatible_with(identity):
        return {}, (f"its vectors were made by embedder {made_by.describe()} but this context "
                    f"embeds with {identity.describe()}, and scores across models mean nothing;"
                    " leave vector=None to embed those chunks here")
    vectors, problems = vector_problems([v for _, v in given], len(given), identity.dim)
    for (index, _), problem in zip(given, problems):
        if problem is not None:
            return {}, (f"chunk {index}'s vector (dimension {identity.dim} expected): "
                        + problem.replace("the embedder returned ", ""))
    return {index: vectors[n] for n, (index, _) in enumerate(given)}, None


class FileOptions(TypedDict, total=False):
    """The options a file loader takes, as ``ingest()``'s keywords (``include=["*.md"]``):
    a user's type checker refuses a misspelt or mistyped one, as the call does."""

    root: str | os.PathLike[str] | None
    include: str | Sequence[str] | None
    exclude: str | Sequence[str] | None
    jsonl_text_field: str
    jsonl_id_field: str


# The options a file loader takes (tests/test_keywords.py holds them to FileLoader's), and
# ingest()'s own arguments; names a newcomer may mean by others (a misspelling of any of
# them is matched by closeness).
FILE_OPTIONS = frozenset(FileOptions.__optional_keys__)
INGEST_ARGUMENTS = frozenset({
    "source", "ctx", "scope", "chunker", "sanitizer", "batch_size", "max_batch_tokens",
    "base_iri", "prune", "linker", "prepare_ahead"})
_MEANT = {"scopes": "scope", "context": "ctx", "graph": "scope", "namespace": "scope",
          "batch": "batch_size", "chunk_size": "chunker", "base": "base_iri"}


def check_ingest_arguments(ctx: Any, scope: object, chunker: object, sanitizer: object,
                           batch_size: object, max_batch_tokens: object, base_iri: object,
                           prune: object, loader_options: Mapping[str, object] | None = None,
                           linker: object = None, prepare_ahead: object = True,
                           ) -> tuple[str, str]:
    """Refuse arguments of ``ingest()`` that cannot work, before anything is written; the
    scope and the base IRI to use. ``loader_options``: the keywords ``ingest()`` passes on
    to the file loader, where a misspelt name of its own lands.

    Raises:
        InvalidArgumentTypeError: an argument of the wrong type (naming it), or a keyword
            neither ``ingest()`` nor the file loader takes (naming the one meant).
        InvalidArgumentError: a number out of range, a malformed scope name or base IRI.
        ConfigurationError: the context is read-only, or this thread is inside a read
            snapshot of its vector store.
    """
    if unknown := (loader_options or {}).keys() - FILE_OPTIONS:
        raise unknown_keywords("ingest", unknown, FILE_OPTIONS | INGEST_ARGUMENTS, _MEANT)
    if not all(hasattr(ctx, part) for part in ("kg", "vectors", "embedder", "base_iri",
                                               "read_only")):
        raise InvalidArgumentTypeError(f"ctx must be a trails Context (Context.open(...)), "
                                       f"got {type(ctx).__name__}")
    if scope is not None and not isinstance(scope, str):
        raise InvalidArgumentTypeError(f"scope must be a scope name (str) or None, got "
                                       f"{type(scope).__name__}")
    try:
        name = check_scope(DEFAULT_SCOPE if scope is None else scope)  # "" is not the default
    except ValueError as exc:
        raise InvalidArgumentError(f"scope: {exc}") from None
    if chunker is not None and not callable(getattr(chunker, "chunk", None)):
        raise InvalidArgumentTypeError(f"chunker must have a chunk(document) method, got "
                                       f"{type(chunker).__name__}")
    if sanitizer is not None and not callable(sanitizer):
        raise InvalidArgumentTypeError(f"sanitizer must be callable as sanitizer(document), "
                                       f"got {type(sanitizer).__name__}")
    for option, value in (("batch_size", batch_size), ("max_batch_tokens", max_batch_tokens)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentTypeError(f"{option} must be a positive int, got "
                                           f"{type(value).__name__}")
        if value < 1:
            raise InvalidArgumentError(f"{option} must be a positive int, got {value}")
    if not isinstance(prune, bool):
        raise InvalidArgumentTypeError(f"prune must be True or False, got {type(prune).__name__}")
    declared_price(ctx.embedder)  # a price that is none would report a wrong cost
    base = check_base_iri(ctx.base_iri if base_iri is None else base_iri, given=base_iri is not None)
    if ctx.read_only:
        raise ConfigurationError("this context was opened read-only; reopen it writable to ingest")
    if not isinstance(prepare_ahead, bool):
        raise InvalidArgumentTypeError(
            f"prepare_ahead must be True or False, got {type(prepare_ahead).__name__}")
    if getattr(ctx.vectors, "in_snapshot", False):  # its writes could only fail, or wait forever
        raise ConfigurationError("cannot ingest inside a read snapshot of the vector store; "
                                 "leave the `with store.snapshot():` block first")
    check_linker(linker)
    return name, base


def linked(bound: ScopeLinker, chunk: Chunk) -> list[Mention]:
    """``bound``'s mentions of ``chunk``, checked before anything is written.

    Raises:
        InvalidArgumentError: one could not be written, or would say what is not so
            (:func:`mention_problem`).
    """
    mentions = bound.mentions(chunk)
    problem = mention_problem(chunk, mentions)
    if problem is not None:
        raise InvalidArgumentError(f"the linker's mentions of chunk {chunk.position} cannot be "
                                   f"written: {problem}; fix the linker")
    return list(mentions)


def mention_problem(chunk: Chunk, mentions: object) -> str | None:
    """Why a linker's output for ``chunk`` cannot be written, or None: a list of
    :class:`Mention` s, each of an absolute IRI, whose ``start``/``end`` lie in the chunk
    (document offsets) and whose ``text`` is what they span; ``label`` a string or None,
    ``predicate`` an IRI or None, ``linker`` a name."""
    if not isinstance(mentions, (list, tuple)):
        return f"mentions(chunk) returned a {type(mentions).__name__}, not a list of Mentions"
    for index, mention in enumerate(mentions):
        where = f"mention {index}"
        if not isinstance(mention, Mention):
            return f"{where} is a {type(mention).__name__}, not a trails Mention"
        for name, iri in (("entity", mention.entity), ("predicate", mention.predicate)):
            if not (iri is None and name == "predicate") and not _is_iri(iri):
                return f"{where} has {name}={shown(iri)}, which is no absolute IRI"
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (mention.start, mention.end)):
            return f"{where} has start={shown(mention.start)}, end={shown(mention.end)}: not ints"
        if not chunk.start <= mention.start < mention.end <= chunk.end:
            return (f"{where} spans [{mention.start}, {mention.end}), which is empty or outside "
                    f"the chunk [{chunk.start}, {chunk.end}) (offsets are the document's)")
        spanned = chunk.text[mention.start - chunk.start : mention.end - chunk.start]
        if mention.text != spanned:
            return f"{where}'s text {shown(mention.text)} is not the text it spans, {shown(spanned)}"
        label: object = mention.label  # typed, but a linker of one's own may put anything
        if label is not None and not isinstance(label, str):
            return f"{where} has label={shown(label)}, not a string or None"
        if not isinstance(mention.linker, str) or not mention.linker.strip():
            return f"{where} has linker={shown(mention.linker)}: name the linker (a string)"
        try:
            for name in ("label", "linker"):
                if getattr(mention, name) is not None:
                    check_text(getattr(mention, name), f"{where}'s {name}")
        except InvalidArgumentError as exc:
            return str(exc)
    return None


def _is_iri(value: object) -> bool:
    try:
        ox.NamedNode(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True

