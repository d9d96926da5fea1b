"""What a graph's filters leave behind while the graph stays the same (ADR 0013, ADR 0029).

:func:`memory` gives each graph object one :class:`GraphMemory`, valid for one generation of
the graph (``kg/base.py``: every write through it, a view's refresh and a hand-out of its raw
store move the generation): the filters' answers, the counts its plans use, and its columns
(``kg/filter_index.py``). :func:`answer_key` says which kept answer is the same question: an
answer is reused only where it is still the graph's answer (``retrieval/candidates.py``).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from trails.kg.base import GenerationGraph, KnowledgeGraph
from trails.kg.filter_index import FilterIndex

__all__ = ["CACHED_FILTERS", "CACHED_IRIS", "GraphMemory", "answer_key", "memory"]

# Answers kept per graph: at most this many filters, and this many IRIs in all (about 100 MB).
CACHED_FILTERS = 64
CACHED_IRIS = 1_000_000


class GraphMemory:
    """What one graph object's filters left behind, valid for one generation."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = -1
        # Each kept answer with how it was found (its filter path).
        self.answers: OrderedDict[tuple[Any, ...], tuple[tuple[str, ...], str]] = OrderedDict()
        self.iris = 0
        self.counts: dict[str, int] = {}  # COUNT queries' answers: estimates, link checks
        self.indexes: dict[tuple[str, ...] | None, FilterIndex] = {}  # columns, per scopes

    def at(self, generation: int) -> GraphMemory:
        """This memory, emptied first if the graph has moved on."""
        if generation != self.generation:
            self.answers.clear()
            self.iris = 0
            self.counts.clear()
            self.indexes.clear()
            self.generation = generation
        return self

    def keep(self, key: tuple[Any, ...], iris: tuple[str, ...], path: str) -> None:
        if len(iris) > CACHED_IRIS:
            return
        self.answers[key] = iris, path
        self.iris += len(iris)
        while len(self.answers) > CACHED_FILTERS or self.iris > CACHED_IRIS:
            _, (dropped, _) = self.answers.popitem(last=False)
            self.iris -= len(dropped)


_MEMORY: weakref.WeakKeyDictionary[Any, GraphMemory] = weakref.WeakKeyDictionary()
_MEMORY_LOCK = threading.Lock()


def memory(graph: GenerationGraph) -> GraphMemory:
    """What ``graph``'s filters left behind; an empty memory, kept nowhere, once its raw store
    was handed out (its holder writes unseen: no generation names the state read)."""
    marked = getattr(graph, "hand_links", None)
    if marked is not None and marked.raw:
        return GraphMemory()
    with _MEMORY_LOCK:
        found = _MEMORY.get(graph)
        if found is None:
            found = _MEMORY[graph] = GraphMemory()
        return found


def answer_key(graph: KnowledgeGraph, sparql: str, terms: Mapping[str, Any],
               scopes: Sequence[str] | None, documents: bool, ordered: bool,
               ) -> tuple[Any, ...]:
    """The key of a filter's kept answer: its text, bindings, scopes and kind, and the graph's
    prefixes as they are now. ``kg.prefixes`` is a plain dict each query reads when it runs;
    changing it moves no generation, and ``ex:v`` then names another IRI."""
    return (sparql, tuple(sorted((name, str(term)) for name, term in terms.items())),
            None if scopes is None else tuple(scopes), documents, ordered,
            tuple(sorted(graph.prefixes.items())))
