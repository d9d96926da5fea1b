"""Versioned commits in the store file (ADR 0005): staged rows, ``publish``, version records,
and deletes.

A document version's rows are written ``pending`` (``add_many(..., pending=True)``);
:meth:`SqliteVersions.publish` makes them live, deletes the document's other rows and records
the version in one transaction: the commit point of an ingest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trails.vector.stores import arguments
from trails.vector.stores.records import DocumentVersion
from trails.vector.stores.sqlite_vec.core import SqliteCore, reads
from trails.vector.stores.sqlite_vec.folding import folded_bits

# Metadata fields the store also keeps outside the row's JSON: the keyword index's text (its
# snippet when there is none) and the scope (a column, and the vector files' keys).
_DERIVED = frozenset({"text", "snippet", "scope"})
# The fields that name a row's document and version (the versions table follows them).

__all__ = ["SqliteVersions"]

class SqliteVersions(SqliteCore):
    """:class:`~trails.vector.stores.base.VersionedStore` on the ``items`` and ``versions``
    tables."""

    def _delete_ids(self, ids: list[str]) -> int:
        self._check_writable()
        if not ids:
            return 0
        with self._writing():
            found = self._db.execute(
                "SELECT id, rowid, slot FROM items WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            )
            self._keywords.forget([r[1] for r in found])
            self._db.executemany("DELETE FROM items WHERE rowid = ?", [(r[1],) for r in found])
            self._index.set_alive((r[2] for r in found), False)
        self._compact_if_worth_it()
        return len(found)

    def publish(self, versions: Sequence[DocumentVersion]) -> None:
        """Make staged document versions current, in one transaction (the commit point).

        For each document: its staged rows of ``version`` go live, every other row of the
        document (the previous version, abandoned stagings) is deleted, and the version is
        recorded. A crash before the commit leaves the previous version fully live; after it,
        the new one.
        """
        self._check_writable()
        versions = arguments.check_versions(versions)
        if not versions:
            return
        pairs = json.dumps([[v.doc_iri, v.version] for v in versions])
        with self._writing():
            gone = self._db.execute(
                "SELECT i.id, i.rowid, i.slot FROM items i JOIN json_each(?) j"
                " ON i.doc_iri = j.value ->> 0 AND i.version IS NOT j.value ->> 1",
                (pairs,),
            )
            self._keywords.publish([r[1] for r in gone], pairs)
            self._db.executemany("DELETE FROM items WHERE rowid = ?", [(r[1],) for r in gone])
            # "+pending": find the rows by doc_iri. On "pending = 1" SQLite picks the
            # partial index items_pending and walks every staged row for each document:
            # quadratic in the batch (0.18 s per 1,000 chunks in batches of 1,000).
            self._db.executemany(
                "UPDATE items SET pending = 0 WHERE doc_iri = ? AND version = ? AND +pending = 1",
                [(v.doc_iri, v.version) for v in versions],
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO versions VALUES (?, ?, ?, ?, ?)",
                [tuple(v) for v in versions],
            )
            # The index follows inside the transaction; a failed COMMIT reloads it.
            self._index.set_alive((r[2] for r in gone), False)
            self._index_rows(
                "JOIN json_each(?) j ON i.doc_iri = j.value ->> 0 AND i.version = j.value ->> 1",
                (pairs,),
            )
        self._compact_if_worth_it()

    def update_payload(self, doc_iri: str, fields: Mapping[str, Any]) -> int:
        """Set metadata ``fields`` on every row of a document (a metadata-only change: no
        vector is embedded again); a None value removes the field. Returns how many rows
        changed.

        Each row is then what ``add_many`` makes of its new metadata: a field the store keeps
        outside the JSON too (the keyword text, the snippet it falls back to, the scope) has
        its rows written again, so keyword and scoped searches answer as if the rows had been
        added with it. The fields that say which document and version a row is cannot change.
        """
        self._check_writable()
        fields = arguments.check_payload_fields(fields)
        if not _DERIVED & set(fields):
            patch = arguments.metadata_json(fields, "update_payload's fields")
            with self._writing():
                # A field set here is the JSON's from now on: its column no longer says it.
                changed = self._db.execute(
                    "UPDATE items SET metadata = json_patch(metadata, ?), folded = folded & ?"
                    " WHERE doc_iri = ? RETURNING rowid",
                    (patch, ~folded_bits(set(fields)), doc_iri))
            return len(changed)
        with self.snapshot():
            rows = self._db.execute(
                "SELECT id, slot, pending FROM items WHERE doc_iri = ? ORDER BY id", (doc_iri,))
            metas = self._metadata([r[0] for r in rows])
            vectors = self._index.vectors()[[int(r[1]) for r in rows]].copy() if rows else None
        # Published and staged rows keep their state (a version being ingested stays staged);
        # each state is one transaction.
        for pending in (False, True):
            chosen = [n for n, r in enumerate(rows) if bool(r[2]) == pending]
            if chosen and vectors is not None:
                ids = [rows[n][0] for n in chosen]
                patched = [{k: v for k, v in {**metas[i], **fields}.items() if v is not None}
                           for i in ids]
                self._write(ids, vectors[chosen], patched, pending)
        return len(rows)

    @reads
    def current_versions(self, doc_iris: Iterable[str] | None = None) -> dict[str, DocumentVersion]:
        """The recorded current version of each document (all documents when ``None``)."""
        if doc_iris is None:
            rows = self._db.execute("SELECT * FROM versions")
        else:
            rows = self._db.execute(
                "SELECT * FROM versions WHERE doc_iri IN (SELECT value FROM json_each(?))",
                (json.dumps(list(doc_iris)),),
            )
        return {r[0]: DocumentVersion(*r) for r in rows}

    @reads
    def live_versions(self, doc_iris: Sequence[str]) -> dict[str, str]:
        """Each recorded document's current version alone (what a read's version check asks
        of tens of thousands of documents: the whole records cost three times as much)."""
        return dict(self._db.execute(
            "SELECT doc_iri, version FROM versions WHERE doc_iri IN (SELECT value FROM "
            "json_each(?))", (json.dumps(list(doc_iris)),)))

    @reads
    def state(self) -> tuple[int, int]:
        """The committed state read (``NumberedStates``): another one after any commit."""
        return self._db.state()

    @reads
    def document_rows(self, doc_iri: str) -> list[tuple[str, str | None, bool]]:
        """Every row of a document: ``(id, version, pending)``."""
        rows = self._db.execute(
            "SELECT id, version, pending FROM items WHERE doc_iri = ? ORDER BY id", (doc_iri,)
        )
        return [(r[0], r[1], bool(r[2])) for r in rows]

    @reads
    def managed_rows(self) -> list[tuple[str, str, str | None, bool]]:
        """``(id, doc_iri, version, pending)`` of every row that belongs to a document."""
        rows = self._db.execute(
            "SELECT id, doc_iri, version, pending FROM items WHERE doc_iri IS NOT NULL")
        return [(r[0], r[1], r[2], bool(r[3])) for r in rows]

    @reads
    def pending_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT id FROM items WHERE pending = 1 ORDER BY id")]

    def delete_document(self, doc_iri: str) -> int:
        """Remove every vector of a document and its version record; returns vectors removed."""
        with self._writing():  # the rows and the record go together
            removed = self._delete_ids([r[0] for r in self.document_rows(doc_iri)])
            self._db.execute("DELETE FROM versions WHERE doc_iri = ?", (doc_iri,))
        return removed
