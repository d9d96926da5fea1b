"""A LangChain retriever over any trails retriever (``pip install 'trails[langchain]'``).

>>> from trails import HybridRetriever
>>> from trails.integrations.langchain import TrailsRetriever
>>> from trails.testing import fresh_context
>>> with fresh_context() as ctx:
...     retriever = TrailsRetriever(retriever=HybridRetriever(ctx, k=4))
...     retriever.invoke("anything")
[]

Each ``Document`` has the chunk's full text as ``page_content`` and the hit's provenance as
``metadata`` (``iri``, ``score``, ``components``, ``document``, ``source``, ``title``, ``date``,
``run_id``: :mod:`trails.integrations.hits`); its ``id`` is the chunk's IRI. ``k`` (on the
retriever, or per call: ``invoke(query, k=3)``) replaces the wrapped retriever's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trails._lazy import require

require("langchain_core", "trails.integrations.langchain")

# (The framework is imported after the check above, which names the extra to install.)
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from trails.errors import InvalidArgumentError
from trails.integrations import hits
from trails.retrieval.arguments import check_k
from trails.retrieval.retrievers import Retriever

__all__ = ["TrailsRetriever", "to_documents"]

# What a call may pass besides the query: k, and the flag LangChain's invoke leaves in them.
_CALL_ARGUMENTS = frozenset({"k", "verbose"})


def to_documents(found: hits.Retrieved) -> list[Document]:
    """LangChain documents for a trails search's hits, in rank order."""
    return [Document(page_content=text, metadata=hits.hit_metadata(hit, found.run_id), id=hit.iri)
            for hit, text in zip(found.hits, found.texts)]


class TrailsRetriever(BaseRetriever):
    """LangChain's ``BaseRetriever`` over a trails retriever.

    Attributes:
        retriever: any trails retriever (an object with ``retrieve(query)`` returning hits).
        k: how many documents to return (None: the wrapped retriever's own ``k``).

    Raises:
        InvalidArgumentError: ``k`` is not None or an int from 1 to ``MAX_K``, or an argument
            is none of the adapter's (a filter or scope belongs to the wrapped retriever).
        InvalidArgumentTypeError: ``retriever`` has no ``retrieve`` (a ``Context``...).

    Raises (when invoked):
        InvalidArgumentError: the call's ``k`` is not an int from 1 to ``MAX_K``, or the call
            passes another argument (a filter or scope belongs to the wrapped retriever).
        TrailsError: whatever the wrapped retriever raises (a bad filter, a closed context...).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # pydantic reads `retriever: Any` (check_retriever, below, says what one is, and what to
    # wrap instead); a user's type checker reads the field's type and the keywords taken.
    if TYPE_CHECKING:
        retriever: Retriever

        def __init__(self, *, retriever: Retriever, k: int | None = None) -> None: ...
    else:
        retriever: Any
    k: int | None = None

    def __init__(self, **fields: Any) -> None:  # type: ignore[no-redef]
        # Before pydantic, which would ignore a field it does not know (a filter or scope
        # dropped answers with hits it was meant to exclude), make True or "3" an int, and
        # wrap an error in its own.
        unknown = sorted(set(fields) - set(type(self).model_fields))
        if unknown:
            raise InvalidArgumentError(
                f"TrailsRetriever takes retriever and k, not {', '.join(unknown)}: give a "
                "filter, bindings or scope to the wrapped retriever (TrailsRetriever("
                "retriever=HybridRetriever(ctx, sparql_filter=..., bindings=..., scope=...)))")
        if fields.get("k") is not None:
            check_k(fields["k"])
        if "retriever" in fields:  # (pydantic says it is missing)
            hits.check_retriever(fields["retriever"])
        super().__init__(**fields)

    def _k(self, kwargs: dict[str, Any]) -> int | None:
        # Any other argument would be dropped, and a dropped filter or scope answers with
        # hits it was meant to exclude: refused by name instead.
        unknown = sorted(set(kwargs) - _CALL_ARGUMENTS)
        if unknown:
            raise InvalidArgumentError(
                f"TrailsRetriever.invoke takes k per call, not {', '.join(unknown)}: give a "
                "filter, bindings or scope to the wrapped retriever (HybridRetriever(ctx, "
                "sparql_filter=..., bindings=..., scope=...))")
        # Not coerced: "3" or 2.7 is a mistake the engine's check names (an int from 1 up).
        k: int | None = kwargs.get("k", self.k)
        return k

    @property
    def wrapped(self) -> Retriever:
        """The trails retriever this one calls."""
        retriever: Retriever = self.retriever
        return retriever

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return to_documents(hits.retrieve(self.wrapped, query, self._k(kwargs)))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        return to_documents(await hits.aretrieve(self.wrapped, query, self._k(kwargs)))
