"""SqliteVecStore: vectors durable in one SQLite file (sqlite-vec), scored exactly in memory."""

from __future__ import annotations

import heapq
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from trails.errors import ConfigurationError, DimensionMismatchError
from trails.rank.keyword import fts5_match, keyword_terms
from trails.scopes import DEFAULT_SCOPE
from trails.vector.stores._sqlite import Database, open_database
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores.matrix import VectorMatrix
from trails.vector.stores.base import (
    BaseVectorStore,
    DocumentVersion,
    SearchPlan,
    StoredVector,
    VectorHit,
    VectorLike,
    as_matrix,
    decode,
    encode,
    normalize_rows,
    optional_str,
)

__all__ = ["DocumentVersion", "SqliteVecStore"]

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Columns promoted out of the JSON metadata so filters on them use an index.
_COLUMNS = ("doc_iri", "scope")
# json.dumps(m, default=str, sort_keys=True), with one encoder for every row instead of
# a new one per call (json.dumps builds one whenever it is given options).
_METADATA_JSON = json.JSONEncoder(default=str, sort_keys=True).encode
# The keyword index's tokenizer: Porter stemming over unicode61 words with diacritics removed
# (the Anserini/Pyserini BM25 baselines stem too).
KEYWORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
# What a row's keyword index entry holds: its full text, else its snippet.
_INDEXED = "COALESCE(text, metadata ->> '$.text', metadata ->> '$.snippet', '')"


def m001_create_tables(db: Database, dim: int) -> None:
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        "CREATE TABLE items (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
        " metadata TEXT NOT NULL, doc_iri TEXT, scope TEXT)"
    )
    db.execute("CREATE INDEX items_doc_iri ON items(doc_iri)")
    db.execute("CREATE INDEX items_scope ON items(scope)")
    db.execute(
        f"CREATE VIRTUAL TABLE vec_items USING vec0(embedding float[{dim}] distance_metric=cosine)"
    )
    db.execute("INSERT INTO meta VALUES ('dim', ?)", (str(dim),))


def m002_document_versions(db: Database, dim: int) -> None:
    """Staged (pending) vectors and the table of current document versions.

    A document version's vectors are written ``pending``; publishing flips them live and drops
    the previous version's in one transaction: the commit point of an ingest (ADR 0005).
    """
    db.execute("ALTER TABLE items ADD COLUMN version TEXT")
    db.execute("ALTER TABLE items ADD COLUMN pending INTEGER NOT NULL DEFAULT 0")
    db.execute("CREATE INDEX items_pending ON items(pending) WHERE pending = 1")
    db.execute(
        "CREATE TABLE versions (doc_iri TEXT PRIMARY KEY, version TEXT NOT NULL, scope TEXT,"
        " content_hash TEXT, chunks INTEGER NOT NULL)"
    )


def m003_keyword_index(db: Database, dim: int) -> None:
    """Keyword (BM25) ranking over chunk text: an FTS5 index of every live row (ADR 0009).

    ``items.text`` holds the full text a caller passes as metadata ``text`` (once: it is taken
    out of the JSON); a row without it is indexed by its ``snippet``. ``keyword_index`` is a
    *contentless* FTS5 table keyed by ``items.rowid``: the index alone, the text staying in
    ``items``. Not external-content (``content='items'``): such an index must be told the exact
    old text of every row it forgets, and a wrong text corrupts it silently, while a
    contentless table with ``contentless_delete=1`` (SQLite 3.43+) forgets a row by rowid. An
    older SQLite gets a plain FTS5 table (its own copy of the text) driven by the same
    statements. Only live rows are indexed; ``publish`` indexes staged rows as they go live,
    so BM25 statistics never count a row that search cannot show.
    """
    db.execute("ALTER TABLE items ADD COLUMN text TEXT")
    version = tuple(int(p) for p in db.execute("SELECT sqlite_version()")[0][0].split(".")[:2])
    content = "content = '', contentless_delete = 1, " if version >= (3, 43) else ""
    try:
        db.execute(f"CREATE VIRTUAL TABLE keyword_index USING fts5(text, {content}"
                   f"tokenize = '{KEYWORD_TOKENIZER}')")
    except Exception as exc:
        if "fts5" not in str(exc).lower():
            raise
        raise ConfigurationError(
            "this SQLite has no FTS5, which the vector store's keyword index needs; install "
            'apsw, whose SQLite has it: pip install "trails[vector]"') from exc
    db.execute(f"INSERT INTO keyword_index(rowid, text) SELECT rowid, {_INDEXED} AS t"
               " FROM items WHERE pending = 0 AND t != ''")


MIGRATIONS = [m001_create_tables, m002_document_versions, m003_keyword_index]


class SqliteVecStore(BaseVectorStore):
    """The embedded vector store: one SQLite file holding a sqlite-vec ``vec0`` table.

    The file is the durable record (readable by any sqlite-vec client). Search is served from
    an exact in-memory float32 matrix loaded at open and kept in step with every write, and
    reloaded when another process commits; see ``adr/0002-exact-scoring-matrix.md``.

    Args:
        path: a file path, or ``":memory:"`` for a store that lives as long as the object.
        dim: vector dimension; required for a new store, checked against a persisted one.
        embedder: optional identity to record (new store) or check (persisted store).
        read_only: open an existing file without writing to it.

    Raises:
        DimensionMismatchError: ``dim`` differs from the persisted dimension.
        EmbeddingModelMismatchError: ``embedder`` differs from the recorded identity.
        MissingExtraError: sqlite-vec (or a SQLite that can load it) is not installed.

    >>> store = SqliteVecStore(dim=3)
    >>> store.add("a", [1.0, 0.0, 0.0], {"snippet": "x"})
    >>> [hit.id for hit in store.search([1.0, 0.1, 0.0], k=1)]
    ['a']
    """

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
        self._stemmer_ready = False  # the temp tables keyword_idf_sum reads stems through
        if read_only and (self.path == ":memory:" or not os.path.exists(self.path)):
            raise ConfigurationError(
                f"cannot open vector store {self.path!r} read-only: it does not exist yet; "
                "open it once without read_only=True to create it"
            )
        self._db = open_database(self.path, read_only=read_only)
        self._dim = self._prepare_schema(dim)
        self._index = VectorMatrix(self._dim)
        self._version = -1
        self._load()
        if embedder is not None:
            self.bind_embedder(embedder)

    # -- schema and identity --------------------------------------------------------------

    def _prepare_schema(self, dim: int | None) -> int:
        exists = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        )
        if not exists:
            if dim is None or dim < 1:
                raise ConfigurationError(
                    f"a new vector store needs its dimension: pass dim=... (got {dim!r})"
                )
            if self.read_only:
                raise ConfigurationError(f"{self.path!r} is not a trails vector store")
            if self.path != ":memory:":  # the journal suited to one writer and many readers
                self._db.execute("PRAGMA journal_mode = WAL")
            self._migrate(0, dim)
            return dim
        stored = int(self._meta("dim"))
        if dim is not None and dim != stored:
            raise DimensionMismatchError(
                f"vector store {self.path!r} holds {stored}-dimensional vectors but dim={dim} "
                f"was requested; use an embedder of dimension {stored} or a new store path"
            )
        applied = int(self._meta("schema") or 1)
        if applied < len(MIGRATIONS):
            if self.read_only:
                raise ConfigurationError(
                    f"vector store {self.path!r} uses an older schema; open it once without "
                    "read_only=True to upgrade it"
                )
            self._migrate(applied, stored)
        return stored

    def _migrate(self, applied: int, dim: int) -> None:
        with self._db.transaction():
            for migration in MIGRATIONS[applied:]:
                migration(self._db, dim)
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(len(MIGRATIONS)),)
            )

    def _meta(self, key: str) -> str | None:
        rows = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    @property
    def _label(self) -> str:
        return self.path

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        raw = self._meta("embedder")
        return None if raw is None else EmbedderIdentity.model_validate_json(raw)

    def _record_embedder(self, identity: EmbedderIdentity) -> None:
        with self._db.transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (identity.model_dump_json(),)
            )

    # -- loading and freshness ------------------------------------------------------------

    def _load(self) -> None:
        self._index.clear()
        self._index_rows("WHERE i.pending = 0")
        self._version = self._db.data_version()

    def _index_rows(self, where: str, params: Sequence[Any] = ()) -> None:
        """Put live rows matching ``where`` into the in-memory index."""
        rows = self._db.execute(
            "SELECT i.id, i.doc_iri, i.scope, v.embedding FROM items i"
            f" JOIN vec_items v ON v.rowid = i.rowid {where}",
            params,
        )
        if rows:
            unit = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(-1, self._dim)
            self._index.upsert([r[0] for r in rows], unit, [r[1] for r in rows],
                               [r[2] for r in rows])

    def _refresh(self) -> None:
        """Reload if another process committed since we last looked (cheap pragma check)."""
        if self.path != ":memory:" and self._db.data_version() != self._version:
            self._load()

    # -- writes ---------------------------------------------------------------------------

    def add_many(
        self,
        ids: Sequence[str],
        vectors: Sequence[VectorLike] | np.ndarray,
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
        *,
        pending: bool = False,
    ) -> None:
        """Insert or replace vectors in one transaction: all are stored, or none.

        ``pending=True`` stages them: stored durably but invisible to search until
        :meth:`publish` makes their document version current."""
        ids, unit, metas = self._checked_batch(ids, vectors, metadata)
        if not ids:
            return
        texts = _take_texts(metas)  # stored once, in items.text (see m003)
        payload = [_METADATA_JSON(m) for m in metas]
        with self._index.lock:
            with self._db.transaction():
                # Inside BEGIN IMMEDIATE no other connection can commit, so the version read
                # here and the one recorded after COMMIT describe the same, loaded state.
                self._refresh()
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
                self._keyword_write(rowids, texts, pending)
            if pending:
                self._index.remove(ids)  # a staged id replaces any live row of the same id
            else:
                self._index.upsert(ids, unit, [optional_str(m.get("doc_iri")) for m in metas],
                                   [_scope(m) for m in metas])
            self._version = self._db.data_version()

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

    def publish(self, versions: Sequence[DocumentVersion]) -> None:
        """Make staged document versions current, in one transaction (the commit point).

        For each document: its staged rows of ``version`` go live, every other row of the
        document (the previous version, abandoned stagings) is deleted, and the version is
        recorded. A crash before the commit leaves the previous version fully live; after it,
        the new one.
        """
        self._check_writable()
        if not versions:
            return
        pairs = json.dumps([[v.doc_iri, v.version] for v in versions])
        with self._index.lock:
            self._refresh()
            with self._db.transaction():
                gone = self._db.execute(
                    "SELECT i.id, i.rowid FROM items i JOIN json_each(?) j"
                    " ON i.doc_iri = j.value ->> 0 AND i.version IS NOT j.value ->> 1",
                    (pairs,),
                )
                self._keyword_publish([r[1] for r in gone], pairs)
                self._db.executemany("DELETE FROM vec_items WHERE rowid = ?", [(r[1],) for r in gone])
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
            self._index.remove(r[0] for r in gone)
            self._index_rows(
                "JOIN json_each(?) j ON i.doc_iri = j.value ->> 0 AND i.version = j.value ->> 1",
                (pairs,),
            )
            self._version = self._db.data_version()

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

    def document_rows(self, doc_iri: str) -> list[tuple[str, str | None, bool]]:
        """Every row of a document: ``(id, version, pending)``."""
        rows = self._db.execute(
            "SELECT id, version, pending FROM items WHERE doc_iri = ? ORDER BY id", (doc_iri,)
        )
        return [(r[0], r[1], bool(r[2])) for r in rows]

    def managed_rows(self) -> list[tuple[str, str, str | None, bool]]:
        """``(id, doc_iri, version, pending)`` of every row that belongs to a document."""
        rows = self._db.execute(
            "SELECT id, doc_iri, version, pending FROM items WHERE doc_iri IS NOT NULL")
        return [(r[0], r[1], r[2], bool(r[3])) for r in rows]

    def pending_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT id FROM items WHERE pending = 1 ORDER BY id")]

    def delete_document(self, doc_iri: str) -> int:
        """Remove every vector of a document and its version record; returns vectors removed."""
        self._check_writable()
        with self._index.lock:
            removed = self._delete_ids([r[0] for r in self.document_rows(doc_iri)])
            with self._db.transaction():
                self._db.execute("DELETE FROM versions WHERE doc_iri = ?", (doc_iri,))
            self._version = self._db.data_version()
        return removed

    def delete_where(self, filters: Mapping[str, Any]) -> int:
        """Remove every vector whose metadata equals all of ``filters``; returns how many.

        >>> store = SqliteVecStore(dim=2)
        >>> store.add_many(["a", "b"], [[1, 0], [0, 1]], [{"doc_iri": "d1"}, {"doc_iri": "d2"}])
        >>> store.delete_where({"doc_iri": "d1"}), store.count()
        (1, 1)
        """
        if not filters:
            raise ValueError("delete_where needs at least one filter; to empty a store use a new one")
        clauses, params = [], []
        for key, value in filters.items():
            if not _KEY.match(key):
                raise ValueError(f"metadata key {key!r} must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")
            if key in _COLUMNS:
                clauses.append(f"{key} = ?")
                params.append(optional_str(value))
            elif key == "text":  # kept in its own column (m003), or in older rows' JSON
                clauses.append("COALESCE(text, json_extract(metadata, '$.text')) = ?")
                params.append(value)
            else:
                clauses.append(f"json_extract(metadata, '$.{key}') = ?")
                params.append(value)
        rows = self._db.execute(f"SELECT id FROM items WHERE {' AND '.join(clauses)}", params)
        return self._delete_ids([r[0] for r in rows])

    def _delete_ids(self, ids: list[str]) -> int:
        self._check_writable()
        if not ids:
            return 0
        with self._index.lock:
            with self._db.transaction():
                self._refresh()  # under the write lock: see add_many
                found = self._db.execute(
                    "SELECT id, rowid FROM items WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                )
                rowids = [(r[1],) for r in found]
                self._keyword_forget([r[1] for r in found])
                self._db.executemany("DELETE FROM vec_items WHERE rowid = ?", rowids)
                self._db.executemany("DELETE FROM items WHERE rowid = ?", rowids)
            self._index.remove(r[0] for r in found)
            self._version = self._db.data_version()
        return len(found)

    # -- reads ----------------------------------------------------------------------------

    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        with self._index.lock:
            ranked, plan, candidates = self._index.search(query, k, self._rows(ids, scopes))
        metadata = self._metadata([id for id, _ in ranked]) if with_metadata else {}
        hits = [VectorHit(id, score, metadata.get(id, {})) for id, score in ranked]
        return hits, SearchPlan(plan, candidates, exhaustive=True)

    def _rows(self, ids: Iterable[str] | None, scopes: Sequence[str] | None) -> np.ndarray | None:
        """Under the index lock, after a refresh: the index rows named by ``ids`` (vector ids or
        document IRIs) and in ``scopes``; None when that is every row."""
        self._refresh()
        rows = None if ids is None else self._index.rows_for(ids)
        if scopes is not None:
            rows = self._index.in_scopes(list(scopes), rows)
            if ids is None and len(rows) == len(self._index):
                rows = None  # every row is in scope: a plain full scan
        return rows

    def expand_ids(self, iris: Iterable[str]) -> list[str]:
        """Vector ids named by ``iris``: the ids themselves, or the chunks of document IRIs."""
        with self._index.lock:
            self._refresh()
            ids = self._index.ids
            return [ids[r] for r in self._index.rows_for(iris)]

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
        return {r[0]: _with_text(r[1], r[2]) for r in rows}

    def get(self, ids: Iterable[str]) -> list[StoredVector]:
        """Stored vectors (unit-normalised) and metadata for the ids that exist, in input order."""
        wanted = list(ids)
        rows = self._db.execute(
            "SELECT i.id, i.metadata, v.embedding, i.text FROM items i"
            " JOIN vec_items v ON v.rowid = i.rowid"
            " WHERE i.id IN (SELECT value FROM json_each(?))",
            (json.dumps(wanted),),
        )
        found = {r[0]: StoredVector(r[0], decode(r[2]).tolist(), _with_text(r[1], r[3])) for r in rows}
        return [found[i] for i in wanted if i in found]

    def all_ids(self) -> list[str]:
        """Ids of live vectors, sorted."""
        return [r[0] for r in self._db.execute("SELECT id FROM items WHERE pending = 0 ORDER BY id")]

    def count(self) -> int:
        """Live vectors (staged ones are not counted until published)."""
        return int(self._db.execute("SELECT COUNT(*) FROM items WHERE pending = 0")[0][0])

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
        self._refresh()
        return self._index

    # -- keyword index (ADR 0009) ---------------------------------------------------------

    def keyword_search(
        self,
        query: str,
        k: int = 10,
        ids: Iterable[str] | None = None,
        *,
        scopes: Sequence[str] | None = None,
        stopwords: Iterable[str] | None = None,
        with_metadata: bool = True,
    ) -> list[VectorHit]:
        """Top-``k`` live rows by BM25 over their text (SQLite FTS5), optionally over ``ids``.

        ``ids`` and ``scopes`` restrict exactly as in :meth:`search`: the result is the full
        ranking filtered to the admitted rows, cut to ``k`` (BM25 statistics are those of every
        live row of the store). The query is a bag of words (see
        :func:`trails.rank.keyword.keyword_terms`; ``stopwords`` as there), never FTS5 syntax;
        a query without words gives ``[]``. Scores are positive, higher is better (FTS5's
        ``bm25()`` negated), sorted by score descending, ties by id. ``with_metadata`` as in
        :meth:`search_with_plan`.

        >>> store = SqliteVecStore(dim=2)
        >>> store.add_many(["a", "b"], [[1, 0], [0, 1]],
        ...                [{"text": "Rails routing"}, {"text": "Ruby on Rails: a web framework"}])
        >>> [hit.id for hit in store.keyword_search("routes in rails", k=2)]
        ['a', 'b']
        """
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        match = fts5_match(keyword_terms(query, stopwords))
        if match is None or k == 0:
            return []
        with self._index.lock:
            rows = self._rows(ids, scopes)
            if rows is None:  # rank every row
                ranked = self._keyword_top(match, k)
            elif not len(rows):
                ranked = []
            elif ids is None:  # scopes only: items.scope is the scope the index's rows carry
                ranked = self._keyword_in_scopes(match, k, list(scopes or ()))
            else:
                names = self._index.ids
                ranked = self._keyword_among(match, k, [names[r] for r in rows.tolist()])
        metadata = self._metadata([id for id, _ in ranked]) if with_metadata else {}
        return [VectorHit(id, score, metadata.get(id, {})) for id, score in ranked]

    def keyword_idf_sum(self, query: str, *, stopwords: Iterable[str] | None = None) -> float:
        """The BM25 weight of ``query`` here: the sum, over its distinct terms as the keyword
        index holds them (Porter stems), of the IDF that FTS5's ``bm25()`` gives each term.

        It is about what a document holding each query term once, at average length, scores
        (BM25's term-frequency part is 1 there), so the best keyword score over it says how
        much of the query the best match covers: ``retrieve`` passes that ratio to fusion as
        the keyword ranking's quality (:class:`trails.rank.fusion.AutoFusion`). A term no row
        holds counts in full. 0.0 for a query without words.

        >>> store = SqliteVecStore(dim=2)
        >>> store.add_many(["a", "b", "c"], [[1, 0], [0, 1], [1, 1]],
        ...                [{"text": "rails routing"}, {"text": "ruby"}, {"text": "go"}])
        >>> round(store.keyword_idf_sum("routes"), 4)  # "rout": 1 of 3 rows
        0.5108
        """
        terms = keyword_terms(query, stopwords)
        if not terms:
            return 0.0
        with self._index.lock:
            self._refresh()
            rows = len(self._index)
            stems = self._stems(" ".join(terms))
            total = 0.0
            for stem in stems:
                found = self._db.execute(
                    "SELECT doc FROM temp.trails_keyword_vocab WHERE term = ?", (stem,))
                total += _bm25_idf(rows, found[0][0] if found else 0)
        return total

    def _stems(self, text: str) -> list[str]:
        """Under the index lock: the distinct terms the keyword index's tokenizer makes of
        ``text``, read back through a scratch FTS5 table in this connection's temp schema."""
        if not self._stemmer_ready:
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.trails_keyword_vocab"
                " USING fts5vocab(main, keyword_index, row)")
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.trails_query_terms"
                f" USING fts5(text, tokenize = '{KEYWORD_TOKENIZER}')")
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.trails_query_vocab"
                " USING fts5vocab(temp, trails_query_terms, row)")
            self._stemmer_ready = True
        self._db.execute("INSERT INTO temp.trails_query_terms(text) VALUES (?)", (text,))
        try:
            return [row[0] for row in self._db.execute("SELECT term FROM temp.trails_query_vocab")]
        finally:
            self._db.execute("DELETE FROM temp.trails_query_terms")

    def _keyword_top(self, match: str, k: int) -> list[tuple[str, float]]:
        """The top k of every live row: FTS5 sorts, we only break a tie at the k-th place."""
        rows = self._db.execute(
            "SELECT i.id, f.s FROM (SELECT rowid, bm25(keyword_index) AS s FROM keyword_index"
            " WHERE keyword_index MATCH ? ORDER BY s LIMIT ?) f JOIN items i ON i.rowid = f.rowid",
            (match, k + 1))
        rows.sort(key=lambda r: (r[1], r[0]))
        if len(rows) > k and rows[k][1] == rows[k - 1][1]:
            return self._keyword_among(match, k, None)  # a tie crosses the cut: order them all
        return [(id, -s) for id, s in rows[:k]]

    def _keyword_in_scopes(self, match: str, k: int, scopes: list[str]) -> list[tuple[str, float]]:
        rows = self._db.execute(
            "SELECT i.id, f.s FROM (SELECT rowid, bm25(keyword_index) AS s FROM keyword_index"
            " WHERE keyword_index MATCH ?) f JOIN items i ON i.rowid = f.rowid"
            " WHERE i.scope IN (SELECT value FROM json_each(?)) ORDER BY f.s, i.id LIMIT ?",
            (match, json.dumps(scopes), k))
        return [(id, -s) for id, s in rows]

    def _keyword_among(self, match: str, k: int, allowed: list[str] | None) -> list[tuple[str, float]]:
        """The top k of the matching rows whose ids are ``allowed`` (all when None).

        FTS5 scores every match (its cost: the bm25() call per row); we keep the allowed
        rowids, take the k best scores and any ties with the k-th, and only then look up ids."""
        rows = self._db.execute(
            "SELECT rowid, bm25(keyword_index) FROM keyword_index WHERE keyword_index MATCH ?",
            (match,))
        if allowed is not None:
            wanted = {r[0] for r in self._db.execute(
                "SELECT rowid FROM items WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(allowed),))}
            rows = [r for r in rows if r[0] in wanted]
        top = heapq.nsmallest(k, rows, key=lambda r: r[1])
        if not top:
            return []
        tied = [r for r in rows if r[1] <= top[-1][1]]  # the k best, and any tie with the k-th
        names = dict(self._db.execute(
            "SELECT rowid, id FROM items WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([r[0] for r in tied]),)))
        ranked = sorted(((names[r], s) for r, s in tied), key=lambda p: (p[1], p[0]))
        return [(id, -s) for id, s in ranked[:k]]

    def _keyword_write(self, rowids: list[int], texts: list[str | None], pending: bool) -> None:
        """In add_many's transaction: record the rows' texts and re-index the live ones."""
        self._db.executemany("UPDATE items SET text = ? WHERE rowid = ?", list(zip(texts, rowids)))
        self._keyword_forget(rowids)
        if not pending:
            self._keyword_index("SELECT value FROM json_each(?)", (json.dumps(rowids),))

    def _keyword_publish(self, gone: list[int], pairs: str) -> None:
        """In publish's transaction: forget the rows it deletes, index the staged rows it makes
        live (a staged row is never indexed, so none is indexed twice)."""
        self._keyword_forget(gone)
        self._keyword_index(
            # CROSS JOIN keeps json_each outside: one doc_iri index probe per pair, instead of
            # re-reading the whole list for every pending row.
            "SELECT i.rowid FROM json_each(?) j CROSS JOIN items i ON i.doc_iri = j.value ->> 0"
            " AND i.version = j.value ->> 1 WHERE +i.pending = 1", (pairs,))

    def _keyword_forget(self, rowids: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM keyword_index WHERE rowid = ?", [(r,) for r in rowids])

    def _keyword_index(self, rows_sql: str, params: Sequence[Any]) -> None:
        self._db.execute(
            f"INSERT INTO keyword_index(rowid, text) SELECT rowid, {_INDEXED} AS t FROM items"
            f" WHERE rowid IN ({rows_sql}) AND t != ''", params)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"<SqliteVecStore path={self.path!r} dim={self._dim} count={len(self._index)}>"


def _take_texts(metas: list[dict[str, Any]]) -> list[str | None]:
    """Pop each metadata's ``text`` (when a string): stored in its own column, not the JSON."""
    return [m.pop("text") if isinstance(m.get("text"), str) else None for m in metas]


def _with_text(metadata: str, text: str | None) -> dict[str, Any]:
    """The metadata as the caller gave it: the JSON, plus ``text`` from its column."""
    loaded = json.loads(metadata)
    if text is not None:
        loaded["text"] = text
    return loaded


def _scope(metadata: Mapping[str, Any]) -> str:
    return str(metadata.get("scope") or DEFAULT_SCOPE)


def _bm25_idf(rows: int, holding: int) -> float:
    """The IDF FTS5's bm25() gives a term that ``holding`` of ``rows`` rows contain."""
    idf = math.log((rows - holding + 0.5) / (holding + 0.5)) if rows else 0.0
    return idf if idf > 0 else 1e-6
