"""Running post-ranking steps, and what a step may return.

A step reorders, re-scores, annotates or drops the hits it is given; it never adds one. The
hits it is given are the ranking's, already confined to the filter's candidates, the
requested scopes and the live, unexpired document versions; a hit a step adds (a user's graph
expansion reaching a cited chunk, say) has passed none of those checks, so it is dropped and
the answer's notes say so. The same chunk in two scopes is two hits: a hit is known by
``(scope, iri)``.

What a step returns must still read as a ranking: no hit twice, and either no scores at all
or finite scores falling along the list. A step that breaks this is refused with an
:class:`~trails.errors.InvalidArgumentError` naming it, rather than showing a list whose
order and scores disagree.

Inside ``retrieve``, steps judge time at the call's ``now`` (``retrieve(now=...)``, the moment
its expiries are judged at; :func:`trails.rank._steps.asked_at`), so that a step reading the
time (``RecencyDecay``) ranks a search repeated as of that moment as it did then. When the call
passed a ``vector_store`` or ``embedder`` of its own, a step's ``ctx`` is a
:class:`StepContext`: the context with the store and embedder the answer was ranked with.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Sequence
from typing import Any

from trails.errors import InvalidArgumentError
from trails.parts import ContextParts
from trails.rank._steps import Step, judged_at, key
from trails.records import RetrievalHit
from trails.retrieval import spans
from trails.tracing import span
from trails.vector.embedders.base import Embedder
from trails.vector.stores.base import VectorStore

__all__ = ["StepContext", "run_steps"]


class StepContext:
    """``ctx`` as a step sees it when ``retrieve`` was given a ``vector_store`` or an
    ``embedder``: ``vectors`` and ``embedder`` are those the answer was ranked with, anything
    else is the context's own."""

    def __init__(self, ctx: ContextParts, vectors: VectorStore, embedder: Embedder) -> None:
        self.context = ctx
        self.vectors, self.embedder = vectors, embedder

    def __getattr__(self, name: str) -> Any:
        if name == "context":  # not yet set (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.context, name)

    def __repr__(self) -> str:
        return f"StepContext({self.context!r}, vectors={self.vectors!r})"


def run_steps(steps: Sequence[Step], query: str, hits: Sequence[RetrievalHit],
              ctx: ContextParts | None, now: dt.datetime | None = None
              ) -> tuple[list[RetrievalHit], list[str]]:
    """``hits`` through each of ``steps`` in order, and the notes the steps leave (their own,
    and one for each step that returned hits it was not given); the steps judge time at
    ``now`` (None: the clock's).

    Raises:
        InvalidArgumentError: a step returned a hit twice, or scores out of order, missing
            on some hits only, or not finite.
    """
    current, notes = list(hits), []
    for step in steps:
        name = spans.named(step)
        with span("trails.step", spans.step(step)), judged_at(now):
            returned = step(query, list(current), ctx)
        given = {key(hit) for hit in current}
        kept = [hit for hit in returned if key(hit) in given]
        notes += list(getattr(returned, "notes", ()))
        if len(kept) < len(returned):
            notes.append(f"step {name} returned {len(returned) - len(kept)} hits it was not "
                         "given; they were dropped (a step may reorder, re-score, annotate or "
                         "drop the hits it is given, never add one: an added hit has passed "
                         "no filter, scope or expiry check)")
        check_ranked(kept, f"step {name}")
        current = kept
    return current, notes


def check_ranked(hits: Sequence[RetrievalHit], source: str) -> None:
    """Raise unless ``hits`` are distinct and either all unscored or sorted by finite score.

    Raises:
        InvalidArgumentError: naming ``source`` and what is wrong.
    """
    seen: set[tuple[str, str]] = set()
    for hit in hits:
        if key(hit) in seen:
            raise InvalidArgumentError(f"{source} returned {hit.iri} twice; a step must not "
                                       "duplicate hits")
        seen.add(key(hit))
    scores = [hit.score for hit in hits]
    if all(s is None for s in scores):
        return
    if any(s is None or not math.isfinite(s) for s in scores):
        raise InvalidArgumentError(f"{source} returned scores {scores!r:.300}: every hit needs "
                                   "a finite score, or none may have one")
    for before, after in itertools.pairwise(hits):
        if after.score > before.score:  # type: ignore[operator]
            raise InvalidArgumentError(
                f"{source} returned hits out of score order ({before.iri}: {before.score} "
                f"before {after.iri}: {after.score}); a step that reorders hits must give each "
                "the score it is ranked by")
