"""The layout trails gives Qdrant: point ids, payloads, and the two collections.

``<collection>`` holds one point per vector: id ``uuid5(POINT_NAMESPACE, vector id)``, an
unnamed Dot vector, and a payload with the string ``id``, the user ``metadata`` and promoted,
indexed fields (``doc_iri``, ``scope``, ``version``, ``pending``, ``versioned``, and the
BM25-indexed text ``KEYWORD_FIELD``). ``<collection>__versions`` holds one point per document
(its current version) and one for the store itself (format, dimension, embedder identity).
"""

from __future__ import annotations

import hashlib
import json
import uuid
import warnings
from collections.abc import Mapping
from typing import Any

from trails.errors import ConfigurationError
from trails.scopes import DEFAULT_SCOPE
from trails.vector.stores import arguments
from trails.vector.stores.arrays import optional_str
from trails.vector.stores.records import back_reference

__all__ = ["FORMAT", "KEYWORD_FIELD", "META_ID", "PAGE", "POINT_NAMESPACE", "check_existing",
           "create", "eq", "metadata_of", "payload", "point_id", "read_meta"]

# uuid5(NAMESPACE_URL, "https://trails.dev/ns#qdrant-point-id"); fixed forever: it names every point.
POINT_NAMESPACE = uuid.UUID("bbf8736e-dca4-5306-b713-ba6fa5f3392c")
PAGE = 1_000  # scroll page and write batch size
FORMAT = 1
# The payload field holding a point's text (its metadata "text", else its snippet), indexed
# for BM25 (keyword_search).
KEYWORD_FIELD = "keyword_text"


def point_id(key: str) -> str:
    """The Qdrant point id of a vector id (or of a document's version record): a UUID string.

    >>> point_id("trails://local/doc/a/v/1/c/0") == point_id("trails://local/doc/a/v/1/c/0")
    True
    """
    # uuid5, reading a lone surrogate (no stored id holds one) as bytes rather than failing.
    name = key.encode("utf-8", "surrogatepass")
    return str(uuid.UUID(bytes=hashlib.sha1(POINT_NAMESPACE.bytes + name).digest()[:16], version=5))


# A space cannot occur in an IRI, so no document's version record can take this id.
META_ID = point_id(" trails store")


def eq(m: Any, key: str, value: Any) -> Any:
    """The condition ``key == value`` (``m``: ``qdrant_client.models``)."""
    return m.FieldCondition(key=key, match=m.MatchValue(value=value))


def payload(id: str, metadata: dict[str, Any], pending: bool) -> dict[str, Any]:
    """The point payload: the id, the metadata (through JSON, as SqliteVecStore stores it) and
    the promoted fields that filters use.

    A string ``text`` in the metadata is stored once, as ``KEYWORD_FIELD`` (the BM25-indexed
    text), and put back into the metadata when read; without one the snippet is indexed."""
    text = metadata.get("text")
    given = isinstance(text, str)
    if given:
        metadata = {key: value for key, value in metadata.items() if key != "text"}
    else:
        text = metadata.get("snippet")
    return {
        "id": id,
        "metadata": json.loads(arguments.metadata_json(metadata, f"the metadata of {id!r}")),
        KEYWORD_FIELD: text if isinstance(text, str) else None,
        "text_given": given,
        "doc_iri": optional_str(metadata.get("doc_iri")),
        # metadata["iri"] when it names another resource than the id (BackReferences).
        "back_reference": None if back_reference(id, metadata) == id else metadata["iri"],
        "scope": str(metadata.get("scope") or DEFAULT_SCOPE),
        "version": optional_str(metadata.get("version")),
        "pending": pending,
        "versioned": pending,  # written through staging: shown only while its version is current
    }


def metadata_of(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A point's metadata as the caller gave it (``text`` back from the keyword field)."""
    metadata = dict(payload.get("metadata") or {})
    if payload.get("text_given"):
        metadata["text"] = payload.get(KEYWORD_FIELD)
    return metadata


def read_meta(client: Any, versions_collection: str) -> dict[str, Any] | None:
    """The store's own record (``format``, ``dim``, ``embedder``), or None."""
    found = client.retrieve(versions_collection, [META_ID], with_payload=True)
    return dict(found[0].payload) if found else None


def create(client: Any, m: Any, collection: str, versions_collection: str, dim: int) -> None:
    """Make the two collections, the store's record and the payload indexes."""
    if not client.collection_exists(versions_collection):
        client.create_collection(
            versions_collection, vectors_config=m.VectorParams(size=1, distance=m.Distance.DOT))
    client.upsert(versions_collection, wait=True, points=[m.PointStruct(
        id=META_ID, vector=[1.0],
        payload={"kind": "store", "format": FORMAT, "dim": dim, "embedder": None})])
    client.create_collection(
        collection, vectors_config=m.VectorParams(size=dim, distance=m.Distance.DOT))
    with warnings.catch_warnings():  # local mode warns that it keeps no payload indexes
        warnings.filterwarnings("ignore", message="Payload indexes have no effect")
        for field, kind in (("doc_iri", "KEYWORD"), ("scope", "KEYWORD"), ("pending", "BOOL"),
                            ("back_reference", "KEYWORD")):
            client.create_payload_index(collection, field, getattr(m.PayloadSchemaType, kind))
        client.create_payload_index(versions_collection, "kind", m.PayloadSchemaType.KEYWORD)
    create_keyword_index(client, m, collection)


def check_existing(client: Any, m: Any, collection: str, dim: int, read_only: bool) -> None:
    """Refuse a collection trails did not make; add the keyword index a collection made
    before keyword search lacks (unless read-only)."""
    info = client.get_collection(collection)
    vectors = info.config.params.vectors
    if getattr(vectors, "size", None) != dim or vectors.distance != m.Distance.DOT:
        raise ConfigurationError(
            f"Qdrant collection {collection!r} is not configured as trails made it "
            f"(one unnamed {dim}-d Dot vector); choose another collection name")
    if KEYWORD_FIELD not in (info.payload_schema or {}) and not read_only:
        create_keyword_index(client, m, collection)


def create_keyword_index(client: Any, m: Any, collection: str) -> None:
    """A BM25-scored text index on ``KEYWORD_FIELD`` (qdrant-client and server 1.20+).

    Default tokenization (words, lower-cased, no stemming): the only one qdrant-client's
    local mode ranks, so local and server collections rank alike."""
    if not hasattr(m, "TextQuery"):
        return  # an older qdrant-client: keyword_search explains what to upgrade
    client.create_payload_index(collection, KEYWORD_FIELD, m.TextIndexParams(
        type=m.TextIndexType.TEXT, scoring=m.TextScoringParams(type=m.TextScoringType.BM25)))
