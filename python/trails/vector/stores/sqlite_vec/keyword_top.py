"""The k best rows of a score array by rowid: best first, ties by id, optionally among ids.

Scores are positive for matching rows and 0 elsewhere. Ids are looked up only for the rows
that can be in the answer: the k best and any tie with the k-th. With ``allowed`` ids, the
cheaper of two ways is taken: map the allowed ids to rowids (cost: one probe per id), or walk
the best rows down until k allowed ones are found (cost: about k / the allowed fraction).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np

from trails.vector.stores.sqlite_vec.driver import Database

__all__ = ["located", "positions", "top_k"]

Ranked = list[tuple[str, float]]
Admits = Callable[[str, "str | None"], bool]


def top_k(db: Database, scores: np.ndarray, k: int, allowed: Sequence[str] | None, *,
          among: np.ndarray | None = None, admits: Admits | None = None) -> Ranked:
    """The ``k`` best ``(id, score)`` of the rows with a positive score (and an ``allowed``
    id, when given), best first, ties by id. ``scores`` are by rowid, or with ``among``
    (sorted, unique rowids) those rows' scores in that order.

    With ``admits`` (a row's id and document IRI: whether it is a candidate), a row it
    refuses (a hash collision let it among the candidates) scores 0 in ``scores`` and the
    ranking is taken again. It is asked of the rows whose names are read anyway: a lookup
    by id would read the id index too (on a cold cache ~0.1 ms a row)."""
    while True:
        refused: list[int] = []
        ranked = _top_k(db, scores, k, allowed, among, admits, refused)
        if not refused:
            return ranked
        scores[positions(np.array(refused, dtype=np.int64), len(scores), among)] = 0.0


def _top_k(db: Database, scores: np.ndarray, k: int, allowed: Sequence[str] | None,
           among: np.ndarray | None, admits: Admits | None, refused: list[int]) -> Ranked:
    if k < 1 or (allowed is not None and not allowed):
        return []

    def ranked(best: np.ndarray, wanted: set[str] | None) -> Ranked:
        return _ranked(db, best if among is None else among[best], scores[best], wanted, k,
                       admits, refused)

    if allowed is None:
        return ranked(_best_positive(scores, k), None)
    matched = np.flatnonzero(scores > 0)  # positions in ``scores``
    if not len(matched):
        return []
    # Walking down the ranking reads about k / fraction rows; mapping reads every allowed id.
    fraction = len(allowed) / max(len(matched), len(allowed))
    reach = max(4 * k, int(2 * k / fraction))
    wanted = set(allowed)
    while reach < len(allowed):
        best = _best(matched, scores, reach)
        found = ranked(best, wanted)
        if len(found) >= k or len(best) == len(matched):
            return found
        reach *= 4  # fewer allowed rows match than their number suggested
    rowids = np.array([r[0] for r in db.execute(
        "SELECT rowid FROM items WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(wanted)),))], dtype=np.int64)
    keep = np.zeros(len(scores), dtype=bool)
    keep[positions(rowids, len(scores), among)] = True
    return ranked(_best(matched[keep[matched]], scores, k), None)


def positions(rowids: np.ndarray, size: int, among: np.ndarray | None) -> np.ndarray:
    """Where ``rowids`` stand in scores of ``size`` rows by rowid, or in scores of the rows
    ``among`` (sorted); a rowid not there is left out."""
    if among is None:
        return rowids[(rowids >= 0) & (rowids < size)]
    if not len(among):
        return rowids[:0]
    at, found = located(rowids, among)
    kept: np.ndarray = at[found]
    return kept


def located(rowids: np.ndarray, among: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``rowids``' place in ``among`` (sorted, not empty), and whether it is there."""
    at = np.minimum(np.searchsorted(among, rowids), len(among) - 1)
    return at, among[at] == rowids


def _best(rows: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """The rows holding the k best scores, and every row tied with the k-th."""
    if len(rows) <= k:
        return rows
    values = scores[rows]
    kth = np.partition(values, len(values) - k)[len(values) - k]
    best: np.ndarray = rows[values >= kth]
    return best


def _best_positive(scores: np.ndarray, k: int) -> np.ndarray:
    """``_best(np.flatnonzero(scores > 0), scores, k)``, without a list of every matching
    row when k blocks of 256 scores hold a positive one: the k-th largest of the blocks'
    maxima is then a positive lower bound on the k-th best score (k blocks each hold a score
    that high), so only the scores at or above it are read (a common word matches nearly
    every candidate, and that list would be as long as the scores)."""
    blocks = len(scores) // 256
    if blocks >= 4 * k:
        peaks = scores[: blocks * 256].reshape(blocks, 256).max(axis=1)
        bound = np.partition(peaks, blocks - k)[blocks - k]
        if bound > 0:
            return _best(np.flatnonzero(scores >= bound), scores, k)
    return _best(np.flatnonzero(scores > 0), scores, k)


def _ranked(db: Database, rowids: np.ndarray, scores: np.ndarray, wanted: set[str] | None,
            k: int, admits: Admits | None, refused: list[int]) -> Ranked:
    """The ``(id, score)`` of ``rowids`` scoring ``scores`` (ids in ``wanted`` only, when
    given), sorted, the k first; the rows ``admits`` refuses are left out and added to
    ``refused``.

    Among the best rows, the k-th wanted row's score is at least the worst score read, so
    every row tied with it was read too: the tie order by id is complete."""
    if not len(rowids):
        return []
    score_of = dict(zip(rowids.tolist(), scores.tolist()))
    names = db.execute(
        "SELECT rowid, id, doc_iri FROM items WHERE rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(list(score_of)),))
    ranked = []
    for rowid, id, doc in names:
        if admits is not None and not admits(id, doc):
            refused.append(int(rowid))
        elif wanted is None or id in wanted:
            ranked.append((str(id), float(score_of[rowid])))
    ranked.sort(key=lambda pair: (-pair[1], pair[0]))
    return ranked[:k]
