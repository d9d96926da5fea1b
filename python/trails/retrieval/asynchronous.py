"""``aretrieve()`` and the retrievers' ``aretrieve``: retrieval awaited inside a running loop.

Retrieval is blocking work (embedding the query, SPARQL, scoring a matrix), so the async
forms run it in a worker thread (:func:`asyncio.to_thread`) and never start an event loop of
their own: they work in a notebook, a web server or any coroutine, and the loop stays free
while a search runs. Many may run at once on one context: the parts a search touches are
safe to share between threads (each store's threads take turns on its lock, Oxigraph reads
concurrently, the audit trail appends one line at a time, the embedders keep no per-call
state: the mock locks its cache, the packaged model's tokenizers keep fixed settings), so
concurrent calls give the answers the same calls give one after another.

>>> import asyncio
>>> from trails.testing import fresh_context
>>> asyncio.run(aretrieve("anything", fresh_context(), mode="vector"))
<RetrievalResult 0 hits, mode=vector, plan=full-scan, all vectors, exhaustive: []>
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from trails.context import Context
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.retrieve import retrieve

__all__ = ["AsyncRetrieval", "aretrieve"]

Messages = Sequence[Mapping[str, str]]
Hits_co = TypeVar("Hits_co", bound=list[RetrievalHit], covariant=True)


async def aretrieve(query: str, ctx: Context | None = None, **options: Any) -> RetrievalResult:
    """``retrieve(query, ctx, **options)``, awaited: the same arguments, the same result.

    The search runs in a worker thread; the caller's event loop keeps running meanwhile.
    Arguments are checked in that thread, so a bad one raises from the ``await``.
    Cancelling the await raises ``CancelledError`` at once; a thread cannot be stopped, so
    the search itself runs to its end and its answer is dropped (the audit trail still
    records it), and the context stays usable for the next call.

    Raises:
        Everything :func:`trails.retrieval.retrieve.retrieve` raises, unchanged.
    """
    return await asyncio.to_thread(retrieve, query, ctx, **options)


class _Retrieving(Protocol[Hits_co]):
    def retrieve(self, query: str, messages: Messages | None = None) -> Hits_co: ...


class AsyncRetrieval:
    """Gives a retriever ``aretrieve(query, messages=None)``: its ``retrieve``, awaited.

    The retriever's options are fixed at construction and it keeps no state between calls,
    so one retriever may serve many concurrent ``aretrieve`` calls.
    """

    async def aretrieve(self: _Retrieving[Hits_co], query: str,
                        messages: Messages | None = None) -> Hits_co:
        """The hits ``retrieve(query, messages)`` returns, computed in a worker thread.

        Raises:
            Everything this retriever's ``retrieve`` raises, unchanged.
        """
        return await asyncio.to_thread(self.retrieve, query, messages)
