"""BM25 over the keyword postings (:mod:`.keyword_segments`), vectorised, per committed state.

The scores are FTS5's ``bm25()`` (k1 1.2, b 0.75, its IDF floored at 1e-6, one addend per
query phrase in query order), computed with the same floating-point operations in the same
order, so they agree with FTS5's to the last bit; with scopes, on the statistics of the
scopes' rows (:mod:`.scoped_bm25` explains why). Terms are FTS5's own: the tokenizer of the
store's FTS5 table, called through apsw.

**One committed state per read.** Everything is read inside the caller's snapshot or write
transaction. The arrays by rowid (which segment holds each live row, its length, its scope;
:mod:`.keyword_state`) are rebuilt when ``keyword_state.token`` differs from the one they
were built at, which another connection's commit or a rollback brings about; segments are
immutable, so only new segments' rows are read then. A writer carries them across its own
changes instead. Upkeep runs inside the store's write transactions: a crash or a rollback
leaves the committed state as it was.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from trails.errors import TrailsError
from trails.faults import corrupt_file
from trails.vector.stores.sqlite_vec.driver import Database
from trails.vector.stores.sqlite_vec.keyword_buffers import DenseAddends, Workspace
from trails.vector.stores.sqlite_vec.keyword_segments import (
    SegmentRows,
    decode_postings,
    dense_frequencies,
    merge_segments,
    new_token,
    read_segment,
    segment_tokens,
    write_segment,
)
from trails.vector.stores.sqlite_vec.keyword_state import K1, B, KeywordState, build_state
from trails.vector.stores.sqlite_vec.keyword_top import located

__all__ = ["K1", "B", "KeywordPostings", "KeywordState", "apsw_tokenizers", "fts5_tokenizers"]

Ranked = list[tuple[str, float]]
Tokenize = Callable[[str], list[str]]
Postings = tuple[np.ndarray, np.ndarray]  # rowids, term frequencies
# A dense list: first rowid, frequencies by rowid from there, and the segment whose live rows
# count (None: every row of the span is live in it).
Dense = tuple[int, np.ndarray, "int | None"]
# A segment collects at most this many dead-row blobs before they are written as one.
_DEAD_BLOBS = 32
# Segments of one size tier (a power of this many live rows) merged at once.
_FANOUT = 8


def fts5_tokenizers(db: Database, spec: str) -> tuple[Tokenize, Tokenize] | None:
    """(document, query) tokenizers equal to an FTS5 table's ``tokenize = spec``; None
    unless the store's driver is apsw (another driver's SQLite may tokenise differently)."""
    if db.driver != "apsw":
        return None
    return apsw_tokenizers(spec)


def apsw_tokenizers(spec: str) -> tuple[Tokenize, Tokenize]:
    """(document, query) tokenizers of SQLite FTS5's ``tokenize = spec``, as apsw runs them
    (apsw must be installed)."""
    import apsw  # only the apsw driver and the benchmarks call this: it is installed there

    name, *arguments = spec.split()
    tokenizer = apsw.Connection(":memory:").fts5_tokenizer(name, arguments)

    def with_flags(flags: int) -> Tokenize:
        def terms(text: str) -> list[str]:
            # Without offsets and colocated tokens, apsw returns the tokens alone.
            return cast(list[str], tokenizer(text.encode("utf-8", "surrogatepass"), flags, None,
                                             include_offsets=False, include_colocated=False))
        return terms

    return with_flags(apsw.FTS5_TOKENIZE_DOCUMENT), with_flags(apsw.FTS5_TOKENIZE_QUERY)


def idf(rows: int, holding: int) -> float:
    """FTS5's IDF, floored at 1e-6 as ``bm25()`` floors it."""
    value = math.log((rows - holding + 0.5) / (holding + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


F = TypeVar("F", bound=Callable[..., Any])


def decoded(method: F) -> F:
    """``method`` reads the index's blobs: one that does not decode (numpy's ValueError,
    IndexError, KeyError on a damaged file) is the store file's ContextDamagedError."""
    @functools.wraps(method)
    def wrapper(self: KeywordPostings, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except TrailsError:
            raise
        except (ValueError, IndexError, KeyError, OverflowError) as exc:
            raise corrupt_file(self._db.path, f"its keyword index does not decode: {exc}") from exc

    return wrapper  # type: ignore[return-value]


class KeywordPostings:
    """The keyword postings of one connection: upkeep in write transactions, rankings in
    snapshots. Unusable (every method says so, the caller ranks with FTS5) when the driver
    cannot tokenise as FTS5 does, the tables are missing or a writer without the tokenizer
    has written the file."""

    def __init__(self, db: Database, tokenizer: str, indexed: str) -> None:
        self._db = db
        self._indexed = indexed  # the SQL expression of a row's indexed text
        tokenizers = fts5_tokenizers(db, tokenizer)
        self._document: Tokenize | None = tokenizers[0] if tokenizers else None
        self._query: Tokenize | None = tokenizers[1] if tokenizers else None
        self._segments: dict[int, tuple[str, SegmentRows]] = {}
        self._state: KeywordState | None = None
        self._masks: dict[tuple[str, ...], tuple[str, np.ndarray]] = {}
        self._norms: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id(mask) -> mask, norm
        # (state token, stem, id(mask) or None) -> mask, live rows holding the stem within it:
        # read once per state, not by every ranking (emptied when the state changes)
        self._held: dict[tuple[str, str, int | None], tuple[np.ndarray | None, int]] = {}
        self._work = Workspace()  # a ranking's large arrays, kept for the next one

    # -- the committed state --------------------------------------------------------------

    @decoded
    def state(self) -> KeywordState | None:
        """The live rows at the state the connection reads now (None: rank with FTS5)."""
        if self._document is None or not self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'keyword_state'"):
            return None
        flags = dict(self._db.execute("SELECT key, value FROM keyword_state"))
        if flags.get("valid") != "1":
            return None
        token = str(flags["token"])
        if self._state is None or self._state.token != token:
            self._state = self._build(token)
        return self._state

    def _build(self, token: str) -> KeywordState:
        current = segment_tokens(self._db)
        for gone in set(self._segments) - set(current):
            del self._segments[gone]
        for segment, stamp in current.items():
            if self._segments.get(segment, ("",))[0] != stamp:
                self._segments[segment] = (stamp, read_segment(self._db, segment))
        self._masks.clear()
        self._norms.clear()
        self._held.clear()
        return build_state(token, [(s, self._segments[s][1]) for s in sorted(current)],
                           self._db.execute("SELECT segment, rowids FROM keyword_dead"))

    def _changed(self, state: KeywordState | None) -> None:
        """After a change in this transaction: a new token, and ``state`` (the arrays as the
        change left them, :mod:`.keyword_state`) as its state; None: built when next read."""
        token = new_token()
        self._db.execute("UPDATE keyword_state SET value = ? WHERE key = 'token'", (token,))
        self._held.clear()  # counts of the state before (they hold its masks)
        self._state = None if state is None else dataclasses.replace(state, token=token)

    # -- upkeep, inside the store's write transactions ------------------------------------

    def _writable(self) -> KeywordState | None:
        """The state to change, or None; a writer that cannot tokenise marks the postings
        stale for good (readers then rank with FTS5)."""
        if not self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'keyword_state'"):
            return None
        if self._document is None:
            self._db.execute("UPDATE keyword_state SET value = '0' WHERE key = 'valid'")
            return None
        return self.state()

    def forget(self, rowids: Sequence[int]) -> None:
        """The rows are no longer live (deleted, replaced, or about to be re-indexed)."""
        state = self._writable()
        if state is not None:
            killed = self._kill(state, rowids)
            if killed is not state:
                self._changed(killed)

    def write(self, rowids: Sequence[int], pending: bool) -> None:
        """In add_many's transaction: the rows were (re)written; index them unless staged."""
        state = self._writable()
        if state is None:
            return
        killed = self._kill(state, rowids)
        self._changed(killed if pending else self._index(
            killed, "SELECT value FROM json_each(?)", (json.dumps(list(rowids)),)))
        self._merge()

    def publish(self, gone: Sequence[int], rows_sql: str, params: Sequence[object]) -> None:
        """In publish's transaction: forget ``gone``, index the staged rows going live."""
        state = self._writable()
        if state is None:
            return
        self._changed(self._index(self._kill(state, gone), rows_sql, params))
        self._merge()

    def _kill(self, state: KeywordState, rowids: Sequence[int]) -> KeywordState:
        """Record the live ones of ``rowids`` dead in their segments; the state without them
        (``state`` itself when none was live)."""
        wanted = np.asarray(list(rowids), dtype=np.int64)
        wanted = wanted[(wanted >= 0) & (wanted < len(state.segment_of))]
        segments = state.segment_of[wanted]
        for segment in np.unique(segments[segments >= 0]).tolist():
            dead = np.sort(wanted[segments == segment]).astype("<i8").tobytes()
            self._db.execute("INSERT INTO keyword_dead VALUES (?, ?)", (segment, dead))
            blobs = self._db.execute(
                "SELECT rowids FROM keyword_dead WHERE segment = ?", (segment,))
            if len(blobs) > _DEAD_BLOBS:  # many small deletes: one blob read per state
                self._db.execute("DELETE FROM keyword_dead WHERE segment = ?", (segment,))
                self._db.execute("INSERT INTO keyword_dead VALUES (?, ?)",
                                 (segment, b"".join(bytes(b[0]) for b in blobs)))
        return state.killed(wanted)

    def _index(self, state: KeywordState, rows_sql: str,
               params: Sequence[object]) -> KeywordState | None:
        """Index the rows ``rows_sql`` selects as a new segment; the state with it."""
        assert self._document is not None  # _writable checked it
        rows = self._db.execute(
            f"SELECT rowid, {self._indexed} AS t, scope FROM items"
            f" WHERE rowid IN ({rows_sql}) AND t != ''", params)
        written = write_segment(self._db, [(int(r), str(t), s) for r, t, s in rows],
                                self._document)
        if written is None:
            return state
        segment, stamp, held = written
        self._segments[segment] = (stamp, held)
        return state.added(segment, held)

    def _merge(self) -> None:
        """Keep the segments few (size-tiered): once ``_FANOUT`` segments hold about as many
        live rows as each other (the same power of ``_FANOUT``), they become one; a segment
        whose rows are mostly dead is rewritten. A row is rewritten about log8(rows) times
        over the store's life, and a query reads at most ~8 segments per power of 8 rows."""
        while True:
            state = self.state()
            if state is None:
                return
            tiers: dict[int, list[int]] = {}
            for segment in sorted(self._segments):
                count = state.live_counts.get(segment, 0)
                tier = int(math.log(count, _FANOUT)) if count else 0
                tiers.setdefault(tier, []).append(segment)
            group = next((g for g in tiers.values() if len(g) >= _FANOUT), None)
            if group is None:
                group = next(([s] for s in sorted(self._segments)
                              if 2 * state.live_counts.get(s, 0)
                              < len(self._segments[s][1].rowids)), None)
            if group is None:
                return
            made = merge_segments(self._db, group, state.segment_of,
                                  lambda s: self._segments[s][1])
            for segment in group:
                del self._segments[segment]
            if made is not None:
                self._segments[made[0]] = (made[1], made[2])
            self._changed(state.merged(group, None if made is None else (made[0], made[2])))

    # -- rankings, inside a snapshot ------------------------------------------------------

    def stems(self, terms: Sequence[str]) -> list[str] | None:
        """Each term's FTS5 query token, in order (FTS5 scores each quoted term as a phrase,
        so two terms with one stem count twice); None when the postings cannot rank here, or
        a term is not exactly one token (a phrase: FTS5 ranks it)."""
        if self._query is None or self.state() is None:
            return None
        stems = []
        for term in terms:
            tokens = self._query(term)
            if len(tokens) != 1:
                return None
            stems.append(tokens[0])
        return stems

    def distinct_stems(self, text: str) -> list[str]:
        assert self._query is not None  # after stems() answered
        return list(dict.fromkeys(self._query(text)))

    @decoded
    def _postings(self, state: KeywordState, stem: str,
                  mask: np.ndarray | None) -> tuple[int, Postings, list[Dense]]:
        """The live rows holding ``stem``: how many (within ``mask``, when given), the sparse
        lists' live rowids and counts, and the dense lists (:data:`Dense`)."""
        listed = self._db.execute(
            "SELECT segment, first, count, gaps, tfs FROM keyword_postings"
            " WHERE segment IN (SELECT segment FROM keyword_segments) AND term = ?", (stem,))
        sparse = [r for r in listed if r[3] is not None]
        rowids, counts = decode_postings([r[1:] for r in sparse])
        size = len(state.segment_of)
        if len(rowids) and not 0 <= int(rowids.min()) <= int(rowids.max()) < size:
            raise ValueError(f"postings of {stem!r} name rows the segments do not hold")
        if any(r[3] is None and not 0 <= int(r[1]) < size for r in listed):
            raise ValueError(f"a dense list of {stem!r} starts outside the segments' rows")
        if any(int(r[0]) not in state.whole for r in sparse):
            owner = np.repeat(np.array([int(r[0]) for r in sparse], dtype=np.int64),
                              [int(r[2]) for r in sparse])
            keep = state.segment_of[rowids] == owner
            rowids, counts = rowids[keep], counts[keep]
        lists = [r for r in listed if r[3] is None]
        dense = [(int(first), dense_frequencies(tfs), None if segment in state.whole
                  else int(segment)) for segment, first, _, _, tfs in lists]
        held = self._known(state, stem, mask)
        if held is None:  # this reads every row of a dense span: once per state, not per ranking
            held = len(rowids) if mask is None else int(mask[rowids].sum())
            for (first, frequencies, segment), listed_count in zip(dense, (r[2] for r in lists)):
                span = slice(first, first + len(frequencies))
                counted = None if segment is None else state.segment_of[span] == segment
                if mask is not None:
                    counted = mask[span] if counted is None else counted & mask[span]
                held += int(listed_count) if counted is None else int(np.count_nonzero(
                    frequencies[counted]))
            if len(self._held) >= 4096:  # one state asked many words: start over
                self._held.clear()
            self._held[(state.token, stem, None if mask is None else id(mask))] = (mask, held)
        return held, (rowids, counts.astype(np.float64)), dense

    def scope_mask(self, state: KeywordState, scopes: Sequence[str]) -> np.ndarray:
        """Live rows (by rowid) whose scope is one of ``scopes``; cached per state."""
        key = tuple(sorted(set(scopes)))
        cached = self._masks.get(key)
        if cached is not None and cached[0] == state.token:
            return cached[1]
        codes = [int(r[0]) for r in self._db.execute(
            "SELECT code FROM keyword_scope_names WHERE scope IN (SELECT value FROM json_each(?))",
            (json.dumps(list(key)),))]
        mask = np.isin(state.scopes, codes) & (state.segment_of >= 0)
        self._masks[key] = (state.token, mask)
        return mask

    def covers_all(self, scopes: Sequence[str]) -> bool:
        state = self.state()
        assert state is not None  # after stems() answered
        return int(self.scope_mask(state, scopes).sum()) == state.rows

    def scores(self, stems: Sequence[str], mask: np.ndarray | None, scoped: bool,
               among: np.ndarray | None = None) -> tuple[KeywordState, np.ndarray]:
        """BM25 of every row (by rowid; 0: no stem, or outside ``mask``). With ``scoped``,
        the statistics are those of the rows in ``mask``; else of every live row.

        With ``among`` (rowids below the state's length, sorted, unique), only those rows
        are scored, and the scores are theirs in that order: the same operations per row, at
        a cost that follows the candidates, not every row.

        The scores are the connection's workspace (:mod:`.keyword_buffers`): read them before
        the next ranking, which writes over them."""
        state = self.state()
        assert state is not None  # after stems() answered
        # Sorted and in range is the caller's promise (a binary search relies on it).
        assert among is None or not len(among) or 0 <= among[0] <= among[-1] < len(
            state.segment_of)
        work = self._work
        scores = work.zeros("scores", len(state.segment_of) if among is None else len(among))
        rows = int(mask.sum()) if scoped and mask is not None else state.rows
        if not rows or not len(scores):
            return state, scores
        norms = self._scoped_norm(state, mask, rows) if scoped and mask is not None \
            else state.norm
        admitted = mask  # by position in ``scores``: rows outside the mask score 0
        if among is not None:
            # "clip" only skips take's buffered bounds check: ``among`` is in range (above).
            norms = np.take(norms, among, out=work.array("norms", len(among), np.float64),
                            mode="clip")
            admitted = None if mask is None else np.take(
                mask, among, out=work.array("admitted", len(among), np.bool_), mode="clip")
            if admitted is not None and bool(admitted.all()):
                admitted = None  # candidates are rows of the scopes: nothing to mask
        addends = DenseAddends(scores, norms, admitted, among, state.segment_of, work)
        for stem in stems:
            held, (rowids, tfs), dense = self._postings(state, stem, mask if scoped else None)
            at, keep = rowids, None
            if among is not None:
                at, keep = located(rowids, among)
            if admitted is not None:
                keep = admitted[at] if keep is None else keep & admitted[at]
            if keep is not None:
                at, tfs = at[keep], tfs[keep]
            weight = idf(rows, held)
            scores[at] += weight * ((tfs * (K1 + 1.0)) / (tfs + norms[at]))
            for first, frequencies, segment in dense:
                addends.add(first, frequencies, segment, weight)
        return state, scores

    def _scoped_norm(self, state: KeywordState, mask: np.ndarray, rows: int) -> np.ndarray:
        """BM25's length norm of every row with the average length of the ``mask`` rows
        (``rows`` of them), cached with the mask (so per state and scopes)."""
        cached = self._norms.get(id(mask))
        if cached is not None and cached[0] is mask:
            return cached[1]
        average = float(state.lengths[mask].sum()) / rows
        # No live row has a token (average 0): nothing matches, whatever a dead row's length.
        with np.errstate(invalid="ignore", divide="ignore"):
            norm: np.ndarray = K1 * ((1 - B) + (B * state.lengths) / average)
        if len(self._norms) > 16:
            self._norms.clear()
        self._norms[id(mask)] = (mask, norm)
        return norm

    def idf_sum(self, stems: Sequence[str], scopes: Sequence[str] | None) -> float:
        """The sum of the stems' IDFs among the indexed rows of ``scopes`` (None: all of
        them, FTS5's own count: a row without text is in no keyword statistic)."""
        state = self.state()
        assert state is not None  # after stems() answered
        if scopes is None:
            return sum(idf(state.rows, self._holding(state, s)) for s in stems)
        mask = self.scope_mask(state, scopes)
        return sum(idf(int(mask.sum()), self._holding_within(state, s, mask)) for s in stems)

    def _holding(self, state: KeywordState, stem: str) -> int:
        """How many live rows hold ``stem``: the lists' counts, unless a segment has dead
        rows (then its lists are read, unless a ranking has)."""
        known = self._known(state, stem, None)
        if known is not None:
            return known
        counts = self._db.execute(
            "SELECT segment, count FROM keyword_postings"
            " WHERE segment IN (SELECT segment FROM keyword_segments) AND term = ?", (stem,))
        if all(int(segment) in state.whole for segment, _ in counts):
            return sum(int(count) for _, count in counts)
        return int(self._postings(state, stem, None)[0])

    def _holding_within(self, state: KeywordState, stem: str, mask: np.ndarray | None) -> int:
        """How many live rows (within ``mask``) hold ``stem``, as :meth:`_postings` counts."""
        known = self._known(state, stem, mask)
        return int(self._postings(state, stem, mask)[0]) if known is None else known

    def _known(self, state: KeywordState, stem: str, mask: np.ndarray | None) -> int | None:
        """:meth:`_holding_within`'s count when this state has counted it already."""
        cached = self._held.get((state.token, stem, None if mask is None else id(mask)))
        return cached[1] if cached is not None and cached[0] is mask else None
