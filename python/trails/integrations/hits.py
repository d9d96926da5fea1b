"""What the framework adapters share: running a trails retriever with a per-call ``k``, sync
or async, and turning its hits into a chunk's text plus JSON-ready metadata.

The metadata of a hit (:func:`hit_metadata`) is the same in every framework:

``iri`` (the chunk), ``score`` (None in graph mode), ``components`` (the scores that made it:
``vector``, ``keyword``, ``rrf``...), ``document`` (the document's IRI), ``source``, ``title``,
``date`` (ISO 8601 text, so that the metadata stays JSON), ``run_id`` (the search in the
context's audit trail, None when it was not recorded) and, when the filter's solution was
recorded, ``admitted_by``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Sequence
from typing import Any, cast

from trails.context import Context
from trails.errors import InvalidArgumentTypeError
from trails.rank._steps import key
from trails.rank.rerank import chunk_texts
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.arguments import check_k
from trails.retrieval.retrievers import Retriever

__all__ = ["Retrieved", "aretrieve", "check_retriever", "hit_metadata", "retrieve", "with_k"]


@dataclasses.dataclass(frozen=True)
class Retrieved:
    """A retriever's hits, each hit's full chunk text, and the search's audit run id."""

    hits: list[RetrievalHit]
    texts: list[str]
    run_id: str | None


def check_retriever(retriever: object) -> Retriever:
    """``retriever`` itself when it can search: an object with a callable ``retrieve``.

    Raises:
        InvalidArgumentTypeError: it has none (a ``Context``, None...): the message says
            what to wrap instead.
    """
    if not callable(getattr(retriever, "retrieve", None)):
        hint = (" (wrap a retriever over it: HybridRetriever(ctx), VectorRetriever(ctx)...)"
                if isinstance(retriever, Context) else "")
        raise InvalidArgumentTypeError(
            "the adapter wraps a trails retriever, an object with retrieve(query), got "
            f"{type(retriever).__name__}{hint}")
    return cast(Retriever, retriever)


def with_k(retriever: Retriever, k: int | None, name: str = "k") -> Retriever:
    """``retriever`` returning ``k`` hits: a copy with its ``k`` field replaced when it has
    one (every trails retriever does); ``retriever`` itself when ``k`` is None.

    ``k`` is checked here, whatever the retriever: a retriever without a ``k`` of its own
    is cut to ``k`` hits afterwards, where a zero or negative ``k`` would silently drop hits.

    Raises:
        InvalidArgumentError: ``k`` is not an int from 1 to ``MAX_K`` (``name`` is how the
            caller spelled it: ``k``, ``similarity_top_k``).
    """
    if k is not None:
        check_k(k, name)
    target: Any = retriever  # a Protocol: whether it is a dataclass is known only here
    if k is None or not dataclasses.is_dataclass(target) or isinstance(target, type):
        return retriever
    if "k" not in {f.name for f in dataclasses.fields(target)}:
        return retriever
    sized: Any = dataclasses.replace(target, k=k)
    return cast(Retriever, sized)


def retrieve(retriever: Retriever, query: str, k: int | None = None,
             name: str = "k") -> Retrieved:
    """Run ``retriever`` on ``query`` (``k`` hits when given) and gather the hits' texts.

    Raises:
        InvalidArgumentError: ``k`` is not an int from 1 to ``MAX_K``.
        TrailsError: whatever the retriever raises, unchanged.
    """
    return _gathered(retriever, with_k(retriever, k, name).retrieve(query), k)


async def aretrieve(retriever: Retriever, query: str, k: int | None = None,
                    name: str = "k") -> Retrieved:
    """:func:`retrieve` for a running event loop: the retriever's own ``aretrieve`` when it
    has one, else its ``retrieve`` in a worker thread (the loop is never blocked).

    Raises:
        InvalidArgumentError: ``k`` is not an int from 1 to ``MAX_K``.
        TrailsError: whatever the retriever raises, unchanged.
    """
    sized = with_k(retriever, k, name)
    native = getattr(sized, "aretrieve", None)
    if native is not None and inspect.iscoroutinefunction(native):
        hits = await native(query)
    else:
        hits = await asyncio.to_thread(sized.retrieve, query)
    return await asyncio.to_thread(_gathered, retriever, hits, k)


def _gathered(retriever: Retriever, hits: Sequence[RetrievalHit], k: int | None) -> Retrieved:
    # A retriever that has no k of its own is cut here, so k always means k.
    found = list(hits)[:k] if k is not None else list(hits)
    ctx = getattr(retriever, "ctx", None)
    graph = chunk_texts(ctx, found) if isinstance(ctx, Context) and found else {}
    texts = [str(h.metadata.get("text") or graph.get(key(h)) or h.snippet or "") for h in found]
    run_id = hits.run_id if isinstance(hits, RetrievalResult) else None
    return Retrieved(found, texts, run_id)


def hit_metadata(hit: RetrievalHit, run_id: str | None) -> dict[str, Any]:
    """The hit's provenance as JSON-ready metadata: one level, except ``components`` and
    ``admitted_by``, which are mappings (see the module docstring)."""
    date = hit.date
    metadata: dict[str, Any] = {
        "iri": hit.iri,
        "score": hit.score,
        "components": dict(hit.components),
        "document": hit.document,
        "source": hit.source,
        "title": hit.title,
        "date": date.isoformat() if date is not None else None,
        "run_id": run_id,
    }
    if hit.admitted_by is not None:
        metadata["admitted_by"] = dict(hit.admitted_by)
    return metadata
