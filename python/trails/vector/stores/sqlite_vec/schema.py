"""The store file's schema: numbered migrations, applied in order when a store opens.

``meta`` records the dimension, the applied schema number and the embedder's identity.
"""

from __future__ import annotations

from trails.errors import ConfigurationError, DimensionMismatchError
from trails.vector.stores.sqlite_vec.driver import Database
from trails.vector.stores.sqlite_vec.keyword_postings import fts5_tokenizers
from trails.vector.stores.sqlite_vec.keyword_segments import create_tables, write_segment

__all__ = ["INDEXED", "KEYWORD_TOKENIZER", "MIGRATIONS", "prepare", "read_meta"]

# The keyword index's tokenizer: Porter stemming over unicode61 words with diacritics removed
# (the Anserini/Pyserini BM25 baselines stem too).
KEYWORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
# What a row's keyword index entry holds: its full text, else its snippet.
INDEXED = "COALESCE(text, metadata ->> '$.text', metadata ->> '$.snippet', '')"


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
    db.execute(f"INSERT INTO keyword_index(rowid, text) SELECT rowid, {INDEXED} AS t"
               " FROM items WHERE pending = 0 AND t != ''")


def m005_keyword_postings(db: Database, dim: int) -> None:
    """The keyword postings that rank like FTS5's ``bm25()``, vectorised (ADR draft
    keyword-postings; :mod:`.keyword_segments`), built from the live rows FTS5 indexes.

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


MIGRATIONS = [m001_create_tables, m002_document_versions, m003_keyword_index,
              m005_keyword_postings]


def prepare(db: Database, path: str, dim: int | None, read_only: bool) -> int:
    """Create the schema of a new store file or upgrade an older one; its dimension."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'")
    if not exists:
        if dim is None or dim < 1:
            raise ConfigurationError(
                f"a new vector store needs its dimension: pass dim=... (got {dim!r})"
            )
        if read_only:
            raise ConfigurationError(f"{path!r} is not a trails vector store")
        if path != ":memory:":  # the journal suited to one writer and many readers
            db.execute("PRAGMA journal_mode = WAL")
        _migrate(db, 0, dim)
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
        _migrate(db, applied, stored)
    return stored


def _migrate(db: Database, applied: int, dim: int) -> None:
    with db.transaction():
        for migration in MIGRATIONS[applied:]:
            migration(db, dim)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(len(MIGRATIONS)),))


def read_meta(db: Database, key: str) -> str | None:
    rows = db.execute("SELECT value FROM meta WHERE key = ?", (key,))
    return rows[0][0] if rows else None
