"""Entity-aware ranking: the query's own words linked to the user's entities raise the hits
whose chunks mention them or their graph neighbours (ADR 0037).

The step links the query with the same linker (and so the same folding) that linked the
chunks at ingest (:class:`~trails.ingest.linking.LabelLinker` by default), follows the
predicates it is given up to ``hops`` steps from those entities, and reads which of the hits
mention any of them (``trails:mentions``, ADR 0031). That is a second ranking of the same
hits, fused with the order they came in under the guard of ADR 10
(:class:`~trails.rank.fusion.AutoFusion`): the entity ranking counts only as far as it tells
the hits apart, so when every hit mentions the entities, or none does, or the query names
none, the answer stays exactly as it was. It never adds or drops a hit.
"""

from __future__ import annotations

import itertools
import math
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from trails.errors import InvalidArgumentError
from trails.ingest.document import Chunk
from trails.ingest.linking import LabelLinker, Linker, ScopeLinker, check_linker
from trails.kg.base import GenerationGraph, select
from trails.rank._steps import (
    H,
    NotedHits,
    annotated,
    by_scope,
    key,
    need_ctx,
    predicate_list,
    predicate_node,
    rescored,
    values,
)
from trails.rank.fusion import AutoFusion, Ranking

if TYPE_CHECKING:
    from trails.kg.base import KnowledgeGraph
    from trails.parts import ContextParts

__all__ = ["EntityBoost", "raise_mentioning"]

# Undirected edges along a step's predicates: entity -> its neighbours.
Adjacency = dict[str, set[str]]
# The most edges a step keeps in memory per scope (~150 bytes each); past it, each query
# asks the graph for the distances instead.
MAX_KEPT_EDGES = 2_000_000

# An entity ranking counts as far as it is selective: the share of the hits that mention
# none of the entities, through this ramp, is its confidence (ADR 10's quality ramps).
SELECTIVITY_RAMP = (0.2, 0.8)


V = TypeVar("V")
# Per graph, per scope: the generation a value was read at, and the value.
_PerGraph = weakref.WeakKeyDictionary[Any, dict[str, tuple[int, V]]]


def _kept(per_graph: _PerGraph[V], kg: KnowledgeGraph, scope: str,
          generation: int | None) -> tuple[V] | None:
    """The value kept for ``kg``'s ``scope`` at ``generation``, as a 1-tuple; None when
    there is none (nothing is kept for a graph without generations, nor for one whose raw
    store was handed out: that store writes unseen, at any time, generation unchanged)."""
    if generation is None or _writes_unseen(kg):
        return None
    try:
        kept = per_graph.get(kg, {}).get(scope)
    except TypeError:  # a graph class of one's own, unhashable or without weak references
        return None
    return (kept[1],) if kept is not None and kept[0] == generation else None


def _keep(per_graph: _PerGraph[V], kg: KnowledgeGraph, scope: str, generation: int | None,
          value: V) -> None:
    """Keep ``value`` for ``kg``'s ``scope`` at ``generation`` (a graph with generations
    that can be referred to weakly; the graph's other scopes stay kept)."""
    if generation is None or _writes_unseen(kg):
        return
    try:
        per_graph.setdefault(kg, {})[scope] = (generation, value)
    except TypeError:
        return


def _writes_unseen(kg: KnowledgeGraph) -> bool:
    return bool(getattr(getattr(kg, "hand_links", None), "raw", False))


class EntityBoost:
    """Raise the hits that mention the entities the query names (a post-ranking step).

    Args:
        linker: links the query to entities, per scope; the linker the chunks were linked
            with at ingest (default :class:`~trails.ingest.linking.LabelLinker`).
        neighbours: predicates (``prefix:name`` or full IRIs) to follow from the query's
            entities, in either direction; none by default (the entities themselves only).
        hops: how many steps along ``neighbours`` (at least 0).
        decay: a neighbour ``n`` hops away counts ``decay ** n`` of a named entity.
        weight: the entity ranking's prior weight in the fusion, in [0, 1]; the order the
            hits came in weighs ``1 - weight``.

    Each hit gets ``components["entities"]`` (its entity score; 0 when it mentions none) and
    the answer's notes (``result.explain()``) say which entities the query linked.

    >>> EntityBoost(neighbours=["https://ex.org/subOrganizationOf"], hops=2)
    EntityBoost(neighbours=['https://ex.org/subOrganizationOf'], hops=2, decay=0.5, weight=0.3)
    """

    name = "entities"

    def __init__(self, linker: Linker | None = None, *, neighbours: Sequence[str] = (),
                 hops: int = 1, decay: float = 0.5, weight: float = 0.3) -> None:
        check_linker(linker)
        if isinstance(neighbours, str):
            raise InvalidArgumentError("neighbours must be a list of predicates, not one "
                                       f"string: neighbours=[{neighbours!r}]")
        neighbours = predicate_list("neighbours", neighbours)
        try:
            self._predicates = [predicate_node(p).value for p in neighbours]
        except InvalidArgumentError as exc:
            raise type(exc)(f"neighbours: {exc}") from None
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise InvalidArgumentError(f"hops must be an integer >= 0, got {hops!r}")
        if not _number(decay) or not 0 < decay <= 1:
            raise InvalidArgumentError(f"decay must be a number in (0, 1], got {decay!r}")
        if not _number(weight) or not 0 <= weight <= 1:
            raise InvalidArgumentError(f"weight must be a number in [0, 1], got {weight!r}")
        self.linker: Linker = linker if linker is not None else LabelLinker()
        self.neighbours, self.hops = list(neighbours), hops
        self.decay, self.weight = float(decay), float(weight)
        # What is kept per graph (the graph itself, weakly: a graph's id is reused once it
        # is gone, and a new graph may reach the same generation) and scope, with the
        # generation it was read at.
        self._bound: _PerGraph[ScopeLinker] = weakref.WeakKeyDictionary()
        self._edges: _PerGraph[Adjacency | None] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, query: str, hits: Sequence[H], ctx: ContextParts | None = None
                 ) -> NotedHits[H]:
        ctx = need_ctx(ctx, "EntityBoost")
        entity_scores: dict[tuple[str, str], float] = {}
        found: dict[tuple[str, str], list[str]] = {}
        linked: list[str] = []
        for scope, group in by_scope(hits).items():
            named = self._query_entities(ctx.kg, scope, query)
            linked += [e for e in named if e not in linked]
            if not named:
                continue
            mentioned = self._mentions(ctx.kg, scope, [h.iri for h in group])
            reach = self._reach(ctx.kg, scope, named,
                                {e for entities in mentioned.values() for e in entities})
            for iri, entities in mentioned.items():
                within = [e for e in entities if e in reach]
                if within:
                    found[(scope, iri)] = within
                    entity_scores[(scope, iri)] = sum(reach[e] for e in within)
        if not linked:
            return NotedHits(hits, ["entities: no entity named in the query; order kept"])
        ranked, weights = raise_mentioning(hits, {key(h): entity_scores.get(key(h), 0.0)
                                                  for h in hits}, weight=self.weight, keyed=key)
        # What the display shows of each hit: the entities it was raised for.
        ranked = [annotated(h, mentions=found[key(h)]) if key(h) in found else h for h in ranked]
        raised = sum(1 for h in hits if entity_scores.get(key(h)))
        note = (f"entities: {', '.join(linked)} linked in the query; {raised} of {len(hits)} "
                f"hits mention them or a neighbour (weight {weights.get('entities', 0.0):.3f})")
        return NotedHits(ranked, [note])

    def _query_entities(self, kg: KnowledgeGraph, scope: str, query: str) -> list[str]:
        """The entities the query's words name in ``scope``, in the order they occur."""
        mentions = self._linker(kg, scope).mentions(Chunk(query, 0, len(query), 0))
        return list(dict.fromkeys(m.entity for m in mentions))

    def _linker(self, kg: KnowledgeGraph, scope: str) -> ScopeLinker:
        """The linker bound to ``scope``, kept while the graph's generation stays the same
        (reading 100,000 labels per query would cost more than the search)."""
        generation = kg.generation if isinstance(kg, GenerationGraph) else None
        with self._lock:
            kept = _kept(self._bound, kg, scope, generation)
            if kept is not None:
                return kept[0]
            bound = self.linker.for_scope(kg, scope)
            _keep(self._bound, kg, scope, generation, bound)
            return bound

    def _reach(self, kg: KnowledgeGraph, scope: str, named: list[str],
               targets: set[str]) -> dict[str, float]:
        """Each of ``targets`` (the entities the hits mention) within ``hops`` of the named
        entities along the predicates, in either direction, with its weight: ``decay **
        distance``, the shortest (1 for a named one).

        On a graph with generations, walked in memory over the predicates' edges, read once
        per generation (:meth:`_adjacency`). Elsewhere, or when there are too many edges to
        keep, asked from both ends at once, one query per distance: the graph walks from the
        named entities only towards what the hits mention, so a hub's thousands of
        neighbours never come back to Python."""
        adjacency = self._adjacency(kg, scope)
        if adjacency is not None:
            return _walk(adjacency, named, targets, self.hops, self.decay)
        reach = dict.fromkeys((e for e in named if e in targets), 1.0)
        remaining, weight = targets - reach.keys(), 1.0
        for distance in range(1, self.hops + 1 if self._predicates else 1):
            if not remaining:
                break
            weight *= self.decay
            rows = select(kg, f"SELECT DISTINCT ?t WHERE {{ {values('e', named)} "
                              f"{values('t', remaining)} {self._path(distance)} }}",
                          scopes=[scope]).rows
            for row in rows:
                reach[str(row["t"])] = weight
                remaining.discard(str(row["t"]))
        return reach

    def _adjacency(self, kg: KnowledgeGraph, scope: str) -> Adjacency | None:
        """The predicates' edges between IRIs in ``scope``, both ways round, kept while the
        graph's generation stays the same (a query's walk then reads no graph); None for a
        graph without generations, with no predicates, or with more than
        :data:`MAX_KEPT_EDGES` edges."""
        if not self._predicates or not isinstance(kg, GenerationGraph) or not self.hops:
            return None
        generation = kg.generation
        with self._lock:
            kept = _kept(self._edges, kg, scope, generation)
            if kept is not None:
                return kept[0]
            rows = select(kg, f"SELECT ?a ?b WHERE {{ {values('p', self._predicates)} ?a ?p ?b "
                              f"FILTER(isIRI(?a) && isIRI(?b)) }} LIMIT {MAX_KEPT_EDGES + 1}",
                          scopes=[scope]).rows
            adjacency: Adjacency | None = None
            if len(rows) <= MAX_KEPT_EDGES:
                adjacency = {}
                for row in rows:
                    a, b = str(row["a"]), str(row["b"])
                    adjacency.setdefault(a, set()).add(b)
                    adjacency.setdefault(b, set()).add(a)
            _keep(self._edges, kg, scope, generation, adjacency)
            return adjacency

    def _path(self, distance: int) -> str:
        """Graph patterns joining ``?e`` to ``?t`` in exactly ``distance`` steps along the
        predicates, either way round each, through IRIs only (as a walk step by step)."""
        nodes = ["?e", *(f"?m{i}" for i in range(1, distance)), "?t"]
        steps = [f"{values(f'p{i}', self._predicates)} {{ {a} ?p{i} {b} }} UNION "
                 f"{{ {b} ?p{i} {a} }}" for i, (a, b) in enumerate(itertools.pairwise(nodes))]
        inner = " ".join(f"FILTER(isIRI({m}))" for m in nodes[1:-1])
        return " ".join(steps) + (" " + inner if inner else "")

    @staticmethod
    def _mentions(kg: KnowledgeGraph, scope: str, chunks: list[str]) -> dict[str, list[str]]:
        """The entities each chunk mentions, sorted."""
        if not chunks:
            return {}
        rows = select(kg, f"SELECT ?c ?e WHERE {{ {values('c', chunks)} ?c trails:mentions ?e }}",
                      scopes=[scope]).rows
        found: dict[str, list[str]] = {}
        for row in sorted(rows, key=lambda r: (str(r["c"]), str(r["e"]))):
            found.setdefault(str(row["c"]), []).append(str(row["e"]))
        return found

    def __repr__(self) -> str:
        return (f"EntityBoost(neighbours={self.neighbours!r}, hops={self.hops}, "
                f"decay={self.decay}, weight={self.weight})")


def _walk(adjacency: Adjacency, named: list[str], targets: set[str], hops: int,
          decay: float) -> dict[str, float]:
    """Breadth first from ``named`` over ``adjacency``: each of ``targets`` within ``hops``
    with ``decay ** distance``. The last step is taken from whichever side is smaller, the
    frontier's neighbours or the targets' (a hub's neighbours are not listed for nothing)."""
    reach = dict.fromkeys(named, 1.0)
    frontier, weight = list(named), 1.0
    for step in range(1, hops + 1):
        if not frontier:
            break
        weight *= decay
        if step == hops:
            remaining = [t for t in targets if t not in reach]
            outward = sum(len(adjacency.get(e, ())) for e in frontier)
            if sum(len(adjacency.get(t, ())) for t in remaining) < outward:
                near = set(frontier)
                reach.update((t, weight) for t in remaining
                             if not near.isdisjoint(adjacency.get(t, ())))
                break
        frontier = list(dict.fromkeys(n for e in frontier for n in adjacency.get(e, ())
                                      if n not in reach))
        reach.update(dict.fromkeys(frontier, weight))
    return {e: w for e, w in reach.items() if e in targets}


def _number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and not math.isnan(value))


def raise_mentioning(hits: Sequence[H], entity_scores: Mapping[Any, float], *, weight: float,
                     keyed: Any = None) -> tuple[list[H], dict[str, float]]:
    """``hits`` (best first) fused with their entity scores under ADR 10's guard, and the
    weights it gave: ``(1 - weight)`` for the order they came in, ``weight`` for the entity
    ranking times its confidence (the share of hits that mention nothing, through
    :data:`SELECTIVITY_RAMP`). Equal fused scores keep the hits' order; a hit that mentions
    nothing never passes one that came before it."""
    keyed = keyed or (lambda h: h.iri)
    entity = [(str(i), float(entity_scores.get(keyed(h)) or 0.0)) for i, h in enumerate(hits)]
    listed = [(i, s) for i, s in entity if s > 0]
    if not listed or len(listed) == len(hits) and len({s for _, s in listed}) == 1:
        return list(hits), {}
    # The hits' own scores, or their ranks when some have none (graph order).
    scored = [h.score for h in hits]
    base = [(str(i), float(s) if None not in scored and s is not None else 1.0 / (i + 1))
            for i, s in enumerate(scored)]
    fusion = AutoFusion(weights={"ranked": 1.0 - weight, "entities": weight},
                        quality_ramps={"entities": SELECTIVITY_RAMP}, sharpen=0.0)
    rankings = [Ranking("ranked", base),
                Ranking("entities", sorted(listed, key=lambda p: -p[1]),
                        quality=1.0 - len(listed) / len(hits))]
    fused = dict(fusion(rankings))
    order = sorted(range(len(hits)), key=lambda i: (-fused[str(i)], i))
    by_entity = dict(entity)
    # The fused score is on another scale than the hits': the output takes its own scores,
    # falling, and keeps each hit's former score in its components.
    return ([rescored(hits[i], fused[str(i)], entities=by_entity[str(i)],
                      **({} if scored[i] is None else {"ranked": float(scored[i] or 0.0)}))
             for i in order],
            dict(fusion.explain(rankings)["weights"]))
