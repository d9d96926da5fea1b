"""The keyword postings on disk: immutable segments written inside the store's transactions.

FTS5's ``bm25()`` is computed row by row in C (about 0.4 s for a common query at a million
rows). :mod:`.keyword_postings` scores the same formula vectorised over postings read from
these tables, which live in the store file and so commit, roll back and snapshot with it
(ADR 0005):

- ``keyword_segments``: one row per segment: the rowids it indexed (sorted), their lengths in
  tokens and their scopes' codes, as little-endian arrays. A write transaction that indexes
  rows adds one segment; segments never change afterwards, they are only merged away.
- ``keyword_postings``: per (term, segment), the rows holding the term: the first rowid, the
  gaps to the next ones and each row's term frequency, each array in the narrowest unsigned
  width that holds it (a common term's gaps and counts take a byte each).
- ``keyword_dead``: rows a segment indexed that are no longer live (deleted, replaced or
  re-indexed in a newer segment), one blob per transaction and segment.
- ``keyword_scope_names``: the codes of scope names; ``keyword_state``: ``token``, a random
  value every change rewrites (a reader's cache is valid while it reads the same token) and
  ``valid``, "0" once a connection that cannot tokenise as FTS5 does has written (then the
  store ranks with FTS5 alone).

A segment's posting lists and rows are read and written here; which rows are live, and the
ranking, are :mod:`.keyword_postings`' concern.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from trails.vector.stores.sqlite_vec.driver import Database

__all__ = ["SegmentRows", "create_tables", "decode_postings", "encode_sorted", "merge_segments",
           "new_token", "read_segment", "scope_codes", "segment_tokens", "write_postings",
           "write_segment"]

Tokenize = Callable[[str], list[str]]
Posting = tuple[str, np.ndarray, np.ndarray]  # term, rowids ascending, term frequencies


def create_tables(db: Database) -> None:
    """The tables of the keyword postings (schema migration m005)."""
    db.execute("CREATE TABLE keyword_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("CREATE TABLE keyword_segments (segment INTEGER PRIMARY KEY, token TEXT NOT NULL,"
               " rows INTEGER NOT NULL, rowids BLOB NOT NULL, lengths BLOB NOT NULL,"
               " scopes BLOB NOT NULL)")
    db.execute("CREATE TABLE keyword_postings (term TEXT NOT NULL, segment INTEGER NOT NULL,"
               " first INTEGER NOT NULL, count INTEGER NOT NULL, gaps BLOB NOT NULL,"
               " tfs BLOB NOT NULL, PRIMARY KEY (term, segment))")
    db.execute("CREATE INDEX keyword_postings_segment ON keyword_postings(segment)")
    db.execute("CREATE TABLE keyword_dead (segment INTEGER NOT NULL, rowids BLOB NOT NULL)")
    db.execute("CREATE INDEX keyword_dead_segment ON keyword_dead(segment)")
    db.execute("CREATE TABLE keyword_scope_names (code INTEGER PRIMARY KEY,"
               " scope TEXT NOT NULL UNIQUE)")
    db.execute("INSERT INTO keyword_state VALUES ('token', ?), ('valid', '1')", (new_token(),))


def new_token() -> str:
    """A value no other state of any store file will carry (64 random bits)."""
    return secrets.token_hex(8)


# -- arrays in their narrowest width ------------------------------------------------------

_WIDTHS = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}


def _narrow(values: np.ndarray) -> bytes:
    """Non-negative integers in the narrowest little-endian unsigned width holding them all."""
    top = int(values.max()) if len(values) else 0
    dtype = "<u1" if top < 1 << 8 else "<u2" if top < 1 << 16 else "<u4" if top < 1 << 32 else "<u8"
    return values.astype(dtype).tobytes()


def _widen(blob: bytes, count: int) -> np.ndarray:
    """The int64 values of a :func:`_narrow` blob of ``count`` values."""
    if not count:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(blob, dtype=_WIDTHS[len(blob) // count]).astype(np.int64)


def encode_sorted(rowids: np.ndarray, tfs: np.ndarray) -> tuple[int, int, bytes, bytes]:
    """(first rowid, count, gaps, term frequencies) of a posting list sorted by rowid."""
    return int(rowids[0]), len(rowids), _narrow(np.diff(rowids)), _narrow(tfs)


def decode_postings(first: int, count: int, gaps: bytes, tfs: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The rowids (int64, ascending) and term frequencies (float64) of one posting list."""
    rowids = np.empty(count, dtype=np.int64)
    rowids[0] = first
    if count > 1:
        np.cumsum(_widen(gaps, count - 1), out=rowids[1:])
        rowids[1:] += first
    return rowids, _widen(tfs, count).astype(np.float64)


# -- segments -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentRows:
    """The rows one segment indexed, sorted by rowid: lengths in tokens, scope codes."""

    rowids: np.ndarray  # int64
    lengths: np.ndarray  # int64
    scopes: np.ndarray  # int64, -1: no scope


def read_segment(db: Database, segment: int) -> SegmentRows:
    rows, rowids, lengths, scopes = db.execute(
        "SELECT rows, rowids, lengths, scopes FROM keyword_segments WHERE segment = ?",
        (segment,))[0]
    return SegmentRows(np.frombuffer(rowids, dtype="<i8").astype(np.int64),
                       _widen(lengths, rows), np.frombuffer(scopes, dtype="<i8").astype(np.int64))


def segment_tokens(db: Database) -> dict[int, str]:
    """segment -> its token (a segment id a rolled-back transaction used may come back with
    other rows; its token does not)."""
    return {int(s): str(t) for s, t in db.execute("SELECT segment, token FROM keyword_segments")}


def scope_codes(db: Database, scopes: Sequence[str | None]) -> list[int]:
    """The code of each scope name (None: -1), numbering new names."""
    names = sorted({s for s in scopes if s is not None})
    db.executemany("INSERT OR IGNORE INTO keyword_scope_names(scope) VALUES (?)",
                   [(s,) for s in names])
    codes = dict(db.execute("SELECT scope, code FROM keyword_scope_names"))
    return [-1 if s is None else int(codes[s]) for s in scopes]


def write_segment(db: Database, rows: Sequence[tuple[int, str, str | None]],
                  tokenize: Tokenize) -> int | None:
    """Index ``(rowid, text, scope)`` rows as a new segment; its id (None: no rows).

    Each text's terms are the FTS5 tokenizer's (``tokenize``); a text without any still
    counts as a row of length 0, as FTS5 counts it."""
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: r[0])
    postings: dict[str, tuple[list[int], list[int]]] = {}
    lengths = []
    for rowid, text, _ in ordered:
        terms = tokenize(text)
        lengths.append(len(terms))
        for term, tf in Counter(terms).items():
            entry = postings.get(term)
            if entry is None:
                postings[term] = ([rowid], [tf])
            else:
                entry[0].append(rowid)
                entry[1].append(tf)
    rowids = np.array([r[0] for r in ordered], dtype=np.int64)
    codes = np.array(scope_codes(db, [r[2] for r in ordered]), dtype=np.int64)
    segment = _add_segment(db, SegmentRows(rowids, np.array(lengths, dtype=np.int64), codes))
    write_postings(db, segment, ((t, np.array(r, dtype=np.int64), np.array(f, dtype=np.int64))
                                 for t, (r, f) in postings.items()))
    return segment


def _add_segment(db: Database, rows: SegmentRows) -> int:
    segment = int(db.execute("SELECT COALESCE(MAX(segment), 0) + 1 FROM keyword_segments")[0][0])
    db.execute("INSERT INTO keyword_segments VALUES (?, ?, ?, ?, ?, ?)",
               (segment, new_token(), len(rows.rowids), rows.rowids.astype("<i8").tobytes(),
                _narrow(rows.lengths), rows.scopes.astype("<i8").tobytes()))
    return segment


def write_postings(db: Database, segment: int, postings: Iterable[Posting]) -> None:
    """Store ``(term, rowids ascending, term frequencies)`` posting lists of ``segment``, a
    thousand at a time (a merge's lists are never all in memory)."""
    batch: list[tuple[object, ...]] = []
    for term, rowids, tfs in postings:
        if len(rowids):
            batch.append((term, segment, *encode_sorted(rowids, tfs)))
        if len(batch) >= 1000:
            db.executemany("INSERT INTO keyword_postings VALUES (?, ?, ?, ?, ?, ?)", batch)
            batch = []
    db.executemany("INSERT INTO keyword_postings VALUES (?, ?, ?, ?, ?, ?)", batch)


def merge_segments(db: Database, segments: Sequence[int], live: Callable[[int, np.ndarray], np.ndarray],
                   rows: Callable[[int], SegmentRows]) -> int:
    """Rewrite ``segments`` as one new segment holding their live rows only; its id.

    ``live(segment, rowids)`` says which of a segment's rowids are still live there; ``rows``
    gives a segment's rows. Dead rows and their postings are dropped."""
    kept = []
    for segment in segments:
        held = rows(segment)
        mask = live(segment, held.rowids)
        kept.append(SegmentRows(held.rowids[mask], held.lengths[mask], held.scopes[mask]))
    rowids = np.concatenate([k.rowids for k in kept])
    order = np.argsort(rowids, kind="stable")
    merged = _add_segment(db, SegmentRows(rowids[order],
                                          np.concatenate([k.lengths for k in kept])[order],
                                          np.concatenate([k.scopes for k in kept])[order]))
    wanted = ",".join(str(int(s)) for s in segments)  # integers only: safe to inline

    def lists() -> Iterator[Posting]:
        terms = db.execute(f"SELECT DISTINCT term FROM keyword_postings WHERE segment IN ({wanted})")
        for (term,) in terms:
            parts_r, parts_f = [], []
            for segment, first, count, gaps, tfs in db.execute(
                    "SELECT segment, first, count, gaps, tfs FROM keyword_postings"
                    f" WHERE term = ? AND segment IN ({wanted})", (term,)):
                r, f = decode_postings(first, count, gaps, tfs)
                mask = live(int(segment), r)
                parts_r.append(r[mask])
                parts_f.append(f[mask])
            r = np.concatenate(parts_r)
            order = np.argsort(r, kind="stable")
            yield term, r[order], np.concatenate(parts_f)[order].astype(np.int64)

    write_postings(db, merged, lists())
    for table in ("keyword_postings", "keyword_dead", "keyword_segments"):
        db.execute(f"DELETE FROM {table} WHERE segment IN ({wanted})")
    return merged
