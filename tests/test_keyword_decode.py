"""decode_postings reads back any mix of sparse and dense posting lists, in order.

A merge page holds thousands of lists with a dense one (a common term) here and there; the
lists are decoded in runs, and the rowids and frequencies must come out as they went in.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trails.vector.stores.sqlite_vec.keyword_segments import decode_postings

WIDTH = {1: "<u1", 2: "<u2", 4: "<u4"}


def narrow(values: list[int]) -> bytes:
    top = max(values, default=0)
    width = 1 if top < 1 << 8 else 2 if top < 1 << 16 else 4
    return np.array(values, dtype=WIDTH[width]).tobytes()


def encoded(rowids: list[int], tfs: list[int], dense: bool) -> tuple[int, int, bytes | None, bytes]:
    """A list as keyword_postings stores it, written here by hand from its definition."""
    first = rowids[0]
    if dense:
        frequencies = [0] * (rowids[-1] - first + 1)
        for rowid, tf in zip(rowids, tfs):
            frequencies[rowid - first] = tf
        width = 1 if max(tfs) < 1 << 8 else 2
        return first, len(rowids), None, bytes([width]) + np.array(
            frequencies, dtype=WIDTH[width]).tobytes()
    gaps = [b - a for a, b in pairwise(rowids)]
    return first, len(rowids), narrow(gaps), narrow(tfs)


one_list = st.tuples(
    st.lists(st.integers(1, 70_000), min_size=1, max_size=30, unique=True).map(sorted),
    st.integers(0, 2**31), st.booleans()).map(
    lambda t: (t[0], [1 + (t[1] >> i) % 300 for i in range(len(t[0]))], t[2]))


@settings(deadline=None)
@given(st.lists(one_list, min_size=1, max_size=12))
def test_mixed_lists_decode_in_order(lists):
    rowids, tfs = decode_postings([encoded(r, f, d) for r, f, d in lists])
    assert rowids.tolist() == [x for r, _, _ in lists for x in r]
    assert tfs.tolist() == [x for _, f, _ in lists for x in f]
    assert rowids.dtype == np.int64 and tfs.dtype == np.int64
