"""Checking and repairing the agreement between the graph and the vector store."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pyoxigraph as ox

from trails.audit import DeletionRecord, new_run_id
from trails.audit.records import started_now
from trails.ingest.dates import DATE_KEYS
from trails.ingest.document import Chunk
from trails.ingest.graph_updates import (
    OWNED_ON_CHUNKS,
    STAGED_FOR,
    finish_update,
    graph_block,
    kept_manifests,
    manifest_triples,
    mention_deletes,
    owned_document_deletes,
)
from trails.ingest.hand_checks import chunk_types_by_hand, links_by_hand, types_by_hand
from trails.ingest.minting import MINTED_GRAPH, chunk_nquads, chunk_quads, document_named
from trails.ingest.payload import fields_outside
from trails.ingest.writer import between_writes, one_stored_state, writing_versions
from trails.kg.base import KnowledgeGraph, NQuadsGraph, select
from trails.kg.hand_links import minted_links
from trails.kg.opening import read_revision
from trails.kg.sparql import TRAILS
from trails.kg.terms import IRI
from trails.parts import Audited, ContextParts
from trails.scopes import DEFAULT_SCOPE, SCOPE_BASE, is_scope_name
from trails.vector.stores.base import DocumentVersion, versioned
from trails.vector.stores.rows import live_rows, resolves_by_iri

__all__ = ["VerifyReport", "delete_document", "delete_recorded", "record_deletion", "verify"]

# Why repair deletes a document, as its audit record says.
REPAIR_REASON = "repair: it could not be made whole from what is stored"
ORPHAN_REASON = "repair: the graph described it with no recorded version"

_CURRENT_VERSION = ox.NamedNode(TRAILS + "currentVersion")
# IRIs only: a blank node a user typed trails:Chunk is no chunk trails can name in an update.
_CHUNKS = ("?c a trails:Chunk ; schema:isPartOf ?doc ; trails:version ?v . "
           "FILTER(isIRI(?c) && isIRI(?doc))")


@dataclass
class VerifyReport:
    """What ``ctx.verify()`` found. ``ok`` is True when the two stores agree completely.

    - ``chunks_without_vectors``: chunks of a current version with no live vector.
    - ``vectors_without_chunks``: live vectors of ingested documents with no chunk triples.
    - ``stale_chunks``: chunk triples of versions that are not current (an interrupted
      ingest, before or after its commit point).
    - ``uncommitted_vectors``: staged vectors of versions that were never published.
    - ``count_mismatches``: documents whose recorded chunk count differs from their live
      vectors or graph chunks, as ``(doc_iri, recorded, vectors, chunks)``.
    - ``graph_behind``: documents whose graph triples still describe a previous version.
    - ``orphan_documents``: documents the graph describes that have no recorded version (a
      delete or a failed first ingest stopped before its graph step).
    - ``stale_manifests``: staged manifests of versions that were never committed.
    - ``payload_outside_allowlist``: vectors whose payload holds document metadata the
      context's ``payload`` allowlist does not allow (the allowlist was narrowed after they
      were written); repair removes those fields from the store.
    - ``hand_links`` (a warning, not counted in ``ok``): live chunks whose ``schema:isPartOf``
      triples a write of one's own changed (a link moved, added or removed), read only while
      such a write is marked (``kg/hand_links.py``). With none left, verify clears the marks
      and filters are planned over documents again. A moved link also shows as a stale chunk,
      and repair writes the minted one back; run verify again to clear the marks.
    - ``hand_types`` (a warning too, read while marked): documents whose ``trails:Document``
      type is not exactly the one ingestion wrote (in their scope's graph, nowhere else), and
      live chunks without their ``trails:Chunk`` type in their scope's graph: a filter's lift
      stands on them, so the marks stay until they are put back.

    After ``repair``: ``finished`` lists the committed documents repair completed from what
    is stored (their staged manifest, their vectors' texts); ``removed`` those it deleted
    because they could not be made whole (the next ingest of their source writes them again).
    """

    chunks_without_vectors: list[str] = field(default_factory=list)
    vectors_without_chunks: list[str] = field(default_factory=list)
    stale_chunks: list[str] = field(default_factory=list)
    uncommitted_vectors: list[str] = field(default_factory=list)
    count_mismatches: list[tuple[str, int, int, int]] = field(default_factory=list)
    graph_behind: list[str] = field(default_factory=list)
    orphan_documents: list[str] = field(default_factory=list)
    stale_manifests: list[str] = field(default_factory=list)
    payload_outside_allowlist: list[str] = field(default_factory=list)
    repaired: bool = False
    finished: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    # Not a disagreement, a warning: documents whose date metadata did not parse, so they
    # have no schema:dateCreated and date filters do not see them. Fix the source, re-ingest.
    unparsed_dates: list[str] = field(default_factory=list)
    # A warning too (above): filters over chunks run as written while any is left.
    hand_links: list[str] = field(default_factory=list)
    hand_types: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any((self.chunks_without_vectors, self.vectors_without_chunks, self.stale_chunks,
                        self.uncommitted_vectors, self.count_mismatches, self.graph_behind,
                        self.orphan_documents, self.stale_manifests,
                        self.payload_outside_allowlist))

    def summary(self) -> str:
        parts = [f"{name.replace('_', ' ')}: {len(value)}" for name, value in vars(self).items()
                 if isinstance(value, list) and value and name not in _NOT_PROBLEMS]
        state = "consistent" if self.ok else "; ".join(parts)
        warning = (f"; warning: {len(self.unparsed_dates)} documents with a date that does not "
                   "parse" if self.unparsed_dates else "")
        links = f"{len(self.hand_links)} chunks linked by hand to other than their document"
        types = f"{len(self.hand_types)} documents or chunks whose trails type is not as ingested"
        by_hand = [text for text, found in ((links, self.hand_links), (types, self.hand_types))
                   if found]
        if by_hand:
            warning += f"; warning: {', '.join(by_hand)} (filters run unplanned until fixed)"
        repaired = (f" (repaired: {len(self.finished)} documents finished, {len(self.removed)} "
                    "removed)" if self.repaired else "")
        return f"{state}{repaired}{warning}"


_NOT_PROBLEMS = ("unparsed_dates", "hand_links", "hand_types", "finished", "removed")


def _graph_chunks(kg: KnowledgeGraph, doc: str | None = None) -> dict[str, tuple[str, str, str]]:
    """chunk IRI -> (doc IRI, version, scope) for every chunk (of ``doc``) in every scope."""
    found = {}
    bindings: dict[str, object] | None = None if doc is None else {"doc": IRI(doc)}
    for row in select(kg, f"SELECT ?c ?doc ?v WHERE {{ {_CHUNKS} }}", bindings,
                      scopes=[DEFAULT_SCOPE]):
        found[row["c"]] = (row["doc"], row["v"], DEFAULT_SCOPE)
    for row in select(kg, f"SELECT ?c ?doc ?v ?g WHERE {{ GRAPH ?g {{ {_CHUNKS} }} }}", bindings):
        if row["g"].startswith(SCOPE_BASE):
            found[row["c"]] = (row["doc"], row["v"], row["g"][len(SCOPE_BASE):])
    return found


def _read_the_latest(kg: KnowledgeGraph, shown: str | None) -> bool:
    """Whether what verify read is the graph's latest state: a writable graph's always (a
    write of another thread marks again after itself); a read-only view's only when it showed
    a settled revision that is still the one on disk (no write began since it opened)."""
    if not getattr(kg, "read_only", False):
        return True
    return shown is not None and read_revision(getattr(kg, "path", None)) == shown


def _unparsed_dates(kg: KnowledgeGraph) -> list[str]:
    """Documents with date metadata but no ``schema:dateCreated``: the date did not parse."""
    keys = " UNION ".join(f"{{ ?doc meta:{key} ?value }}" for key in DATE_KEYS)
    query = (f"SELECT DISTINCT ?doc WHERE {{ ?doc a trails:Document . {{ {keys} }} "
             "FILTER NOT EXISTS { ?doc schema:dateCreated ?d } }")
    # One scope at a time: a remote endpoint may not confine a query to several at once.
    return sorted({str(d) for scope in kg.scopes()
                   for d in select(kg, query, scopes=[scope]).column("doc")})


def _graph_versions(kg: KnowledgeGraph) -> dict[tuple[str, str], str]:
    """(doc IRI, scope) -> the version that scope's graph says the document is at: a
    document's version is the one in its own scope's graph, whatever another graph says."""
    return {(row["doc"], scope): row["cv"] for scope in kg.scopes()
            for row in select(kg, "SELECT ?doc ?cv WHERE { ?doc trails:currentVersion ?cv }",
                              scopes=[scope])}


def _graph_documents(kg: KnowledgeGraph) -> set[str]:
    """Documents trails wrote into the graph: those with a manifest (ADR 0012), and those
    typed ``trails:Document`` (written before manifests were kept)."""
    rows = select(kg, f"SELECT DISTINCT ?doc WHERE {{ {{ GRAPH {MINTED_GRAPH} {{ ?doc trails:minted ?m "
                      f"FILTER NOT EXISTS {{ ?doc <{STAGED_FOR.value}> ?of }} }} }} "
                      "UNION { ?doc a trails:Document FILTER(isIRI(?doc)) } }")
    return set(rows.column("doc"))


def _staged_manifests(kg: KnowledgeGraph) -> dict[tuple[str, str], str]:
    """(doc IRI, version) -> the staged manifest step 2 wrote for that version."""
    rows = select(kg, f"SELECT ?doc ?node ?m WHERE {{ GRAPH {MINTED_GRAPH} {{ "
                      f"?node <{STAGED_FOR.value}> ?doc ; trails:minted ?m }} }}")
    return {(row["doc"], row["node"][len(row["doc"]) + 3:]): row["m"] for row in rows
            if row["node"].startswith(row["doc"] + "/v/")}


def verify(ctx: ContextParts, repair: bool = False, *, caller: str | None = None) -> VerifyReport:
    """Compare graph and vectors; with ``repair=True`` finish what an interrupted write left.

    Repair never invents data and never drops committed work it can complete: a committed
    version (its vectors all live, the commit point passed) whose graph step was cut off is
    finished from its staged manifest and its vectors' texts; what was never committed
    (staged vectors, stale chunks and manifests) is deleted; a document that cannot be made
    whole from what is stored is removed (the next ingest of its source writes it again),
    through :func:`delete_recorded`: each removal is in the audit trail, with ``caller``,
    before anything of the document goes.
    """
    # One state of the store for every read (read-only: the writer is another process).
    with between_writes(ctx), one_stored_state(ctx):
        return _verify(ctx, repair, caller)


def _verify(ctx: ContextParts, repair: bool, caller: str | None) -> VerifyReport:
    store, kg = versioned(ctx.vectors, "verify"), ctx.kg
    # Listed before anything is read: a write marked later is not cleared by this reading.
    hand = getattr(kg, "hand_links", None)
    marks = hand.marks() if hand is not None else []
    shown = getattr(kg, "settled_revision", None)  # a read-only view: the state it shows
    versions = store.current_versions()
    chunks = _graph_chunks(kg)
    rows = store.managed_rows()  # (id, doc_iri, version, pending)
    live = {r[0] for r in rows if not r[3]}
    report = VerifyReport(uncommitted_vectors=sorted(r[0] for r in rows if r[3]))
    current = {c for c, (doc, v, _) in chunks.items() if doc in versions and versions[doc].version == v}
    report.stale_chunks = sorted(set(chunks) - current)
    report.chunks_without_vectors = sorted(current - live)
    report.vectors_without_chunks = sorted(live - current)
    live_per_doc = Counter(r[1] for r in rows if not r[3])
    chunks_per_doc = Counter(chunks[c][0] for c in current)
    graph_versions = _graph_versions(kg)
    for doc, record in sorted(versions.items()):
        if record.chunks != live_per_doc[doc] or record.chunks != chunks_per_doc[doc]:
            report.count_mismatches.append((doc, record.chunks, live_per_doc[doc], chunks_per_doc[doc]))
        if graph_versions.get((doc, record.scope or DEFAULT_SCOPE)) != record.version:
            report.graph_behind.append(doc)
    report.orphan_documents = sorted(_graph_documents(kg) - set(versions))
    staged = _staged_manifests(kg)
    report.stale_manifests = sorted(
        f"{doc}/v/{version}" for doc, version in staged
        if doc not in versions or versions[doc].version != version
        or doc not in report.graph_behind)
    report.unparsed_dates = _unparsed_dates(kg)
    report.hand_links = links_by_hand(kg, rows, versions) if marks else []
    report.hand_types = [*types_by_hand(kg, versions),
                         *chunk_types_by_hand(kg, rows, versions)] if marks else []
    # Only a graph found whole: a hand link on a chunk that is not live (left by a deleted
    # document, say) would come back with it if it were ingested again.
    if (marks and report.ok and not report.hand_links and not report.hand_types
            and _read_the_latest(kg, shown)):
        hand.clear(marks)  # type: ignore[union-attr]  # marks come from it
    outside = _payload_outside(ctx, rows)
    report.payload_outside_allowlist = sorted(row_id for ids in outside.values()
                                              for row_id in ids)
    if repair and not report.ok:
        with minted_links():  # repair writes chunk links only as ingestion mints them
            _repair(ctx, report, chunks, versions, rows, staged, caller)
        _trim_payloads(ctx, outside)
        report.repaired = True
    return report


def _payload_outside(ctx: ContextParts, rows: list[tuple[str, str, str | None, bool]]
                     ) -> dict[str, dict[str, list[str]]]:
    """doc IRI -> {vector id: its payload fields outside the allowlist}, for every vector of
    a document that holds any (read in pages: a store may hold millions)."""
    found: dict[str, dict[str, list[str]]] = {}
    doc_of = {row_id: doc for row_id, doc, _, _ in rows}
    ids = sorted(doc_of)
    for start in range(0, len(ids), 1000):
        for row_id, metadata in ctx.vectors.metadata(ids[start : start + 1000]).items():
            fields = fields_outside(metadata, ctx.payload_fields)
            if fields:
                found.setdefault(doc_of[row_id], {})[row_id] = fields
    return found


def _trim_payloads(ctx: ContextParts, outside: dict[str, dict[str, list[str]]]) -> None:
    """Remove the fields outside the allowlist, one metadata-only rewrite per document (no
    vector is touched); a document repair deleted meanwhile has no rows left to change."""
    store = versioned(ctx.vectors, "verify")
    for doc, by_id in sorted(outside.items()):
        store.update_payload(doc, dict.fromkeys({f for fields in by_id.values() for f in fields}))


def _repair(ctx: ContextParts, report: VerifyReport, chunks: dict[str, tuple[str, str, str]],
            versions: dict[str, DocumentVersion], rows: list[tuple[str, str, str | None, bool]],
            staged: dict[tuple[str, str], str], caller: str | None) -> None:
    # A committed version: every row of the document live and of the recorded version, as
    # many as recorded (publish wrote them in one transaction). Its graph step may have been
    # cut off; everything it needs is stored, so it is finished, never deleted.
    live_rows: dict[str, list[tuple[str, str | None]]] = {}
    for row_id, doc, version, pending in rows:
        live_rows.setdefault(doc, []).append((row_id, None if pending else version))
    committed = {doc for doc, record in versions.items()
                 if len(live_rows.get(doc, ())) == record.chunks
                 and all(v == record.version for _, v in live_rows.get(doc, ()))}
    keep = {row_id for doc in committed for row_id, _ in live_rows.get(doc, ())}
    ctx.vectors.delete_many(report.uncommitted_vectors
                            + [v for v in report.vectors_without_chunks if v not in keep])
    _delete_subjects(ctx, [(c, chunks[c][2]) for c in report.stale_chunks], OWNED_ON_CHUNKS)
    if report.stale_manifests:
        ctx.kg.update(" ;\n".join(f"DELETE WHERE {{ GRAPH {MINTED_GRAPH} {{ {ox.NamedNode(n)} ?p ?o }} }}"
                                   for n in report.stale_manifests))
    damaged = {doc for doc, *_ in report.count_mismatches}
    short = {doc for doc, recorded, _, in_graph in report.count_mismatches if in_graph != recorded}
    damaged |= {chunks[c][0] for c in report.chunks_without_vectors}
    damaged |= set(report.graph_behind)
    for doc in sorted(damaged):
        record = versions.get(doc)
        kept = staged.get((doc, record.version)) if record else None
        # Read back from the graph, so only what parses as this document's triples is used.
        manifest = None if kept is None else manifest_triples(doc, kept)
        if manifest is None and record is not None:
            manifest = _kept_of_version(ctx.kg, doc, record.version)
        # A graph behind its record needs the staged manifest (the document's own triples
        # are nowhere else); a current graph missing chunks needs only the vectors' texts.
        if record is None or doc not in committed or (doc in report.graph_behind
                                                       and manifest is None):
            delete_recorded(ctx, doc, reason=REPAIR_REASON, caller=caller)
            report.removed.append(doc)
            continue
        if doc in short:  # the graph lost chunk triples: the vectors hold their text
            _rebuild_chunks(ctx, record, [r for r, _ in live_rows.get(doc, ())])
        if manifest is not None:
            ctx.kg.update(finish_update(ctx.kg, [(doc, record.version, manifest)], record.scope))
        report.finished.append(doc)
    for doc in report.orphan_documents:
        delete_recorded(ctx, doc, reason=ORPHAN_REASON, caller=caller)
        report.removed.append(doc)


def _kept_of_version(kg: KnowledgeGraph, doc: str, version: str) -> str | None:
    """The document's kept manifest when it is that of ``version`` and the graph names no
    version of the document: step 4 was done, and the document's triples were lost after it
    (deleted by hand, a scope graph restored without them). It makes the version whole as
    its staged manifest would; a previous version's manifest (step 4 cut off) does not, nor
    does it stand beside another version the graph names (the next ingest replaces that)."""
    kept = kept_manifests(kg, [doc]).get(doc)
    names = f"{ox.NamedNode(doc)} {_CURRENT_VERSION} {ox.Literal(version)} ."
    if kept is None or names not in kept.splitlines() or select(
            kg, f"SELECT ?v WHERE {{ ?doc {_CURRENT_VERSION} ?v }}", {"doc": IRI(doc)}).rows:
        return None
    return kept


def _rebuild_chunks(ctx: ContextParts, record: DocumentVersion, ids: list[str]) -> None:
    """Write the chunk triples of a committed version again from its vectors' metadata (the
    chunk's text and offsets), in one transaction; triples already there stay as they are."""
    stored = ctx.vectors.get(ids)
    found = [Chunk(str(v.metadata.get("text") or ""), int(v.metadata["start"]),
                   int(v.metadata["end"]), int(v.metadata["position"]))
             for v in stored if {"start", "end", "position"} <= set(v.metadata)]
    if not found:
        return
    if isinstance(ctx.kg, NQuadsGraph):
        ctx.kg.load_nquads(chunk_nquads(found, record.doc_iri, record.version, record.scope))
    else:
        ctx.kg.extend(chunk_quads(found, record.doc_iri, record.version, record.scope))


def _delete_subjects(ctx: ContextParts, subjects: list[tuple[str, str]],
                     only: str | None = None) -> None:
    """Delete the triples of these subjects in their scopes (``only``: those whose ``?p ?o``
    pass this FILTER expression), and the mention nodes of those that are chunks."""
    def operation(subject: str, scope: str) -> str:
        node = ox.NamedNode(subject)
        block = graph_block(scope, f"{node} ?p ?o")
        mentions = mention_deletes(scope, f"VALUES ?c {{ {node} }}")  # a chunk's: first
        if only is None:
            return f"{mentions} ;\nDELETE WHERE {{ {block} }}"
        return f"{mentions} ;\nDELETE {{ {block} }} WHERE {{ {block} FILTER({only}) }}"

    operations = [operation(s, scope) for s, scope in subjects]
    for start in range(0, len(operations), 500):  # bounded updates for remote endpoints too
        ctx.kg.update(" ;\n".join(operations[start : start + 500]))


def delete_document(ctx: ContextParts, doc_iri: str, *, include_user_triples: bool = False,
                    before_removal: Callable[[], object] | None = None) -> bool:
    """Remove a document: vectors first (retrieval stops seeing it; rows whose
    ``metadata["iri"]`` names it or one of its chunks under another id too), then the chunk and
    document triples trails wrote in its scope (ADR 0012). Triples others added about it
    survive unless ``include_user_triples``, which removes every triple whose subject is the
    document or one of its chunks. Returns False if nothing was found.

    ``before_removal`` is called once the document is found, before anything is removed (its
    audit record first); if it raises, nothing is removed. An id is an InvalidArgumentError."""
    doc_iri = document_named(doc_iri, ctx.base_iri)
    with writing_versions(ctx), minted_links():  # its own chunk links go with its vectors
        return _delete_document(ctx, doc_iri, include_user_triples, before_removal)


def _delete_document(ctx: ContextParts, doc_iri: str, include_user_triples: bool,
                     before_removal: Callable[[], object] | None) -> bool:
    store = versioned(ctx.vectors, "delete_document")
    record = store.current_versions([doc_iri]).get(doc_iri)
    scopes = {record.scope} if record else set()
    scopes |= {s for s in select(ctx.kg, "SELECT ?s WHERE { ?doc trails:scope ?s }",
                                 {"doc": IRI(doc_iri)}).column("s") if is_scope_name(s)}
    chunk_scopes = [(c, scope) for c, (_, _, scope) in _graph_chunks(ctx.kg, doc_iri).items()]
    if before_removal is not None and (record or scopes or chunk_scopes):
        before_removal()
    # Rows added under other ids that stand for it or its chunks (metadata["iri"]) go first:
    # a kill between leaves the document whole, for the next delete to finish.
    chunks = {c for c, _ in chunk_scopes} | {r[0] for r in store.document_rows(doc_iri)}
    rows = ctx.vectors  # the same store, as a VectorStore
    referring = [id for id in live_rows(rows, chunks | {doc_iri}) if id not in chunks] if (
        resolves_by_iri(rows)) else []
    removed = rows.delete_many(referring) if referring else 0
    removed += store.delete_document(doc_iri)
    if include_user_triples:
        _delete_subjects(ctx, chunk_scopes + [(doc_iri, s) for s in (scopes or {DEFAULT_SCOPE})])
    else:
        _delete_subjects(ctx, chunk_scopes, OWNED_ON_CHUNKS)
    # Its manifest last: a kill before this leaves what the next delete or repair needs; with
    # it any staged manifest a killed run left (no run is between its steps: the lock).
    staged = (f"DELETE WHERE {{ GRAPH {MINTED_GRAPH} {{ ?n <{STAGED_FOR.value}> "
              f"{ox.NamedNode(doc_iri)} ; ?p ?o }} }}")
    for scope in sorted(scopes or {DEFAULT_SCOPE}):
        ctx.kg.update(" ;\n".join([*owned_document_deletes(ctx.kg, [doc_iri], scope), staged]))
    return bool(record or removed or chunk_scopes or scopes)


def delete_recorded(ctx: ContextParts, document: str, *, reason: str,
                    expired_at: Mapping[str, dt.datetime] | None = None,
                    caller: str | None = None, include_user_triples: bool = False) -> bool:
    """Delete ``document`` as :func:`~trails.ingest.maintenance.delete_document` does, its
    audit record written first (:func:`record_deletion`); False when there was no such
    document (nothing is recorded).

    Raises:
        StorageError: the record could not be written (nothing was deleted), or a store
            failed.
    """
    return delete_document(ctx, document, include_user_triples=include_user_triples,
                           before_removal=lambda: record_deletion(
                               ctx, [document], reason=reason, expired_at=expired_at,
                               caller=caller))


def record_deletion(ctx: ContextParts, documents: Sequence[str], *, reason: str,
                    expired_at: Mapping[str, dt.datetime] | None = None,
                    caller: str | None = None) -> None:
    """Record in the context's audit trail that ``documents`` are deleted, and why: one
    ``audit:Deletion`` activity, each document ``prov:invalidated`` (for retention, the moment
    each expired is kept with the record). Call it before deleting (:func:`delete_recorded`
    does). Nothing is recorded for a context that does not audit.

    Raises:
        StorageError: the record could not be written to the disk; do not delete.
    """
    if not documents or not isinstance(ctx, Audited) or not ctx.audit.enabled:
        return
    who = ctx.audit.who(caller)
    moment = started_now()
    ctx.audit.record_first(DeletionRecord(
        run_id=new_run_id(), caller=who,
        started=moment, ended=moment, reason=reason, documents=list(documents),
        expired_at={iri: when.isoformat() for iri, when in (expired_at or {}).items()}))
