"""``ingest_all`` and ``aingest``: :func:`trails.ingest.ingest` run to the end, or from async code.

Both take exactly ``ingest``'s arguments: a ParamSpec keeps one signature, which a user's type
checker and ``help()`` both see.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import ParamSpec

from trails.errors import InvalidArgumentTypeError
from trails.ingest.events import IngestEvent, IngestionStats

P = ParamSpec("P")


def one_source(run: Callable[P, Iterator[IngestEvent]]) -> Callable[P, Iterator[IngestEvent]]:
    """``run`` refusing, by name and at the call, a second positional argument (the usual
    one is the context, which ``retrieve(query, ctx)`` takes by position and ``ingest`` only
    as ``ctx=``) and a call without ``ctx=`` (``retrieve`` falls back on the default context,
    ``ingest`` never does); Python's own refusals name neither fix."""
    @functools.wraps(run)
    def ingest(*args: P.args, **kwargs: P.kwargs) -> Iterator[IngestEvent]:
        if len(args) > 1:
            raise InvalidArgumentTypeError(
                f"ingest() takes the context as ctx=: ingest_all(documents, ctx=ctx), got "
                f"{len(args)} positional arguments (only the source goes first)")
        if "ctx" not in kwargs:
            raise InvalidArgumentTypeError(
                "ingest() needs ctx=, the context to write into: ingest_all(documents, "
                "ctx=ctx) (it never writes into the default context unasked)")
        return run(*args, **kwargs)

    return ingest


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
    def aingest(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[IngestEvent]:
        """The async twin of :func:`ingest`: the work runs in a thread, events arrive here.

        Its arguments are checked at the call, as ``ingest``'s are. Cancelled (or stopped
        early), it lets the step under way in the thread end, then closes the run there, as
        ``ingest`` stopped early closes: what was committed stays, the rest is not written,
        and ``CancelledError`` reaches the caller.
        """
        return _relayed(run(*args, **kwargs))

    aingest.__signature__ = _returning(run, AsyncIterator[IngestEvent])  # type: ignore[attr-defined]
    return aingest


async def _relayed(events: Iterator[IngestEvent]) -> AsyncIterator[IngestEvent]:
    """``events``, each taken in a thread; closed there when the caller stops."""
    done = object()
    step: asyncio.Future[object] | None = None
    try:
        while True:
            step = asyncio.ensure_future(asyncio.to_thread(next, events, done))
            # Shielded: a cancel reaches this await, not the thread's step, which runs on.
            event = await asyncio.shield(step)
            step = None
            if event is done:
                break
            yield event  # type: ignore[misc]
    finally:  # the run (and the documents it read ahead) ends in a thread, not on the loop
        # A task of its own: a second cancel cuts this wait short, never the closing.
        await asyncio.shield(asyncio.ensure_future(_close(events, step)))


async def _close(events: Iterator[IngestEvent], step: asyncio.Future[object] | None) -> None:
    """Close ``events`` in a thread once ``step`` (a ``next`` still running there) has ended:
    a generator cannot be closed while it runs."""
    if step is not None:
        with contextlib.suppress(BaseException):  # its outcome was for the cancelled caller
            await step
    close = getattr(events, "close", None)
    if close is not None:
        await asyncio.to_thread(close)


def _returning(run: Callable[..., object], returns: object) -> inspect.Signature:
    return inspect.signature(run).replace(return_annotation=returns)
