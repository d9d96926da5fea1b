"""The store file and its in-memory scoring matrix: opening, writes, deletes and reads.

The file is the durable record; search is served from an exact float32 matrix loaded at open,
kept in step with every write and reloaded when another process commits (ADR 0002).

**One committed state per read.** Every read runs in a :meth:`SqliteCore.snapshot`: a SQLite
read transaction (WAL keeps its state however many commits follow) in which the matrix is first
brought to that state (``PRAGMA data_version`` read inside the transaction, so the version and
the rows it describes agree). ``retrieve`` holds one snapshot for its whole read, so the vector
ranking, the keyword ranking and the metadata of one answer come from one committed state.

**Threads.** A store object has one connection and one matrix, guarded by the matrix's
re-entrant lock: a snapshot and a write each hold it throughout, so the threads of a process
that share a store take turns (a snapshot pins the one matrix to its state; two at different
states could not share it). Threads that must read in parallel open a store (or a read-only
context) each; SQLite's WAL lets any number of connections read while one writes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from trails.errors import ConfigurationError
from trails.faults import corrupt_file
from trails.scopes import DEFAULT_SCOPE
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores.arrays import as_matrix, decode, encode, normalize_rows, optional_str
from trails.vector.stores.base import BaseVectorStore, VectorLike
from trails.vector.stores.matrix import VectorMatrix
from trails.vector.stores.records import SearchPlan, StoredVector, VectorHit
from trails.vector.stores.sqlite_vec import schema
from trails.vector.stores.sqlite_vec.driver import open_database
from trails.vector.stores.sqlite_vec.keyword import Fts5Index, take_texts, with_text

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["SqliteCore", "reads"]

F = TypeVar("F", bound=Callable[..., Any])


def reads(method: F) -> F:
    """Run ``method`` in its store's :meth:`~SqliteCore.snapshot` (joining one already held)."""
    @functools.wraps(method)
    def wrapper(self: SqliteCore, *args: Any, **kwargs: Any) -> Any:
        with self.snapshot():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]

# Columns promoted out of the JSON metadata so filters on them use an index.
_COLUMNS = ("doc_iri", "scope")
# json.dumps(m, default=str, sort_keys=True), with one encoder for every row instead of
# a new one per call (json.dumps builds one whenever it is given options).
_METADATA_JSON = json.JSONEncoder(default=str, sort_keys=True).encode


class SqliteCore(BaseVectorStore):
    """What every part of ``SqliteVecStore`` builds on: the connection (``_db``), the scoring
    matrix (``_index``, whose lock guards it and orders writes), the keyword index
    (``_keywords``) and the data version the matrix was loaded at (``_version``)."""

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        dim: int | None = None,
        *,
        embedder: EmbedderIdentity | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = str(path)
        self.read_only = read_only
        if read_only and (self.path == ":memory:" or not os.path.exists(self.path)):
            raise ConfigurationError(
                f"cannot open vector store {self.path!r} read-only: it does not exist yet; "
                "open it once without read_only=True to create it"
            )
        self._db = open_database(self.path, read_only=read_only)
        try:
            self._keywords = Fts5Index(self._db)
            self._dim = schema.prepare(self._db, self.path, dim, read_only)
            self._index = VectorMatrix(self._dim)
            self._version = -1  # the data version the matrix holds; -1: reload it
            with self.snapshot():
                pass  # loads the matrix
            if embedder is not None:
                self.bind_embedder(embedder)
        except BaseException:
            self._db.close()  # a refused or damaged file is not left open
            raise

    # -- identity -------------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        return schema.read_meta(self._db, key)

    @property
    def _label(self) -> str:
        return self.path

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        raw = self._meta("embedder")
        return None if raw is None else EmbedderIdentity.model_validate_json(raw)

    @property
    def context_id(self) -> str | None:
        """The id of the context this file belongs to (None: not recorded yet)."""
        return self._meta("context")

    def bind_context(self, context_id: str) -> None:
        """Record the context this file belongs to (``Context.open`` checks it)."""
        self._check_writable()
        with self._db.transaction():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('context', ?)", (context_id,))

    def _record_embedder(self, identity: EmbedderIdentity) -> None:
        with self._db.transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (identity.model_dump_json(),)
            )

    # -- loading and freshness ------------------------------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Self]:
        """Hold one committed state of the file for every read inside the block.

        Searches, keyword searches, metadata and version lookups inside see the same state,
        whatever other processes commit meanwhile; the matrix is brought to it on entry.
        Blocks nest. Other threads using this store object wait until the block ends; writing
        inside it raises a ConfigurationError.

        Raises:
            ConfigurationError: the store is closed.
            StorageError: the file cannot be read (ContextDamagedError: it is corrupt).

        >>> from trails.vector.stores.sqlite_vec import SqliteVecStore
        >>> store = SqliteVecStore(dim=2)
        >>> store.add("a", [1.0, 0.0])
        >>> with store.snapshot():
        ...     [hit.id for hit in store.search([1.0, 0.0])], store.count()
        (['a'], 1)
        """
        with self._index.lock, self._db.reading():
            self._refresh()
            yield self

    def _load(self) -> None:
        """Reload the matrix, in the read or write transaction the caller holds (so the data
        version recorded describes exactly the rows loaded)."""
        self._version = -1  # until the load completes
        self._index.clear()
        version = self._db.data_version()
        self._index_rows("WHERE i.pending = 0")
        self._version = version

    def _index_rows(self, where: str, params: Sequence[Any] = ()) -> None:
        """Put live rows matching ``where`` into the in-memory index."""
        rows = self._db.execute(
            "SELECT i.id, i.doc_iri, i.scope, v.embedding FROM items i"
            f" JOIN vec_items v ON v.rowid = i.rowid {where}",
            params,
        )
        if rows:
            width = 4 * self._dim
            if any(not isinstance(r[3], bytes) or len(r[3]) != width for r in rows):
                raise corrupt_file(self.path, f"a stored vector is not {self._dim} float32 "
                                              "values")
            unit = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(-1, self._dim)
            self._index.upsert([r[0] for r in rows], unit, [r[1] for r in rows],
                               [r[2] for r in rows])

    def _refresh(self) -> None:
        """Reload if another process committed since we last looked (cheap pragma check), or
        if a failed write left the matrix unsure. Inside a snapshot or write transaction."""
        if self._version == -1 or (self.path != ":memory:"
                                   and self._db.data_version() != self._version):
            self._load()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write transaction under the matrix lock, the matrix brought to the file's state
        first. The matrix changes inside too; if anything fails (the commit included: a full
        disk), the file rolls back and the matrix is reloaded at the next read."""
        self._check_writable()
        with self._index.lock:
            try:
                with self._db.transaction():
                    # Inside BEGIN IMMEDIATE no other connection can commit, and this
                    # connection's own commits leave data_version as it is: the version
                    # recorded here stays the matrix's after COMMIT.
                    self._refresh()
                    yield
            except BaseException:
                self._version = -1
                raise

    # -- writes ---------------------------------------------------------------------------

    def _write(self, ids: list[str], unit: np.ndarray, metas: list[dict[str, Any]],
               pending: bool) -> None:
        """``add_many`` in one transaction: all rows are stored, or none."""
        texts = take_texts(metas)  # stored once, in items.text (see schema.m003)
        payload = [_METADATA_JSON(m) for m in metas]
        with self._writing():
            rowids = self._assign_rowids(ids)
            self._db.executemany(
                "INSERT OR REPLACE INTO items(rowid, id, metadata, doc_iri, scope, version,"
                " pending) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (r, i, p, optional_str(m.get("doc_iri")), _scope(m),
                     optional_str(m.get("version")), int(pending))
                    for r, i, p, m in zip(rowids, ids, payload, metas)
                ],
            )
            self._db.executemany("DELETE FROM vec_items WHERE rowid = ?", [(r,) for r in rowids])
            self._db.executemany(
                "INSERT INTO vec_items(rowid, embedding) VALUES (?, ?)",
                [(r, encode(v)) for r, v in zip(rowids, unit)],
            )
            self._keywords.write(rowids, texts, pending)
            if pending:
                self._index.remove(ids)  # a staged id replaces any live row of the same id
            else:
                self._index.upsert(ids, unit, [optional_str(m.get("doc_iri")) for m in metas],
                                   [_scope(m) for m in metas])

    def _assign_rowids(self, ids: list[str]) -> list[int]:
        existing = dict(
            self._db.execute(
                "SELECT id, rowid FROM items WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            )
        )
        next_rowid = int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM items")[0][0]) + 1
        rowids = []
        for id in ids:
            if id not in existing:
                existing[id] = next_rowid
                next_rowid += 1
            rowids.append(existing[id])
        return rowids

    def _delete_matching(self, filters: Mapping[str, Any]) -> int:
        clauses, params = [], []
        for key, value in filters.items():
            if key in _COLUMNS:
                clauses.append(f"{key} = ?")
                params.append(optional_str(value))
            elif key == "text":  # kept in its own column (m003), or in older rows' JSON
                clauses.append("COALESCE(text, json_extract(metadata, '$.text')) = ?")
                params.append(value)
            else:
                clauses.append(f"json_extract(metadata, '$.{key}') = ?")
                params.append(value)
        with self._writing():  # the ids and their deletion: one transaction
            rows = self._db.execute(f"SELECT id FROM items WHERE {' AND '.join(clauses)}", params)
            return self._delete_ids([r[0] for r in rows])

    def _delete_ids(self, ids: list[str]) -> int:
        self._check_writable()
        if not ids:
            return 0
        with self._writing():
            found = self._db.execute(
                "SELECT id, rowid FROM items WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            )
            rowids = [(r[1],) for r in found]
            self._keywords.forget([r[1] for r in found])
            self._db.executemany("DELETE FROM vec_items WHERE rowid = ?", rowids)
            self._db.executemany("DELETE FROM items WHERE rowid = ?", rowids)
            self._index.remove(r[0] for r in found)
        return len(found)

    # -- reads ----------------------------------------------------------------------------

    @reads
    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        ranked, plan, candidates = self._index.search(query, k, self._rows(ids, scopes))
        return self._hits(ranked, with_metadata), SearchPlan(plan, candidates, exhaustive=True)

    def _hits(self, ranked: list[tuple[str, float]], with_metadata: bool) -> list[VectorHit]:
        metadata = self._metadata([id for id, _ in ranked]) if with_metadata else {}
        return [VectorHit(id, score, metadata.get(id, {})) for id, score in ranked]

    def _rows(self, ids: Iterable[str] | None, scopes: Sequence[str] | None) -> np.ndarray | None:
        """In a snapshot: the index rows named by ``ids`` (vector ids or document IRIs) and in
        ``scopes``; None when that is every row."""
        rows = None if ids is None else self._index.rows_for(ids)
        if scopes is not None:
            rows = self._index.in_scopes(list(scopes), rows)
            if ids is None and len(rows) == len(self._index):
                rows = None  # every row is in scope: a plain full scan
        return rows

    @reads
    def expand_ids(self, iris: Iterable[str]) -> list[str]:
        """Vector ids named by ``iris``: the ids themselves, or the chunks of document IRIs."""
        ids = self._index.ids
        return [ids[r] for r in self._index.rows_for(iris)]

    @reads
    def metadata(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The metadata of the ids that exist, as search hits carry it (no vectors read)."""
        return self._metadata(list(ids))

    def _metadata(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        rows = self._db.execute(
            "SELECT id, metadata, text FROM items WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
        return {r[0]: with_text(r[1], r[2]) for r in rows}

    @reads
    def get(self, ids: Iterable[str]) -> list[StoredVector]:
        """Stored vectors (unit-normalised) and metadata for the ids that exist, in input order."""
        wanted = list(ids)
        rows = self._db.execute(
            "SELECT i.id, i.metadata, v.embedding, i.text FROM items i"
            " JOIN vec_items v ON v.rowid = i.rowid"
            " WHERE i.id IN (SELECT value FROM json_each(?))",
            (json.dumps(wanted),),
        )
        found = {r[0]: StoredVector(r[0], decode(r[2]).tolist(), with_text(r[1], r[3])) for r in rows}
        return [found[i] for i in wanted if i in found]

    @reads
    def all_ids(self) -> list[str]:
        """Ids of live vectors, sorted."""
        return [r[0] for r in self._db.execute("SELECT id FROM items WHERE pending = 0 ORDER BY id")]

    @reads
    def scopes(self) -> list[str]:
        """The scopes that hold live vectors (a vector without one is in the default scope)."""
        rows = self._db.execute(
            "SELECT DISTINCT COALESCE(scope, ?) FROM items WHERE pending = 0", (DEFAULT_SCOPE,))
        return sorted(str(r[0]) for r in rows)

    @reads
    def count(self) -> int:
        """Live vectors (staged ones are not counted until published)."""
        return int(self._db.execute("SELECT COUNT(*) FROM items WHERE pending = 0")[0][0])

    @reads
    def knn_sqlite_vec(self, vector: VectorLike, k: int = 10) -> list[tuple[str, float]]:
        """sqlite-vec's own ``vec0`` KNN (approximately the same ranking, computed in SQL).

        Kept for comparison and for SQL users; ``search`` is the exact, faster path.
        """
        query = encode(normalize_rows(as_matrix(vector, self._dim))[0])
        rows = self._db.execute(
            "SELECT i.id, v.distance FROM vec_items v JOIN items i ON i.rowid = v.rowid"
            " WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance",
            (query, k),
        )
        return [(r[0], 1.0 - float(r[1])) for r in rows]

    @property
    def matrix(self) -> VectorMatrix:
        """The in-memory scoring index (read it, never write it)."""
        with self.snapshot():
            return self._index

    @property
    def closed(self) -> bool:
        return self._db.closed

    def close(self) -> None:
        """Close the file (safe to call twice); any later call raises a ConfigurationError
        saying the store is closed."""
        self._db.close()


def _scope(metadata: Mapping[str, Any]) -> str:
    return str(metadata.get("scope") or DEFAULT_SCOPE)
