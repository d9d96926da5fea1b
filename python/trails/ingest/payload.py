"""What a vector's payload may hold of its document's metadata: the context's allowlist.

The vector store may be less trusted than the graph (a shared Qdrant, say). Every vector
carries what retrieval itself needs (:data:`RETRIEVAL_FIELDS`: its IRI, its document's IRI,
version and scope, its position, offsets, text and snippet); of the document's metadata it
carries only the keys the context allows (``payload`` in ``trails.json``). Everything else
stays in the graph, and :mod:`trails.retrieval.provenance` reads a hit's ``source``,
``title`` and ``date`` from there when the payload lacks them.

The default allows nothing: no step of retrieval reads document metadata from the payload
(recency decay reads ``schema:dateCreated`` from the graph, :mod:`trails.rank.recency`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.dates import date_created
from trails.ingest.document import Document
from trails.ingest.minting import document_title

__all__ = [
    "DOCUMENT_FIELDS",
    "RETRIEVAL_FIELDS",
    "check_payload_fields",
    "document_payload",
    "fields_outside",
    "payload_patch",
]

# What every vector carries whatever the allowlist says: retrieval and repair need them.
RETRIEVAL_FIELDS = frozenset(
    {"iri", "doc_iri", "version", "scope", "position", "start", "end", "text", "snippet"})
# The document fields trails derives itself (not metadata keys as given): where they come
# from in the graph is trails:source, schema:name and schema:dateCreated.
DOCUMENT_FIELDS = ("source", "title", "date")
# A field is a path in a Qdrant payload (``metadata.<field>``) and a JSON key in SQLite:
# plain names only, so that no field can be read as a nested path.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,127}$")


def check_payload_fields(fields: object, option: str = "payload") -> tuple[str, ...]:
    """The allowlist as a tuple of distinct field names, in the order given.

    >>> check_payload_fields(["title", "author", "title"])
    ('title', 'author')
    >>> check_payload_fields(["text"])
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentError: payload: 'text' is always in the payload (retrieval needs it); list only document metadata keys such as title, source, date or author

    Raises:
        InvalidArgumentTypeError: ``fields`` is not a list of str (a lone str is refused:
            ``"title"`` would read as five fields).
        InvalidArgumentError: a name that is not a plain key (letters, digits, ``_``, ``-``),
            or one retrieval always keeps.
    """
    if isinstance(fields, (str, bytes)) or not isinstance(fields, Iterable):
        raise InvalidArgumentTypeError(f"{option} must be a list of metadata keys (e.g. "
                                       f"['title', 'date']), got {type(fields).__name__}")
    out: list[str] = []
    for field in fields:
        if not isinstance(field, str):
            raise InvalidArgumentTypeError(f"{option}: every field must be a str, got "
                                           f"{type(field).__name__} {field!r}")
        if field in RETRIEVAL_FIELDS:
            raise InvalidArgumentError(
                f"{option}: {field!r} is always in the payload (retrieval needs it); list only "
                "document metadata keys such as title, source, date or author")
        if not _NAME.match(field):
            raise InvalidArgumentError(
                f"{option}: {field!r} is not a plain metadata key; use letters, digits, _ and - "
                "(starting with a letter or _), at most 128 characters")
        if field not in out:
            out.append(field)
    return tuple(out)


def document_payload(document: Document, allowed: Iterable[str]) -> dict[str, Any]:
    """The document fields every chunk's vector carries: those of ``allowed`` only.

    ``source``, ``title`` and ``date`` are trails' own (the date as ISO text, None when the
    document has none); any other allowed key is the document's metadata value, None when the
    document has no such key (a metadata-only update then removes it from the payload).

    >>> doc = Document("a.md", "docs/a.md", "text", metadata={"date": "2024-05-01", "author": "Ann"})
    >>> document_payload(doc, ["date", "author"])
    {'date': '2024-05-01', 'author': 'Ann'}
    >>> document_payload(doc, [])
    {}
    """
    out: dict[str, Any] = {}
    for field in allowed:
        if field == "source":
            out[field] = document.source
        elif field == "title":
            out[field] = document_title(document)
        elif field == "date":
            created = date_created(document.metadata)
            out[field] = None if created is None else created.isoformat()
        else:
            out[field] = document.metadata.get(field)
    return out


def payload_patch(document: Document, allowed: Iterable[str]) -> dict[str, Any]:
    """What a metadata-only update writes: the allowed fields, and None (remove) for every
    document field and metadata key of ``document`` that is not allowed, so that narrowing
    the allowlist and then changing a document leaves none of them behind.

    >>> doc = Document("a.md", "docs/a.md", "text", metadata={"author": "Ann"})
    >>> payload_patch(doc, ["title"])
    {'source': None, 'date': None, 'author': None, 'title': 'a.md'}
    """
    allowed = tuple(allowed)
    removed = [f for f in (*DOCUMENT_FIELDS, *map(str, document.metadata))
               if f not in allowed and f not in RETRIEVAL_FIELDS and _NAME.match(f)]
    return {**dict.fromkeys(removed), **document_payload(document, allowed)}


def fields_outside(metadata: Mapping[str, Any], allowed: Iterable[str]) -> list[str]:
    """The fields of a vector's ``metadata`` that neither retrieval needs nor the allowlist
    allows, sorted.

    >>> fields_outside({"iri": "c", "title": "T", "author": "Ann"}, ["author"])
    ['title']
    """
    keep = RETRIEVAL_FIELDS | set(allowed)
    return sorted(str(key) for key in metadata if key not in keep)
