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
import dataclasses
import difflib
import functools
import inspect
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import Any, Never, ParamSpec, Protocol, TypeVar

from trails.context import Context
from trails.errors import InvalidArgumentTypeError
from trails.keywords import unknown_keywords
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.arguments import KEYWORDS_MEANT
from trails.retrieval.retrieve import retrieve

__all__ = ["AsyncRetrieval", "aretrieve"]

Messages = Sequence[Mapping[str, str]]
Hits_co = TypeVar("Hits_co", bound=list[RetrievalHit], covariant=True)
P = ParamSpec("P")
R = TypeVar("R")


def _arguments_of(
    function: Callable[P, R],
) -> Callable[[Callable[..., Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """The coroutine function decorated, unchanged, as a type checker sees it: taking
    ``function``'s arguments (a user's checker then refuses a misspelled or mistyped option
    of ``aretrieve`` as it does ``retrieve``'s, where ``**options`` would take anything)."""
    def same(coroutine: Callable[..., Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        return coroutine

    return same


@_arguments_of(retrieve)
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
    so one retriever may serve many concurrent ``aretrieve`` calls: an option given to
    ``retrieve`` or ``aretrieve`` (``k=3``) is refused, saying where it goes.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "retrieve" in vars(cls):
            setattr(cls, "retrieve", _options_fixed(cls.__name__, vars(cls)["retrieve"]))  # noqa: B010

    async def aretrieve(self: _Retrieving[Hits_co], query: str,
                        messages: Messages | None = None, **options: Never) -> Hits_co:
        """The hits ``retrieve(query, messages)`` returns, computed in a worker thread.

        Raises:
            InvalidArgumentTypeError: an option given per call (``k=3``): it is fixed when
                the retriever is made (``Never``: a type checker refuses it too).
            Everything this retriever's ``retrieve`` raises, unchanged.
        """
        if options:
            raise _per_call(type(self).__name__, options.keys(), self)
        return await asyncio.to_thread(self.retrieve, query, messages)


def _options_fixed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """A retriever's ``retrieve`` refusing keywords it does not take, by :func:`_per_call`."""
    parameters = inspect.signature(method).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return method
    accepted = frozenset(list(parameters)[1:])  # after self

    @functools.wraps(method)
    def checked(self: object, *args: Any, **kwargs: Any) -> Any:
        if not accepted.issuperset(kwargs):
            raise _per_call(name, kwargs.keys() - accepted, self)
        return method(self, *args, **kwargs)

    return checked


def _per_call(name: str, given: Collection[str], retriever: object) -> InvalidArgumentTypeError:
    """The error for options given to a retriever's ``retrieve`` that are set when it is made:
    its fields by name, or the field meant by a name used elsewhere (``top_k``)."""
    fields = ({f.name for f in dataclasses.fields(retriever) if f.init}
              if dataclasses.is_dataclass(retriever) else set())
    made = f"{name}(..., {{0}}=...), or dataclasses.replace(retriever, {{0}}=...)"
    if options := sorted(set(given) & fields):
        return InvalidArgumentTypeError(
            f"{name}.retrieve() takes the query and messages only, not {', '.join(options)}: "
            f"a retriever's options are fixed when it is made ({made.format(options[0])})")
    meant = {alias: to for alias, to in KEYWORDS_MEANT.items() if to in fields}
    targets = [meant.get(g) or next(iter(difflib.get_close_matches(g, fields, n=1)), None)
               for g in sorted(given)]
    if all(targets):  # each an option misnamed: said as the constructor would say it
        refusal = unknown_keywords(f"{name}.retrieve", given, fields, meant)
        return InvalidArgumentTypeError(f"{refusal} (set when the retriever is made: "
                                        f"{made.format(targets[0])})")
    return unknown_keywords(f"{name}.retrieve", given, ("query", "messages"), {})
