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
  width that holds it (a common term's gaps and counts take a byte each). A list holding at
  least half the rowids of its span is *dense*: ``gaps`` NULL, ``tfs`` a width byte and then
  a frequency for every rowid of the span (0: not there), scored as one contiguous slice.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from trails._arrays import spread
from trails.vector.stores.sqlite_vec.driver import Database

__all__ = ["SegmentRows", "create_tables", "decode_postings", "dense_frequencies", "merge_segments",
           "new_token", "read_segment", "scope_codes", "segment_tokens", "write_segment"]

Tokenize = Callable[[str], list[str]]


def create_tables(db: Database) -> None:
    """The tables of the keyword postings (schema migration m005)."""
    db.execute("CREATE TABLE keyword_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("CREATE TABLE keyword_segments (segment INTEGER PRIMARY KEY, token TEXT NOT NULL,"
               " rows INTEGER NOT NULL, rowids BLOB NOT NULL, lengths BLOB NOT NULL,"
               " scopes BLOB NOT NULL)")
    # Keyed by segment first: a merge deletes a segment's lists as one range, and a term's
    # lists are one probe per segment (there are few).
    db.execute("CREATE TABLE keyword_postings (segment INTEGER NOT NULL, term TEXT NOT NULL,"
               " first INTEGER NOT NULL, count INTEGER NOT NULL, gaps BLOB,"
               " tfs BLOB NOT NULL, PRIMARY KEY (segment, term)) WITHOUT ROWID")
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
    values: np.ndarray = np.frombuffer(blob, dtype=_WIDTHS[len(blob) // count]).astype(np.int64)
    return values


def dense_frequencies(tfs: bytes) -> np.ndarray:
    """A dense list's frequencies, one per rowid of its span (unsigned, as stored)."""
    return np.frombuffer(tfs, dtype=_WIDTHS[tfs[0]], offset=1)


def decode_postings(listed: Sequence[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """The rowids and term frequencies (both int64) of ``(first, count, gaps, tfs)`` posting
    lists, concatenated in order."""
    if all(r[2] is not None for r in listed):
        return _decode_sparse(listed)
    # Each run of sparse lists between dense ones is decoded in one bulk call: a list at a
    # time costs a dozen numpy calls, and a merge page holds thousands of lists.
    parts, run = [], []
    for row in listed:
        if row[2] is not None:
            run.append(row)
            continue
        if run:
            parts.append(_decode_sparse(run))
            run = []
        frequencies = dense_frequencies(row[3])
        held = np.flatnonzero(frequencies)
        parts.append((held + int(row[0]), frequencies[held].astype(np.int64)))
    if run:
        parts.append(_decode_sparse(run))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _decode_sparse(listed: Sequence[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode_postings` of lists with gaps, in bulk: a few numpy calls per width."""
    counts = np.fromiter((int(r[1]) for r in listed), dtype=np.int64, count=len(listed))
    firsts = np.fromiter((int(r[0]) for r in listed), dtype=np.int64, count=len(listed))
    starts = np.cumsum(counts) - counts
    deltas = np.zeros(int(counts.sum()), dtype=np.int64)
    after_first = np.ones(len(deltas), dtype=bool)
    after_first[starts] = False
    deltas[after_first] = _widen_all([r[2] for r in listed], counts - 1)
    running = np.cumsum(deltas)
    rowids = np.repeat(firsts - running[starts], counts) + running
    return rowids, _widen_all([r[3] for r in listed], counts)


def _widen_all(blobs: Sequence[bytes], counts: np.ndarray) -> np.ndarray:
    """The int64 values of :func:`_narrow` blobs holding ``counts`` values each, in order."""
    widths = np.fromiter((len(b) // c if c else 1 for b, c in zip(blobs, counts.tolist())),
                         dtype=np.int64, count=len(blobs))
    out = np.empty(int(counts.sum()), dtype=np.int64)
    starts = np.cumsum(counts) - counts
    for width in np.unique(widths).tolist():
        members = np.flatnonzero(widths == width)
        held = counts[members]
        values = np.frombuffer(b"".join([bytes(blobs[i]) for i in members.tolist()]),
                               dtype=_WIDTHS[width])
        out[spread(starts[members], held)] = values
    return out


# -- segments -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentRows:
    """The rows one segment indexed, sorted by rowid: lengths in tokens, scope codes."""

    rowids: np.ndarray  # int64
    lengths: np.ndarray  # int64
    scopes: np.ndarray  # int64, -1: no scope


# A segment as written: its id, its token and its rows.
Written = tuple[int, str, "SegmentRows"]


def read_segment(db: Database, segment: int) -> SegmentRows:
    """The rows of ``segment``; ValueError when they are not what a segment holds (a damaged
    file), since a negative or unordered rowid would index the wrong rows without an error."""
    rows, rowids, lengths, scopes = db.execute(
        "SELECT rows, rowids, lengths, scopes FROM keyword_segments WHERE segment = ?",
        (segment,))[0]
    read = SegmentRows(np.frombuffer(rowids, dtype="<i8").astype(np.int64),
                       _widen(lengths, rows), np.frombuffer(scopes, dtype="<i8").astype(np.int64))
    ordered = len(read.rowids) == 0 or (read.rowids[0] >= 0 and bool(np.all(np.diff(read.rowids) > 0)))
    if not ordered or not len(read.rowids) == len(read.lengths) == len(read.scopes) == rows:
        raise ValueError(f"keyword segment {segment} does not hold {rows} ordered rows")
    return read


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
                  tokenize: Tokenize) -> Written | None:
    """Index ``(rowid, text, scope)`` rows as a new segment; its id, token and rows (None: no
    rows).

    Each text's terms are the FTS5 tokenizer's (``tokenize``); a text without any still
    counts as a row of length 0, as FTS5 counts it."""
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: r[0])
    rowids = np.array([r[0] for r in ordered], dtype=np.int64)
    tokens = [tokenize(r[1]) for r in ordered]
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    flat = list(chain.from_iterable(tokens))
    vocabulary = {term: i for i, term in enumerate(dict.fromkeys(flat))}  # C loops, not Python
    term_ids = np.fromiter(map(vocabulary.__getitem__, flat), dtype=np.int64, count=len(flat))
    # (term, row) pairs sorted by term then rowid, with their counts: the term frequencies.
    keys, tfs = np.unique(term_ids * len(rowids) + np.repeat(np.arange(len(rowids)), lengths),
                          return_counts=True)
    codes = np.array(scope_codes(db, [r[2] for r in ordered]), dtype=np.int64)
    written = _add_segment(db, SegmentRows(rowids, lengths, codes))
    names = list(vocabulary)
    _write_lists(db, written[0], keys // len(rowids), rowids[keys % len(rowids)], tfs, names)
    return written


def _add_segment(db: Database, rows: SegmentRows) -> Written:
    segment = int(db.execute("SELECT COALESCE(MAX(segment), 0) + 1 FROM keyword_segments")[0][0])
    token = new_token()
    db.execute("INSERT INTO keyword_segments VALUES (?, ?, ?, ?, ?, ?)",
               (segment, token, len(rows.rowids), rows.rowids.astype("<i8").tobytes(),
                _narrow(rows.lengths), rows.scopes.astype("<i8").tobytes()))
    return segment, token, rows


def _write_lists(db: Database, segment: int, terms: np.ndarray, rowids: np.ndarray,
                 tfs: np.ndarray, names: Sequence[str]) -> None:
    """Store posting lists given flat: ``terms`` (indexes into ``names``, grouped), each
    group's ``rowids`` ascending and their term frequencies; encoded in bulk, one blob slice
    per list (a list costs a microsecond of Python, not a dozen numpy calls)."""
    if not len(terms):
        return
    starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
    counts = np.diff(np.r_[starts, len(terms)])
    gaps = np.diff(rowids, prepend=0)
    gaps[starts] = 0  # a list's first rowid is stored whole, not as a gap
    gap_blobs = _slices(gaps, starts, np.maximum.reduceat(gaps, starts), skip_first=True)
    tf_blobs = _slices(tfs.astype(np.int64), starts, np.maximum.reduceat(tfs, starts),
                       skip_first=False)
    ends = np.r_[starts[1:], len(terms)]
    spans = rowids[ends - 1] - rowids[starts] + 1
    dense: dict[int, bytes] = {}
    for group in np.flatnonzero((counts >= _DENSE_LEAST) & (2 * counts >= spans)).tolist():
        begin, end = int(starts[group]), int(ends[group])
        top = int(tfs[begin:end].max())
        width = 1 if top < 1 << 8 else 2 if top < 1 << 16 else 4
        frequencies = np.zeros(int(spans[group]), dtype=_WIDTHS[width])
        frequencies[rowids[begin:end] - rowids[begin]] = tfs[begin:end]
        dense[group] = bytes([width]) + frequencies.tobytes()
    db.executemany("INSERT INTO keyword_postings VALUES (?, ?, ?, ?, ?, ?)", [
        (segment, names[t], f, c, None, dense[i]) if i in dense else
        (segment, names[t], f, c, g, q) for i, (t, f, c, g, q) in enumerate(zip(
            terms[starts].tolist(), rowids[starts].tolist(), counts.tolist(), gap_blobs,
            tf_blobs))])


def _slices(values: np.ndarray, starts: np.ndarray, tops: np.ndarray,
            skip_first: bool) -> list[bytes]:
    """Each group's values (less its first when ``skip_first``) in the narrowest unsigned
    width that holds the group's largest value (``tops``)."""
    widths = np.select([tops < 1 << 8, tops < 1 << 16, tops < 1 << 32], [1, 2, 4], 8)
    ends = np.r_[starts[1:], len(values)]
    begins = starts + 1 if skip_first else starts
    element_width = np.repeat(widths, ends - begins)
    kept = np.ones(len(values), dtype=bool)
    if skip_first:
        kept[starts] = False
    values = values[kept]
    sizes = (ends - begins) * widths
    buffers, offsets = {}, np.zeros(len(starts), dtype=np.int64)
    for width in (1, 2, 4, 8):
        chosen = widths == width
        if chosen.any():
            buffers[width] = values[element_width == width].astype(_WIDTHS[width]).tobytes()
            offsets[chosen] = np.cumsum(sizes[chosen]) - sizes[chosen]
    return [buffers[w][o:o + n] if n else b"" for w, o, n in zip(
        widths.tolist(), offsets.tolist(), sizes.tolist())]


def merge_segments(db: Database, segments: Sequence[int], segment_of: np.ndarray,
                   rows: Callable[[int], SegmentRows]) -> Written | None:
    """Rewrite ``segments`` as one new segment holding their live rows only; its id, token
    and rows (None: no live row, no new segment). A row is live in a segment when
    ``segment_of[rowid]`` names it; ``rows`` gives a segment's rows. Dead rows and their
    postings are dropped."""
    kept = []
    for segment in segments:
        held = rows(segment)
        mask = segment_of[held.rowids] == segment
        kept.append(SegmentRows(held.rowids[mask], held.lengths[mask], held.scopes[mask]))
    wanted = ",".join(str(int(s)) for s in segments)  # integers only: safe to inline
    rowids = np.concatenate([k.rowids for k in kept])
    written = None
    if len(rowids):
        order = np.argsort(rowids, kind="stable")
        written = _add_segment(db, SegmentRows(rowids[order],
                                               np.concatenate([k.lengths for k in kept])[order],
                                               np.concatenate([k.scopes for k in kept])[order]))
        merged = written[0]
        terms = [t for (t,) in db.execute(
            f"SELECT DISTINCT term FROM keyword_postings WHERE segment IN ({wanted}) ORDER BY term")]
        for page in range(0, len(terms), _MERGE_PAGE):  # a page of terms in memory at a time
            listed = db.execute(
                "SELECT term, segment, first, count, gaps, tfs FROM keyword_postings"
                f" WHERE segment IN ({wanted}) AND term >= ? AND term <= ?",
                (terms[page], terms[min(page + _MERGE_PAGE, len(terms)) - 1]))
            _merge_page(db, merged, listed, segment_of)
    for table in ("keyword_postings", "keyword_dead", "keyword_segments"):
        db.execute(f"DELETE FROM {table} WHERE segment IN ({wanted})")
    return written


_MERGE_PAGE = 2000
# A list of at least this many rows, holding half the rowids of its span or more, is dense.
_DENSE_LEAST = 256


def _merge_page(db: Database, merged: int, listed: list[tuple[Any, ...]],
                segment_of: np.ndarray) -> None:
    """Write the live postings of ``listed`` rows as ``merged``'s lists."""
    names = sorted({str(r[0]) for r in listed})
    index = {name: i for i, name in enumerate(names)}
    rowids, tfs = decode_postings([r[2:] for r in listed])
    counts = np.array([int(r[3]) for r in listed], dtype=np.int64)
    terms = np.repeat(np.array([index[str(r[0])] for r in listed], dtype=np.int64), counts)
    owner = np.repeat(np.array([int(r[1]) for r in listed], dtype=np.int64), counts)
    live = segment_of[rowids] == owner
    terms, rowids, tfs = terms[live], rowids[live], tfs[live]
    order = np.lexsort((rowids, terms))
    _write_lists(db, merged, terms[order], rowids[order], tfs[order], names)
