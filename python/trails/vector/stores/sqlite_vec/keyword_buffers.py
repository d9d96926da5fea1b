"""Keyword rankings that make no fresh memory: arrays kept from one ranking to the next,
and a dense posting list's BM25 addends a block of rows at a time.

An array of a few megabytes is memory the allocator maps afresh on every request (glibc maps
blocks that large on their own and unmaps them when freed), and touching it costs a page fault
for every 4 KB: ~4 µs each on some virtual machines, 5 ms for the scores of 592,000
candidates. A ranking made a dozen such arrays (its scores, the rows' length norms, each
dense list's temporaries), so a fused search under a filter paid more for fresh memory than
for its arithmetic. Here the large arrays are a :class:`Workspace`'s, kept by the connection,
and each block of a dense list goes through buffers small enough to stay in the processor's
cache, with the same floating-point operations per row in the same order, so the scores stay
FTS5's to the last bit (:mod:`.keyword_postings`).
"""

from __future__ import annotations

import numpy as np

from trails.vector.stores.sqlite_vec.keyword_state import K1

__all__ = ["DenseAddends", "Workspace"]

# Rows per block: 256 KB of float64, in the processor's cache with the other buffers, and few
# enough blocks that numpy's per-call cost stays small beside the arithmetic.
BLOCK = 1 << 15


class Workspace:
    """Arrays kept from one ranking to the next, by name. One per connection: its rankings
    run one at a time, inside the store's snapshot, whose lock other threads wait on. An
    array handed out is the caller's until it asks for the same name again."""

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, name: str, size: int, dtype: type | np.dtype) -> np.ndarray:
        """``size`` items of ``dtype``, their values left from before (fill them first)."""
        kept = self._arrays.get(name)
        if kept is None or kept.dtype != np.dtype(dtype):
            kept = self._arrays[name] = np.empty(size, dtype=dtype)
        elif len(kept) < size:  # a quarter more: the next, slightly larger ranking fits
            kept = self._arrays[name] = np.empty(max(size, len(kept) * 5 // 4), dtype=dtype)
        return kept[:size]

    def zeros(self, name: str, size: int) -> np.ndarray:
        """``size`` float64 zeros."""
        zeros = self.array(name, size, np.float64)
        zeros.fill(0.0)
        return zeros


class DenseAddends:
    """Adds dense lists' BM25 addends to one ranking's ``scores``.

    Positions in ``scores``, ``norms`` (each row's length norm) and ``admitted`` (whether a
    row may score; None: every row) stand for rowids: ``among[i]`` when ``among`` is given
    (sorted, unique), else ``i``. ``segment_of`` is by rowid: the segment holding each live
    row."""

    def __init__(self, scores: np.ndarray, norms: np.ndarray, admitted: np.ndarray | None,
                 among: np.ndarray | None, segment_of: np.ndarray, work: Workspace) -> None:
        self._scores, self._norms, self._admitted = scores, norms, admitted
        self._among, self._segment_of, self._work = among, segment_of, work
        size = max(1, min(BLOCK, len(scores)))
        self._tf = work.array("tf", size, np.float64)
        self._part = work.array("part", size, np.float64)
        self._kept = work.array("kept", size, np.bool_)
        self._inside = work.array("inside", size, np.int64)
        self._segments = work.array("segments", size, segment_of.dtype)

    def add(self, first: int, frequencies: np.ndarray, segment: int | None,
            weight: float) -> None:
        """Add ``weight * tf * (K1 + 1) / (tf + norm)`` for the list of rowids ``first``
        onwards; with ``segment``, only rows that segment holds live count (the others are
        another segment's, or dead)."""
        end = first + len(frequencies)
        if self._among is None:
            lo, hi = first, end
        else:
            lo, hi = (int(i) for i in np.searchsorted(self._among, (first, end)))
        for start in range(lo, hi, BLOCK):
            self._block(start, min(start + BLOCK, hi), first, frequencies, segment, weight)

    def _block(self, lo: int, hi: int, first: int, frequencies: np.ndarray,
               segment: int | None, weight: float) -> None:
        n = hi - lo
        tf = self._tf[:n]
        rows: slice | np.ndarray
        if self._among is None:
            rows = slice(lo, hi)
            tf[...] = frequencies[lo - first : hi - first]
        else:
            rows = self._among[lo:hi]
            inside = np.subtract(rows, first, out=self._inside[:n])
            raw = self._work.array(f"raw {frequencies.dtype}", len(self._tf), frequencies.dtype)
            # In range by construction (the block's rowids lie in the list's span): "clip"
            # only skips take's buffered bounds check.
            tf[...] = np.take(frequencies, inside, out=raw[:n], mode="clip")
        kept: np.ndarray | None = None
        if segment is not None:
            held = self._segment_of[rows] if isinstance(rows, slice) else np.take(
                self._segment_of, rows, out=self._segments[:n], mode="clip")
            kept = np.equal(held, segment, out=self._kept[:n])
        if self._admitted is not None:
            admitted = self._admitted[lo:hi]
            kept = admitted if kept is None else np.logical_and(kept, admitted, out=kept)
        if kept is not None:
            # A row that does not count has tf 0 (a frequency times False is 0.0, times
            # True itself): it adds weight * 0.0, as it would without the term.
            np.multiply(tf, kept, out=tf)
        part = np.add(tf, self._norms[lo:hi], out=self._part[:n])
        np.multiply(tf, K1 + 1.0, out=tf)
        np.divide(tf, part, out=tf)
        np.multiply(tf, weight, out=tf)
        scores = self._scores[lo:hi]
        np.add(scores, tf, out=scores)
