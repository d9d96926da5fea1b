"""``ingest()``: sources -> documents -> chunks -> batched embeddings -> committed versions."""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, Unpack

from trails.ingest.ahead import groups, read_ahead
from trails.ingest.checks import (
    FileOptions,
    check_ingest_arguments,
    chunk_problem,
    document_problem,
    document_warnings,
    given_vectors,
    iri_problem,
    linked,
    printable,
    shown,
    vector_problems,
)
from trails.ingest.chunk_warnings import chunk_warnings
from trails.ingest.chunkers import default_chunker
from trails.ingest.chunking import chunker_id, chunking_of, chunks_made
from trails.ingest.commits import Commits, Finished, Prepared, Write, chunks_of, ingested
from trails.ingest.dates import date_created
from trails.ingest.document import Chunker, Document, LoadFailure, Sanitizer
from trails.ingest.events import (
    BatchEmbedded,
    DocumentFailed,
    DocumentMetadataUpdated,
    DocumentSkipped,
    DocumentStarted,
    DocumentWarning,
    EmbeddingFailed,
    IngestEvent,
    IngestionStats,
    LinkingWarning,
    SourceSkipped,
    announce,
)
from trails.ingest.expiry import expiry_problem
from trails.ingest.given_paths import check_given_paths
from trails.ingest.link_notes import end_of_run_note
from trails.ingest.linker_settings import remember_linker
from trails.ingest.linking import Linker, ScopeLinker, linker_warnings
from trails.ingest.loaders import Source, load
from trails.ingest.minting import doc_iri, document_manifest, version_of
from trails.ingest.prune import SourcesRead, prune_missing, prune_roots
from trails.ingest.sanitize import sanitized
from trails.ingest.spans import IngestTrace
from trails.ingest.variants import in_a_thread, one_source, to_the_end
from trails.ingest.writer import PendingDocument, VersionWriter, refuse_forked_child
from trails.parts import ContextParts
from trails.vector.embedders.base import declared_price, token_estimator

__all__ = ["aingest", "ingest", "ingest_all"]

# A batch is cut at this many estimated tokens even if it has fewer than batch_size chunks,
# so one batch of long chunks cannot exhaust memory or an API's per-request limit.
DEFAULT_BATCH_TOKENS = 32_768
# Finished documents are committed together once they hold this many chunks, or once this
# many seconds have passed since the run's last commit (whichever comes first), and at the
# end. A commit has costs that do not shrink with it: ~10 ms of transactions (two SQLite,
# three graph) and a keyword segment whose posting lists are mostly one row long, each merged
# again later (ADR 0036, third amendment: with the mock embedder, commits of ~500 chunks cost
# ~20% more CPU per chunk than commits of several thousand). The time bound keeps what an
# interrupt or a crash can lose to a few seconds of work whatever the embedder's speed (the
# next run embeds those documents again), and lets readers see a long run's progress; what
# was committed stays (ADR 0005).
COMMIT_CHUNKS = 8192
COMMIT_SECONDS = 5.0
# Documents read ahead from the loader, so their version records come in one query.
LOOKAHEAD = 64
# Documents are prepared (loaded, chunked, embedded) in a thread of their own while the last
# ones commit (ADR 0036, fourth amendment): that thread runs at most this many items (events,
# finished documents) ahead of the commits, and at most COMMIT_CHUNKS chunks of
# finished documents, so a run holds at most about two commits' worth of embedded chunks.
AHEAD_ITEMS = 4096


def ingest(
    source: Source,
    *,
    ctx: ContextParts,
    scope: str | None = None,
    chunker: Chunker | None = None,
    sanitizer: Sanitizer | None = None,
    batch_size: int = 64,
    max_batch_tokens: int = DEFAULT_BATCH_TOKENS,
    base_iri: str | None = None,
    prune: bool = False,
    linker: Linker | None = None,
    prepare_ahead: bool = True,
    **loader_options: Unpack[FileOptions],
) -> Iterator[IngestEvent]:
    """Ingest documents into ``ctx`` and yield events as work happens.

    Args:
        source: a path, a list of paths, a Loader, a Document, or an iterable of Documents.
        ctx: the writable context to ingest into (a :class:`trails.context.Context`).
        scope: the scope (named graph and vector field) to write to; default scope if None.
        chunker: how to split documents; by default sentence-aware, capped by the embedder's
            token limit where it has a tokenizer.
        sanitizer: a callable (sync or async) applied to each Document before chunking.
        batch_size, max_batch_tokens: embedding batches are cut at whichever comes first.
        base_iri: the base of minted IRIs (default: the context's).
        prune: after the run, delete the documents of this scope whose source file lies
            under one of the ingested paths and no longer exists (one at a time, each
            crash-safe; ``DocumentPruned`` events). Paths only.
        linker: links each chunk it writes to the entities of the scope's graph
            (:class:`trails.ingest.linking.LabelLinker`: by their labels), as part of its
            version (ADR 0031); the graph is read once, when the run starts. Documents whose
            version is already current are skipped as ever: ``ctx.link()`` re-links them.
            Without a linker, a run that writes into a linked scope ends with a
            ``LinkingWarning``: what it wrote mentions nothing.
        prepare_ahead: load, chunk and embed the next documents in a second thread while a
            commit writes (ADR 0036, fourth amendment); the loader, sanitizer, chunker, linker
            and embedder are then called there. False keeps the whole run on the thread that
            iterates (for objects tied to it). Either way every write and every event happen
            on that thread, in the same order.
        loader_options: passed to the file loader (``include``, ``exclude``, JSONL fields).

    A document that cannot be written (text UTF-8 cannot hold, metadata with no RDF form, a
    chunker's, embedder's or linker's output that is no valid chunk, vector or mention)
    fails alone with a ``DocumentFailed`` event before it joins a commit; the others are
    committed.

    Raises (at the call, before anything is written):
        InvalidArgumentError: an argument of the wrong type or out of range, a malformed
            ``scope`` or ``base_iri`` (an InvalidArgumentTypeError for a wrong type), a
            source path that names nothing (text meant as a Document, a glob, a typo).
        ConfigurationError: the context is read-only, or this thread is inside a read
            snapshot of its vector store (``with ctx.vectors.snapshot():``).
        EmbeddingModelMismatchError: the context's vectors were made by another embedder.
        ValueError: ``prune`` with a source that is not paths, or with a path that does not
            exist (a typo must not delete everything under it); after the run, a folder
            now empty that documents were read from (an unmounted drive): nothing is pruned.
    """
    refuse_forked_child(ctx)  # first: a forked child must touch no store (writer.py)
    name, base = check_ingest_arguments(ctx, scope, chunker, sanitizer, batch_size,
                                        max_batch_tokens, base_iri, prune, loader_options,
                                        linker, prepare_ahead)
    ctx.vectors.bind_embedder(ctx.embedder.identity)
    roots = prune_roots(source) if prune else []
    check_given_paths(source)
    # Checked at the call, not at the first event: a run never iterated, or iterated far
    # from where it was made, must still say what was wrong, and where. The run itself (its
    # span, its first read and write) starts at the first event, as a generator's would.
    return _ingesting(ctx, functools.partial(_Run, ctx, name, chunker, batch_size,
                                             max_batch_tokens),
                      source, sanitizer, base, roots, prune, linker, prepare_ahead,
                      loader_options)


def _ingesting(ctx: ContextParts, begin: Callable[[], _Run], source: Source,
               sanitizer: Sanitizer | None, base: str, roots: list[Any], prune: bool,
               linker: Linker | None, prepare_ahead: bool, loader_options: FileOptions,
               ) -> Generator[IngestEvent, None, None]:
    """The run :func:`ingest` checked the arguments of."""
    run = begin()
    note_for = end_of_run_note(ctx, run.scope, linker)  # before this run's settings are kept
    remember_linker(ctx, linker)  # a later run without settings links the same way
    run.linker = None if linker is None else linker.for_scope(ctx.kg, run.scope)
    stats, started = IngestionStats(), time.perf_counter()
    events = _events(run, source, sanitizer, base, roots, prune, loader_options, prepare_ahead)
    try:
        for event in events:
            stats.record(event)
            yield event
        if (note := note_for(stats.ingested, stats.skipped)) is not None:  # links it did not make
            stats.record(warning := LinkingWarning(run.scope, note))
            yield warning
    finally:  # also when stopped early (Ctrl-C): what was committed, observed
        try:
            events.close()  # the documents read ahead, if any, stop being prepared first
        finally:  # even if a second Ctrl-C cut that wait short
            carry = getattr(ctx.kg, "carry_columns", None)
            if carry is not None:  # the kept filter columns, for the revision this run left
                carry()
            stats.seconds = time.perf_counter() - started
            announce(ctx, stats)
            run.trace.end(stats, sys.exc_info()[1])


def _events(run: _Run, source: Source, sanitizer: Sanitizer | None, base: str,
            roots: list[Any], prune: bool, loader_options: FileOptions, prepare_ahead: bool,
            ) -> Generator[IngestEvent, None, None]:
    for note in linker_warnings(run.linker, run.scope) if run.linker is not None else ():
        yield LinkingWarning(run.scope, note)  # labels it cannot link are a mistake
    prepared = _prepared(run, source, sanitizer, base, loader_options)
    commits = Commits(run.writer, run.trace, COMMIT_CHUNKS, COMMIT_SECONDS)
    ahead = (read_ahead(prepared, AHEAD_ITEMS, chunks_of, COMMIT_CHUNKS) if prepare_ahead
             else prepared)
    with contextlib.closing(ahead) as items:
        for item in items:
            yield from commits.take(item)
    if prune:
        yield from prune_missing(run.ctx, run.scope, roots, run.sources)


def _prepared(run: _Run, source: Source, sanitizer: Sanitizer | None, base: str,
              loader_options: FileOptions) -> Generator[Prepared, None, None]:
    """The run's first half: its events, and its documents once embedded (``Finished``)
    or needing only a graph or metadata write (``Write``), in the order of a run without
    read-ahead. Reads both stores (version records) but never writes."""
    documents = groups(load(source, **loader_options), LOOKAHEAD)
    while (items := run.trace.load(documents)) is not None:
        run.prefetch(items, base)
        for item in items:
            for prepared in run.take(item, sanitizer, base):
                run.sources.saw(item, prepared, base)
                yield prepared
    yield from run.drain(force=True)


ingest = one_source(ingest)
ingest_all, aingest = to_the_end(ingest), in_a_thread(ingest)


class _Run:
    """One ingest run: the queue of chunks waiting for the embedder, and the commits."""

    def __init__(self, ctx: ContextParts, scope: str, chunker: Chunker | None, batch_size: int,
                 max_tokens: int) -> None:
        self.ctx = ctx
        self.scope = scope
        self.chunker = chunker if chunker is not None else default_chunker(ctx.embedder)
        self.chunker_given = chunker is not None  # the default one cuts at the model's limit
        self.chunker_id = chunker_id(self.chunker)
        self.embedder_id = ctx.embedder.identity.model_dump_json()
        self.estimate_tokens = token_estimator(ctx.embedder)
        self.writer = VersionWriter(ctx, scope)
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.queue: deque[tuple[PendingDocument, int, int]] = deque()  # (doc, chunk idx, tokens)
        self.queued_tokens = 0
        self.open: list[PendingDocument] = []
        self.seen: dict[str, str] = {}  # doc IRI -> source, for ids repeated within the run
        self.batches_of: dict[str, int] = {}  # doc IRI -> its batches embedded so far
        self.trace = IngestTrace(scope, ctx.embedder, ctx.vectors)
        self.linker: ScopeLinker | None = None
        self.sources = SourcesRead(scope)  # what --prune needs of the files read

    def prefetch(self, items: list[Document | LoadFailure], base: str) -> None:
        """Look up the version records of the documents about to be taken, all at once."""
        iris = []
        for item in items:
            if isinstance(item, Document):
                try:
                    iris.append(doc_iri(base, item.id, self.scope))
                except Exception:  # noqa: BLE001, S112 - a bad id fails in take(), in order
                    continue
        self.writer.prefetch(iris)

    def take(self, item: Document | LoadFailure, sanitizer: Sanitizer | None,
             base: str) -> Iterator[Prepared]:
        if isinstance(item, LoadFailure):
            source = printable(item.source)
            yield (SourceSkipped(source, item.reason) if item.skipped
                   else DocumentFailed(source, item.reason))
            return
        try:
            document = sanitized(sanitizer, item)
        except Exception as exc:  # noqa: BLE001 - a sanitizer's failure is that document's failure
            yield DocumentFailed(printable(item.source),
                                 f"sanitizer failed: {type(exc).__name__}: {exc}")
            return
        problem = document_problem(document) or expiry_problem(
            document.metadata, date_created(document.metadata), self.scope, self.ctx.retention
        ) or iri_problem(doc_iri(base, document.id, self.scope))
        if problem is not None:  # checked before the document can reach a commit
            yield DocumentFailed(printable(document.source),
                                 f"document {shown(document.id)}: {problem}",
                                 _iri_if_any(base, document.id, self.scope))
            return
        iri = doc_iri(base, document.id, self.scope)
        if iri in self.seen:  # two versions of one document in a batch would erase each other
            yield DocumentFailed(document.source, f"same document id {document.id!r} as "
                                 f"{self.seen[iri]} earlier in this run; ids must be unique", iri)
            return
        self.seen[iri] = document.source
        yield DocumentStarted(iri, document.source)
        for problem in document_warnings(document):
            yield DocumentWarning(iri, document.source, problem)
        version = version_of(document, chunking_of(document, self.chunker_id), self.embedder_id)
        try:  # the document's triples, built now: what fails here must not fail a commit
            document_manifest(document, iri, version, 0, self.scope, self.ctx.metadata_predicates,
                              self.ctx.retention)
        except Exception as exc:  # noqa: BLE001 - that document's failure
            yield DocumentFailed(document.source, f"metadata cannot be written as RDF: {exc}", iri)
            return
        state, replaced = self.writer.state(iri, version, document)
        if state == "current":
            yield DocumentSkipped(iri, document.source)
            return
        if state == "elsewhere":
            yield DocumentFailed(document.source, f"{iri} is a document of scope "
                                 f"{self.writer.scope_of(iri)!r}, not {self.scope!r}; ingest it "
                                 "there, or delete it there first", iri)
            return
        try:
            with self.trace.chunk() as chunking:
                chunks = (chunks_made(self.chunker, document) if document.chunks is None
                          else list(document.chunks))
                chunking.set({"trails.ingest.chunks": len(chunks)})
        except Exception as exc:  # noqa: BLE001 - a chunker's failure is that document's failure
            yield DocumentFailed(document.source, f"chunking failed: {type(exc).__name__}: {exc}", iri)
            return
        problem = chunk_problem(document, chunks)
        if problem is not None:
            whose = ("chunker: " if document.chunks is None  # given chunks used no chunker
                     else f"document {shown(document.id)}: its given chunks: ")
            yield DocumentFailed(document.source, whose + problem, iri)
            return
        for problem in chunk_warnings(document, chunks, self.ctx.embedder, self.chunker_given):
            yield DocumentWarning(iri, document.source, problem)
        given, problem = given_vectors(document, chunks, self.ctx.embedder.identity)
        if problem is not None:
            yield DocumentFailed(document.source, f"document {shown(document.id)}: {problem}",
                                 iri)
            return
        pending = PendingDocument(document, iri, version, chunks, replaced)
        if self.linker is not None and state != "metadata":
            try:
                pending.mentions = [linked(self.linker, chunk) for chunk in chunks]
            except Exception as exc:  # noqa: BLE001 - a linker's failure is that document's
                yield DocumentFailed(document.source,
                                     f"linking failed: {type(exc).__name__}: {exc}", iri)
                return
        if state == "graph-behind":
            yield Write(lambda: self.writer.finish_graph([pending]), ingested(pending))
            return
        if state == "metadata":
            yield Write(lambda: self.writer.update_metadata(pending),
                         DocumentMetadataUpdated(iri, document.source))
            return
        self.open.append(pending)
        for index, vector in given.items():  # computed elsewhere: never embedded again
            pending.fill(index, vector)
        for index, chunk in enumerate(chunks):
            if index in given:
                continue
            tokens = self.estimate_tokens(chunk.text)
            self.queue.append((pending, index, tokens))
            self.queued_tokens += tokens
        yield from self.drain(force=False)  # a document without chunks is complete: it waits
                                            # for the next commit like any other

    def drain(self, force: bool) -> Iterator[Prepared]:
        """Embed full batches (all queued chunks when ``force``), then hand the finished
        documents to the commits (which must commit them all when ``force``)."""
        while self.queue and (force or len(self.queue) >= self.batch_size
                              or self.queued_tokens >= self.max_tokens):
            yield from self._embed_one_batch()
        yield from self._commit_complete(force)

    def _embed_one_batch(self) -> Iterator[Prepared]:
        batch: list[tuple[PendingDocument, int, int]] = []
        tokens = 0
        while self.queue and len(batch) < self.batch_size and (
                not batch or tokens + self.queue[0][2] <= self.max_tokens):
            item = self.queue.popleft()
            batch.append(item)
            tokens += item[2]
        self.queued_tokens -= tokens
        yield from self._embed(batch, retry_per_document=True)
        yield from self._commit_complete(force=False)

    def _embed(self, batch: list[tuple[PendingDocument, int, int]],
               retry_per_document: bool) -> Iterator[IngestEvent]:
        started = time.perf_counter()
        try:
            with self.trace.embed(len(batch), sum(t for _, _, t in batch)):
                vectors, problems = vector_problems(
                    self.ctx.embedder.embed_array([d.chunks[i].text for d, i, _ in batch]),
                    len(batch), self.ctx.embedder.dim)
        except Exception as exc:  # noqa: BLE001 - an embedding failure fails the batch's documents
            documents = {id(d): d for d, _, _ in batch}
            if not retry_per_document or len(documents) == 1:
                yield from self._fail(documents.values(), exc)
                return
            # One document's text must not fail the others that share its batch: embed each
            # document's part of the batch on its own, and fail only those that fail again.
            for key in documents:
                yield from self._embed([item for item in batch if id(item[0]) == key], False)
            return
        bad: dict[int, tuple[PendingDocument, str]] = {}
        for (document, index, _), problem in zip(batch, problems):
            if problem is not None and id(document) not in bad:
                bad[id(document)] = (document, f"chunk {index}: {problem}")
        for document, reason in bad.values():  # its vectors would fail the whole commit
            if self._drop([document]):
                yield DocumentFailed(document.document.source, reason, document.iri)
        for (document, index, _), vector in zip(batch, vectors):
            if id(document) not in bad:
                document.fill(index, vector)
        yield self._embedded(batch, time.perf_counter() - started)

    def _embedded(self, batch: list[tuple[PendingDocument, int, int]], seconds: float,
                  ) -> BatchEmbedded:
        """The event of an embedded batch: its documents, each one's batch number, the cost."""
        iris = tuple(dict.fromkeys(d.iri for d, _, _ in batch))
        numbers = tuple(self.batches_of.get(iri, 0) for iri in iris)
        self.batches_of.update((iri, n + 1) for iri, n in zip(iris, numbers))
        tokens = sum(t for _, _, t in batch)
        price = declared_price(self.ctx.embedder)
        cost = None if price is None else tokens * price / 1_000_000
        return BatchEmbedded(len(batch), tokens, seconds, iris, numbers, cost)

    def _fail(self, documents: Iterable[PendingDocument], exc: Exception) -> Iterator[IngestEvent]:
        lost = self._drop(documents)
        yield EmbeddingFailed(tuple(d.iri for d in lost), f"{type(exc).__name__}: {exc}")

    def _drop(self, documents: Iterable[PendingDocument]) -> list[PendingDocument]:
        """Take these documents out of the run (the queue and the open list); the ones that
        were still open."""
        failed = {id(d) for d in documents}
        self.queue = deque(item for item in self.queue if id(item[0]) not in failed)
        self.queued_tokens = sum(item[2] for item in self.queue)
        lost = [d for d in self.open if id(d) in failed]
        self.open = [d for d in self.open if id(d) not in failed]
        return lost

    def _commit_complete(self, force: bool) -> Iterator[Prepared]:
        """The documents whose every vector is known, handed to the commits: a point where
        the run may commit (it must when ``force``)."""
        done = [d for d in self.open if d.complete]
        if done:
            self.open = [d for d in self.open if not d.complete]
        yield Finished(done, force)


def _iri_if_any(base: str, doc_id: object, scope: str) -> str | None:
    """The document's IRI, or None when its id cannot make one."""
    try:
        return doc_iri(base, doc_id, scope)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a bad id has no IRI; the failure names the id instead
        return None

