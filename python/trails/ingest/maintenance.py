"""Checking and repairing the agreement between the graph and the vector store."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyoxigraph as ox

from trails.ingest.minting import DATE_KEYS
from trails.ingest.writer import OWNED_ON_CHUNKS, graph_block, owned_document_deletes
from trails.kg.base import KnowledgeGraph, select
from trails.kg.terms import IRI
from trails.parts import ContextParts
from trails.scopes import DEFAULT_SCOPE, SCOPE_BASE
from trails.vector.stores.base import DocumentVersion, versioned

__all__ = ["VerifyReport", "delete_document", "verify"]

_CHUNKS = "?c a trails:Chunk ; schema:isPartOf ?doc ; trails:version ?v ."


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
    """

    chunks_without_vectors: list[str] = field(default_factory=list)
    vectors_without_chunks: list[str] = field(default_factory=list)
    stale_chunks: list[str] = field(default_factory=list)
    uncommitted_vectors: list[str] = field(default_factory=list)
    count_mismatches: list[tuple[str, int, int, int]] = field(default_factory=list)
    graph_behind: list[str] = field(default_factory=list)
    repaired: bool = False
    # Not a disagreement, a warning: documents whose date metadata did not parse, so they
    # have no schema:dateCreated and date filters do not see them. Fix the source, re-ingest.
    unparsed_dates: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any((self.chunks_without_vectors, self.vectors_without_chunks, self.stale_chunks,
                        self.uncommitted_vectors, self.count_mismatches, self.graph_behind))

    def summary(self) -> str:
        parts = [f"{name.replace('_', ' ')}: {len(value)}" for name, value in vars(self).items()
                 if isinstance(value, list) and value and name != "unparsed_dates"]
        state = "consistent" if self.ok else "; ".join(parts)
        warning = (f"; warning: {len(self.unparsed_dates)} documents with a date that does not "
                   "parse" if self.unparsed_dates else "")
        return f"{state}{' (repaired)' if self.repaired else ''}{warning}"


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


def _unparsed_dates(kg: KnowledgeGraph) -> list[str]:
    """Documents with date metadata but no ``schema:dateCreated``: the date did not parse."""
    keys = " UNION ".join(f"{{ ?doc meta:{key} ?value }}" for key in DATE_KEYS)
    query = (f"SELECT DISTINCT ?doc WHERE {{ ?doc a trails:Document . {{ {keys} }} "
             "FILTER NOT EXISTS { ?doc schema:dateCreated ?d } }")
    # One scope at a time: a remote endpoint may not confine a query to several at once.
    return sorted({str(d) for scope in kg.scopes()
                   for d in select(kg, query, scopes=[scope]).column("doc")})


def _graph_versions(kg: KnowledgeGraph) -> dict[str, str]:
    rows = select(kg, "SELECT ?doc ?cv WHERE { ?doc trails:currentVersion ?cv }")
    return {row["doc"]: row["cv"] for row in rows}


def verify(ctx: ContextParts, repair: bool = False) -> VerifyReport:
    """Compare graph and vectors; with ``repair=True`` remove what an interrupted ingest left.

    Repair never invents data: it deletes stale and uncommitted parts, and removes documents
    that cannot be made whole (the next ingest of their source writes them again).
    """
    store, kg = versioned(ctx.vectors, "verify"), ctx.kg
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
        if graph_versions.get(doc) != record.version:
            report.graph_behind.append(doc)
    report.unparsed_dates = _unparsed_dates(kg)
    if repair and not report.ok:
        _repair(ctx, report, chunks, versions)
        report.repaired = True
    return report


def _repair(ctx: ContextParts, report: VerifyReport, chunks: dict[str, tuple[str, str, str]],
            versions: dict[str, DocumentVersion]) -> None:
    ctx.vectors.delete_many(report.uncommitted_vectors + report.vectors_without_chunks)
    _delete_subjects(ctx, [(c, chunks[c][2]) for c in report.stale_chunks], OWNED_ON_CHUNKS)
    # Documents that cannot be made whole from what is stored (a graph that missed its last
    # step lacks the document's own triples) are removed; the next ingest writes them again.
    broken = {c_doc for c_doc, *_ in report.count_mismatches}
    broken |= {chunks[c][0] for c in report.chunks_without_vectors}
    broken |= set(report.graph_behind)
    for doc in sorted(broken):
        delete_document(ctx, doc)


def _delete_subjects(ctx: ContextParts, subjects: list[tuple[str, str]],
                     only: str | None = None) -> None:
    """Delete the triples of these subjects in their scopes (``only``: those whose ``?p ?o``
    pass this FILTER expression)."""
    def operation(subject: str, scope: str) -> str:
        block = graph_block(scope, f"{ox.NamedNode(subject)} ?p ?o")
        if only is None:
            return f"DELETE WHERE {{ {block} }}"
        return f"DELETE {{ {block} }} WHERE {{ {block} FILTER({only}) }}"

    operations = [operation(s, scope) for s, scope in subjects]
    for start in range(0, len(operations), 500):  # bounded updates for remote endpoints too
        ctx.kg.update(" ;\n".join(operations[start : start + 500]))


def delete_document(ctx: ContextParts, doc_iri: str, *, include_user_triples: bool = False) -> bool:
    """Remove a document: vectors first (retrieval stops seeing it), then the chunk and
    document triples trails wrote in its scope (ADR 0012). Triples others added about it
    survive unless ``include_user_triples``, which removes every triple whose subject is the
    document or one of its chunks. Returns False if nothing was found."""
    store = versioned(ctx.vectors, "delete_document")
    record = store.current_versions([doc_iri]).get(doc_iri)
    scopes = {record.scope} if record else set()
    scopes |= set(select(ctx.kg, "SELECT ?s WHERE { ?doc trails:scope ?s }",
                         {"doc": IRI(doc_iri)}).column("s"))
    chunk_scopes = [(c, scope) for c, (_, _, scope) in _graph_chunks(ctx.kg, doc_iri).items()]
    removed = store.delete_document(doc_iri)
    if include_user_triples:
        _delete_subjects(ctx, chunk_scopes + [(doc_iri, s) for s in (scopes or {DEFAULT_SCOPE})])
    else:
        _delete_subjects(ctx, chunk_scopes, OWNED_ON_CHUNKS)
    # Its manifest last: a kill before this leaves what the next delete or repair needs.
    for scope in sorted(scopes or {DEFAULT_SCOPE}):
        ctx.kg.update(" ;\n".join(owned_document_deletes(ctx.kg, [doc_iri], scope)))
    return bool(record or removed or chunk_scopes or scopes)
