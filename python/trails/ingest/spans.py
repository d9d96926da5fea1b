"""The spans of an ingest run (``trails.tracing``; docs/tracing.md lists them).

``trails.ingest`` covers the run. The run is a generator, which hands control back to its
consumer at every event, so that span is never made current (the consumer's own spans must
not nest under it); its children name it as their parent and never span a ``yield``:
``trails.ingest.load`` (reading a group of documents ahead), ``trails.ingest.chunk`` (one
document), ``trails.ingest.embed`` (one embedding batch) and ``trails.ingest.commit`` (one
commit of finished documents). Counts and names only: no text, no source path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from trails.ingest.events import IngestionStats
from trails.tracing import Attributes, db_system, span, start

__all__ = ["IngestTrace"]

T = TypeVar("T")


class IngestTrace:
    """The root span of one run and its children."""

    def __init__(self, scope: str, embedder: Any, store: object) -> None:
        self.embedder = embedder
        self.root = start("trails.ingest", lambda: {
            "trails.ingest.scope": scope, "db.system.name": db_system(store)})

    def load(self, groups: Iterator[list[T]]) -> list[T] | None:
        """The next group of documents read ahead (None at the end), read in a span."""
        with span("trails.ingest.load", parent=self.root) as current:
            group = next(groups, None)
            current.set({"trails.ingest.documents": 0 if group is None else len(group)})
            return group

    def chunk(self) -> Any:
        return span("trails.ingest.chunk", parent=self.root)

    def embed(self, chunks: int, tokens: int) -> Any:
        return span("trails.ingest.embed", lambda: self._embedding(chunks, tokens),
                    parent=self.root)

    def commit(self, documents: int, chunks: int) -> Any:
        return span("trails.ingest.commit", {"trails.ingest.documents": documents,
                                             "trails.ingest.chunks": chunks},
                    parent=self.root)

    def end(self, stats: IngestionStats, error: BaseException | None) -> None:
        """End the run's span with its totals; ``error`` (not a consumer stopping early)
        marks it failed."""
        self.root.set({f"trails.ingest.{name}": getattr(stats, name) for name in (
            "ingested", "skipped", "failed", "chunks", "tokens", "metadata_updated", "pruned")})
        self.root.end(None if isinstance(error, GeneratorExit) else error)

    def _embedding(self, chunks: int, tokens: int) -> Attributes:
        identity = self.embedder.identity
        return {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": identity.model,
                "gen_ai.embeddings.dimension.count": identity.dim,
                "trails.ingest.chunks": chunks, "trails.ingest.tokens": tokens}

