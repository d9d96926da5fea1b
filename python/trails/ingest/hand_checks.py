"""What ``verify()`` reads while the graph is marked as written by hand (``kg/hand_links.py``):
the chunk links and the documents' types that filters planned over documents stand on. Only
when both are exactly what ingestion wrote does verify clear the marks (ADR 0013).

Read as TSV text (only a graph that keeps marks asks, the embedded one): at 1.19M links the
terms as Python objects took 137 s.
"""

from __future__ import annotations

from trails.ingest.minting import CHUNK_IRI
from trails.kg.base import KnowledgeGraph, TsvGraph
from trails.kg.column_files import tsv_rows
from trails.scopes import DEFAULT_SCOPE, SCOPE_BASE
from trails.vector.stores.base import DocumentVersion

__all__ = ["chunk_types_by_hand", "links_by_hand", "types_by_hand"]


def _scope_graph(version: DocumentVersion) -> str:
    """A document's scope graph as a TSV term ("" for the default graph)."""
    return "" if version.scope == DEFAULT_SCOPE else f"<{SCOPE_BASE}{version.scope}>"


def _in_every_graph(kg: KnowledgeGraph, variables: str, pattern: str) -> list[list[str]]:
    """The ``variables`` of ``pattern``'s solutions in the default graph, then in each named
    graph, each row with its graph last ("" for the default graph)."""
    assert isinstance(kg, TsvGraph)  # hand_links: an OxigraphGraph
    default = tsv_rows(kg.select_tsv(f"SELECT {variables} WHERE {{ {pattern} }}",
                                     [DEFAULT_SCOPE]))
    named = tsv_rows(kg.select_tsv(f"SELECT {variables} ?g WHERE {{ GRAPH ?g {{ {pattern} }} }}"))
    return [[*row, ""] for row in default] + [list(row) for row in named]


def links_by_hand(kg: KnowledgeGraph, rows: list[tuple[str, str, str | None, bool]],
                  versions: dict[str, DocumentVersion]) -> list[str]:
    """Live chunks whose ``schema:isPartOf`` triples, in every graph, are not exactly the one
    ingestion minted: an IRI link to their document in their scope's graph; and chunk IRIs
    that are not live, linked to another document than their IRI names."""
    own = {f"<{row_id}>": (f"<{doc}>", _scope_graph(versions[doc]))
           for row_id, doc, _, pending in rows if not pending and doc in versions}
    found: dict[str, list[tuple[str, str]]] = {}
    minted_elsewhere = set()
    for chunk, doc, graph in _in_every_graph(kg, "?c ?d", "?c schema:isPartOf ?d"):
        if chunk in own:
            found.setdefault(chunk, []).append((doc, graph))
        elif (shaped := CHUNK_IRI.match(chunk[1:-1])) is not None and doc != f"<{shaped['doc']}>":
            minted_elsewhere.add(chunk[1:-1])
    return sorted({c[1:-1] for c, expected in own.items() if found.get(c) != [expected]}
                  | minted_elsewhere)


def types_by_hand(kg: KnowledgeGraph, versions: dict[str, DocumentVersion]) -> list[str]:
    """Documents whose ``rdf:type trails:Document`` is not exactly the one ingestion wrote:
    in their scope's graph and in no other. A filter whose document nothing else binds is
    answered from these types (``?doc a trails:Document`` standing for the chunks' links),
    in the scopes searched: a type moved to another scope's graph, removed, or also written
    in another graph would change its answer unseen by the link counts."""
    expected = {f"<{doc}>": [_scope_graph(version)] for doc, version in versions.items()}
    found: dict[str, list[str]] = {}
    for doc, graph in _in_every_graph(kg, "?d", "?d a trails:Document"):
        if doc.startswith("<"):  # a blank node is no document a link can reach
            found.setdefault(doc, []).append(graph)
    return sorted(d[1:-1] for d in expected.keys() | found.keys()
                  if found.get(d) != expected.get(d))


def chunk_types_by_hand(kg: KnowledgeGraph, rows: list[tuple[str, str, str | None, bool]],
                        versions: dict[str, DocumentVersion]) -> list[str]:
    """Live chunks without the ``rdf:type trails:Chunk`` ingestion wrote in their scope's
    graph. A filter's ``?iri a trails:Chunk`` beside the link is dropped when it is lifted to
    documents, which admits every live chunk whose link the scopes hold: one whose type is
    gone from the graph of its link would be admitted where the filter as written leaves it.
    A type written elsewhere as well, or on another resource, only ever adds to what the
    filter as written matches beside a link, so it keeps no mark."""
    expected = {f"<{row_id}>": _scope_graph(versions[doc])
                for row_id, doc, _, pending in rows if not pending and doc in versions}
    found: dict[str, set[str]] = {}
    for chunk, graph in _in_every_graph(kg, "?c", "?c a trails:Chunk"):
        found.setdefault(chunk, set()).add(graph)
    return sorted(c[1:-1] for c, graph in expected.items() if graph not in found.get(c, ()))
