"""Running post-ranking steps, and what a step may return.

A step reorders, re-scores, annotates or drops the hits it is given; it never adds one. The
hits it is given are the ranking's, already confined to the filter's candidates, the
requested scopes and the live, unexpired document versions; a hit a step adds (a user's graph
expansion reaching a cited chunk, say) has passed none of those checks, so it is dropped and
the answer's notes say so. The same chunk in two scopes is two hits: a hit is known by
``(scope, iri)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from trails.parts import ContextParts
from trails.rank._steps import Step, key
from trails.records import RetrievalHit
from trails.retrieval import spans
from trails.tracing import span

__all__ = ["run_steps"]


def run_steps(steps: Sequence[Step], query: str, hits: Sequence[RetrievalHit],
              ctx: ContextParts | None) -> tuple[list[RetrievalHit], list[str]]:
    """``hits`` through each of ``steps`` in order, and the notes the steps leave (their own,
    and one for each step that returned hits it was not given).
    """
    current, notes = list(hits), []
    for step in steps:
        name = spans.named(step)
        with span("trails.step", spans.step(step)):
            returned = step(query, list(current), ctx)
        given = {key(hit) for hit in current}
        kept = [hit for hit in returned if key(hit) in given]
        notes += list(getattr(returned, "notes", ()))
        if len(kept) < len(returned):
            notes.append(f"step {name} returned {len(returned) - len(kept)} hits it was not "
                         "given; they were dropped (a step may reorder, re-score, annotate or "
                         "drop the hits it is given, never add one: an added hit has passed "
                         "no filter, scope or expiry check)")
        current = kept
    return current, notes

