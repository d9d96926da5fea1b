"""An exact in-memory cosine index: one contiguous float32 matrix, kept in step with writes.

Exact search is bounded by memory bandwidth, so the index keeps every unit vector in one
C-contiguous float32 matrix and scores with a single BLAS matrix-vector product. A small
candidate set is a gather of its rows; a large one is a product over the blocks of rows holding
candidates, masked to them.
Either way the top-k is then re-scored in float64 with a provable error margin, so the ranking
(ties broken by id) does not depend on which path or which BLAS produced the float32 scores.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["GATHER_FRACTION", "VectorMatrix", "shortlist"]

# Up to this fraction of the rows a masked scan would read (the blocks holding candidates) a
# gather (copy candidate rows, then multiply) beats the masked product. Measured with benchmarks/hybrid.py (100,000 x 384, 2 cores; table in
# docs/benchmarks.md): the blocked gather in search() wins up to ~35-40% of the rows (5.7 ms
# at 30% against ~7.5 ms for the full product, which stays one pass over memory).
GATHER_FRACTION = 0.35
# A masked scan multiplies blocks of this many rows, and only those holding a candidate: a
# scope or a filter whose rows were written together (a scope ingested in one run) reads that
# part of the matrix, not all of it. Large enough that a dense mask costs what one product does.
MASK_BLOCK = 1 << 16


class VectorMatrix:
    """Rows of unit float32 vectors addressed by string id, with an optional group per row.

    Groups (a chunk's document IRI) let a caller name a document and get its chunks.
    Deleting swaps the last row into the hole so the matrix stays contiguous.
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._data = np.empty((max(capacity, 1), dim), dtype=np.float32)
        self._n = 0
        self._ids: list[str] = []
        self._groups: list[str | None] = []
        self._row: dict[str, int] = {}
        self._members: dict[str, set[str]] = {}
        # Each row's scope as a small integer, so scope masks are one vectorised comparison.
        self._scope = np.zeros(max(capacity, 1), dtype=np.int32)
        self._scope_codes: dict[str | None, int] = {None: 0}
        self.lock = threading.RLock()

    def __len__(self) -> int:
        return self._n

    def __contains__(self, id: str) -> bool:
        return id in self._row

    @property
    def matrix(self) -> np.ndarray:
        """A read-only view of the live rows (for benchmarks and brute-force checks)."""
        view = self._data[: self._n]
        view.flags.writeable = False
        return view

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    def vector(self, id: str) -> np.ndarray | None:
        row = self._row.get(id)
        return None if row is None else self._data[row].copy()

    def group(self, id: str) -> str | None:
        row = self._row.get(id)
        return None if row is None else self._groups[row]

    # -- writes ---------------------------------------------------------------------------

    def upsert(
        self,
        ids: Sequence[str],
        unit: np.ndarray,
        groups: Sequence[str | None],
        scopes: Sequence[str | None] | None = None,
    ) -> None:
        with self.lock:
            self._reserve(self._n + len(ids))
            codes = [self._scope_code(s) for s in (scopes or [None] * len(ids))]
            for id, vector, group, code in zip(ids, unit, groups, codes):
                row = self._row.get(id)
                if row is None:
                    row = self._n
                    self._n += 1
                    self._ids.append(id)
                    self._groups.append(group)
                    self._row[id] = row
                else:
                    self._leave_group(id, self._groups[row])
                    self._groups[row] = group
                self._data[row] = vector
                self._scope[row] = code
                if group is not None:
                    self._members.setdefault(group, set()).add(id)

    def remove(self, ids: Iterable[str]) -> int:
        removed = 0
        with self.lock:
            for id in ids:
                row = self._row.pop(id, None)
                if row is None:
                    continue
                removed += 1
                self._leave_group(id, self._groups[row])
                last = self._n - 1
                if row != last:
                    moved = self._ids[last]
                    self._data[row] = self._data[last]
                    self._scope[row] = self._scope[last]
                    self._ids[row] = moved
                    self._groups[row] = self._groups[last]
                    self._row[moved] = row
                self._ids.pop()
                self._groups.pop()
                self._n -= 1
        return removed

    def clear(self) -> None:
        with self.lock:
            self._n = 0
            self._ids.clear()
            self._groups.clear()
            self._row.clear()
            self._members.clear()

    def _leave_group(self, id: str, group: str | None) -> None:
        if group is not None and group in self._members:
            self._members[group].discard(id)
            if not self._members[group]:
                del self._members[group]

    def _reserve(self, needed: int) -> None:
        if needed > len(self._data):
            grown = np.empty((max(needed, 2 * len(self._data)), self.dim), dtype=np.float32)
            grown[: self._n] = self._data[: self._n]
            self._data = grown
            scope = np.zeros(len(grown), dtype=np.int32)
            scope[: self._n] = self._scope[: self._n]
            self._scope = scope

    def _scope_code(self, scope: str | None) -> int:
        return self._scope_codes.setdefault(scope, len(self._scope_codes))

    def in_scopes(self, scopes: Sequence[str | None], rows: np.ndarray | None = None) -> np.ndarray:
        """The rows (all, or of ``rows``) whose scope is one of ``scopes``; sorted."""
        codes = [self._scope_codes[s] for s in scopes if s in self._scope_codes]
        if rows is None:
            return np.flatnonzero(np.isin(self._scope[: self._n], codes))
        return rows[np.isin(self._scope[rows], codes)]

    # -- reads ----------------------------------------------------------------------------

    def rows_for(self, iris: Iterable[str]) -> np.ndarray:
        """Rows of the given ids or group names (a document IRI names all its chunks).

        Unknown IRIs are ignored; the result is sorted and unique.
        """
        row = self._row
        iris = iris if isinstance(iris, (list, tuple)) else list(iris)
        try:
            # The common case, every IRI a vector id: map() does the lookups at C speed,
            # 3-4x faster than a Python loop over 100,000 SPARQL candidates.
            found = np.fromiter(map(row.__getitem__, iris), dtype=np.int64, count=len(iris))
        except KeyError:  # document IRIs (all their chunks) or unknown IRIs (ignored)
            members, rows = self._members, []
            for iri in iris:
                r = row.get(iri)
                if r is not None:
                    rows.append(r)
                elif iri in members:
                    rows.extend(map(row.__getitem__, members[iri]))
            found = np.asarray(rows, dtype=np.int64)
        if len(found) * 16 < self._n:  # a few rows: sort, then drop repeats
            found.sort()
            unique: np.ndarray = found[np.diff(found, prepend=-1) != 0]
            return unique
        # Many rows: a mask sorts and de-duplicates in one O(n) pass (np.unique hashes and
        # sorts: ~25 ms for 100,000 rows, the mask ~0.3 ms).
        mask = np.zeros(self._n, dtype=bool)
        mask[found] = True
        return np.flatnonzero(mask)

    def search(
        self, query: np.ndarray, k: int, rows: np.ndarray | None = None
    ) -> tuple[list[tuple[str, float]], str, int]:
        """Exact top-k by cosine. ``query`` is a unit float64 vector.

        Returns ``([(id, score), ...], plan_name, candidates)``.
        """
        with self.lock:
            chosen, exact, plan, candidates = shortlist(self._data[: self._n], query, k, rows)
            ids = [self._ids[r] for r in chosen]
        ranked = sorted(zip(ids, exact.tolist()), key=lambda pair: (-pair[1], pair[0]))
        return ranked[:k], plan, candidates


def shortlist(data: np.ndarray, query: np.ndarray, k: int, rows: np.ndarray | None = None,
              plan: str | None = None) -> tuple[np.ndarray, np.ndarray, str, int]:
    """The rows of ``data`` that may be among the exact top ``k`` by cosine with the unit
    float64 ``query``, with their exact float64 scores: every row whose float32 score is within
    the float32 error bound of the k-th best (so all ties with the k-th are in). Sorting them
    by ``(-score, id)`` and keeping ``k`` gives the exact ranking whatever BLAS ran.

    ``rows`` (sorted, unique) restricts the candidates; None: every row. ``plan`` names a
    restricted scan that stands for all rows (live slots among dead ones). Returns
    ``(rows, scores, plan_name, candidate_count)``.
    """
    n = len(data)
    if rows is None:
        name, candidates, gather = "full-scan", n, False
    else:
        candidates = len(rows)
        # A masked scan reads the blocks holding candidates: a gather wins below a share of those.
        gather = candidates <= GATHER_FRACTION * _spanned(rows, n)
        name = plan or ("gather" if gather else "masked-scan")
    empty = np.empty(0, dtype=np.int64)
    if candidates == 0 or k <= 0:
        return empty, np.empty(0), name, candidates
    q32 = query.astype(np.float32)
    if rows is not None and (rows.min() < 0 or rows.max() >= n):
        raise IndexError(f"rows must lie in [0, {n})")
    if rows is not None and gather:
        # 256 rows at a time through a buffer that stays in the L2 cache: 2-2.5x faster
        # than one fancy-indexed copy of every candidate row (fresh pages, and a round
        # trip to memory before the product). mode="clip" skips np.take's buffered
        # bounds check (done just above).
        scores = np.empty(len(rows), dtype=np.float32)
        block = np.empty((min(256, len(rows)), data.shape[1]), dtype=np.float32)
        for start in range(0, len(rows), 256):
            part = rows[start : start + 256]
            np.take(data, part, axis=0, out=block[: len(part)], mode="clip")
            np.dot(block[: len(part)], q32, out=scores[start : start + len(part)])
    elif rows is not None:  # masked-scan
        scores = _masked_scores(data, q32, rows)
    else:
        scores = data @ q32
    eps = (data.shape[1] + 2) * 2.0**-23
    blocks = len(scores) // 256
    if blocks >= 4 * k:
        # The k-th largest of the 256-score block maxima is a lower bound on the k-th
        # best score (k blocks each hold a score that high), so only scores within eps
        # of it can be shortlisted: the exact selection then runs on a few hundred
        # scores, not on all of them (0.08 ms instead of 0.2 ms for 100,000).
        peaks = scores[: blocks * 256].reshape(blocks, 256).max(axis=1)
        bound = np.partition(peaks, blocks - k)[blocks - k] - eps
        near = np.flatnonzero(scores >= bound)
        chosen = near[_shortlist(scores[near], k, eps)]
    else:
        chosen = _shortlist(scores, k, eps)
    chosen_rows = chosen if rows is None else rows[chosen]
    return chosen_rows, _exact_cosine(data[chosen_rows], query), name, candidates


def _spanned(rows: np.ndarray, n: int) -> int:
    """How many of ``n`` rows the blocks of :data:`MASK_BLOCK` holding ``rows`` (sorted) hold."""
    if not len(rows):
        return 0
    return min(n, int(np.count_nonzero(np.diff(_blocks(rows)[1]))) * MASK_BLOCK)


def _blocks(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each block of :data:`MASK_BLOCK` from ``rows``' (sorted, not empty)
    first to one past its last, and where each block's rows begin in ``rows``: no array as
    long as ``rows`` is made (half a million candidates would cost a fresh 4 MB, and fresh
    memory is slow on some machines)."""
    starts = np.arange(int(rows[0]) // MASK_BLOCK, int(rows[-1]) // MASK_BLOCK + 2) * MASK_BLOCK
    return starts, np.searchsorted(rows, starts)


def _masked_scores(data: np.ndarray, q32: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(data @ q32)[rows]`` (``rows`` sorted, unique), the product taken only over the
    blocks of :data:`MASK_BLOCK` rows that hold one of ``rows``."""
    starts, cuts = _blocks(rows)
    scores = np.empty(len(rows), dtype=np.float32)
    for start, lo, hi in zip(starts[:-1].tolist(), cuts[:-1].tolist(), cuts[1:].tolist()):
        if lo < hi:
            scores[lo:hi] = (data[start : start + MASK_BLOCK] @ q32)[rows[lo:hi] - start]
    return scores


def _shortlist(scores: np.ndarray, k: int, eps: float) -> np.ndarray:
    """Indices whose float32 score may belong to the exact top-k (never fewer than k)."""
    if len(scores) <= k:
        return np.arange(len(scores))
    top = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
    threshold = scores[top].min() - eps
    return np.flatnonzero(scores >= threshold)


def _exact_cosine(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Float64 cosine of float32 ``rows`` with the unit float64 ``query``, row by row.

    Rounding to float32 leaves a stored row's norm off 1 by up to ~6e-8, so the row's own norm
    is divided out (a vector scores exactly 1.0 against itself, never 1.0000001). Each row is
    reduced on its own rather than by a BLAS matrix-vector product, whose summation order
    depends on the row's position: identical vectors get bit-identical scores, so exact ties
    are broken by id as documented.
    """
    wide = rows.astype(np.float64)
    dots = (wide * query).sum(axis=1)
    norms = np.sqrt((wide * wide).sum(axis=1))
    cosines: np.ndarray = np.clip(dots / norms, -1.0, 1.0)
    return cosines
