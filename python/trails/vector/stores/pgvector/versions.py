"""Versioned commits in PostgreSQL (ADR 0005): staged rows, ``publish``, version records.

A document version's rows are written ``pending`` (``add_many(..., pending=True)``);
:meth:`PgVersions.publish` makes them live, deletes the document's other rows and records the
version in one transaction: the commit point of an ingest. A crash (of the client, the
connection or the server) before PostgreSQL commits leaves the previous version fully live;
after it, the new one.

Readers: :meth:`PgVersions.snapshot` holds one REPEATABLE READ transaction for the block, so
every read in it (vector and keyword rankings, version records, metadata) sees one committed
state, whatever a writer commits meanwhile.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trails.vector.stores import arguments
from trails.vector.stores.pgvector import schema
from trails.vector.stores.pgvector.core import PgCore
from trails.vector.stores.records import DocumentVersion

if TYPE_CHECKING:
    from typing import Self

__all__ = ["PgVersions"]


class PgVersions(PgCore):
    """:class:`~trails.vector.stores.base.VersionedStore` on ``<table>`` and
    ``<table>__versions``."""

    def publish(self, versions: Sequence[DocumentVersion]) -> None:
        """Make staged document versions current, in one transaction (the commit point).

        For each document: its staged rows of ``version`` go live, every other row of the
        document (the previous version, abandoned stagings) is deleted, and the version is
        recorded."""
        self._check_writable()
        versions = arguments.check_versions(versions)
        if not versions:
            return
        docs = [v.doc_iri for v in versions]
        kept = [v.version for v in versions]

        def work(conn: Any) -> None:
            pairs = "SELECT * FROM unnest(%s::text[], %s::text[]) AS v(doc_iri, version)"
            conn.execute(self._sql(
                "DELETE FROM {items} i USING (" + pairs + ") v WHERE i.doc_iri = v.doc_iri"
                " AND i.version IS DISTINCT FROM v.version"), (docs, kept))
            conn.execute(self._sql(
                "UPDATE {items} i SET pending = false FROM (" + pairs + ") v"
                " WHERE i.doc_iri = v.doc_iri AND i.version = v.version AND i.pending"),
                (docs, kept))
            with conn.cursor() as cur:
                cur.executemany(self._sql(
                    "INSERT INTO {versions} VALUES (%s, %s, %s, %s, %s) ON CONFLICT (doc_iri)"
                    " DO UPDATE SET version = EXCLUDED.version, scope = EXCLUDED.scope,"
                    " content_hash = EXCLUDED.content_hash, chunks = EXCLUDED.chunks"),
                    [tuple(v) for v in versions])

        self._run(work, write=True)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Self]:
        """Hold one committed state for the reads inside the block (a REPEATABLE READ
        transaction on a connection of this thread's own). Blocks nest; other threads read
        on their own connections meanwhile.

        Raises:
            ConfigurationError: the store is closed.
            EndpointUnavailableError: the server cannot be reached.
        """
        with self._pinned():
            yield self

    def revision(self) -> str | None:
        """The stamp the last commit left (in a snapshot: the snapshot's); the same in every
        process (:class:`~trails.vector.stores.base.RevisionedStore`)."""
        found = self._run(lambda conn: conn.execute(self._sql(
            "SELECT revision FROM {meta}")).fetchone())
        return None if found is None else str(found[0])

    def state(self) -> str | None:
        """The committed state read (:class:`~trails.vector.stores.base.NumberedStates`)."""
        return self.revision()

    def update_payload(self, doc_iri: str, fields: Mapping[str, Any]) -> int:
        """Set metadata ``fields`` on every row of a document, in one transaction (a
        metadata-only change: no vector is touched); a None value removes the field.
        Returns how many rows the document has.

        Each row is then what ``add_many`` makes of its new metadata: the promoted columns
        (``scope``...), the keyword text and its index follow, so keyword and scoped searches
        answer as if the rows had been written with it."""
        self._check_writable()
        patch = arguments.check_payload_fields(fields)
        if not schema.held([doc_iri]):
            return 0

        def work(conn: Any) -> int:
            found = conn.execute(self._sql(
                "SELECT id, metadata, pending FROM {items} WHERE doc_iri = %s ORDER BY id"
                " FOR UPDATE"), (doc_iri,)).fetchall()
            rows = [schema.row(id, None, {k: v for k, v in {**old, **patch}.items()
                                          if v is not None}, pending)
                    for id, old, pending in found]
            self._rewrite_rows(conn, rows)
            return len(rows)

        return self._run(work, write=True)

    def current_versions(self, doc_iris: Iterable[str] | None = None
                         ) -> dict[str, DocumentVersion]:
        """The recorded current version of each document (all documents when ``None``)."""
        query, params = "SELECT * FROM {versions}", list[Any]()
        if doc_iris is not None:
            query, params = query + " WHERE doc_iri = ANY(%s)", [schema.held(doc_iris)]
        rows = self._run(lambda conn: conn.execute(self._sql(query), params).fetchall())
        return {r[0]: DocumentVersion(*r) for r in rows}

    def document_rows(self, doc_iri: str) -> list[tuple[str, str | None, bool]]:
        """Every row of a document: ``(id, version, pending)``, by id."""
        if not schema.held([doc_iri]):
            return []
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id, version, pending FROM {items} WHERE doc_iri = %s ORDER BY id"),
            (doc_iri,)).fetchall())
        return [(r[0], r[1], bool(r[2])) for r in rows]

    def managed_rows(self) -> list[tuple[str, str, str | None, bool]]:
        """``(id, doc_iri, version, pending)`` of every row that belongs to a document, by id."""
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id, doc_iri, version, pending FROM {items} WHERE doc_iri IS NOT NULL"
            " ORDER BY id")).fetchall())
        return [(r[0], r[1], r[2], bool(r[3])) for r in rows]

    def pending_ids(self) -> list[str]:
        rows = self._run(lambda conn: conn.execute(self._sql(
            "SELECT id FROM {items} WHERE pending ORDER BY id")).fetchall())
        return [r[0] for r in rows]

    def delete_document(self, doc_iri: str) -> int:
        """Remove every vector of a document and its version record, in one transaction;
        returns vectors removed."""
        if not schema.held([doc_iri]):
            self._check_writable()
            return 0

        def work(conn: Any) -> int:
            conn.execute(self._sql("DELETE FROM {versions} WHERE doc_iri = %s"), (doc_iri,))
            return len(conn.execute(self._sql(
                "DELETE FROM {items} WHERE doc_iri = %s RETURNING id"), (doc_iri,)).fetchall())

        return self._run(work, write=True)
