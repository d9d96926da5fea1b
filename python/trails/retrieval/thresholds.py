"""``min_score``: dropping the hits whose final score is below a threshold, and saying so."""

from __future__ import annotations

from trails.records import RetrievalResult

__all__ = ["above_min_score"]


def above_min_score(result: RetrievalResult, min_score: float | None) -> RetrievalResult:
    """``result`` without the hits scored below ``min_score`` (or unscored), in place, with a
    note saying how many were dropped, so a short list is never read as "nothing else
    matched". The hits kept are in their order; on a list sorted by score they are exactly
    its prefix of scores ``>= min_score``.

    >>> from trails.records import RetrievalHit
    >>> hits = [RetrievalHit("a", 0.9, ""), RetrievalHit("b", 0.2, "")]
    >>> result = RetrievalResult(hits, mode="vector", plan="full-scan", candidates=None,
    ...                          exhaustive=True)
    >>> [h.iri for h in above_min_score(result, 0.5)], result.notes
    (['a'], ('min_score 0.5 dropped 1 of 2 hits (scores below it); lower it to see more',))
    """
    if min_score is None:
        return result
    kept = [hit for hit in result if hit.score is not None and hit.score >= min_score]
    dropped = len(result) - len(kept)
    if dropped:
        total = len(result)
        result[:] = kept
        note = (f"min_score {min_score:g} dropped {dropped} of {total} hits (scores below it); "
                "lower it to see more")
        result.notes = (*result.notes, note)
    return result
