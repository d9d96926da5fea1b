"""The second half of an ingest run: its writes, in the consumer's thread, in order.

The first half (``pipeline``: loading, chunking, embedding; reads only) hands over its events
and two kinds of work: :class:`Finished` documents, whose vectors are all known, and
:class:`Write` for a document that needs one write and no embedding. :class:`Commits` groups
the finished documents into commits (ADR 0005's four steps, ``writer.VersionWriter``) and
yields each document's event only after its write. All writes happen here, whether or not the
first half runs ahead in a thread of its own (``ahead.read_ahead``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from trails.ingest.events import DocumentIngested, IngestEvent
from trails.ingest.spans import IngestTrace
from trails.ingest.writer import PendingDocument, VersionWriter

__all__ = ["Commits", "Finished", "Prepared", "Write", "chunks_of", "ingested"]


class Finished:
    """Documents whose vectors are all known (maybe none): a point where a commit may run,
    and must when ``force`` (the run's end)."""

    def __init__(self, documents: list[PendingDocument], force: bool) -> None:
        self.documents, self.force = documents, force


class Write:
    """A document that needs one write and no embedding (its graph finished, its metadata
    updated): done in order with the commits, then ``event``."""

    def __init__(self, write: Callable[[], None], event: IngestEvent) -> None:
        self.write, self.event = write, event


Prepared = IngestEvent | Finished | Write


class Commits:
    """Finished documents committed together once they hold ``chunks`` chunks or ``seconds``
    after the last commit (or the run's start), and at the end."""

    def __init__(self, writer: VersionWriter, trace: IngestTrace, chunks: int,
                 seconds: float) -> None:
        self.writer, self.trace = writer, trace
        self.chunks, self.seconds = chunks, seconds
        self.ready: list[PendingDocument] = []  # embedded, waiting for the next commit
        self.ready_chunks = 0
        self.last_commit = time.monotonic()

    def take(self, item: Prepared) -> Iterator[IngestEvent]:
        """The events of one item of the first half, after whatever it writes."""
        if isinstance(item, Write):
            item.write()
            yield item.event
        elif isinstance(item, Finished):
            yield from self._commit(item)
        else:
            yield item

    def _commit(self, finished: Finished) -> Iterator[IngestEvent]:
        self.ready += finished.documents
        self.ready_chunks += chunks_of(finished)
        if not self.ready or not (finished.force or self.ready_chunks >= self.chunks
                                  or time.monotonic() - self.last_commit >= self.seconds):
            return
        done, chunks, self.ready, self.ready_chunks = self.ready, self.ready_chunks, [], 0
        with self.trace.commit(len(done), chunks):
            self.writer.commit(done)
        self.last_commit = time.monotonic()
        for pending in done:
            yield ingested(pending)


def chunks_of(item: Prepared) -> int:
    """The chunks an item holds embedded (what a run holds in memory and an interrupt loses)."""
    return sum(len(d.chunks) for d in item.documents) if isinstance(item, Finished) else 0


def ingested(pending: PendingDocument) -> DocumentIngested:
    """The event of a document whose version was written."""
    return DocumentIngested(pending.iri, pending.document.source, len(pending.chunks),
                            pending.version, pending.replaced)
