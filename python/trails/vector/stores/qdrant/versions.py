"""Versioned commits on Qdrant (ADR 0005, 0008): the version record is the commit point.

Qdrant has no transaction across requests (nor, for readers, within a batch), so the commit
point is the one thing it does write atomically: a single point, the document's record in
``<collection>__versions``. A point written through staging (``versioned``) is shown only
while its document's record names its version (:meth:`QdrantVersions._stale`).

Readers: Qdrant has no read snapshot, so :meth:`QdrantVersions.snapshot` pins what it can, the
version records: inside the block, the first record read of a document is the one every later
read uses, so the vector ranking, the keyword ranking and the torn-read check of one
``retrieve`` agree on each document's version and never mix two. The points themselves are
read live: a publish finishing during the block can delete the pinned version's points, and the
document then drops out of the rest of that read (never replaced by part of another version).
In local mode the store's lock, held for the whole block, keeps every writer of the folder out
(local mode is one process), so there a snapshot is one committed state.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trails.vector.stores import arguments
from trails.vector.stores.qdrant.core import QdrantCore
from trails.vector.stores.qdrant.lock import locked
from trails.vector.stores.qdrant.schema import eq, metadata_of, payload, point_id
from trails.vector.stores.records import DocumentVersion

if TYPE_CHECKING:
    from typing import Self

__all__ = ["QdrantVersions"]


class QdrantVersions(QdrantCore):
    """:class:`~trails.vector.stores.base.VersionedStore` on the two collections."""

    # Inside a snapshot: each document's version record as first read there (None: none).
    _pins: dict[str, DocumentVersion | None] | None = None
    _pinned_by: int | None = None  # the thread inside the snapshot block

    @locked
    def publish(self, versions: Sequence[DocumentVersion]) -> None:
        """Make staged document versions current; the version record is the commit point.

        For each document, in three requests:

        1. its staged points of ``version`` are flipped to ``pending=false`` (still hidden:
           a point written through staging is shown only while its document's record names
           its version);
        2. the version record is upserted in ``<collection>__versions`` — the commit point:
           readers switch from the whole old version to the whole new one;
        3. every other point of the document (the previous version, abandoned stagings) is
           deleted.

        A crash (or a reader) between any two requests sees the old version or the new one,
        never part of one; superseded points left by a crash stay hidden and are removed by
        the next ingest or ``verify(repair=True)``.
        """
        self._check_writable()
        versions = arguments.check_versions(versions)
        if not versions:
            return
        m = self._m
        self._c.batch_update_points(self.collection, wait=True, update_operations=[
            m.SetPayloadOperation(set_payload=m.SetPayload(payload={"pending": False}, filter=m.Filter(
                must=[eq(m, "doc_iri", v.doc_iri), eq(m, "version", v.version),
                      eq(m, "pending", True)])))
            for v in versions])
        self._c.upsert(self.versions_collection, wait=True, points=[
            m.PointStruct(id=point_id(v.doc_iri), vector=[1.0],
                          payload={"kind": "version", **v._asdict()})
            for v in versions])
        self._c.batch_update_points(self.collection, wait=True, update_operations=[
            m.DeleteOperation(delete=m.FilterSelector(filter=m.Filter(
                must=[eq(m, "doc_iri", v.doc_iri)], must_not=[eq(m, "version", v.version)])))
            for v in versions])

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Self]:
        """Pin, for the reads inside the block, the version record of every document they
        look at (see the module's docstring for what Qdrant allows). Blocks nest; other
        threads using this store wait until the block ends.

        Raises:
            ConfigurationError: the store is closed.
            EndpointUnavailableError: the server cannot be reached.
        """
        with self._lock:
            self._c  # noqa: B018 - a closed store says so on entry
            if self._pins is not None:
                yield self
                return
            self._pins, self._pinned_by = {}, threading.get_ident()
            try:
                yield self
            finally:
                self._pins, self._pinned_by = None, None

    @property
    def in_snapshot(self) -> bool:
        """Whether the calling thread is inside :meth:`snapshot` (another thread's write
        waits for the block to end)."""
        return self._pins is not None and self._pinned_by == threading.get_ident()

    @locked
    def current_versions(self, doc_iris: Iterable[str] | None = None) -> dict[str, DocumentVersion]:
        """The recorded current version of each document (all documents when ``None``);
        inside a :meth:`snapshot`, the record first read there."""
        pins = self._pins
        if pins is None:
            return self._read_versions(doc_iris)
        if doc_iris is None:
            found = self._read_versions(None)
            wanted = [*found, *pins]
        else:
            wanted = list(doc_iris)
            found = self._read_versions([d for d in dict.fromkeys(wanted) if d not in pins])
        for doc in wanted:
            pins.setdefault(doc, found.get(doc))
        return {doc: version for doc in dict.fromkeys(wanted)
                if (version := pins[doc]) is not None}

    def _read_versions(self, doc_iris: Iterable[str] | None) -> dict[str, DocumentVersion]:
        if doc_iris is None:
            records: Iterable[Any] = self._scroll(
                self.versions_collection, self._m.Filter(must=[eq(self._m, "kind", "version")]))
        else:
            wanted = list(dict.fromkeys(point_id(d) for d in doc_iris))
            records = self._c.retrieve(self.versions_collection, wanted, with_payload=True) if wanted else []
        found = {}
        for r in records:
            if r.payload.get("kind") == "version":
                found[r.payload["doc_iri"]] = DocumentVersion(
                    *(r.payload.get(f) for f in DocumentVersion._fields))
        return found

    @locked
    def document_rows(self, doc_iri: str) -> list[tuple[str, str | None, bool]]:
        """Every point of a document: ``(id, version, pending)``, sorted by id."""
        records = self._scroll(self.collection, self._m.Filter(must=[eq(self._m, "doc_iri", doc_iri)]))
        return sorted((r.payload["id"], r.payload.get("version"), bool(r.payload.get("pending")))
                      for r in records)

    @locked
    def managed_rows(self) -> list[tuple[str, str, str | None, bool]]:
        """``(id, doc_iri, version, pending)`` of every point that belongs to a document, by id."""
        m = self._m
        records = self._scroll(self.collection, m.Filter(
            must_not=[m.IsEmptyCondition(is_empty=m.PayloadField(key="doc_iri"))]))
        return sorted((r.payload["id"], r.payload["doc_iri"], r.payload.get("version"),
                       bool(r.payload.get("pending"))) for r in records)

    @locked
    def pending_ids(self) -> list[str]:
        records = self._scroll(self.collection, self._m.Filter(must=[eq(self._m, "pending", True)]))
        return sorted(r.payload["id"] for r in records)

    @locked
    def update_payload(self, doc_iri: str, fields: Mapping[str, Any]) -> int:
        """Set metadata ``fields`` on every point of a document in one request (a
        metadata-only change: no vector is touched); a None value removes the field. Each
        point's payload is made again from its new metadata, as ``add`` makes it: the
        keyword text, scope and back-reference follow. Returns how many points the document
        has."""
        self._check_writable()
        fields = arguments.check_payload_fields(fields)
        m = self._m
        records = list(self._scroll(self.collection, m.Filter(must=[eq(m, "doc_iri", doc_iri)])))
        operations: list[Any] = []
        for record in records if fields else []:
            metadata = {**metadata_of(record.payload), **fields}
            new = payload(record.payload["id"],
                          {key: value for key, value in metadata.items() if value is not None},
                          bool(record.payload.get("pending")))
            new["versioned"] = bool(record.payload.get("versioned"))  # as it was written
            operations.append(m.OverwritePayloadOperation(overwrite_payload=m.SetPayload(
                payload=new, points=[record.id])))
        if operations:
            self._c.batch_update_points(self.collection, wait=True,
                                        update_operations=operations)
        return len(records)

    @locked
    def delete_document(self, doc_iri: str) -> int:
        """Remove every vector of a document and its version record; returns vectors removed.

        The record goes first: from that moment no staged-then-published point of the document
        is shown, whatever happens to the deletes after it."""
        self._check_writable()
        ids = [r[0] for r in self.document_rows(doc_iri)]
        self._c.delete(self.versions_collection, wait=True,
                       points_selector=self._m.PointIdsList(points=[point_id(doc_iri)]))
        return self._delete_ids(ids)

    # -- what readers show ----------------------------------------------------------------

    def _superseded(self, records: Sequence[Any]) -> set[str]:
        """Point ids among ``records`` of versions that are not (or no longer) current."""
        stale = self._stale([r.payload for r in records])
        return {str(r.id) for r, old in zip(records, stale) if old}

    def _stale(self, payloads: Sequence[Mapping[str, Any]]) -> list[bool]:
        """For each payload: is it a point of a version that is not (or no longer) current?"""
        docs = {str(p.get("doc_iri")) for p in payloads if p.get("versioned")}
        current = self.current_versions(docs) if docs else {}
        return [bool(p.get("versioned")) and (p.get("doc_iri") not in current or
                                               current[p["doc_iri"]].version != p.get("version"))
                for p in payloads]
