"""What ingestion, ranking steps and SPARQL functions need of a context: its three parts.

:class:`trails.context.Context` is the one implementation; it sits above ingestion and
ranking (it verifies and repairs through them), so they name this protocol instead of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypedDict, runtime_checkable

from trails.audit import AuditTrail
from trails.errors import InvalidArgumentTypeError
from trails.kg.base import KnowledgeGraph
from trails.vector.embedders.base import Embedder
from trails.vector.stores.base import VectorStore

__all__ = ["Audited", "ContextParts", "ContextStats", "IngestObserved", "NotCopied"]


class ContextStats(TypedDict):
    """``Context.stats()``: counts for people (``trails stats``)."""

    documents: int
    vectors: int
    quads: int
    scopes: list[str]
    embedder: str
    directory: str | None


class NotCopied:
    """Refuses ``copy.copy``, ``copy.deepcopy`` and pickling by name: a copy of a context
    would share its open stores and writer lock (closing one closes both), and a pickle
    cannot carry them; the context itself may be shared between threads."""

    def __copy__(self) -> None:
        raise self._not_copied()

    def __deepcopy__(self, memo: object) -> None:
        raise self._not_copied()

    def __reduce_ex__(self, protocol: object) -> None:  # type: ignore[override]
        raise self._not_copied()

    def _not_copied(self) -> InvalidArgumentTypeError:
        directory = getattr(self, "directory", None)
        again = "Context.memory() makes a new, empty one" if directory is None \
            else f"Context.open({str(directory)!r})"
        return InvalidArgumentTypeError(
            "a Context holds open stores and is not copied or pickled: share this one "
            f"(threads may), or open the directory again in another process: {again}")


class ContextParts(Protocol):
    """A graph, a vector store and the embedder that made the store's vectors."""

    kg: KnowledgeGraph
    vectors: VectorStore
    embedder: Embedder
    base_iri: str
    read_only: bool
    metadata_predicates: Mapping[str, str]
    # Scope -> ISO 8601 days documents of that scope are kept after their date (ingest/expiry.py).
    retention: Mapping[str, str]
    # Document metadata keys vector payloads may hold (trails.ingest.payload).
    payload_fields: tuple[str, ...]


@runtime_checkable
class IngestObserved(Protocol):
    """A context with ``on_ingest`` hooks, called with each ingest's stats when it ends."""

    on_ingest: list[Callable[[Any], object]]


@runtime_checkable
class Audited(Protocol):
    """A context with an audit trail: what changes it (deletions) is recorded there too."""

    audit: AuditTrail
