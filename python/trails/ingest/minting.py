"""IRIs and triples for documents and chunks, following ontologies/trails.ttl."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import pyoxigraph as ox

from trails.ingest.document import Chunk, Document
from trails.kg.sparql import META, TRAILS
from trails.kg.terms import to_term
from trails.scopes import DEFAULT_SCOPE, scope_graph

__all__ = ["chunk_iri", "chunk_quads", "date_created", "doc_iri", "document_quads", "version_of"]

SCHEMA = "https://schema.org/"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
SNIPPET_CHARS = 280
_KEY = re.compile(r"[^A-Za-z0-9_\-]")


def _s(local: str) -> ox.NamedNode:
    return ox.NamedNode(SCHEMA + local)


def _t(local: str) -> ox.NamedNode:
    return ox.NamedNode(TRAILS + local)


def doc_iri(base: str, doc_id: str, scope: str = DEFAULT_SCOPE) -> str:
    """The document's IRI: deterministic from base, scope and the loader's document id.

    >>> doc_iri("trails://local/", "docs/a b.md")
    'trails://local/doc/docs/a%20b.md'
    >>> doc_iri("trails://local/", "docs/a.md", scope="legal")
    'trails://local/scope/legal/doc/docs/a.md'
    """
    path = quote(doc_id, safe="/-._~")
    if scope == DEFAULT_SCOPE:
        return f"{base}doc/{path}"
    return f"{base}scope/{scope}/doc/{path}"


def version_of(document: Document, chunker_id: str, embedder_id: str) -> str:
    """A document version: the same text, chunking and embedder give the same version."""
    digest = hashlib.sha256()
    for part in (document.text, chunker_id, embedder_id):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def chunk_iri(document_iri: str, version: str, position: int) -> str:
    """Chunk IRIs carry the version, so a changed document never reuses a chunk IRI."""
    return f"{document_iri}/v/{version}/c/{position}"


def date_created(metadata: Mapping[str, Any]) -> dt.date | dt.datetime | None:
    """``date``/``created``/``dateCreated`` from metadata, as a date or datetime (else None)."""
    for key in ("dateCreated", "created", "date"):
        value = metadata.get(key)
        if isinstance(value, (dt.date, dt.datetime)):
            return value
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value) if len(value) == 10 else dt.datetime.fromisoformat(value)
            except ValueError:
                continue
    return None


def _literals(value: Any) -> Iterator[ox.Literal | ox.NamedNode]:
    if value is None:
        return
    if isinstance(value, (list, tuple, set)):
        for item in value:
            yield from _literals(item)
    elif isinstance(value, dict):
        yield ox.Literal(json.dumps(value, sort_keys=True, default=str))
    elif isinstance(value, (str, int, float, bool, dt.date)):
        yield to_term(value)  # typed: xsd:integer, xsd:double, xsd:boolean, xsd:date...
    else:
        yield ox.Literal(str(value))


def document_quads(
    document: Document, iri: str, version: str, chunks: int, scope: str
) -> list[ox.Quad]:
    """The document's own triples (not its chunks')."""
    g, s = scope_graph(scope), ox.NamedNode(iri)
    title = document.title or document.id.rsplit("/", 1)[-1]
    quads = [
        ox.Quad(s, RDF_TYPE, _t("Document"), g),
        ox.Quad(s, _t("documentId"), ox.Literal(document.id), g),
        ox.Quad(s, _t("source"), ox.Literal(document.source), g),
        ox.Quad(s, _s("name"), ox.Literal(title), g),
        ox.Quad(s, _t("contentHash"), ox.Literal(document.hash), g),
        ox.Quad(s, _t("chunkCount"), to_term(chunks), g),
        ox.Quad(s, _t("currentVersion"), ox.Literal(version), g),
        ox.Quad(s, _t("mediaType"), ox.Literal(document.media_type), g),
        ox.Quad(s, _t("scope"), ox.Literal(scope), g),
    ]
    created = date_created(document.metadata)
    if created is not None:
        quads.append(ox.Quad(s, _s("dateCreated"), to_term(created), g))
    for key, value in document.metadata.items():
        predicate = ox.NamedNode(META + _KEY.sub("_", str(key)))
        quads.extend(ox.Quad(s, predicate, o, g) for o in _literals(value))
    return quads


def chunk_quads(
    chunks: Sequence[Chunk], iri: str, version: str, scope: str
) -> list[ox.Quad]:
    g, document = scope_graph(scope), ox.NamedNode(iri)
    quads: list[ox.Quad] = []
    for chunk in chunks:
        c = ox.NamedNode(chunk_iri(iri, version, chunk.position))
        quads += [
            ox.Quad(c, RDF_TYPE, _t("Chunk"), g),
            ox.Quad(c, _s("isPartOf"), document, g),
            ox.Quad(c, _s("text"), ox.Literal(chunk.text), g),
            ox.Quad(c, _s("position"), to_term(chunk.position), g),
            ox.Quad(c, _t("startOffset"), to_term(chunk.start), g),
            ox.Quad(c, _t("endOffset"), to_term(chunk.end), g),
            ox.Quad(c, _t("version"), ox.Literal(version), g),
        ]
    return quads


def vector_metadata(
    chunk: Chunk, iri: str, version: str, scope: str
) -> dict[str, Any]:
    """What each vector carries: enough to show a hit without touching the graph.

    ``text`` (the whole chunk) feeds the store's keyword index; a store keeps it once, out of
    the rest of the metadata (SqliteVecStore: its own column)."""
    return {
        "iri": chunk_iri(iri, version, chunk.position),
        "doc_iri": iri,
        "snippet": chunk.text[:SNIPPET_CHARS],
        "text": chunk.text,
        "scope": scope,
        "version": version,
        "position": chunk.position,
    }
