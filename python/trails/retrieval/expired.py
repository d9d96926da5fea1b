"""Expired documents are gone for retrieval: never a candidate, in any mode.

:func:`expired_now` finds the documents expired at the time of a retrieve call (their
``trails:expires``, :mod:`trails.ingest.expiry`) and their live chunks. On a graph that
numbers its states the answer is kept while the graph's generation stays the same and the
moment asked about lies between the latest expiry that has passed and the next one to come,
so a steady stream of retrievals costs one graph query per write or expiry, not one each.

:class:`Expired` then takes them out without changing anything else about the answer:

- a filter's candidates lose the expired documents and their chunks (:meth:`Expired.without`);
- an unfiltered ranking asks the store for as many more hits as there are expired chunks and
  drops them (:meth:`Expired.hiding`), so with ``k`` hits asked and enough others, ``k``
  others come back, in the order the store ranks them.

Exclusion is silent (expired means gone), and a filter's candidate count counts only the
candidates that remain. Until ``trails prune --expired`` deletes them, expired chunks still
count in the keyword index's statistics (BM25's document frequencies), as any document of
another scope does.
"""

from __future__ import annotations

import datetime as dt
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trails.ingest.expiry import expired_documents, store_owners, utc_now
from trails.kg.base import GenerationGraph, KnowledgeGraph
from trails.vector.stores.base import KeywordIndex, KeywordWeights, NumberedStates, VectorStore
from trails.vector.stores.records import DocumentIris, VectorHit

__all__ = ["CACHED_CUTS", "NOTHING_EXPIRED", "Expired", "expired_now"]

# Filter answers whose cut each kept set of expired documents remembers.
CACHED_CUTS = 16


@dataclass(frozen=True)
class Expired:
    """The documents expired at one moment and their live chunks' ids."""

    documents: frozenset[str]
    chunks: frozenset[str]
    _gone: frozenset[str] = field(init=False, repr=False, compare=False)
    # A filter's answer is kept as the same tuple while the graph stays the same (ADR 0013),
    # so a store can keep what it derived from it: its cut is kept too, as the same tuple.
    _cuts: OrderedDict[int, tuple[Sequence[str], Sequence[str]]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_gone", self.documents | self.chunks)
        object.__setattr__(self, "_cuts", OrderedDict())

    def __bool__(self) -> bool:
        return bool(self.documents)

    def without(self, iris: Sequence[str]) -> Sequence[str]:
        """A filter's candidates without the expired documents and chunks, in their order
        (documents stay a :class:`DocumentIris` of the same generation)."""
        if not self or not iris:
            return iris
        with _LOCK:
            known = self._cuts.get(id(iris))
        if known is not None and known[0] is iris:
            return known[1]
        kept = [iri for iri in iris if iri not in self._gone]
        cut: Sequence[str] = iris
        if len(kept) != len(iris) and isinstance(iris, DocumentIris):
            cut = DocumentIris(kept)
            cut.generation = iris.generation
        elif len(kept) != len(iris):
            cut = tuple(kept)
        with _LOCK:
            self._cuts[id(iris)] = (iris, cut)  # holding iris keeps its id from being reused
            while len(self._cuts) > CACHED_CUTS:
                self._cuts.popitem(last=False)
        return cut

    def hiding(self, store: VectorStore) -> VectorStore:
        """``store`` as an unfiltered ranking should see it: without expired chunks."""
        if not self:
            return store
        hidden: VectorStore = _hiding_type(store)(store, self)
        return hidden  # a VectorStore by delegation: only its searches differ

    def keep(self, hits: Iterable[VectorHit]) -> list[VectorHit]:
        """A store's ``hits`` that are neither expired chunks nor documents."""
        return [hit for hit in hits if hit.id not in self._gone]


NOTHING_EXPIRED = Expired(frozenset(), frozenset())


class _Hiding:
    """A store whose unfiltered searches over-fetch by the expired chunks and drop them;
    everything else (filtered searches, whose candidates were already cut) is the store's.

    Its capabilities are the store's own, as real methods (:func:`_hiding_type`): protocol
    checks on Python 3.12+ look at the class, not at ``__getattr__``."""

    def __init__(self, store: VectorStore, expired: Expired) -> None:
        self._store = store
        self._expired = expired

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def search_with_plan(self, vector: Any, k: int = 10, ids: Iterable[str] | None = None,
                         **options: Any) -> tuple[list[VectorHit], Any]:
        if ids is not None:
            return self._store.search_with_plan(vector, k, ids, **options)
        # The extra hits are dropped: their metadata is not read, only the kept hits'.
        wanted = options.pop("with_metadata", True)
        hits, plan = self._store.search_with_plan(vector, k + len(self._expired.chunks), None,
                                                  with_metadata=False, **options)
        return self._described(self._expired.keep(hits)[:k], wanted), plan

    def _described(self, hits: list[VectorHit], wanted: bool) -> list[VectorHit]:
        """``hits`` with their metadata when ``wanted`` (read for these hits only)."""
        if not wanted or not hits:
            return hits
        metadata = self._store.metadata([hit.id for hit in hits])
        return [VectorHit(hit.id, hit.score, metadata.get(hit.id, {})) for hit in hits]

    def search(self, vector: Any, k: int = 10, ids: Iterable[str] | None = None,
               **options: Any) -> list[VectorHit]:
        return self.search_with_plan(vector, k, ids, **options)[0]


class _HidingKeywords(_Hiding):
    def keyword_search(self, query: str, k: int = 10, ids: Iterable[str] | None = None,
                       **options: Any) -> list[VectorHit]:
        store: Any = self._store
        if ids is not None:
            found: list[VectorHit] = store.keyword_search(query, k, ids, **options)
            return found
        wanted = options.pop("with_metadata", True)
        hits = store.keyword_search(query, k + len(self._expired.chunks), None,
                                    with_metadata=False, **options)
        return self._described(self._expired.keep(hits)[:k], wanted)


class _HidingWeights(_HidingKeywords):
    def keyword_idf_sum(self, *args: Any, **options: Any) -> Any:
        store: Any = self._store
        return store.keyword_idf_sum(*args, **options)


def _hiding_type(store: VectorStore) -> type[_Hiding]:
    if isinstance(store, KeywordWeights) and isinstance(store, KeywordIndex):
        return _HidingWeights
    return _HidingKeywords if isinstance(store, KeywordIndex) else _Hiding


@dataclass
class _Kept:
    generation: int
    since: dt.datetime | None  # the latest expiry passed: valid from it on
    until: dt.datetime | None  # the next expiry: valid before it
    documents: frozenset[str]
    expired: dict[tuple[int, Any], Expired] = field(default_factory=dict)  # per store state

    def holds(self, generation: int, now: dt.datetime) -> bool:
        return (generation == self.generation and (self.since is None or self.since <= now)
                and (self.until is None or now < self.until))


_KEPT: weakref.WeakKeyDictionary[Any, _Kept] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def expired_now(kg: KnowledgeGraph, store: VectorStore,
                now: dt.datetime | None = None) -> Expired:
    """The documents expired at ``now`` (default: the current time) and their chunks live in
    ``store``.

    Raises:
        InvalidArgumentError: ``now`` has no offset.
        StorageError, SparqlError: the graph or the store cannot be read.
    """
    moment = utc_now(now)
    # Nothing is kept for a graph whose raw store was handed out: it writes unseen, at any time.
    raw = getattr(getattr(kg, "hand_links", None), "raw", False)
    generation = kg.generation if isinstance(kg, GenerationGraph) and not raw else None
    kept = None
    if generation is not None:
        with _LOCK:
            kept = _KEPT.get(kg)
        if kept is not None and not kept.holds(generation, moment):
            kept = None
    if kept is None:
        found, since, until = expired_documents(kg, moment, store_owners(store))
        kept = _Kept(-1 if generation is None else generation, since, until,
                     frozenset(d.iri for d in found))
        if isinstance(kg, GenerationGraph) and kg.generation == generation:
            with _LOCK:
                _KEPT[kg] = kept
    if not kept.documents:
        return NOTHING_EXPIRED
    # The chunks are the store's: kept only for a store that numbers its states (a commit
    # between a writer's graph steps changes the store and not the graph's generation).
    state = (id(store), store.state()) if isinstance(store, NumberedStates) else None
    if state is not None:
        with _LOCK:
            known = kept.expired.get(state)
        if known is not None:
            return known
    expired = Expired(kept.documents, frozenset(store.expand_ids(sorted(kept.documents))))
    if state is not None:
        with _LOCK:
            kept.expired.clear()  # one state at a time: older ones are not asked again
            kept.expired[state] = expired
    return expired
