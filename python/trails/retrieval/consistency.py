"""One ``retrieve()`` answers from one committed state: whole document versions only.

A document lives in the graph and in the vector store, which a writer changes in four steps
(ADR 0005): the graph holds version 1's chunk triples until step 2, versions 1 and 2 between
steps 2 and 4, version 2 after step 4; the store's live version is 1 before step 3 (the commit
point), 2 after. ``retrieve`` pins the store's snapshot (:class:`~trails.vector.stores.base.
Snapshots`) *before* it runs the graph filter, so the graph it reads is never older than the
snapshot, and every ranking and lookup of the answer comes from that one snapshot: no answer
mixes two versions of a document.

One case is left, a graph newer than the snapshot: the filter saw only version 2's chunks
(step 4 done) while the snapshot still has version 1 live, so the document would vanish from
the answer. :meth:`PinnedRead.checked` detects it (chunk IRIs carry their version,
``<doc>/v/<version>/c/<position>``, and the store knows each document's live version: when a
document's candidates hold no chunk of its live version and the graph no longer has any) and
the read starts again with a fresh snapshot, at most ``READ_ATTEMPTS`` times; the last attempt
answers as well as it can and says so in ``RetrievalResult.notes``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from types import TracebackType

import pyoxigraph as ox

from trails.kg.base import KnowledgeGraph, select
from trails.records import RetrievalResult
from trails.vector.stores.base import Snapshots, VectorStore, VersionedStore

__all__ = ["READ_ATTEMPTS", "PinnedRead", "pinned_reads", "torn_documents"]

# Reads of one retrieve() at most: a writer must commit a version of the same document three
# times during one retrieve for the last to be needed.
READ_ATTEMPTS = 4
_CHUNK = re.compile(r"^(?P<doc>.+)/v/(?P<version>[^/]+)/c/\d+$")


class _TornRead(Exception):
    """The graph moved past the pinned snapshot: read again."""


def torn_documents(iris: list[str], store: VectorStore, kg: KnowledgeGraph) -> list[str]:
    """Documents whose candidates in ``iris`` are chunks of versions other than the live one
    in the store's (pinned) state, while the graph holds no chunk of the live version any
    more: the graph is newer than the snapshot and the document would vanish.

    A document whose live version's chunks are still in the graph is no tear: the filter
    simply did not select them."""
    if not isinstance(store, VersionedStore):
        return []
    versions: dict[str, set[str]] = {}
    for iri in iris:
        match = _CHUNK.match(iri)
        if match:
            versions.setdefault(match["doc"], set()).add(match["version"])
    if not versions:
        return []
    live = store.current_versions(list(versions))
    suspects = {doc: record.version for doc, record in live.items()
                if record.version not in versions[doc]}
    if not suspects:
        return []
    values = " ".join(f"({ox.NamedNode(doc)} {ox.Literal(version)})"
                      for doc, version in sorted(suspects.items()))
    present = select(kg, f"SELECT DISTINCT ?doc WHERE {{ VALUES (?doc ?v) {{ {values} }} "
                         "?c schema:isPartOf ?doc ; trails:version ?v }")
    return sorted(set(suspects) - set(present.column("doc")))


class PinnedRead:
    """One attempt at a consistent read: ``with`` it, the store's snapshot is held; a torn
    read detected by :meth:`checked` ends the block quietly so the caller's loop tries again.
    """

    def __init__(self, store: VectorStore, kg: KnowledgeGraph | None, *, last: bool) -> None:
        self.store = store
        self.kg = kg
        self.last = last
        self.notes: list[str] = []
        self._held = contextlib.ExitStack()

    def __enter__(self) -> PinnedRead:
        if isinstance(self.store, Snapshots):
            self._held.enter_context(self.store.snapshot())
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> bool:
        self._held.close()
        return kind is _TornRead  # read again, with a fresh snapshot

    def checked(self, iris: list[str]) -> list[str]:
        """``iris`` (the filter's answer), after checking the graph it came from is not newer
        than the snapshot (see the module docstring)."""
        if self.kg is None:
            return iris
        torn = torn_documents(iris, self.store, self.kg)
        if torn and not self.last:
            raise _TornRead
        if torn:
            self.notes.append(
                f"{len(torn)} document(s) changed in the graph during this read, "
                f"{READ_ATTEMPTS} times in a row (being re-ingested, e.g. {torn[0]}): they may "
                "be missing from this answer; retrieve again once ingestion finishes")
        return iris

    def noted(self, result: RetrievalResult) -> RetrievalResult:
        """``result`` with this read's notes."""
        if not self.notes:
            return result
        return RetrievalResult(list(result), mode=result.mode, plan=result.plan,
                               candidates=result.candidates, exhaustive=result.exhaustive,
                               rankings=result.rankings, notes=[*result.notes, *self.notes],
                               fusion_weights=result.fusion_weights)


def pinned_reads(store: VectorStore, kg: KnowledgeGraph | None) -> Iterator[PinnedRead]:
    """Attempts at one consistent read, ``READ_ATTEMPTS`` at most; the caller returns from
    the first one that completes::

        for read in pinned_reads(store, kg):
            with read:
                iris = read.checked(kg.select_iris(...))
                return read.noted(answer(iris))
    """
    for attempt in range(READ_ATTEMPTS):
        yield PinnedRead(store, kg, last=attempt == READ_ATTEMPTS - 1)
