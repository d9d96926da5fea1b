"""Graph expansion after ranking: a hit's surrounding text and its document's facts.

Both steps only add metadata: the hits, their order and their scores stay as they were, and
every look-up is confined to the hit's own scope (``metadata["scope"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from trails.errors import InvalidArgumentError
from trails.kg.base import select
from trails.kg.sparql import TRAILS
from trails.kg.terms import IRI
from trails.rank._steps import (
    H,
    annotated,
    by_scope,
    check_setting,
    key,
    need_ctx,
    predicate_list,
    predicate_node,
    value,
    values,
)

if TYPE_CHECKING:
    from trails.parts import ContextParts

__all__ = ["Edge", "Neighbourhood", "ParentDocument", "assemble"]
Mode = Literal["document", "neighbours"]


class ParentDocument:
    """Attach the text around each hit, read from the graph.

    - ``mode="document"``: ``metadata["document_text"]``, the whole document rebuilt from
      the chunks of the hit's version (see :func:`assemble`).
    - ``mode="neighbours"``: ``metadata["neighbours"]``, the chunks at most ``window``
      positions away, the hit itself included, as ``{"iri", "text", "position"}`` dicts in
      position order.

    A hit that is not a chunk in the graph gets ``None`` or ``[]``. With ``min_score`` only
    the hits whose score is at least that are expanded (the others, and hits without a score,
    pass through untouched): put it after a reranker to fetch parents for confident hits only.

    >>> ParentDocument("neighbours", window=2)
    ParentDocument(mode='neighbours', window=2)
    """

    def __init__(self, mode: Mode = "document", window: int = 1, *,
                 min_score: float | None = None) -> None:
        if mode not in ("document", "neighbours"):
            raise InvalidArgumentError(f"mode must be 'document' or 'neighbours', got {mode!r}")
        check_setting("window", window, integer=True, at_least=0)
        if min_score is not None:
            check_setting("min_score", min_score)
        self.mode, self.window, self.min_score = mode, window, min_score

    def __call__(self, query: str, hits: Sequence[H], ctx: ContextParts | None = None) -> list[H]:
        ctx = need_ctx(ctx, "ParentDocument")
        chosen = [h for h in hits if self._expands(h)]
        fetch = self._documents if self.mode == "document" else self._neighbours
        found: dict[tuple[str, str], Any] = {}
        for scope, group in by_scope(chosen).items():
            got = fetch(ctx, scope, [h.iri for h in group])
            found.update({(scope, iri): item for iri, item in got.items()})
        missing: list[Any] | None = None if self.mode == "document" else []
        name = "document_text" if self.mode == "document" else "neighbours"
        return [annotated(h, **{name: found.get(key(h), missing)}) if self._expands(h) else h
                for h in hits]

    def _expands(self, hit: H) -> bool:
        return self.min_score is None or (hit.score is not None and hit.score >= self.min_score)

    def _documents(self, ctx: ContextParts, scope: str, iris: list[str]) -> dict[str, str]:
        located = select(
            ctx.kg,
            f"SELECT ?c ?doc ?v WHERE {{ {values('c', iris)} ?c schema:isPartOf ?doc . "
            "OPTIONAL { ?c trails:version ?v } }", scopes=[scope]).rows
        if not located:
            return {}
        chunks = select(
            ctx.kg,
            f"SELECT ?doc ?v ?p ?s ?e ?t WHERE {{ {values('doc', (r['doc'] for r in located))} "
            "?n schema:isPartOf ?doc ; schema:text ?t . OPTIONAL { ?n trails:version ?v } "
            "OPTIONAL { ?n schema:position ?p } OPTIONAL { ?n trails:startOffset ?s ; "
            "trails:endOffset ?e } }", scopes=[scope]).rows
        texts: dict[str, str] = {}
        for row in located:
            own = [c for c in chunks if c["doc"] == row["doc"] and c["v"] == row["v"]]
            texts[row["c"]] = assemble(own)
        return texts

    def _neighbours(self, ctx: ContextParts, scope: str, iris: list[str]) -> dict[str, list[dict[str, Any]]]:
        # The graph's integers are 64-bit: a larger literal matches nothing, and any window
        # past the longest document's chunk count reaches the same chunks.
        reach = min(int(self.window), 2**62)
        rows = select(
            ctx.kg,
            f"SELECT ?c ?n ?p ?t WHERE {{ {values('c', iris)} "
            "?c schema:isPartOf ?doc ; schema:position ?cp . OPTIONAL { ?c trails:version ?v } "
            "?n schema:isPartOf ?doc ; schema:position ?p ; schema:text ?t . "
            "OPTIONAL { ?n trails:version ?nv } "
            f"FILTER(ABS(?p - ?cp) <= {reach} && (!BOUND(?v) || ?nv = ?v)) }}",
            scopes=[scope]).rows
        found: dict[str, list[dict[str, Any]]] = {}
        for row in sorted(rows, key=lambda r: (r["p"], r["n"])):
            found.setdefault(row["c"], []).append(
                {"iri": row["n"], "text": row["t"], "position": row["p"]})
        return found

    def __repr__(self) -> str:
        floor = "" if self.min_score is None else f", min_score={self.min_score}"
        return f"ParentDocument(mode={self.mode!r}, window={self.window}{floor})"


def assemble(chunks: Sequence[dict[str, Any]]) -> str:
    """A document's text from its chunks (dicts with ``t`` text, ``s``/``e`` offsets, ``p``
    position).

    With offsets, overlaps are merged and the gaps between chunks (whitespace: chunkers skip
    only whitespace) become spaces, so ``text[s:e]`` is each chunk's text. Without offsets,
    the texts are joined by newlines in position order.

    >>> assemble([{"t": "One. Two.", "s": 0, "e": 9}, {"t": "Two. Three.", "s": 5, "e": 16},
    ...           {"t": "Four.", "s": 18, "e": 23}])
    'One. Two. Three.  Four.'
    """
    if any(c.get("s") is None or c.get("e") is None for c in chunks):
        ordered = sorted(chunks, key=lambda c: (c.get("p") is None, c.get("p") or 0))
        return "\n".join(c["t"] for c in ordered)
    text = ""
    for chunk in sorted(chunks, key=lambda c: (c["s"], c["e"])):
        start, body = chunk["s"], chunk["t"]
        if start > len(text):
            text += " " * (start - len(text))
        text += body[len(text) - start:]
    return text


class Edge(NamedTuple):
    """One triple around a hit's document; IRIs are :class:`trails.kg.IRI` strings."""

    subject: str
    predicate: str
    object: Any


class Neighbourhood:
    """Attach ``metadata["neighbourhood"]``: the triples around each hit's document.

    Depth 1 is the document's own triples (``Edge(document, predicate, object)``: author,
    date, citations...); each further level adds the triples of the IRIs reached, through
    the same predicates. ``predicates=None`` takes every predicate but ``rdf:type`` and the
    ``trails:`` bookkeeping (content hash, version, chunk count...). Edges come document
    first, then level by level, each level sorted.

    Args:
        predicates: ``prefix:name`` or full IRIs to follow, or None.
        depth: how many hops from the document (at least 1).

    >>> Neighbourhood(["meta:author", "meta:cites"], depth=2)
    Neighbourhood(predicates=['meta:author', 'meta:cites'], depth=2)
    """

    def __init__(self, predicates: Sequence[str] | None = None, depth: int = 1) -> None:
        check_setting("depth", depth, integer=True, at_least=1)
        if isinstance(predicates, str):
            predicates = [predicates]
        self.predicates = (None if predicates is None
                           else predicate_list("predicates", predicates))
        self.depth = depth
        if self.predicates is None:
            self._filter = (f'FILTER(?p != rdf:type && !STRSTARTS(STR(?p), "{TRAILS}"))')
        else:
            self._filter = values("p", (predicate_node(p).value for p in self.predicates))

    def __call__(self, query: str, hits: Sequence[H], ctx: ContextParts | None = None) -> list[H]:
        ctx = need_ctx(ctx, "Neighbourhood")
        found: dict[tuple[str, str], list[Edge]] = {}
        for scope, group in by_scope(hits).items():
            got = self._edges(ctx, scope, [h.iri for h in group])
            found.update({(scope, iri): edges for iri, edges in got.items()})
        return [annotated(h, neighbourhood=found.get(key(h), [])) for h in hits]

    def _edges(self, ctx: ContextParts, scope: str, iris: list[str]) -> dict[str, list[Edge]]:
        rows = select(
            ctx.kg,
            f"SELECT ?c ?doc WHERE {{ {values('c', iris)} ?c schema:isPartOf ?doc }}",
            scopes=[scope]).rows
        documents = {row["c"]: row["doc"] for row in rows}
        out: dict[str, list[Edge]] = {}
        known: dict[str, list[Edge]] = {}
        frontier = set(documents.values())
        for _ in range(self.depth):
            frontier -= known.keys()
            if not frontier:  # nothing new to reach: a caller's depth bounds no idle loop
                break
            known.update(self._out_of(ctx, scope, frontier))
            frontier = {e.object for s in frontier for e in known[s] if isinstance(e.object, IRI)}
        for chunk, document in documents.items():
            out[chunk] = _walk(document, known, self.depth)
        return out

    def _out_of(self, ctx: ContextParts, scope: str, subjects: set[str]) -> dict[str, list[Edge]]:
        edges: dict[str, list[Edge]] = {s: [] for s in subjects}
        if not subjects:
            return edges
        rows = select(ctx.kg, f"SELECT ?s ?p ?o WHERE {{ {values('s', sorted(subjects))} ?s ?p ?o "
                            f"{self._filter} }}", scopes=[scope]).raw
        for row in rows:
            edges[row["s"].value].append(Edge(value(row["s"]), row["p"].value, value(row["o"])))
        for found in edges.values():
            found.sort(key=lambda e: (e.predicate, str(e.object)))
        return edges

    def __repr__(self) -> str:
        return f"Neighbourhood(predicates={self.predicates!r}, depth={self.depth})"


def _walk(start: str, known: dict[str, list[Edge]], depth: int) -> list[Edge]:
    """The edges reachable from ``start`` in ``depth`` hops, level by level, each subject once."""
    edges: list[Edge] = []
    seen, level = {start}, [start]
    for _ in range(depth):
        if not level:  # every path ended: the remaining hops would find nothing
            break
        reached: list[str] = []
        for subject in level:
            for edge in known.get(subject, []):
                edges.append(edge)
                if isinstance(edge.object, IRI) and edge.object not in seen:
                    seen.add(edge.object)
                    reached.append(edge.object)
        level = reached
    return edges
