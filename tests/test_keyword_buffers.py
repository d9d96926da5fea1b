"""A keyword ranking without fresh memory scores and ranks as it did with it.

The references are written here the plain way, as the rankings were before they kept their
arrays: a dense list's addends over its whole span in one go, and the k best positive scores
read from the list of every positive one. Blocks are made small so that a list spans many,
and the scores large enough (thousands of rows, k of 1-20) for the bound on the k-th best to
be taken.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails.vector.stores.sqlite_vec import keyword_buffers
from trails.vector.stores.sqlite_vec.keyword_buffers import DenseAddends, Workspace
from trails.vector.stores.sqlite_vec.keyword_state import K1
from trails.vector.stores.sqlite_vec.keyword_top import _best, _best_positive


def plain_addends(scores, norms, admitted, among, segment_of, first, frequencies, segment,
                  weight):
    """The dense list's addends as the ranking computed them in one go."""
    end = first + len(frequencies)
    rows_of, inside, lo, hi = slice(first, end), slice(None), first, end
    if among is not None:
        lo, hi = (int(i) for i in np.searchsorted(among, (first, end)))
        rows_of = among[lo:hi]
        inside = rows_of - first
    tf = frequencies[inside].astype(np.float64)
    scored = None if segment is None else segment_of[rows_of] == segment
    if admitted is not None:
        scored = admitted[lo:hi] if scored is None else scored & admitted[lo:hi]
    if scored is not None:
        tf[~scored] = 0.0
    part = np.add(tf, norms[lo:hi])
    np.multiply(tf, K1 + 1.0, out=tf)
    np.divide(tf, part, out=tf)
    np.multiply(tf, weight, out=tf)
    scores[lo:hi] += tf


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_dense_addends_block_by_block_are_the_plain_ones_bit_for_bit(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    size = data.draw(st.integers(1, 400))
    segment_of = rng.integers(-1, 3, size).astype(np.int32)  # -1: a dead row
    lengths = rng.integers(0, 40, size).astype(np.float64)
    by_rowid = K1 * (0.25 + 0.75 * lengths / max(1.0, float(lengths.mean())))
    among = None
    if data.draw(st.booleans()):
        among = np.flatnonzero(rng.random(size) < data.draw(st.floats(0.0, 1.0)))
    positions = size if among is None else len(among)
    norms = by_rowid if among is None else by_rowid[among]
    admitted = None if data.draw(st.booleans()) else rng.random(positions) < 0.7
    lists = []
    for _ in range(data.draw(st.integers(1, 4))):
        first = int(rng.integers(0, size))
        span = int(rng.integers(1, size - first + 1))
        dtype = data.draw(st.sampled_from([np.uint8, np.uint16, np.uint32]))
        frequencies = rng.integers(0, 5, span).astype(dtype)
        lists.append((first, frequencies, data.draw(st.sampled_from([None, 0, 1, 2])),
                      float(rng.uniform(1e-6, 4.0))))
    block = data.draw(st.sampled_from([1, 3, 16, 1 << 15]))

    expected = np.zeros(positions)
    for first, frequencies, segment, weight in lists:
        plain_addends(expected, norms, admitted, among, segment_of, first, frequencies,
                      segment, weight)
    work = Workspace()
    for _ in range(2):  # a second ranking reuses the first one's arrays
        scores = work.zeros("scores", positions)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(keyword_buffers, "BLOCK", block)
            addends = DenseAddends(scores, norms, admitted, among, segment_of, work)
            for first, frequencies, segment, weight in lists:
                addends.add(first, frequencies, segment, weight)
        assert scores.tobytes() == expected.tobytes()


def test_a_workspace_array_is_reused_and_grows():
    work = Workspace()
    first = work.array("a", 10, np.float64)
    assert np.shares_memory(work.array("a", 8, np.float64), first)
    grown = work.array("a", 11, np.float64)
    assert len(grown) == 11 and not np.shares_memory(grown, first)
    assert np.shares_memory(work.array("a", 12, np.float64), grown)  # grown by a quarter
    assert work.array("a", 5, np.int64).dtype == np.int64  # another type: another array
    zeros = work.array("z", 6, np.float64)
    zeros[:] = 7.0
    assert not work.zeros("z", 6).any()


scores_arrays = st.builds(
    lambda seed, size, zeros, ties: _scores(seed, size, zeros, ties),
    st.integers(0, 2**32 - 1), st.integers(0, 20_000), st.floats(0.0, 1.0), st.booleans())


def _scores(seed: int, size: int, zeros: float, ties: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 6, size).astype(np.float64) if ties else rng.random(size)
    values[rng.random(size) < zeros] = 0.0
    return values


@settings(max_examples=200, deadline=None)
@given(scores_arrays, st.integers(1, 20))
def test_the_k_best_positive_scores_are_those_of_the_list_of_every_positive_one(scores, k):
    """Ties with the k-th, scores mostly zero, fewer positive scores than k, blocks of zeros."""
    expected = _best(np.flatnonzero(scores > 0), scores, k)
    assert np.array_equal(_best_positive(scores, k), expected)


def test_every_score_tied_with_the_k_th_is_kept_beside_the_bound():
    scores = np.zeros(256 * 40)
    scores[::256] = 2.0  # every block's maximum: the bound is 2.0
    scores[5] = 3.0
    scores[7] = 2.0  # tied with the k-th, in a block already counted
    best = _best_positive(scores, 3)
    assert best.tolist() == np.flatnonzero(scores >= 2.0).tolist()


def test_rankings_in_threads_sharing_one_store_are_each_their_own():
    """The workspace is the connection's: rankings from threads sharing a store take turns
    (the store's snapshot lock), so none writes over another's scores. Each thread's answers
    must be those its queries get alone, over many interleavings."""
    import random
    import threading

    from trails.vector.stores.sqlite_vec import SqliteVecStore

    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    store = SqliteVecStore(dim=2)
    names = [f"r{i:04}" for i in range(1500)]
    store.add_many(names, np.ones((len(names), 2)), [
        {"text": " ".join(rng.choices(words, k=rng.randint(1, 12))),
         "scope": rng.choice(["one", "two"])} for _ in names])
    asked = [(" ".join(rng.sample(words, 2)), sorted(rng.sample(names, rng.randint(50, 1200))),
              rng.choice([None, ["one"]])) for _ in range(8)]
    alone = [[(h.id, h.score) for h in store.keyword_search(q, 20, ids, scopes=s)]
             for q, ids, s in asked]
    wrong: list[object] = []

    def ask(offset: int) -> None:
        for turn in range(60):
            n = (offset + turn) % len(asked)
            q, ids, s = asked[n]
            try:
                got = [(h.id, h.score) for h in store.keyword_search(q, 20, ids, scopes=s)]
            except Exception as exc:  # noqa: BLE001 - a thread's failure is the test's
                wrong.append(exc)
                continue
            if got != alone[n]:
                wrong.append(n)

    threads = [threading.Thread(target=ask, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong
