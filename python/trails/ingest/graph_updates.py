"""The SPARQL that writes and removes what trails owns of a document in the graph (ADR 0012):
step 4 of a commit (``writer.py``), a delete's and repair's removals (``maintenance.py``),
relinking's (``relink.py``). Each is text for one ``update``: one graph transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyoxigraph as ox

from trails.ingest.mentions import MENTION_PREDICATES
from trails.ingest.minting import CHUNK_PREDICATES, MINTED, MINTED_GRAPH
from trails.kg.base import KnowledgeGraph, NQuadsGraph, select
from trails.kg.sparql import META, TRAILS
from trails.scopes import scope_graph

__all__ = [
    "OWNED_ON_CHUNKS",
    "STAGED_FOR",
    "documents_values",
    "finish_update",
    "finish_updates",
    "graph_block",
    "kept_manifests",
    "manifest_triples",
    "mention_deletes",
    "owned_document_deletes",
    "staged_manifest_node",
]

# A staged manifest: ``<doc>/v/<version> trails:minted "<N-Triples>" ; trails:stagedFor <doc>``
# in the minted graph, written with the version's chunk triples (step 2), consumed by step 4.
STAGED_FOR = ox.NamedNode(TRAILS + "stagedFor")

# The most documents one step-4 update names on a graph that is not embedded: a SPARQL server
# compiles each request whole, and Virtuoso 7 refuses a ``VALUES`` block of some thousands of
# IRIs (SP030 "Too many arguments", SQ199 code vector) and an ``INSERT DATA`` of thousands of
# triples; an ingest commits up to 8,192 one-chunk documents at once.
REMOTE_DOCUMENTS_PER_UPDATE = 250


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
    rows = select(kg, f"SELECT ?doc ?m WHERE {{ {values} GRAPH {MINTED_GRAPH} "
                      "{ ?doc trails:minted ?m } }")
    return {doc: text for row in rows
            if (text := manifest_triples(doc := str(row["doc"]), str(row["m"]))) is not None}


def manifest_triples(doc: str, text: str) -> str | None:
    """A manifest read back from the graph, written again from its parsed triples; None
    when it is not one trails could have written: N-Triples about ``doc`` alone, with IRIs
    and literals.

    Anyone may write the minted graph, and a manifest is pasted into trails' own updates,
    which the audit graph's guard does not read (``kg/reserved.py``): text read back must
    never become SPARQL of its own (``<x:a> <x:b> <x:c> } ; DROP GRAPH ...``)."""
    subject = ox.NamedNode(doc)
    try:
        # Lenient: trails writes what the graph took (a literal typed rdf:langString without
        # a language, say), which strict parsing refuses; terms are written again either way.
        triples = list(ox.parse(text, format=ox.RdfFormat.N_TRIPLES, lenient=True))
    except (SyntaxError, ValueError):
        return None
    if any(t.subject != subject or isinstance(t.object, (ox.BlankNode, ox.Triple))
           for t in triples):
        return None
    return "".join(f"{t.subject} {t.predicate} {t.object} .\n" for t in triples)


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
    staged = (f"GRAPH {MINTED_GRAPH} {{ ?vv <{STAGED_FOR.value}> ?doc OPTIONAL {{ ?vv {MINTED} ?m }} }}")
    written = "".join(graph_block(scope, manifest) + f" GRAPH {MINTED_GRAPH} {{ "
                      f"{ox.NamedNode(d)} {MINTED} {ox.Literal(manifest)} }} "
                      for d, _, manifest in documents)
    return " ;\n".join([
        *updates,
        *owned_document_deletes(kg, [d for d, _, _ in documents], scope, manifests),
        f"DELETE {{ GRAPH {MINTED_GRAPH} {{ ?vv <{STAGED_FOR.value}> ?doc ; {MINTED} ?m }} }} WHERE {{ {docs} {staged} }}",
        f"INSERT DATA {{ {written} }}"])


def finish_updates(kg: KnowledgeGraph, documents: Sequence[tuple[str, str, str]],
                   scope: str) -> list[str]:
    """Step 4 for ``documents`` as :func:`finish_update`s: one for them all on a graph that
    loads N-Quads (the embedded graph: one transaction), else one per group of at most
    :data:`REMOTE_DOCUMENTS_PER_UPDATE` documents (each document still whole in one)."""
    size = len(documents) if isinstance(kg, NQuadsGraph) else REMOTE_DOCUMENTS_PER_UPDATE
    return [finish_update(kg, documents[start : start + size], scope)
            for start in range(0, len(documents), max(size, 1))]
