"""Graph mode's hits: the filter's IRIs in its order, without chunks whose version is not live
and without other scopes' chunks and documents (ADR 0005, ADR 0006)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from trails.kg.base import select
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.back_references import live_rows, rows_standing_for
from trails.retrieval.chunk_versions import minted_chunk
from trails.scopes import DEFAULT_SCOPE

if TYPE_CHECKING:
    from trails.context import Context
    from trails.vector.stores.base import VectorStore

__all__ = ["graph_hits", "snippet"]


def graph_hits(
    iris: list[str], store: VectorStore, k: int, ctx: Context | None, scopes: list[str]
) -> RetrievalResult:
    chosen = _without_dead_chunks(iris, k, store, ctx, scopes)
    # Metadata only of live rows of these scopes: an IRI the caller's graph mentions may also
    # name a staged row, or another scope's row the graph no longer types as a chunk. A row
    # stands for the IRI its metadata["iri"] names (retrieval/back_references.py).
    stored: dict[str, dict[str, Any]] = {}
    for iri, row in rows_standing_for(store, chosen):
        if str(row.metadata.get("scope") or DEFAULT_SCOPE) in scopes:
            stored.setdefault(iri, row.metadata)
    hits = [RetrievalHit(i, None, snippet(stored.get(i, {})), stored.get(i, {})) for i in chosen]
    return RetrievalResult(hits, mode="graph", plan="graph-order", candidates=len(iris), exhaustive=True)


def _without_dead_chunks(
    iris: list[str], k: int, store: VectorStore, ctx: Context | None, scopes: list[str]
) -> list[str]:
    """The first ``k`` IRIs, skipping chunks whose version is not live (ADR 0005) and the
    chunks and documents of other scopes (ADR 0006).

    A chunk IRI in the graph without a live vector belongs to a version being written or
    being replaced; graph mode must not show it any more than vector mode would. The filter
    ran on the scopes' graphs only, but ``VALUES ?iri { <...> }`` can still name another
    scope's chunk or document: a chunk counts only with a live vector of these scopes, a
    document only if it is a document in these scopes' graphs, and any other IRI only if these
    scopes' graphs mention it, so a missing IRI and another scope's are dropped alike.
    """
    if ctx is None:
        return iris[:k]
    chosen: list[str] = []
    window = max(k, 64)
    for start in range(0, len(iris), window):
        part = iris[start : start + window]
        values = "VALUES ?c { " + " ".join(str(ox.NamedNode(i)) for i in part) + " }"
        kinds = select(
            ctx.kg,
            f"SELECT ?c ?t WHERE {{ {values} VALUES ?t {{ trails:Chunk trails:Document }} "
            "?c a ?t }")
        chunks = {row["c"] for row in kinds if row["t"].endswith("#Chunk")}
        documents = {row["c"] for row in kinds if row["t"].endswith("#Document")}
        # A minted chunk IRI with a live vector counts even when the graph, read after the
        # filter, no longer types it: a writer's step 4 may have removed it meanwhile.
        live = live_rows(store, [i for i in part if i in chunks or minted_chunk(i)])
        visible = {live[s.id] for s in store.get(list(live))
                   if str(s.metadata.get("scope") or DEFAULT_SCOPE) in scopes}
        if documents:
            visible |= set(select(
            ctx.kg,
                f"SELECT ?c WHERE {{ {values} ?c a trails:Document }}", scopes=scopes).column("c"))
        others = [i for i in part if i not in chunks and i not in documents]
        if others:  # echoed only if the caller's own graphs mention them: no existence probe
            visible |= set(select(
                ctx.kg, "SELECT DISTINCT ?c WHERE { VALUES ?c { "
                + " ".join(str(ox.NamedNode(i)) for i in others)
                + " } { ?c ?p ?o } UNION { ?s ?p ?c } }", scopes=scopes).column("c"))
        chosen += [i for i in part if i in visible]
        if len(chosen) >= k:
            break
    return chosen[:k]


def snippet(metadata: Mapping[str, Any]) -> str:
    """What a hit shows of its chunk: the stored snippet, else its text."""
    return str(metadata.get("snippet") or metadata.get("text") or "")
