"""Store files as earlier releases wrote them, for the upgrade tests.

The store can only write its current schema, so an older file is made here: its migrations
applied, then rows written with plain SQL the way that release's store wrote them (vectors in
the ``vec_items`` vec0 table, keyed by ``items.rowid``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trails.vector.stores.arrays import encode, normalize_rows
from trails.vector.stores.sqlite_vec import schema
from trails.vector.stores.sqlite_vec.driver import open_database
from trails.vector.stores.sqlite_vec.vector_file import VectorFiles


def make_old_store(path: Path, dim: int, version: int,
                   rows: Sequence[tuple[str, Sequence[float], Mapping[str, Any]]],
                   pending: Sequence[bool] | None = None) -> None:
    """A store file at schema ``version`` (2 or 3) holding ``rows`` ``(id, vector, metadata)``;
    metadata ``doc_iri``, ``scope`` and ``version`` go to their columns as that release did
    (and, at schema 3, ``text`` to its own)."""
    db = open_database(str(path))
    db.execute("PRAGMA journal_mode = WAL")
    with db.transaction():
        for migration in schema.MIGRATIONS[:version]:
            migration(db, dim, VectorFiles(":memory:", dim))
        # Those releases' m001 also made the vec0 table their vectors lived in.
        db.load_sqlite_vec("making an old store")
        db.execute(f"CREATE VIRTUAL TABLE vec_items USING vec0(embedding float[{dim}]"
                   " distance_metric=cosine)")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(version),))
        unit = normalize_rows(np.asarray([r[1] for r in rows], dtype=np.float64))
        for rowid, ((id, _, metadata), vector) in enumerate(zip(rows, unit), start=1):
            meta = dict(metadata)
            text = meta.pop("text", None) if version >= 3 else None
            staged = bool(pending[rowid - 1]) if pending else False
            db.execute(
                "INSERT INTO items(rowid, id, metadata, doc_iri, scope, version, pending)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rowid, id, json.dumps(meta if version >= 3 else dict(metadata), sort_keys=True),
                 meta.get("doc_iri"), meta.get("scope") or "default", meta.get("version"),
                 int(staged)))
            db.execute("INSERT INTO vec_items(rowid, embedding) VALUES (?, ?)",
                       (rowid, encode(vector)))
            if version >= 3:
                db.execute("UPDATE items SET text = ? WHERE rowid = ?", (text, rowid))
                if not staged and (text or meta.get("snippet")):
                    db.execute("INSERT INTO keyword_index(rowid, text) VALUES (?, ?)",
                               (rowid, text or meta.get("snippet")))
    db.close()
