"""SqliteVecStore, one concern per module: ``driver`` (the SQLite connection and sqlite-vec),
``schema`` (numbered migrations), ``vector_file`` (the append-only, memory-mapped vector
files), ``slot_index`` (live slots and lookups by name), ``compaction``, ``core`` (the files
and the index kept in step: writes and reads), ``versions`` (versioned commits and deletes),
``keyword`` (the FTS5 BM25 index) and ``store``."""

from trails.vector.stores.records import DocumentVersion
from trails.vector.stores.sqlite_vec.schema import KEYWORD_TOKENIZER, MIGRATIONS
from trails.vector.stores.sqlite_vec.store import SqliteVecStore

__all__ = ["KEYWORD_TOKENIZER", "MIGRATIONS", "DocumentVersion", "SqliteVecStore"]
