"""The live rows of the keyword postings at one committed state, as arrays by rowid, and how
a writer carries them across its own changes.

Building them reads every segment's rows: at a million rows ~30 ms, which a writer used to
pay twice a commit (after indexing, after merging), a cost per commit that grew with the
store (ADR 0036, second amendment). A writer knows exactly what it changed (rows killed, a
segment added, segments merged into one), so it updates the arrays for those rows only and
the state it leaves equals a fresh build from the file (tests/test_keyword_postings.py
checks it after every write of random sequences).

The arrays are updated in place. A state is only read under the store's index lock, which a
writer holds for its whole transaction, so no reader sees them change; a rollback leaves the
file's token different from the carried state's, and the next read builds again.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from trails.vector.stores.sqlite_vec.keyword_segments import SegmentRows

__all__ = ["K1", "B", "KeywordState", "build_state"]

K1, B = 1.2, 0.75  # FTS5's bm25() defaults


@dataclass(frozen=True)
class KeywordState:
    """The live indexed rows of one committed state, as arrays indexed by rowid.

    The arrays may be longer than the highest rowid indexed (room kept for the rows to
    come); a rowid no segment holds is -1 in ``segment_of``."""

    token: str
    segment_of: np.ndarray  # int32: the segment holding the live row, -1: none
    lengths: np.ndarray  # int32: tokens in the row
    scopes: np.ndarray  # int32: scope code, -1: none
    rows: int
    tokens: int
    whole: frozenset[int]  # segments without a dead row: their postings need no live check
    live_counts: Mapping[int, int]  # segment -> its live rows

    @functools.cached_property
    def norm(self) -> np.ndarray:
        """k1 * (1 - b + b * length / average length), FTS5's order; read by rankings only,
        so a writer's states never compute it."""
        average = self.tokens / self.rows if self.rows else 1.0
        # No live row has a token (average 0): nothing matches, whatever a dead row's length.
        with np.errstate(invalid="ignore", divide="ignore"):
            norm: np.ndarray = K1 * ((1 - B) + (B * self.lengths) / average)
        return norm

    def live(self, segment: int, rowids: np.ndarray) -> np.ndarray:
        """Which of ``segment``'s ``rowids`` are live in it."""
        found: np.ndarray = self.segment_of[rowids] == segment
        return found

    # -- a writer's changes ---------------------------------------------------------------

    def killed(self, rowids: np.ndarray) -> KeywordState:
        """Without ``rowids`` (those live; others are ignored)."""
        rowids = np.unique(rowids[(rowids >= 0) & (rowids < len(self.segment_of))])
        segments = self.segment_of[rowids]
        rowids, segments = rowids[segments >= 0], segments[segments >= 0]
        if not len(rowids):
            return self
        gone, counts = np.unique(segments, return_counts=True)
        live_counts = dict(self.live_counts)
        for segment, count in zip(gone.tolist(), counts.tolist()):
            live_counts[segment] -= count
        self.segment_of[rowids] = -1
        return dataclasses.replace(
            self, rows=self.rows - len(rowids), tokens=self.tokens - int(self.lengths[rowids].sum()),
            whole=self.whole - set(gone.tolist()), live_counts=live_counts)

    def added(self, segment: int, rows: SegmentRows) -> KeywordState | None:
        """With a new segment's rows (None: one of them is live in another segment, which a
        writer never leaves: build the state from the file then)."""
        state = self._holding(int(rows.rowids[-1]) + 1 if len(rows.rowids) else 0)
        if (state.segment_of[rows.rowids] >= 0).any():
            return None
        state.segment_of[rows.rowids] = segment
        state.lengths[rows.rowids] = rows.lengths
        state.scopes[rows.rowids] = rows.scopes
        return dataclasses.replace(
            state, rows=state.rows + len(rows.rowids),
            tokens=state.tokens + int(rows.lengths.sum()), whole=state.whole | {segment},
            live_counts={**state.live_counts, segment: len(rows.rowids)})

    def merged(self, group: Sequence[int], made: tuple[int, SegmentRows] | None) -> KeywordState:
        """``group``'s segments gone, their live rows now in ``made`` (None: none were live)."""
        live_counts = {s: n for s, n in self.live_counts.items() if s not in group}
        whole = self.whole - set(group)
        if made is not None:
            segment, rows = made
            self.segment_of[rows.rowids] = segment
            live_counts[segment] = len(rows.rowids)
            whole |= {segment}
        return dataclasses.replace(self, whole=whole, live_counts=live_counts)

    def _holding(self, size: int) -> KeywordState:
        """This state with arrays of at least ``size`` rows (grown with room to spare)."""
        if size <= len(self.segment_of):
            return self
        room = size + size // 8
        return dataclasses.replace(
            self, segment_of=_grown(self.segment_of, room, -1),
            lengths=_grown(self.lengths, room, 0), scopes=_grown(self.scopes, room, -1))


def build_state(token: str, held: Sequence[tuple[int, SegmentRows]],
                dead: Iterable[tuple[int, bytes]]) -> KeywordState:
    """The state of segments ``held`` (in segment order: a newer segment re-indexes a row)
    and their ``dead`` rows' blobs."""
    size = max((int(rows.rowids[-1]) + 1 for _, rows in held if len(rows.rowids)), default=0)
    # 32 bits each, half the memory a fresh process fills (a million rows: 12 MB, not 24).
    # Lengths are counts: norm's float64 arithmetic converts them exactly, as before.
    segment_of = np.full(size, -1, dtype=np.int32)
    lengths = np.zeros(size, dtype=np.int32)
    scopes = np.full(size, -1, dtype=np.int32)
    for segment, rows in held:
        segment_of[rows.rowids] = segment
        lengths[rows.rowids] = rows.lengths
        scopes[rows.rowids] = rows.scopes
    whole = {segment for segment, _ in held}
    for segment, blob in dead:
        whole.discard(segment)
        gone = np.frombuffer(blob, dtype="<i8").astype(np.int64)
        gone = gone[gone < size]
        segment_of[gone[segment_of[gone] == segment]] = -1
    live = segment_of >= 0
    counts = np.bincount(segment_of[live])
    return KeywordState(token, segment_of, lengths, scopes, int(live.sum()),
                        int(lengths[live].sum()), frozenset(whole),
                        {segment: int(counts[segment]) if segment < len(counts) else 0
                         for segment, _ in held})


def _grown(array: np.ndarray, size: int, fill: float) -> np.ndarray:
    grown = np.full(size, fill, dtype=array.dtype)
    grown[:len(array)] = array
    return grown
