"""The records ingestion passes along: documents from loaders, chunks from chunkers."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, runtime_checkable

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.keywords import named_fields, unknown_keywords
from trails.vector.embedders.base import EmbedderIdentity

__all__ = [
    "Chunk",
    "Chunker",
    "Document",
    "FingerprintedChunker",
    "LoadFailure",
    "Loader",
    "Sanitizer",
    "content_hash",
]


def content_hash(text: str) -> str:
    """The SHA-256 of the text (UTF-8), hex: what makes a document version."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """One source document, as a loader yields it.

    ``id`` is deterministic from the source (a file's path relative to the ingested root, a
    record's id field), so the same source is the same document in every process. ``metadata``
    holds user fields (front matter, record fields); ``date``/``created`` there become
    ``schema:dateCreated``. ``origin`` is the absolute path of the file it was read from
    (the file loader sets it; ``None`` for a document given any other way): ``ingest
    --prune`` deletes a document only when that file is gone, never by its ``source`` label.

    ``title`` is the document's name (``schema:name``, a hit's title). Given as ``title=``
    it wins; else ``metadata["title"]`` is the title (as text; a blank one is none), which is
    how Markdown front matter and a JSONL record's title field name a document too; else the
    last part of ``id`` names it.

    ``chunks`` (optional) are the document's chunks as computed elsewhere: they replace the
    chunker, and a chunk with a ``vector`` is stored with it instead of being embedded;
    ``embedded_by`` then names the embedder that made the vectors, which must be compatible
    with the context's (same model and dimension), else the document fails.

    Raises:
        InvalidArgumentTypeError: ``id``, ``source`` or ``text`` not given, or a field of the
            wrong type (``id``, ``source``, ``text`` and ``media_type`` are strings, ``title`` a string or None, ``metadata`` a mapping).
        InvalidArgumentError: an empty ``id``.

    What the types cannot say (a lone surrogate in the text, a metadata value with no RDF
    form) is checked when the document is ingested: that document fails alone.
    """

    id: str
    source: str
    text: str
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    media_type: str = "text/plain"
    origin: str | None = None
    chunks: Sequence[Chunk] | None = None  # kept as a tuple
    embedded_by: EmbedderIdentity | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # Python's own "missing 2 required positional arguments" is no TrailsError and says
        # not what the fields are for. No arguments at all is how copy and pickle make one.
        # A name it does not take is refused first: content= is a misnamed text=.
        fields = {f.name for f in dataclasses.fields(cls)}
        if not fields.issuperset(kwargs):
            raise unknown_keywords("Document", kwargs.keys() - fields, fields, _DOCUMENT_MEANT)
        missing = [name for place, name in enumerate(("id", "source", "text"))
                   if len(args) <= place and name not in kwargs]
        if missing and (args or kwargs):
            raise InvalidArgumentTypeError(
                f"Document(...) needs {', '.join(f'{m}=' for m in missing)}: id= names it in "
                f"every run (a path, a record key), source= says where it came from (shown "
                f"with each hit), text= is what is chunked and searched")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        if self.chunks is not None and not isinstance(self.chunks, tuple):
            _need(isinstance(self.chunks, Sequence) and not isinstance(self.chunks, str),
                  "chunks", "a list of Chunk", self.chunks)
            object.__setattr__(self, "chunks", tuple(self.chunks))
        _need(self.embedded_by is None or isinstance(self.embedded_by, EmbedderIdentity),
              "embedded_by", "an EmbedderIdentity (embedder.identity)", self.embedded_by)
        for name in ("id", "source", "text", "media_type"):
            _need(isinstance(getattr(self, name), str), name, "a str", getattr(self, name))
        _need(self.origin is None or isinstance(self.origin, str), "origin",
              "a str (an absolute file path) or None", self.origin)
        _need(self.title is None or isinstance(self.title, str), "title", "a str or None",
              self.title)
        _need(isinstance(self.metadata, Mapping), "metadata", "a mapping (dict) of fields",
              self.metadata)
        if self.title is None and self.metadata.get("title") is not None:
            # str(): a YAML or JSON number is a name too, as parse_markdown reads it.
            given = str(self.metadata["title"]).strip()
            object.__setattr__(self, "title", given or None)
        if not self.id:
            raise InvalidArgumentError("Document(id='') names no document: give a non-empty "
                                       "id (a path, a record key) that names it in every run")

    @property
    def hash(self) -> str:
        return content_hash(self.text)

    def __repr__(self) -> str:
        """The fields, the text cut to its start when long (a loader's documents printed in
        a notebook showed every character of every text)."""
        text = (repr(self.text) if len(self.text) <= _SHOWN
                else f"{self.text[:_SHOWN]!r}… ({len(self.text)} characters)")
        fields = [f"{f.name}={text if f.name == 'text' else repr(getattr(self, f.name))}"
                  for f in dataclasses.fields(self) if f.repr]
        return f"Document({', '.join(fields)})"


_SHOWN = 80  # characters of a long text a Document's repr shows

# Names other libraries give a document's fields (LangChain's page_content, LlamaIndex's
# id_), and the usual shorthands.
_DOCUMENT_MEANT = {"content": "text", "page_content": "text", "body": "text", "meta": "metadata",
                   "id_": "id", "doc_id": "id", "path": "source", "url": "source",
                   "name": "title"}


def _need(ok: bool, field: str, kind: str, value: object) -> None:
    if not ok:
        raise InvalidArgumentTypeError(f"Document({field}=...) must be {kind}, got "
                                       f"{type(value).__name__}")


@named_fields({"content": "text", "txt": "text", "index": "position", "embedding": "vector"})
@dataclass(frozen=True)
class Chunk:
    """A span of a document's text: ``text == document.text[start:end]``."""

    text: str
    start: int
    end: int
    position: int
    # An embedding computed elsewhere (a Document's given chunks): stored as it is, never
    # embedded again (ingestion checks it against the context's embedder).
    vector: Sequence[float] | None = field(default=None, compare=False, repr=False)


@runtime_checkable
class Loader(Protocol):
    """Yields documents; a failed source is reported as ``LoadFailure`` and loading goes on."""

    def load(self) -> Iterator[Document | LoadFailure]: ...


@dataclass(frozen=True)
class LoadFailure:
    """A source that could not be read or decoded, and why; ``skipped``: one left out on
    purpose (an RDF file met in a folder), reported as a warning, not a failure. ``origin``:
    the absolute path of the file it was read from, when one was read (what ``--prune``
    weighs: a file read whole holds no record that failed)."""

    source: str
    reason: str
    skipped: bool = False
    origin: str | None = None


@runtime_checkable
class Chunker(Protocol):
    """Splits a document into chunks whose offsets point into ``document.text``."""

    def chunk(self, document: Document) -> list[Chunk]: ...


@runtime_checkable
class FingerprintedChunker(Chunker, Protocol):
    """A chunker that names the settings deciding its chunks, stable across machines.

    The fingerprint is part of every document version, so changing a setting re-chunks the
    documents; a chunker without one is described by its attributes that are numbers,
    strings, booleans or containers of those instead (``chunking.chunker_id``).
    """

    @property
    def fingerprint(self) -> str: ...


@runtime_checkable
class Sanitizer(Protocol):
    """Rewrites a document before chunking (PII redaction...). May be sync or ``async def``;
    an exception fails that document only."""

    def __call__(self, document: Document) -> Document | Awaitable[Document]: ...
