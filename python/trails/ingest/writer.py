"""Writing document versions to the two stores so that a crash never exposes half of one.

The vector store's ``versions`` table is the store of record (ADR 0005). For a batch of
documents, in order:

1. stage the new version's vectors (``pending``: durable, invisible to search);
2. add the new version's chunk triples to the graph (chunk IRIs carry the version, so they
   never collide with the current version's);
   With them goes the version's **staged manifest** (the document triples step 4 will write,
   kept at ``<doc>/v/<version>`` in the minted graph): everything step 4 needs is durable
   before the commit point, so repair can finish a committed version without its source;
3. **publish**: one SQLite transaction makes the staged vectors live, deletes the previous
   version's vectors and records the version — the commit point;
4. clean the graph, in one graph transaction: drop the previous version's chunk triples and
   document triples, write the staged manifest's document triples, drop the staged manifest.

Retrieval ranks only live vectors and graph mode drops chunk IRIs that are not live, so a
crash between any two steps shows either the whole previous version or the whole new one.
``ctx.verify(repair=True)`` or the next ingest finishes a committed version and removes what
was never committed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyoxigraph as ox

from trails.ingest.document import Chunk, Document
from trails.ingest.linking import Mention
from trails.ingest.mentions import MENTION_PREDICATES, mention_iri, mention_nquads, mention_quads
from trails.ingest.minting import (
    CHUNK_PREDICATES,
    MINTED,
    MINTED_GRAPH,
    chunk_iri,
    chunk_nquads,
    chunk_quads,
    document_manifest,
    vector_metadata,
)
from trails.ingest.payload import document_payload, payload_patch
from trails.kg.base import KnowledgeGraph, NQuadsGraph, select
from trails.kg.carried import Keys
from trails.kg.planning import RDF_TYPE
from trails.kg.sparql import META, TRAILS
from trails.kg.terms import IRI
from trails.parts import ContextParts
from trails.scopes import DEFAULT_SCOPE, scope_graph
from trails.vector.stores.base import DocumentVersion, versioned

__all__ = [
    "OWNED_ON_CHUNKS",
    "STAGED_FOR",
    "PendingDocument",
    "VersionWriter",
    "finish_update",
    "graph_block",
    "mention_deletes",
    "owned_document_deletes",
    "staged_manifest_node",
]

Vector = npt.NDArray[np.float32]


@dataclass
class PendingDocument:
    """A document version on its way in: chunks known, vectors filled in as batches finish."""

    document: Document
    iri: str
    version: str
    chunks: list[Chunk]
    replaced: bool = False
    vectors: list[Vector | None] = field(default_factory=list)

    missing: int = 0
    manifest: str | None = None  # its document triples (N-Triples), once built
    mentions: list[list[Mention]] = field(default_factory=list)  # per chunk, when linked

    def __post_init__(self) -> None:
        self.vectors = [None] * len(self.chunks)
        self.missing = len(self.chunks)

    def fill(self, index: int, vector: Vector) -> None:
        if self.vectors[index] is None:
            self.missing -= 1
        self.vectors[index] = vector

    @property
    def complete(self) -> bool:
        return self.missing == 0

    @property
    def embedded(self) -> list[Vector]:
        """Every chunk's vector, in order (only once the document is complete)."""
        if not self.complete:
            raise ValueError(f"{self.iri} still waits for {self.missing} chunk vectors")
        return [v for v in self.vectors if v is not None]


# A staged manifest: ``<doc>/v/<version> trails:minted "<N-Triples>" ; trails:stagedFor <doc>``
# in the minted graph, written with the version's chunk triples (step 2), consumed by step 4.
STAGED_FOR = ox.NamedNode(TRAILS + "stagedFor")


def staged_manifest_node(doc: str, version: str) -> ox.NamedNode:
    """Where a version's staged manifest lives (the chunk IRIs' common prefix)."""
    return ox.NamedNode(f"{doc}/v/{version}")


def documents_values(iris: Iterable[str]) -> str:
    """A ``VALUES ?doc`` block of these document IRIs."""
    return "VALUES ?doc { " + " ".join(str(ox.NamedNode(i)) for i in iris) + " }"


def graph_block(scope: str, body: str) -> str:
    """``body`` wrapped in the scope's GRAPH clause (the default scope is the default graph)."""
    graph = scope_graph(scope)
    return body if isinstance(graph, ox.DefaultGraph) else f"GRAPH {graph} {{ {body} }}"


def _owned(predicates: Sequence[str], kind: str) -> Keys:
    return frozenset({("column", p) for p in predicates}
                     | {("column", RDF_TYPE), ("class", f"<{TRAILS}{kind}>")})


# The kept files (kg/carried.py) a write of trails' on a chunk or a mention node can change:
# it writes and deletes only its own predicates there, and rdf:type with its own class.
CHUNK_KEYS, MENTION_KEYS = _owned(CHUNK_PREDICATES, "Chunk"), _owned(MENTION_PREDICATES, "Mention")
# What trails wrote on a chunk subject (ADR 0012): its own predicates, and rdf:type only when
# the type is trails:Chunk. Anything else a user says about a chunk survives.
OWNED_ON_CHUNKS = ("(?p IN (" + ", ".join(f"<{p}>" for p in CHUNK_PREDICATES) + ") || "
                   "(?p = rdf:type && ?o = trails:Chunk))")
# Documents written before manifests were kept: trails' own document predicates and the
# meta: namespace it writes user metadata to.
_LEGACY_OWNED = (f'(STRSTARTS(STR(?p), "{TRAILS}") || STRSTARTS(STR(?p), "{META}") || '
                 "?p IN (schema:name, schema:dateCreated, rdf:type)) && (?p != rdf:type || "
                 "?o = trails:Document)")


def mention_deletes(scope: str, chunks: str) -> str:
    """An update deleting the mention nodes of the chunks ``chunks`` binds to ``?c`` (a
    pattern), only the triples trails wrote on them; the chunk's own ``trails:hasMention``
    and ``trails:mentions`` go with its other triples (:data:`OWNED_ON_CHUNKS`)."""
    owned = ("(?mp IN (" + ", ".join(f"<{p}>" for p in MENTION_PREDICATES) + ") || "
             "(?mp = rdf:type && ?mo = trails:Mention))")
    return (f"DELETE {{ {graph_block(scope, '?m ?mp ?mo')} }} WHERE {{ {chunks} "
            f"{graph_block(scope, '?c trails:hasMention ?m . ?m ?mp ?mo')} FILTER({owned}) }}")


def owned_document_deletes(kg: KnowledgeGraph, iris: Sequence[str], scope: str,
                           manifests: dict[str, str] | None = None) -> list[str]:
    """SPARQL updates that delete exactly the triples trails wrote about these documents in
    ``scope`` (their manifests, ADR 0012) and the manifests; never a user's triple.
    ``manifests``: :func:`kept_manifests` of ``iris``, when already read."""
    if not iris:
        return []
    values = documents_values(iris)
    if manifests is None:
        manifests = kept_manifests(kg, iris)
    updates = [f"DELETE DATA {{ {graph_block(scope, str(text))} }}"
               for text in manifests.values() if str(text).strip()]
    updates.append(f"DELETE {{ GRAPH {MINTED_GRAPH} {{ ?doc trails:minted ?m }} }} "
                   f"WHERE {{ {values} GRAPH {MINTED_GRAPH} {{ ?doc trails:minted ?m }} }}")
    legacy = [i for i in iris if i not in manifests]
    if legacy:
        old = documents_values(legacy)
        own = graph_block(scope, "?doc ?p ?o")
        # Only a document that still has trails: triples is one written before manifests: one
        # whose triples a killed update already removed (manifest and all) has nothing of
        # trails' left, and the rule would then take a user's meta: triples.
        written = graph_block(scope, "?doc ?tp ?to FILTER(STRSTARTS(STR(?tp), "
                                     f'"{TRAILS}"))')
        updates.append(f"DELETE {{ {own} }} WHERE {{ {old} {written} . {own} "
                       f"FILTER({_LEGACY_OWNED}) }}")
    return updates


def kept_manifests(kg: KnowledgeGraph, iris: Sequence[str]) -> dict[str, str]:
    """The kept manifest (N-Triples text) of each of these documents that has one."""
    values = documents_values(iris)
    return {str(row["doc"]): str(row["m"]) for row in select(
        kg, f"SELECT ?doc ?m WHERE {{ {values} GRAPH {MINTED_GRAPH} {{ ?doc trails:minted ?m }} }}")}


def _with_other_versions(kg: KnowledgeGraph, documents: Sequence[tuple[str, str, str]],
                         scope: str, manifests: dict[str, str]) -> list[tuple[str, str]]:
    """(doc, version) of the documents whose graph can hold chunk triples of another version.

    Another version's chunks are written only in step 2, with that version's staged
    manifest, which only step 4 removes, in the transaction that writes the document's
    manifest and ``trails:currentVersion``; a delete removes the manifest last. So a
    document with none of these has no other version's chunks, and finding none would cost
    a seek per chunk (~100 us at a million chunks, most of step 4 for new documents)."""
    iris = [d for d, _, _ in documents]
    own = " ".join(f"({ox.NamedNode(d)} {staged_manifest_node(d, v)})" for d, v, _ in documents)
    values = documents_values(iris)
    found = set(manifests)
    found.update(str(d) for d in select(kg, (
        f"SELECT DISTINCT ?doc WHERE {{ VALUES (?doc ?own) {{ {own} }} GRAPH {MINTED_GRAPH} "
        f"{{ ?node <{STAGED_FOR.value}> ?doc }} FILTER(?node != ?own) }}")).column("doc"))
    # before manifests were kept, a published version left only its document triples
    found.update(str(d) for d in select(kg, (
        f"SELECT DISTINCT ?doc WHERE {{ {values} "
        f"{graph_block(scope, '?doc trails:currentVersion ?v')} }}")).column("doc"))
    return [(d, v) for d, v, _ in documents if d in found]


def finish_update(kg: KnowledgeGraph, documents: Sequence[tuple[str, str, str]],
                  scope: str) -> str:
    """Step 4 as one SPARQL update for ``(doc IRI, version, manifest)`` triples: delete every
    other version's chunk triples and the document triples trails wrote before (ADR 0012),
    write the manifest's triples and keep the manifest, drop the staged manifests.

    One update is one graph transaction, so no reader ever sees a document without its own
    triples (a date filter would drop it for that moment)."""
    manifests = kept_manifests(kg, [d for d, _, _ in documents])
    updates = []
    older = _with_other_versions(kg, documents, scope, manifests)
    if older:
        values = " ".join(f"({ox.NamedNode(d)} {ox.Literal(v)})" for d, v in older)
        # The FILTER stays outside the GRAPH block: inside it, ?keep (bound by VALUES out
        # here) would be unbound and no stale chunk of a named scope would ever match.
        stale = graph_block(scope, "?c schema:isPartOf ?doc ; trails:version ?v . "
                                   "?c ?p ?o") + f" FILTER(?v != ?keep && {OWNED_ON_CHUNKS})"
        stale_chunks = (f"VALUES (?doc ?keep) {{ {values} }} "
                        + graph_block(scope, "?c schema:isPartOf ?doc ; trails:version ?v")
                        + " FILTER(?v != ?keep)")
        updates += [
            mention_deletes(scope, stale_chunks),  # first: the chunks' triples lead to them
            (f"DELETE {{ {graph_block(scope, '?c ?p ?o')} }} "
             f"WHERE {{ VALUES (?doc ?keep) {{ {values} }} {stale} }}")]
    docs = documents_values([d for d, _, _ in documents])
    staged = f"GRAPH {MINTED_GRAPH} {{ ?vv <{STAGED_FOR.value}> ?doc ; ?sp ?so }}"
    written = "".join(graph_block(scope, manifest) + f" GRAPH {MINTED_GRAPH} {{ "
                      f"{ox.NamedNode(d)} {MINTED} {ox.Literal(manifest)} }} "
                      for d, _, manifest in documents)
    return " ;\n".join([
        *updates,
        *owned_document_deletes(kg, [d for d, _, _ in documents], scope, manifests),
        f"DELETE {{ GRAPH {MINTED_GRAPH} {{ ?vv ?sp ?so }} }} WHERE {{ {docs} {staged} }}",
        f"INSERT DATA {{ {written} }}"])


class VersionWriter:
    """Commits document versions for one context and scope, in the four steps above."""

    def __init__(self, ctx: ContextParts, scope: str = DEFAULT_SCOPE) -> None:
        self.ctx = ctx
        self.store = versioned(ctx.vectors, "ingestion")  # ADR 0005's commits: refused early
        self.scope = scope
        self._recorded: dict[str, DocumentVersion | None] = {}  # prefetched version records

    # -- what is there already --------------------------------------------------------------

    def prefetch(self, iris: Sequence[str]) -> None:
        """Read the version records of documents about to be checked, in one query.

        :meth:`state` then uses each record once (a document is checked once per run); the
        records of the previous call are dropped."""
        found = self.store.current_versions(iris) if iris else {}
        self._recorded = {iri: found.get(iri) for iri in iris}

    def state(self, iri: str, version: str, document: Document) -> tuple[str, bool]:
        """(``current`` | ``graph-behind`` | ``metadata`` | ``new``, whether a version is
        recorded).

        ``current``: skip; ``graph-behind``: vectors done, graph not cleaned; ``metadata``:
        same version, other document triples (:meth:`update_metadata`); ``new``: write.
        """
        store = self.store
        if iri in self._recorded:
            recorded = self._recorded.pop(iri)
        else:
            recorded = store.current_versions([iri]).get(iri)
        if recorded is None:
            return "new", False
        if recorded.version != version or recorded.scope != self.scope:
            return "new", True
        rows = store.document_rows(iri)
        if len(rows) != recorded.chunks or any(v != version or p for _, v, p in rows):
            return "new", True
        if not self._graph_is_current(iri, version, recorded.chunks):
            return "graph-behind", True
        manifest = document_manifest(document, iri, version, recorded.chunks, self.scope,
                                     self.ctx.metadata_predicates, self.ctx.retention)
        written = select(self.ctx.kg, f"SELECT ?m WHERE {{ GRAPH {MINTED_GRAPH} "
                         "{ ?doc trails:minted ?m } }", {"doc": IRI(iri)})
        return ("current" if written.column("m") == [manifest] else "metadata"), True

    def update_metadata(self, document: PendingDocument) -> None:
        """A metadata-only change: the vectors' document fields (one store transaction), then
        the document's triples (one graph update, then their load). Nothing is embedded.

        A kill between the steps leaves the graph's manifest behind the document, so the next
        ingest finds ``metadata`` again and finishes; each step can run twice."""
        self.store.update_payload(document.iri,
                                  payload_patch(document.document, self.ctx.payload_fields))
        with self._touching([document]):
            self.clean_graph([document])

    def _graph_is_current(self, iri: str, version: str, chunks: int) -> bool:
        kg, scopes = self.ctx.kg, [self.scope]
        counts = select(
            kg, "SELECT ?v (COUNT(?c) AS ?n) WHERE { ?c schema:isPartOf ?doc ; trails:version ?v } "
            "GROUP BY ?v", {"doc": IRI(iri)}, scopes=scopes)
        current = select(kg, "SELECT ?cv WHERE { ?doc trails:currentVersion ?cv }",
                         {"doc": IRI(iri)}, scopes=scopes)
        found = {row["v"]: row["n"] for row in counts}
        expected = {version: chunks} if chunks else {}
        return found == expected and current.column("cv") == [version]

    # -- writing ---------------------------------------------------------------------------

    def commit(self, documents: Sequence[PendingDocument]) -> None:
        """Steps 1-4 for documents whose vectors are all known."""
        if not documents:
            return
        self._stage_vectors(documents)
        with self._touching(documents):
            self._add_chunk_triples(documents)
            self.store.publish([
                DocumentVersion(d.iri, d.version, self.scope, d.document.hash, len(d.chunks))
                for d in documents])
            self.clean_graph(documents)

    def _touching(self, documents: Sequence[PendingDocument]) -> AbstractContextManager[None]:
        """The graph writes of ``documents`` declared to the graph by their subjects, so it can
        carry its kept filter columns across them (``kg/carried.py``)."""
        touching = getattr(self.ctx.kg, "touching", None)
        if touching is None:
            return contextlib.nullcontext()
        declared: AbstractContextManager[None] = touching(lambda: self._subjects(documents))
        return declared

    def _subjects(self, documents: Sequence[PendingDocument]) -> list[tuple[str, Keys | None]] | None:
        """Every subject a triple written or deleted for ``documents`` can have, with the kept
        files its triples can change (None: any): the documents, the chunks linked to them
        now (stale versions' too) and their mention nodes (trails' own predicates only, ADR
        0012), their staged manifests, the subjects of their manifests old and new, and the
        new chunks and mention nodes. None: one is a blank node (no carry then)."""
        iris = [d.iri for d in documents]
        values = documents_values(iris)
        rows = select(self.ctx.kg, (
            f"SELECT DISTINCT ?s ?k (isBlank(?s) AS ?blank) WHERE {{ {values} {{ ?s "
            'schema:isPartOf ?doc BIND("c" AS ?k) } UNION { ?c schema:isPartOf ?doc . '
            '?c trails:hasMention ?s BIND("m" AS ?k) } UNION { GRAPH '
            f'{MINTED_GRAPH} {{ ?s <{STAGED_FOR.value}> ?doc }} BIND("s" AS ?k) }} }}')).rows
        if any(row["blank"] for row in rows):
            return None
        narrow = {"c": CHUNK_KEYS, "m": MENTION_KEYS, "s": None}
        touched: list[tuple[str, Keys | None]] = [(iri, None) for iri in iris]
        touched += [(str(row["s"]), narrow[str(row["k"])]) for row in rows]
        manifests = kept_manifests(self.ctx.kg, iris).values()
        for text in [*manifests, *(self.manifest(d) for d in documents)]:
            for line in str(text).splitlines():
                subject = line.split(" ", 1)[0]
                if subject[:1] != "<" and subject:
                    return None
                touched.append((subject[1:-1], None))
        for d in documents:
            touched.append((staged_manifest_node(d.iri, d.version).value, None))
            touched.extend((chunk_iri(d.iri, d.version, c.position), CHUNK_KEYS) for c in d.chunks)
            touched.extend((mention_iri(c, m), MENTION_KEYS)
                           for c, linked in self._linked(d) for m in linked)
        return touched

    def _stage_vectors(self, documents: Sequence[PendingDocument]) -> None:
        ids, vectors, metadata = [], [], []
        for d in documents:
            payload = document_payload(d.document, self.ctx.payload_fields)
            for chunk, vector in zip(d.chunks, d.embedded):
                ids.append(chunk_iri(d.iri, d.version, chunk.position))
                vectors.append(vector)
                metadata.append(vector_metadata(chunk, d.iri, d.version, self.scope, payload))
        if ids:
            self.store.add_many(ids, np.vstack(vectors), metadata, pending=True)

    def finish_graph(self, documents: Sequence[PendingDocument]) -> None:
        """Steps 2 and 4 only: the vectors of these versions are already live."""
        with self._touching(documents):
            self._add_chunk_triples(documents)
            self.clean_graph(documents)

    def _add_chunk_triples(self, documents: Sequence[PendingDocument]) -> None:
        """Step 2, one graph transaction for the whole batch: chunk triples and staged
        manifests."""
        self._add_triples(
            documents,
            lambda d: chunk_nquads(d.chunks, d.iri, d.version, self.scope) + "".join(
                f"{q.subject} {q.predicate} {q.object} {q.graph_name} .\n"
                for q in self._staged_quads(d)) + "".join(
                mention_nquads(c, m, self.scope) for c, m in self._linked(d)),
            lambda d: chunk_quads(d.chunks, d.iri, d.version, self.scope) + self._staged_quads(d)
            + [q for c, m in self._linked(d) for q in mention_quads(c, m, self.scope)])

    @staticmethod
    def _linked(d: PendingDocument) -> list[tuple[str, list[Mention]]]:
        """(chunk IRI, its mentions) for the chunks of ``d`` that mention something."""
        return [(chunk_iri(d.iri, d.version, chunk.position), found)
                for chunk, found in zip(d.chunks, d.mentions) if found]

    def manifest(self, d: PendingDocument) -> str:
        """The document triples step 4 writes (built once: steps 2 and 4 both need them)."""
        if d.manifest is None:
            d.manifest = document_manifest(d.document, d.iri, d.version, len(d.chunks),
                                           self.scope, self.ctx.metadata_predicates, self.ctx.retention)
        return d.manifest

    def _staged_quads(self, d: PendingDocument) -> list[ox.Quad]:
        node = staged_manifest_node(d.iri, d.version)
        return [ox.Quad(node, MINTED, ox.Literal(self.manifest(d)), MINTED_GRAPH),
                ox.Quad(node, STAGED_FOR, ox.NamedNode(d.iri), MINTED_GRAPH)]

    def _add_triples(self, documents: Sequence[PendingDocument],
                     nquads: Callable[[PendingDocument], str],
                     quads: Callable[[PendingDocument], list[ox.Quad]]) -> None:
        """Add each document's triples to the graph in one transaction.

        A graph that loads N-Quads text gets text (~1 µs a quad to write, parsed in Rust),
        any other the same triples as ``Quad`` objects (~10 µs each to build).
        """
        kg = self.ctx.kg
        if isinstance(kg, NQuadsGraph):
            text = "".join(nquads(d) for d in documents)
            if text:
                kg.load_nquads(text)
        else:
            kg.extend(q for d in documents for q in quads(d))

    def clean_graph(self, documents: Sequence[PendingDocument]) -> None:
        """Step 4 (:func:`finish_update`) for the batch, one graph transaction."""
        self.ctx.kg.update(finish_update(
            self.ctx.kg, [(d.iri, d.version, self.manifest(d)) for d in documents], self.scope))
