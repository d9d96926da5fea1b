"""What ingestion reports as it goes, and the totals it ends with."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from trails.display.tables import summary_html, summary_text
from trails.parts import ContextParts, IngestObserved

__all__ = [
    "BatchEmbedded",
    "DocumentFailed",
    "DocumentIngested",
    "DocumentMetadataUpdated",
    "DocumentPruned",
    "DocumentSkipped",
    "DocumentStarted",
    "DocumentWarning",
    "EmbeddingFailed",
    "IngestEvent",
    "IngestionStats",
    "LinkingWarning",
    "SourceSkipped",
    "announce",
]

log = logging.getLogger("trails.ingest")


@dataclass(frozen=True)
class DocumentStarted:
    doc_iri: str
    source: str


@dataclass(frozen=True)
class DocumentSkipped:
    """Unchanged: same version already current, with every chunk and vector present."""

    doc_iri: str
    source: str
    reason: str = "unchanged"


@dataclass(frozen=True)
class DocumentFailed:
    """The source could not be loaded, sanitised or chunked, or what it holds cannot be
    written (text UTF-8 cannot hold, metadata with no RDF form, chunks or vectors that break
    their contract); it failed before any commit, and previous versions are untouched."""

    source: str
    reason: str
    doc_iri: str | None = None


@dataclass(frozen=True)
class BatchEmbedded:
    """One embedding call: ``chunks`` embedded, ``tokens`` (the embedder's count, else an
    estimate) in ``seconds``. ``doc_iris`` are the documents whose chunks it embedded, and
    ``batch_index`` each one's own batch number (0 for a document's first batch), in the
    same order. ``cost`` is ``tokens × price_per_million_tokens / 10⁶`` when the embedder
    declares that price, else None."""

    chunks: int
    tokens: int
    seconds: float
    doc_iris: tuple[str, ...] = ()
    batch_index: tuple[int, ...] = ()
    cost: float | None = None


@dataclass(frozen=True)
class EmbeddingFailed:
    """The embedder failed for these documents; each keeps its previous version."""

    doc_iris: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class DocumentIngested:
    doc_iri: str
    source: str
    chunks: int
    version: str
    replaced: bool


@dataclass(frozen=True)
class DocumentMetadataUpdated:
    """Same text, chunking and embedder, other metadata: the document's triples and its
    vectors' document fields were rewritten; nothing was embedded again."""

    doc_iri: str
    source: str


@dataclass(frozen=True)
class DocumentPruned:
    """The document's source is gone from the ingested roots: the document was deleted."""

    doc_iri: str
    source: str


@dataclass(frozen=True)
class DocumentWarning:
    """Something in the document was not understood and was kept as it is (a date that does
    not parse, say); the document was still ingested."""

    doc_iri: str
    source: str
    message: str


@dataclass(frozen=True)
class SourceSkipped:
    """A file left out on purpose (an RDF file in an ingested folder: facts, not a document);
    counted as a warning."""

    source: str
    reason: str


@dataclass(frozen=True)
class LinkingWarning:
    """The run's linker can link nothing in its scope (it read no labels from the scope's
    graph); counted as a warning, with the scope as its source."""

    scope: str
    message: str


IngestEvent = (
    DocumentStarted | DocumentSkipped | DocumentFailed | BatchEmbedded | EmbeddingFailed
    | DocumentIngested | DocumentMetadataUpdated | DocumentPruned | DocumentWarning
    | SourceSkipped | LinkingWarning
)


@dataclass
class IngestionStats:
    """Totals of one ingest run (``ingest_all`` returns it).

    ``seconds`` is the wall time from the moment these totals were made to the last event
    recorded: whoever sums a run up (a command, the service, a notebook) reports its real
    duration without timing it separately.
    """

    clock: ClassVar[Callable[[], float]] = time.perf_counter  # monotonic seconds

    ingested: int = 0
    skipped: int = 0
    failed: int = 0
    chunks: int = 0
    tokens: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)
    metadata_updated: int = 0
    pruned: int = 0
    warnings: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._started = type(self).clock()

    def record(self, event: IngestEvent) -> None:
        self.seconds = type(self).clock() - self._started
        if isinstance(event, DocumentIngested):
            self.ingested += 1
            self.chunks += event.chunks
        elif isinstance(event, DocumentSkipped):
            self.skipped += 1
        elif isinstance(event, DocumentFailed):
            self.failed += 1
            self.failures.append((event.source, event.reason))
        elif isinstance(event, EmbeddingFailed):
            self.failed += len(event.doc_iris)
            self.failures.extend((iri, event.reason) for iri in event.doc_iris)
        elif isinstance(event, BatchEmbedded):
            self.tokens += event.tokens
            self.embed_seconds += event.seconds
        elif isinstance(event, DocumentMetadataUpdated):
            self.metadata_updated += 1
        elif isinstance(event, DocumentPruned):
            self.pruned += 1
        elif isinstance(event, DocumentWarning):
            self.warnings.append((event.source, event.message))
        elif isinstance(event, SourceSkipped):
            self.warnings.append((event.source, event.reason))
        elif isinstance(event, LinkingWarning):
            self.warnings.append((f"scope {event.scope}", event.message))

    def summary(self) -> str:
        extra = "".join(f", {count} {what}" for count, what in (
            (self.metadata_updated, "metadata updated"), (self.pruned, "pruned"),
            (len(self.warnings), "warning" if len(self.warnings) == 1 else "warnings"))
            if count)
        return (f"{self.ingested} documents ingested, {self.skipped} skipped, {self.failed} "
                f"failed{extra}, {self.chunks} chunks in {self.seconds:.1f}s")

    def problems(self) -> list[str]:
        """One line per document that failed and per warning, each naming its source and
        the reason: what :meth:`summary` only counts.

        >>> stats = IngestionStats(failed=1, failures=[("adr/9.md", "not UTF-8")])
        >>> stats.problems()
        ['adr/9.md: failed: not UTF-8']
        """
        return ([f"{source}: failed: {reason}" for source, reason in self.failures]
                + [f"{source}: warning: {message}" for source, message in self.warnings])

    def interrupted(self, again: str) -> str:
        """What a run stopped by Ctrl-C kept, and how to finish it (``again`` names what to
        run again: committed documents are skipped then).

        >>> IngestionStats(ingested=3, chunks=7, skipped=1).interrupted("the same command")
        'interrupted: 3 documents (7 chunks) were committed, 1 were already current; run the same command again to ingest the rest'
        """
        return (f"interrupted: {self.ingested} documents ({self.chunks} chunks) were "
                f"committed, {self.skipped} were already current; run {again} again to "
                "ingest the rest")

    def _fields(self) -> dict[str, object]:
        fields: dict[str, object] = {
            "ingested": self.ingested, "skipped (unchanged)": self.skipped,
            "failed": self.failed, "metadata updated": self.metadata_updated,
            "pruned": self.pruned, "chunks": self.chunks, "tokens": self.tokens,
            "seconds": f"{self.seconds:.1f} (embedding {self.embed_seconds:.1f})",
        }
        for label, pairs in (("failure", self.failures), ("warning", self.warnings)):
            for number, (source, reason) in enumerate(pairs[:20], start=1):
                fields[f"{label} {number}"] = f"{source}: {reason}"
            if len(pairs) > 20:
                fields[f"{label}s not shown"] = len(pairs) - 20
        return fields

    def __repr__(self) -> str:
        return f"<IngestionStats {self.summary()}>"

    def __str__(self) -> str:
        return summary_text(self.summary(), self._fields())

    def _repr_html_(self) -> str:
        """A notebook's view: the totals, then each failure and warning with its source."""
        return summary_html("ingestion", self.summary(), self._fields())


def announce(ctx: ContextParts, stats: IngestionStats) -> None:
    """A ``trails.ingest`` log record (counts and duration, never text) and the context's
    ``on_ingest`` hooks, none of which may fail the ingest."""
    counts = {name: value for name, value in vars(stats).items()
              if isinstance(value, (int, float)) and not isinstance(value, bool)}
    log.info("ingest %s", " ".join(f"{k}={v}" for k, v in counts.items()),
             extra={"trails": counts})
    if isinstance(ctx, IngestObserved):
        for hook in list(ctx.on_ingest):
            try:
                hook(stats)
            except Exception:  # an observer must not fail the ingest it observes
                log.exception("an on_ingest hook raised; the ingest went on")
