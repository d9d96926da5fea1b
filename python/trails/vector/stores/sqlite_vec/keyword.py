"""The keyword (BM25) index of a store file: SQLite FTS5 over each live row's text (ADR 0009).

:class:`Fts5Index` keeps ``keyword_index`` and the keyword postings (:mod:`.keyword_postings`)
in step with ``items`` inside the store's write transactions. It ranks with the postings (the
same scores as FTS5's ``bm25()``, vectorised) and falls back to FTS5's own ranking where the
postings cannot rank: a driver other than apsw, a query term FTS5 reads as a phrase.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trails.text import fts5_match
from trails.vector.stores.sqlite_vec.driver import Database
from trails.vector.stores.sqlite_vec.keyword_postings import KeywordPostings
from trails.vector.stores.sqlite_vec.keyword_top import top_k
from trails.vector.stores.sqlite_vec.schema import INDEXED, KEYWORD_TOKENIZER
from trails.vector.stores.sqlite_vec.scoped_bm25 import ScopedBm25

if TYPE_CHECKING:
    from typing import Self

__all__ = ["Fts5Index", "Match", "bm25_idf", "take_texts"]

Ranked = list[tuple[str, float]]


class Match(str):
    """An FTS5 MATCH expression that remembers the terms it was made of."""

    terms: tuple[str, ...]

    def __new__(cls, expression: str, terms: Sequence[str]) -> Self:
        made = super().__new__(cls, expression)
        made.terms = tuple(terms)
        return made


class Fts5Index:
    """The FTS5 table ``keyword_index`` of one connection: its upkeep and its rankings.

    Rankings take FTS5 MATCH expressions (:func:`match`) and return ``[(id, score)]`` with
    positive scores (``bm25()`` negated), best first, ties by id."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._stemmer_ready = False  # the temp tables idf_sum reads stems through
        self._scoped = ScopedBm25(db)
        self.postings = KeywordPostings(db, KEYWORD_TOKENIZER, INDEXED)

    @staticmethod
    def match(terms: Sequence[str]) -> Match:
        """The MATCH expression of a query's (non-empty) terms."""
        expression = fts5_match(terms)
        if expression is None:
            raise ValueError("a keyword ranking needs at least one term")
        return Match(expression, terms)

    def _stems(self, match: str) -> list[str] | None:
        """The postings' phrases of ``match`` (None: rank it with FTS5)."""
        return self.postings.stems(match.terms) if isinstance(match, Match) else None

    # -- upkeep, inside the store's write transactions ------------------------------------

    def write(self, rowids: list[int], texts: list[str | None], pending: bool) -> None:
        """In add_many's transaction: record the rows' texts and re-index the live ones."""
        self._db.executemany("UPDATE items SET text = ? WHERE rowid = ?", list(zip(texts, rowids)))
        self._forget(rowids)
        if not pending:
            self._index("SELECT value FROM json_each(?)", (json.dumps(rowids),))
        self.postings.write(rowids, pending)

    def publish(self, gone: list[int], pairs: str) -> None:
        """In publish's transaction: forget the rows it deletes, index the staged rows it makes
        live (a staged row is never indexed, so none is indexed twice)."""
        self._forget(gone)
        # CROSS JOIN keeps json_each outside: one doc_iri index probe per pair, instead of
        # re-reading the whole list for every pending row.
        staged = ("SELECT i.rowid FROM json_each(?) j CROSS JOIN items i"
                  " ON i.doc_iri = j.value ->> 0 AND i.version = j.value ->> 1"
                  " WHERE +i.pending = 1")
        self._index(staged, (pairs,))
        self.postings.publish(gone, staged, (pairs,))

    def forget(self, rowids: Sequence[int]) -> None:
        """In a delete's transaction: the rows leave both indexes."""
        self._forget(rowids)
        self.postings.forget(rowids)

    def _forget(self, rowids: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM keyword_index WHERE rowid = ?", [(r,) for r in rowids])

    def _index(self, rows_sql: str, params: Sequence[Any]) -> None:
        self._db.execute(
            f"INSERT INTO keyword_index(rowid, text) SELECT rowid, {INDEXED} AS t FROM items"
            f" WHERE rowid IN ({rows_sql}) AND t != ''", params)

    # -- rankings -------------------------------------------------------------------------

    def top(self, match: str, k: int) -> Ranked:
        """The top k of every live row: FTS5 sorts, we only break a tie at the k-th place."""
        stems = self._stems(match)
        if stems is not None:
            return top_k(self._db, self.postings.scores(stems, None, False)[1], k, None)
        rows = self._db.execute(
            "SELECT i.id, f.s FROM (SELECT rowid, bm25(keyword_index) AS s FROM keyword_index"
            " WHERE keyword_index MATCH ? ORDER BY s LIMIT ?) f JOIN items i ON i.rowid = f.rowid",
            (match, k + 1))
        rows.sort(key=lambda r: (r[1], r[0]))
        if len(rows) > k and rows[k][1] == rows[k - 1][1]:
            return self.among(match, k, None)  # a tie crosses the cut: order them all
        return [(id, -s) for id, s in rows[:k]]

    def in_scopes(self, match: str, k: int, scopes: list[str]) -> Ranked:
        """The top k of the live rows in ``scopes`` (``items.scope``, as the index's rows)."""
        stems = self._stems(match)
        if stems is not None:
            state = self.postings.state()
            assert state is not None  # stems() answered
            mask = self.postings.scope_mask(state, scopes)
            return top_k(self._db, self.postings.scores(stems, mask, False)[1], k, None)
        rows = self._db.execute(
            "SELECT i.id, f.s FROM (SELECT rowid, bm25(keyword_index) AS s FROM keyword_index"
            " WHERE keyword_index MATCH ?) f JOIN items i ON i.rowid = f.rowid"
            " WHERE i.scope IN (SELECT value FROM json_each(?)) ORDER BY f.s, i.id LIMIT ?",
            (match, json.dumps(scopes), k))
        return [(id, -s) for id, s in rows]

    def among(self, match: str, k: int, allowed: list[str] | None) -> Ranked:
        """The top k of the matching rows whose ids are ``allowed`` (all when None).

        FTS5 scores every match (its cost: the bm25() call per row); we keep the allowed
        rowids, take the k best scores and any ties with the k-th, and only then look up ids."""
        stems = self._stems(match)
        if stems is not None:
            return top_k(self._db, self.postings.scores(stems, None, False)[1], k, allowed)
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

    def confined(self, terms: Sequence[str], k: int, scopes: list[str],
                 allowed: list[str] | None, version: object) -> Ranked | None:
        """The top k of the rows of ``scopes`` (and ``allowed`` ids) scored with those scopes'
        statistics (:mod:`.scoped_bm25`); None when the scopes hold every indexed row, so
        FTS5's own ranking is theirs and the caller uses it."""
        stems = self.postings.stems(terms)
        if stems is not None:
            if self.postings.covers_all(scopes):
                return None
            state = self.postings.state()
            assert state is not None  # stems() answered
            mask = self.postings.scope_mask(state, scopes)
            return top_k(self._db, self.postings.scores(stems, mask, True)[1], k, allowed)
        if self._scoped.covers_all(scopes, version):
            return None
        wanted = None if allowed is None else {int(r[0]) for r in self._db.execute(
            "SELECT rowid FROM items WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(allowed),))}
        scored = self._scoped.rank(self._vocab_stems(" ".join(terms)), k, scopes, version, wanted)
        names = dict(self._db.execute(
            "SELECT rowid, id FROM items WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([r for r, _ in scored]),)))
        ranked = sorted(((names[r], s) for r, s in scored if r in names),
                        key=lambda p: (-p[1], p[0]))
        return ranked[:k]

    # -- a query's weight -----------------------------------------------------------------

    def idf_sum(self, terms: Sequence[str], scopes: list[str] | None = None,
                version: object = None) -> float:
        """The sum of ``bm25()``'s IDF over the index's stems of ``terms``, among the indexed
        rows (a stem no row holds counts in full; a row without text is not one, as in
        FTS5's own count); with ``scopes``, among their indexed rows."""
        if self.postings.stems(terms) is not None:
            stems = self.postings.distinct_stems(" ".join(terms))
            confined = scopes is not None and not self.postings.covers_all(scopes)
            return self.postings.idf_sum(stems, scopes if confined else None)
        if scopes is not None and not self._scoped.covers_all(scopes, version):
            return self._scoped.idf_sum(self._vocab_stems(" ".join(terms)), scopes, version)
        rows = self._scoped.indexed_rows(version)
        total = 0.0
        for stem in self._vocab_stems(" ".join(terms)):
            found = self._db.execute(
                "SELECT doc FROM temp.trails_keyword_vocab WHERE term = ?", (stem,))
            total += bm25_idf(rows, found[0][0] if found else 0)
        return total

    def _vocab_stems(self, text: str) -> list[str]:
        """The distinct terms the keyword index's tokenizer makes of ``text``, read back
        through a scratch FTS5 table in this connection's temp schema."""
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


def take_texts(metas: list[dict[str, Any]]) -> list[str | None]:
    """Pop each metadata's ``text`` (when a string): stored in its own column, not the JSON."""
    return [m.pop("text") if isinstance(m.get("text"), str) else None for m in metas]


def bm25_idf(rows: int, holding: int) -> float:
    """The IDF FTS5's bm25() gives a term that ``holding`` of ``rows`` rows contain."""
    idf = math.log((rows - holding + 0.5) / (holding + 0.5)) if rows else 0.0
    return idf if idf > 0 else 1e-6
