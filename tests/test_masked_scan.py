"""A masked scan multiplies only the blocks of rows holding a candidate, and ranks exactly.

The reference is float64 cosine over the candidate rows, sorted by ``(-score, row)``, computed
here with numpy alone. The block size is made small so that a few hundred rows span many
blocks: empty ones, full ones, a candidate alone at a block's first or last row.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trails.vector.stores import matrix
from trails.vector.stores.matrix import shortlist


def _unit(rows: int, dim: int, seed: int) -> np.ndarray:
    data = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def _exact_top(data: np.ndarray, query: np.ndarray, rows: np.ndarray, k: int) -> list[int]:
    # Each row's cosine on its own, correctly rounded (math.fsum): a matrix product sums a
    # row by where it sits, so two equal rows could score apart and their tie go either way.
    wide = data[rows].astype(np.float64)
    scores = [math.fsum(wide[i] * query) / math.sqrt(math.fsum(wide[i] * wide[i]))
              for i in range(len(rows))]
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], int(rows[i])))
    return [int(rows[i]) for i in order[:k]]


@settings(max_examples=200, deadline=None)
@example(n=140, block=1, picks=[0, 3, 353], k=1, seed=0, duplicated=True)  # rows 3 and 73 equal
@given(n=st.integers(1, 400), block=st.sampled_from([1, 7, 16, 64, 1 << 16]),
       picks=st.lists(st.integers(0, 399), min_size=1, max_size=400),
       k=st.integers(1, 12), seed=st.integers(0, 2**16), duplicated=st.booleans())
def test_a_masked_scan_over_blocks_ranks_the_candidates_exactly(n, block, picks, k, seed,
                                                                 duplicated):
    data = _unit(n, 8, seed)
    if duplicated:  # ties: equal rows must come back in row order
        data[n // 2 :] = data[: n - n // 2]
    query = np.random.default_rng(seed + 1).standard_normal(8)
    query /= np.linalg.norm(query)
    rows = np.unique(np.asarray(picks) % n)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matrix, "MASK_BLOCK", block)
        patch.setattr(matrix, "GATHER_FRACTION", 0.0)  # always the masked scan
        chosen, exact, plan, candidates = shortlist(data, query, k, rows)
    assert plan == "masked-scan" and candidates == len(rows)
    ranked = [int(r) for _, r in sorted(zip((-exact).tolist(), chosen.tolist()))]
    assert ranked[:k] == _exact_top(data, query, rows, k)


def test_a_masked_scan_reads_only_the_blocks_holding_candidates():
    data = _unit(64, 4, 0)
    read: list[tuple[int, int]] = []

    class Watched(np.ndarray):
        def __getitem__(self, key):
            if isinstance(key, slice):
                read.append((key.start, key.stop))
            return np.asarray(self).__getitem__(key)

    query = np.ones(4) / 2.0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matrix, "MASK_BLOCK", 16)
        patch.setattr(matrix, "GATHER_FRACTION", 0.0)
        shortlist(data.view(Watched), query, 3, np.array([17, 20, 31, 50]))
    assert [(start, stop) for start, stop in read if stop is not None] == [(16, 32), (48, 64)]


def test_a_gather_or_a_masked_scan_is_chosen_by_the_rows_the_scan_would_read():
    # 10 candidates in one block of 16, among 160 rows: a gather would read 10 rows, the
    # masked scan 16, so the scan (a gather wins below 35% of what the scan reads).
    data = _unit(160, 4, 0)
    query = np.ones(4) / 2.0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matrix, "MASK_BLOCK", 16)
        assert shortlist(data, query, 3, np.arange(32, 42))[2] == "masked-scan"
        assert shortlist(data, query, 3, np.arange(0, 160, 16))[2] == "gather"  # 10 blocks


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 400), block=st.sampled_from([1, 7, 16, 64, 1 << 16]),
       picks=st.lists(st.integers(0, 399), max_size=400))
def test_the_rows_a_masked_scan_reads_are_the_blocks_holding_candidates(n, block, picks):
    """What decides between a gather and a masked scan: the rows of every block holding a
    candidate (all rows at most), counted here block by block."""
    rows = np.array(sorted({p % n for p in picks}), dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matrix, "MASK_BLOCK", block)
        spanned = matrix._spanned(rows, n)
    blocks = {int(r) // block for r in rows}
    assert spanned == min(n, len(blocks) * block)
