"""Context: a knowledge graph, a vector store and an embedder that belong together."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Self, cast

from trails import _state, integrity
from trails.audit import AuditTrail
from trails.backends import (
    build_embedder,
    chosen_embedder,
    describe_embedder,
    describe_graph,
    describe_vectors,
    open_graph,
    open_vectors,
)
from trails.config import (
    CONFIG_FILE,
    DEFAULT_BASE_IRI,
    AuditConfig,
    ContextConfig,
    EmbedderConfig,
    PartConfig,
    context_directory,
    read_config,
    write_config,
)
from trails.display.tables import summary_html, summary_text
from trails.errors import ConfigurationError, InvalidArgumentTypeError, TrailsError
from trails.faults import translated
from trails.ingest import maintenance
from trails.ingest.expiry import ExpiredDocument, check_retention
from trails.ingest.linking import Linker
from trails.ingest.minting import check_base_iri, expand_predicates
from trails.ingest.payload import check_payload_fields
from trails.ingest.relink import LinkReport, relink
from trails.ingest.retention import delete_recorded, prune_expired
from trails.ingest.writer import between_writes
from trails.keywords import named_keywords
from trails.kg.base import KnowledgeGraph
from trails.kg.exchange import guard_exports
from trails.parts import ContextParts, ContextStats, NotCopied
from trails.registry import GRAPHS, VECTOR_STORES
from trails.similarity import register_similarity
from trails.vector.embedders.base import Embedder, EmbedderIdentity
from trails.vector.stores.base import VectorStore, VersionedStore
from trails.writer_lock import WriterLock, hold_for_writing, hold_on_servers

__all__ = ["CONFIG_FILE", "DEFAULT_BASE_IRI", "Context", "default_context", "embedder_for",
           "set_default_context"]

log = logging.getLogger("trails.audit")
# Observers of a context's searches or ingests: one callable or several.
Hooks = Callable[[Any], object] | Sequence[Callable[[Any], object]]
_OPEN_MEANT = {"model": "embedder", "graph": "kg", "store": "vectors", "vector_store": "vectors"}


def _hooks(hooks: Hooks, name: str) -> list[Callable[[Any], object]]:
    listed = list(hooks) if isinstance(hooks, Sequence) and not callable(hooks) else [hooks]
    for hook in listed:
        if not callable(hook):
            raise InvalidArgumentTypeError(
                f"{name} takes a callable or a list of callables; got {type(hook).__name__}")
    return listed

class Context(NotCopied):
    """Everything one retrieval needs: ``kg`` (graph), ``vectors`` (store), ``embedder``.

    Build one from parts, open a directory with :meth:`open` (everything persisted there, or
    recorded there when it lives elsewhere), or use ``trails.testing.fresh_context()`` for an
    in-memory one. Close it when done, or use it as a context manager.

    >>> from trails.testing import fresh_context
    >>> with fresh_context() as ctx:
    ...     ctx.kg.query("ASK { ?s ?p ?o }")
    False
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        vectors: VectorStore,
        embedder: Embedder,
        *,
        base_iri: str = DEFAULT_BASE_IRI,
        directory: Path | None = None,
        read_only: bool = False,
        metadata_predicates: Mapping[str, str] | None = None,
        retention: Mapping[str, str] | None = None,
        audit: AuditConfig | None = None,
        audit_enabled: bool | None = None,
        payload: Sequence[str] | None = None,
        on_retrieve: Hooks = (),
        on_ingest: Hooks = (),
    ) -> None:
        self.kg = kg
        self.vectors = vectors
        self.embedder = embedder
        self.base_iri = check_base_iri(base_iri, given=directory is None)  # else recorded
        # Metadata key -> predicate IRI (``author`` -> ``dcterms:creator``; else ``meta:<key>``).
        self.metadata_predicates: Mapping[str, str] = expand_predicates(metadata_predicates or {})
        # Scope -> ISO 8601 days its documents are kept after their date (ingest/expiry.py).
        self.retention: Mapping[str, str] = check_retention(retention or {})
        # Document metadata keys vectors may carry (trails.ingest.payload); none by default.
        self.payload_fields: tuple[str, ...] = check_payload_fields(payload or ())
        self.directory = directory
        guard_exports(kg, directory, vectors)  # kg.dump(path) never over the context's files
        self.read_only = read_only
        # Searches recorded as PROV-O (docs/compliance.md): on for a directory unless its
        # trails.json says otherwise, off in memory; ``ctx.audit.enabled`` switches it.
        self.audit = AuditTrail(kg, directory, audit or AuditConfig(), writable=not read_only,
                                enabled=audit_enabled if audit_enabled is not None
                                else (directory is not None and (audit or AuditConfig()).enabled))
        # Called after each retrieve() / ingest on this context with what happened (counts,
        # durations, the result): observers, never able to fail the work they observe.
        self.on_retrieve: list[Callable[[Any], object]] = _hooks(on_retrieve, "on_retrieve")
        self.on_ingest: list[Callable[[Any], object]] = _hooks(on_ingest, "on_ingest")
        self._closed = False
        self._held: WriterLock | None = None  # a writable open's directory lock
        register_similarity(self)  # trails:similarity(?chunk, "text") in ctx.kg.query

    @classmethod
    @named_keywords({"model": "embedder"})
    def memory(cls, embedder: Embedder | None = None, *, base_iri: str = DEFAULT_BASE_IRI) -> Context:
        """An in-memory context (nothing touches disk); defaults to the local model."""
        base, model = check_base_iri(base_iri, given=True), chosen_embedder(embedder)
        store: VectorStore = VECTOR_STORES.load("sqlite-vec")(
            ":memory:", dim=model.dim, embedder=model.identity)
        return cls(GRAPHS.load("oxigraph")(), store, model, base_iri=base)

    @classmethod
    @named_keywords(_OPEN_MEANT)
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        read_only: bool = False,
        base_iri: str | None = None,
        kg: KnowledgeGraph | None = None,
        vectors: VectorStore | None = None,
        metadata_predicates: Mapping[str, str] | None = None,
        retention: Mapping[str, str] | None = None,
        payload: Sequence[str] | None = None,
        audit: AuditConfig | bool | None = None,
        on_retrieve: Hooks = (),
        on_ingest: Hooks = (),
    ) -> Context:
        """Open (or create) a context persisted in ``directory``.

        ``metadata_predicates`` maps metadata keys to predicate IRIs or CURIEs
        (``{"author": "dcterms:creator"}``); it is recorded in ``trails.json``, and passing
        another one to a writable context records that (the next ingest rewrites each
        document's triples as a metadata update).

        ``retention`` maps scope names to ISO 8601 days (``{"tmp": "P30D"}``): documents of
        that scope expire that long after their date (``trails.ingest.expiry``). It is
        recorded in ``trails.json`` like ``metadata_predicates``; documents already ingested
        get the new expiry when they are ingested again (a metadata update).

        ``payload`` lists the document metadata keys vectors may carry besides what retrieval
        needs (``["title", "date", "author"]``; default none: the vector store may be less
        trusted than the graph, and hits read their title, source and date from the graph).
        It is recorded in ``trails.json``; passing another one to a writable context records
        that, and ``ctx.verify(repair=True)`` then rewrites the payloads already stored.

        ``kg`` and ``vectors`` replace the embedded graph and store (a SPARQL endpoint, a
        Qdrant collection); the directory then keeps the configuration and whatever part is
        still embedded.

        A new directory records in ``trails.json`` the graph, the vector store and the
        embedder (their backends and settings, never a secret) and the base IRI; reopening
        restores them, so ``Context.open(dir)`` alone gets the same parts back, embedded or
        remote. Opening with another embedder is allowed (graph queries still work), but
        retrieving or ingesting with it raises EmbeddingModelMismatchError.

        ``audit``: an :class:`~trails.config.AuditConfig` is recorded in ``trails.json`` (a
        writable context); True or False switches recording for this handle only. By default
        every search is recorded (docs/compliance.md). ``on_retrieve`` and ``on_ingest``: a
        callable or callables called after each search (with a ``RetrieveEvent``) or ingest
        (with its ``IngestionStats``) on this handle; also ``ctx.on_retrieve.append(...)``.

        Raises:
            InvalidArgumentError: ``base_iri`` (or the one recorded) is no absolute IRI, a
                ``retention`` rule (given or recorded) is malformed, ``payload`` names a field
                that is no plain metadata key or one retrieval always keeps, or ``embedder``
                is no Embedder; nothing was written.
            ContextLockedError: another process has the directory open for writing.
            ContextDamagedError: ``trails.json``, the graph or the vector store is corrupt
                (the message names the file).
            StorageError: a file cannot be read or written (full disk, read-only mount,
                permissions); nothing stays open or locked, so the same process can open the
                directory again once that is fixed.
            ConfigurationError: ``read_only`` on a directory that holds no context, a new
                one in a directory of other files, or a recorded part that must be passed in.
            MissingExtraError: a recorded backend's packages are not installed.
        """
        root = context_directory(directory, read_only)
        _hooks(on_retrieve, "on_retrieve"), _hooks(on_ingest, "on_ingest")  # refused first
        integrity.check_open_arguments(kg, vectors, metadata_predicates, audit)
        wanted_predicates = None if metadata_predicates is None else expand_predicates(
            metadata_predicates)  # a bad one refused before a directory is made
        if base_iri is not None:
            check_base_iri(base_iri, given=True)  # refused before anything is written
        wanted_retention = None if retention is None else check_retention(retention)
        wanted_payload = None if payload is None else list(check_payload_fields(payload))
        config = read_config(root)
        creating = config is None
        if config is not None:
            check_base_iri(config.base_iri, f"base_iri in {root / CONFIG_FILE}")
            check_retention(config.retention)  # before anything opens: nothing stays locked
        if config is None:
            if read_only:
                raise ConfigurationError(
                    f"{str(root)!r} holds no trails context; create it first with "
                    f"Context.open({str(root)!r}) or `trails --db {root} init`")
            model = chosen_embedder(embedder)
            integrity.check_room(root, given=(kg, vectors))  # not among someone's files
            config = _new_config(root, model, kg, vectors, base_iri)
            with translated(str(root), "creating the context directory"):
                root.mkdir(parents=True, exist_ok=True)
        else:
            integrity.check_parts_present(root, config)  # never recreate a lost half empty
            model = chosen_embedder(embedder, config.embedder)
        graph = kg if kg is not None else open_graph(config.graph, root, read_only=read_only)
        store: VectorStore | None = None
        held = None
        try:
            held = None if read_only else hold_for_writing(root)  # after the graph's own lock
            store = vectors if vectors is not None else open_vectors(
                config.vectors, root, dim=None if read_only else model.dim, read_only=read_only)
            held = held if read_only else hold_on_servers(held, store)
            if store.embedder_identity is None and not read_only:
                store.bind_embedder(config.embedder.identity)
            context_id = integrity.check_parts_belong(
                root, config, graph if kg is None else None, store, read_only=read_only,
                creating=creating)
            if creating and context_id != config.id:
                config = config.model_copy(update={"id": context_id})
            if wanted_predicates not in (None, config.metadata_predicates) and not read_only:
                config = config.model_copy(update={"metadata_predicates": wanted_predicates})
                write_config(root, config)
            if (wanted_retention is not None and wanted_retention != config.retention
                    and not read_only):
                config = config.model_copy(update={"retention": wanted_retention})
                write_config(root, config)
            if wanted_payload is not None and wanted_payload != config.payload and not read_only:
                config = config.model_copy(update={"payload": wanted_payload})
                write_config(root, config)
            if isinstance(audit, AuditConfig) and audit != config.audit and not read_only:
                config = config.model_copy(update={"audit": audit})
                write_config(root, config)
            if not (root / CONFIG_FILE).exists():
                write_config(root, config)
        except BaseException:
            # Whatever failed (a full disk, a damaged file), nothing this call opened stays
            # open: the graph's lock would refuse the next open in this very process.
            with contextlib.suppress(Exception):  # the first failure is the one to report
                _close_all([store if vectors is None else None, graph if kg is None else None,
                            held])
            raise
        opened = cls(graph, store, model, base_iri=base_iri or config.base_iri, directory=root,
                   read_only=read_only, metadata_predicates=(
                       config.metadata_predicates if metadata_predicates is None or read_only
                       else metadata_predicates), payload=config.payload,
                   retention=(config.retention if wanted_retention is None or read_only
                              else wanted_retention),
                   audit=audit if isinstance(audit, AuditConfig) else config.audit,
                   audit_enabled=audit if isinstance(audit, bool) else None,
                   on_retrieve=on_retrieve, on_ingest=on_ingest)
        opened._held = held and held.owned_by(opened)  # let go if it is never closed
        return opened

    def verify(self, repair: bool = False, *,
               caller: str | None = None) -> maintenance.VerifyReport:
        """Check that graph and vectors agree; ``repair=True`` removes what a crash left,
        each document it deletes recorded in the audit trail first, with ``caller`` (default:
        ``ctx.audit.caller``, else the login name) as who asked."""
        if repair:
            self._check_writable()
        return maintenance.verify(self, repair=repair, caller=caller)

    def link(self, linker: Linker | None = None, *,
             scopes: str | Sequence[str] | None = None) -> LinkReport:
        """Link the current chunks to the entities of their scope's graph again (after the
        ontology changed), with ``linker`` (remembered; default: the ``LabelLinker`` as last
        set); what was added and removed (ADR 0031). Each batch of documents changes in one graph update. A scope of
        ``scopes`` that holds nothing is an UnknownScopeError (nothing is linked)."""
        self._check_writable()
        parts: ContextParts = self
        return relink(parts, linker, scopes)

    def delete_document(self, iri: str, *, include_user_triples: bool = False,
                        caller: str | None = None) -> bool:
        """Remove a document: its vectors and the triples trails wrote about it and its chunks.

        Triples you added about the document survive (ADR 0012) unless
        ``include_user_triples=True``. Returns False when there was no such document. The
        audit trail records the deletion with ``caller`` (default: ``ctx.audit.caller``, else
        the login name) as who asked for it, on the disk before anything is removed.

        Raises:
            StorageError: the record could not be written (nothing was deleted).
        """
        self._check_writable()
        return delete_recorded(cast(ContextParts, self), iri, reason="deleted on request",
                               caller=caller, include_user_triples=include_user_triples)

    def prune_expired(self, *, now: datetime | None = None,
                      dry_run: bool = False) -> list[ExpiredDocument]:
        """Delete every document (of any scope) whose expiry has passed at ``now`` (default:
        the current time), as :meth:`delete_document` does, and record the deletion; with
        ``dry_run`` only list them. Returns ``(IRI, expiry)`` pairs, sorted by IRI.

        Raises:
            ConfigurationError: the context is read-only (``dry_run`` works on one).
            InvalidArgumentError: ``now`` has no offset.
            StorageError: a file cannot be read or written.
        """
        if not dry_run:
            self._check_writable()
        parts: ContextParts = self
        return prune_expired(parts, now=now, dry_run=dry_run)

    def stats(self) -> ContextStats:
        """Counts for people: documents, live vectors, quads, scopes, the embedder."""
        # A store without versioned commits (a user's own VectorStore) records no documents.
        versions = (self.vectors.current_versions()
                    if isinstance(self.vectors, VersionedStore) else {})
        return {
            "documents": len(versions),
            "vectors": self.vectors.count(),
            "quads": len(self.kg),
            "scopes": sorted({v.scope for v in versions.values()}),
            "embedder": self.embedder.identity.describe(),
            "directory": None if self.directory is None else str(self.directory),
        }

    def _check_writable(self) -> None:
        if self.read_only:
            raise ConfigurationError("this context was opened read-only; open it without "
                                     "read_only=True (one writer at a time) to change it")

    def close(self) -> None:
        """Flush and release the parts (twice is fine); another thread's write ends first."""
        if self._closed:
            return
        with between_writes(self):
            self._closed = True
            if _state.default_context is self:
                _state.default_context = None
            try:
                self.audit.close()  # the writer folds what every process recorded
            except Exception as exc:  # noqa: BLE001 - the records stay in the log for next time
                log.warning("could not fold the audit trail into the graph: %s", exc)
            finally:  # Ctrl-C in the fold too: the parts and their locks go (even if one fails)
                _close_all([self.vectors, self.kg, self._held])

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "memory" if self.directory is None else str(self.directory)
        state = " closed" if self._closed else ""  # what a closed one in a list shows
        return f"<Context {where}{state} embedder={self.embedder.identity.describe()}>"

    def _summary(self) -> dict[str, object]:
        """What a person wants to see of the context: where, which stores, how much."""
        fields: dict[str, object] = {
            "directory": "memory" if self.directory is None else str(self.directory),
            "graph": type(self.kg).__name__, "vector store": type(self.vectors).__name__,
            "embedder": self.embedder.identity.describe(),
        }
        if self._closed:
            return {**fields, "state": "closed"}
        try:
            counts: Mapping[str, object] = self.stats()
        except TrailsError as exc:  # a display must show what it can, never raise
            return {**fields, "counts": f"unavailable: {exc}"}
        fields.update({name: counts[name] for name in ("documents", "vectors", "quads", "scopes")})
        fields["mode"] = "read-only" if self.read_only else "writable"
        fields["audit"] = "recording searches" if self.audit.enabled else "off"
        return fields

    def __str__(self) -> str:
        return summary_text("trails context", self._summary())

    def _repr_html_(self) -> str:
        """A notebook's view: directory, stores, embedder, counts and scopes."""
        return summary_html("context", "trails context", self._summary())


def _close_all(parts: list[VectorStore | KnowledgeGraph | WriterLock | None]) -> None:
    """Close every part, even when one fails; then raise the first failure."""
    failure: BaseException | None = None
    for part in parts:
        if part is None:
            continue
        try:
            part.close()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, once all are closed
            failure = failure or exc
    if failure is not None:
        raise failure


def _new_config(root: Path, embedder: Embedder, kg: KnowledgeGraph | None,
                vectors: VectorStore | None, base_iri: str | None) -> ContextConfig:
    """What a new directory records: the parts passed in as they are, the others embedded."""
    return ContextConfig(
        base_iri=base_iri or DEFAULT_BASE_IRI,
        graph=describe_graph(kg, root) if kg is not None else PartConfig(backend="oxigraph"),
        vectors=(describe_vectors(vectors, root) if vectors is not None
                 else PartConfig(backend="sqlite-vec")),
        embedder=describe_embedder(embedder), id=integrity.new_context_id())


def embedder_for(identity: EmbedderIdentity) -> Embedder:
    """Rebuild the embedder an identity names (mock, sentence-transformers or OpenAI).

    The OpenAI key and endpoint are not part of an identity: ``$OPENAI_API_KEY`` and
    ``$OPENAI_BASE_URL`` are read on use.
    """
    return build_embedder(EmbedderConfig(backend=None, identity=identity))


def default_context() -> Context:
    """The context ``retrieve()`` uses when given none; set it with :func:`set_default_context`."""
    if _state.default_context is None:
        raise ConfigurationError(
            "no context given and no default context set: pass ctx=..., or call "
            "trails.set_default_context(Context.open(...)) once"
        )
    context: Context = _state.default_context
    return context


def set_default_context(ctx: Context | None) -> None:
    """Make ``ctx`` the context ``retrieve()`` uses when given none (None: no default)."""
    _state.default_context = ctx
