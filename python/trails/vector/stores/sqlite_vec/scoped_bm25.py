"""BM25 with the statistics of the caller's scopes only (ADR 0006, ADR 0009).

FTS5's ``bm25()`` reads the statistics of the whole index: the row count, the average row
length and each term's document frequency. With several scopes in one store, a caller in one
scope would then see scores (and fusion weights) move with the words of another scope's
documents: a side channel across the isolation scopes promise. Here the same formula runs on
the statistics of the rows in the caller's scopes, read from FTS5's own structures:

- each term's postings from an ``fts5vocab`` *instance* table (``term = ?`` is an index probe),
- each row's length from the ``keyword_index_docsize`` shadow table (a varint per column),
- the scopes' row count and total length, cached per committed state of the file.

When the scopes hold every indexed row the statistics are the index's own, and the store
keeps FTS5's faster ``bm25()`` (the scores are then the same, which a test checks).
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Sequence

from trails.vector.stores.sqlite_vec.driver import Database

__all__ = ["K1", "B", "ScopedBm25", "varint"]

K1, B = 1.2, 0.75  # FTS5's bm25() defaults

Ranked = list[tuple[str, float]]


def varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (FTS5's docsize record: one per column)."""
    value = 0
    for i, byte in enumerate(blob[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


def idf(rows: int, holding: int) -> float:
    """FTS5's IDF (floored at 1e-6 as ``bm25()`` does)."""
    value = math.log((rows - holding + 0.5) / (holding + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


class ScopedBm25:
    """Scope-confined BM25 over one connection's ``keyword_index``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._ready = False
        # scopes -> (the file's state, rows, tokens)
        self._stats: dict[tuple[str, ...], tuple[object, int, int]] = {}
        self._total: tuple[object, int] = (None, 0)  # (the file's state, indexed rows)

    def _prepare(self) -> None:
        if not self._ready:
            self._db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.trails_keyword_instance"
                             " USING fts5vocab(main, keyword_index, instance)")
            self._ready = True

    def covers_all(self, scopes: Sequence[str], version: object) -> bool:
        """Whether ``scopes`` hold every indexed row (then FTS5's statistics are theirs)."""
        rows, _ = self.statistics(scopes, version)
        return rows == self.indexed_rows(version)

    def indexed_rows(self, version: object) -> int:
        """How many rows the keyword index holds (FTS5's N), counted once per state."""
        if self._total[0] != version:
            self._total = (version, int(self._db.execute(
                "SELECT COUNT(*) FROM keyword_index_docsize")[0][0]))
        return self._total[1]

    def statistics(self, scopes: Sequence[str], version: object) -> tuple[int, int]:
        """(indexed rows, their total length in tokens) in ``scopes``, cached per
        ``version`` (:meth:`Database.state`: any commit changes it)."""
        key = tuple(sorted(set(scopes)))
        cached = self._stats.get(key)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        sizes = self._db.execute(
            "SELECT d.sz FROM keyword_index_docsize d JOIN items i ON i.rowid = d.id"
            " WHERE i.scope IN (SELECT value FROM json_each(?))", (json.dumps(list(key)),))
        rows, tokens = len(sizes), sum(varint(bytes(r[0])) for r in sizes)
        self._stats[key] = (version, rows, tokens)
        return rows, tokens

    def idf_sum(self, stems: Sequence[str], scopes: Sequence[str], version: object) -> float:
        """The sum of the stems' IDFs among the rows of ``scopes``."""
        rows, _ = self.statistics(scopes, version)
        return sum(idf(rows, len(self._postings(stem, scopes))) for stem in stems)

    def _postings(self, stem: str, scopes: Sequence[str]) -> dict[int, int]:
        """rowid -> how often ``stem`` occurs in it, for the rows of ``scopes``."""
        self._prepare()
        rows = self._db.execute(
            "SELECT v.doc, COUNT(*) FROM temp.trails_keyword_instance v"
            " JOIN items i ON i.rowid = v.doc WHERE v.term = ?"
            " AND i.scope IN (SELECT value FROM json_each(?)) GROUP BY v.doc",
            (stem, json.dumps(list(scopes))))
        return {int(r[0]): int(r[1]) for r in rows}

    def rank(self, stems: Sequence[str], k: int, scopes: Sequence[str], version: object,
             allowed: set[int] | None = None) -> list[tuple[int, float]]:
        """The top ``k`` ``(rowid, score)`` among the rows of ``scopes`` (and ``allowed``,
        when given) holding any stem, best first, ties by rowid order left to the caller."""
        rows, tokens = self.statistics(scopes, version)
        if not rows:
            return []
        average = tokens / rows
        postings = [(idf(rows, len(p)), p) for p in (self._postings(s, scopes) for s in stems)]
        matched = set().union(*(p for _, p in postings))
        if allowed is not None:
            matched &= allowed
        if not matched:
            return []
        lengths = {int(r[0]): varint(bytes(r[1])) for r in self._db.execute(
            "SELECT id, sz FROM keyword_index_docsize WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(matched)),))}
        scores = []
        for row in matched:
            norm = K1 * (1 - B + B * lengths.get(row, 0) / average)
            score = sum(weight * tf * (K1 + 1) / (tf + norm)
                        for weight, p in postings if (tf := p.get(row, 0)))
            scores.append((row, score))
        top = heapq.nlargest(k, scores, key=lambda r: r[1])
        if not top:
            return []
        return [r for r in scores if r[1] >= top[-1][1]]  # the k best and any tie with the k-th
