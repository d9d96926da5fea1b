"""The store file's schema: numbered migrations, applied in order when a store opens.

``meta`` records the dimension, the applied schema number and the embedder's identity; since
m004 also the vector files' id (``vector_file``), the slots committed (``vector_slots``) and
the scopes' codes (``scopes``, a JSON list: a code is a position).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import numpy as np

from trails.errors import ConfigurationError, DimensionMismatchError
from trails.scopes import DEFAULT_SCOPE
from trails.vector.stores.sqlite_vec.driver import Database
from trails.vector.stores.sqlite_vec.keyword_postings import fts5_tokenizers
from trails.vector.stores.sqlite_vec.keyword_segments import create_tables, write_segment
from trails.vector.stores.sqlite_vec.vector_file import VectorFiles, make_keys

log = logging.getLogger("trails.vector")

__all__ = ["INDEXED", "KEYWORD_TOKENIZER", "MIGRATIONS", "PAGE_SIZE", "REFERS_ELSEWHERE", "prepare", "read_meta", "write_meta"]

# The keyword index's tokenizer: Porter stemming over unicode61 words with diacritics removed
# (the Anserini/Pyserini BM25 baselines stem too).
KEYWORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
# The page size of a new store file (an existing file keeps its own; ADR 0050).
PAGE_SIZE = 8192
# What a row's keyword index entry holds: its full text, else its snippet.
INDEXED = "COALESCE(text, metadata ->> '$.text', metadata ->> '$.snippet', '')"
# The rows m006 indexes: metadata["iri"] present and other than the id.
REFERS_ELSEWHERE = "metadata ->> '$.iri' <> id"


def m001_create_tables(db: Database, dim: int, files: VectorFiles) -> None:
    """The rows. Stores made before m004 also kept their vectors here, in a vec0 table
    (``vec_items``) that m004 moves out; a new store never has one."""
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        "CREATE TABLE items (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
        " metadata TEXT NOT NULL, doc_iri TEXT, scope TEXT)"
    )
    db.execute("CREATE INDEX items_doc_iri ON items(doc_iri)")
    db.execute("CREATE INDEX items_scope ON items(scope)")
    db.execute("INSERT INTO meta VALUES ('dim', ?)", (str(dim),))


def m002_document_versions(db: Database, dim: int, files: VectorFiles) -> None:
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


def m003_keyword_index(db: Database, dim: int, files: VectorFiles) -> None:
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
    db.execute(f"INSERT INTO keyword_index(rowid, text) SELECT rowid, {INDEXED} AS t"
               " FROM items WHERE pending = 0 AND t != ''")


def m004_vector_files(db: Database, dim: int, files: VectorFiles) -> None:
    """The vectors move out of ``vec_items`` into the append-only vector files
    (ADR 0014): each row gets a slot (``items.slot``), written and flushed before this
    transaction commits, and the vec0 table is dropped, so every vector is stored once.

    ``items_live`` (the live rows' slots, a partial index) lets an open read the live slots
    in one pass over a small index; ``items_slot`` finds a hit's row.
    """
    db.execute("ALTER TABLE items ADD COLUMN slot INTEGER")
    db.execute("CREATE UNIQUE INDEX items_slot ON items(slot)")
    db.execute("CREATE INDEX items_live ON items(slot) WHERE pending = 0")
    file_id = files.create()
    scopes: list[str] = []
    slot, last = 0, 0
    old = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec_items'")
    if old:  # vectors kept in SQLite before this migration: read through sqlite-vec
        db.load_sqlite_vec("upgrading a SqliteVecStore written before schema 4")
    while old:  # in batches: a large store is copied without holding it in memory twice
        rows = db.execute(
            "SELECT i.rowid, i.id, i.doc_iri, COALESCE(i.scope, ?), v.embedding FROM items i"
            " JOIN vec_items v ON v.rowid = i.rowid WHERE i.rowid > ? ORDER BY i.rowid"
            " LIMIT 20000", (DEFAULT_SCOPE, last))
        if not rows:
            break
        for row in rows:
            if row[3] not in scopes:
                scopes.append(row[3])
        unit = np.frombuffer(b"".join(bytes(r[4]) for r in rows), dtype="<f4").reshape(-1, dim)
        keys = make_keys([r[1] for r in rows], [r[2] for r in rows],
                         [scopes.index(r[3]) for r in rows], unit)
        files.append(slot, unit, keys)
        db.executemany("UPDATE items SET slot = ? WHERE rowid = ?",
                       [(slot + n, r[0]) for n, r in enumerate(rows)])
        slot, last = slot + len(rows), rows[-1][0]
    db.execute("DELETE FROM items WHERE slot IS NULL")  # a row without a vector: never shown
    db.execute("DROP TABLE IF EXISTS vec_items")
    write_meta(db, "vector_file", file_id)
    write_meta(db, "vector_slots", str(slot))
    write_meta(db, "scopes", json.dumps(scopes))


def m005_keyword_postings(db: Database, dim: int, files: VectorFiles) -> None:
    """The keyword postings that rank like FTS5's ``bm25()``, vectorised (ADR 0016;
    :mod:`.keyword_segments`), built from the live rows FTS5 indexes.

    Independent of any other migration but m003's ``items.text``. A driver that cannot
    tokenise as FTS5 does (not apsw) leaves them marked stale when there are rows to index:
    the store then ranks with FTS5."""
    create_tables(db)
    tokenizers = fts5_tokenizers(db, KEYWORD_TOKENIZER)
    last = int(db.execute("SELECT COALESCE(MAX(rowid), 0) FROM items")[0][0])
    if tokenizers is None:
        if last:
            db.execute("UPDATE keyword_state SET value = '0' WHERE key = 'valid'")
        return
    for start in range(0, last + 1, 100_000):  # a segment per 100,000 rowids, not all at once
        rows = db.execute(f"SELECT rowid, {INDEXED} AS t, scope FROM items WHERE rowid >= ?"
                          " AND rowid < ? AND pending = 0 AND t != ''", (start, start + 100_000))
        write_segment(db, [(int(r), str(t), c) for r, t, c in rows], tokenizers[0])


def m006_back_references(db: Database, dim: int, files: VectorFiles) -> None:
    """The rows whose ``metadata["iri"]`` names another resource than their id (the
    trails.vector design's back-reference), indexed by it: a partial index, empty while every
    row's id is its IRI (what ingestion writes), so that common case costs nothing and one
    probe of it tells retrieval whether candidates need resolving (``BackReferences``)."""
    db.execute(f"CREATE INDEX items_back_reference ON items(metadata ->> '$.iri')"
               f" WHERE {REFERS_ELSEWHERE}")


def m007_folded_metadata(db: Database, dim: int, files: VectorFiles) -> None:
    """``items.folded``: which metadata fields a row's JSON leaves out because its other
    columns say them (:mod:`.folding`; ADR 0050). Rows already written keep their whole JSON
    (``folded = 0``); adding the column rewrites nothing."""
    db.execute("ALTER TABLE items ADD COLUMN folded INTEGER NOT NULL DEFAULT 0")


MIGRATIONS = [m001_create_tables, m002_document_versions, m003_keyword_index, m004_vector_files,
              m005_keyword_postings, m006_back_references, m007_folded_metadata]


# FTS5 merges a level's segments into the next once this many have gathered (its default, 4,
# makes each insert's share of merging grow with the index: ADR 0036, seventh amendment).
KEYWORD_AUTOMERGE = 16


def tune_keyword_index(db: Database) -> None:
    """Set FTS5's ``automerge`` (kept in the index's own config table) where it is not yet:
    a new store, or one written before it was set; every later writer then merges alike."""
    rows = db.execute("SELECT v FROM keyword_index_config WHERE k = 'automerge'")
    if rows and int(rows[0][0]) == KEYWORD_AUTOMERGE:
        return
    try:
        with db.transaction():
            db.execute("INSERT INTO keyword_index(keyword_index, rank) VALUES ('automerge', ?)",
                       (KEYWORD_AUTOMERGE,))
    except Exception as exc:  # noqa: BLE001 - a knob must not cost the open
        # Another connection writing for longer than the busy timeout: the next writable
        # open sets it (until then FTS5 merges at its default, as before).
        log.info("keyword index merges not tuned yet: %s", exc)


def prepare(db: Database, path: str, dim: int | None, read_only: bool,
            files: Callable[[int], VectorFiles]) -> int:
    """Create the schema of a new store file or upgrade an older one; its dimension.

    ``files(dim)`` gives the store's vector files (a migration may create them)."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'")
    if not exists:
        if dim is None or dim < 1:
            raise ConfigurationError(
                f"a new vector store needs its dimension: pass dim=... (got {dim!r})"
            )
        if read_only:
            raise ConfigurationError(f"{path!r} is not a trails vector store")
        # Before the first table: a row holds a chunk's text (~1 KB), and 4 KiB pages fit
        # three such rows with a fifth of the page left over; 8 KiB pages cut the file ~6%.
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        if path != ":memory:":  # the journal suited to one writer and many readers
            db.execute("PRAGMA journal_mode = WAL")
        _migrate(db, 0, dim, files(dim))
        tune_keyword_index(db)
        return dim
    stored = int(read_meta(db, "dim") or 0)
    if dim is not None and dim != stored:
        raise DimensionMismatchError(
            f"vector store {path!r} holds {stored}-dimensional vectors but dim={dim} "
            f"was requested; use an embedder of dimension {stored} or a new store path"
        )
    applied = int(read_meta(db, "schema") or 1)
    if applied < len(MIGRATIONS):
        if read_only:
            raise ConfigurationError(
                f"vector store {path!r} uses an older schema; open it once without "
                "read_only=True to upgrade it"
            )
        _migrate(db, applied, stored, files(stored))
    if not read_only:
        tune_keyword_index(db)
    return stored


def _migrate(db: Database, applied: int, dim: int, files: VectorFiles) -> None:
    with db.transaction():
        for migration in MIGRATIONS[applied:]:
            migration(db, dim, files)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(len(MIGRATIONS)),))


def write_meta(db: Database, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def read_meta(db: Database, key: str) -> str | None:
    rows = db.execute("SELECT value FROM meta WHERE key = ?", (key,))
    return rows[0][0] if rows else None
