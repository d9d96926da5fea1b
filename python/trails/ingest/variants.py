"""``ingest_all`` and ``aingest``: :func:`trails.ingest.ingest` run to the end, or from async code.

Both take exactly ``ingest``'s arguments: a ParamSpec keeps one signature, which a user's type
checker and ``help()`` both see.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import ParamSpec

from trails.ingest.events import IngestEvent, IngestionStats

P = ParamSpec("P")


def to_the_end(run: Callable[P, Iterator[IngestEvent]]) -> Callable[P, IngestionStats]:
    def ingest_all(*args: P.args, **kwargs: P.kwargs) -> IngestionStats:
        """Run :func:`ingest` to the end and return its totals."""
        stats = IngestionStats()
        started = time.perf_counter()
        for event in run(*args, **kwargs):
            stats.record(event)
        stats.seconds = time.perf_counter() - started
        return stats

    ingest_all.__signature__ = _returning(run, IngestionStats)  # type: ignore[attr-defined]
    return ingest_all


def in_a_thread(
    run: Callable[P, Iterator[IngestEvent]],
) -> Callable[P, AsyncIterator[IngestEvent]]:
    async def aingest(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[IngestEvent]:
        """The async twin of :func:`ingest`: the work runs in a thread, events arrive here."""
        events = run(*args, **kwargs)
        done = object()
        try:
            while (event := await asyncio.to_thread(next, events, done)) is not done:
                yield event  # type: ignore[misc]
        finally:  # stopped early: the run (and the documents it read ahead) ends in a thread,
            close = getattr(events, "close", None)  # not on the event loop
            if close is not None:
                await asyncio.to_thread(close)

    aingest.__signature__ = _returning(run, AsyncIterator[IngestEvent])  # type: ignore[attr-defined]
    return aingest


def _returning(run: Callable[..., object], returns: object) -> inspect.Signature:
    return inspect.signature(run).replace(return_annotation=returns)
