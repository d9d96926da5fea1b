"""Two numpy steps over sorted arrays that the graph's columns and the vector store share."""

from __future__ import annotations

import numpy as np

__all__ = ["firsts", "spread"]


def firsts(ordered: np.ndarray) -> np.ndarray:
    """Whether each value of the sorted ``ordered`` is the first of its equals: ``ordered[
    firsts(ordered)]`` is ``np.unique(ordered)`` in one pass, without a hash of every value.

    >>> firsts(np.array([1, 1, 2, 5, 5])).tolist()
    [True, False, True, True, False]
    """
    first = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return first


def spread(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``start, start + 1, ...`` (``count`` of them) for each pair, concatenated.

    >>> spread(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist()
    [5, 6, 9, 10, 11]
    """
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    hit = counts > 0
    starts, counts = starts[hit], counts[hit]
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return offsets + np.arange(total)
