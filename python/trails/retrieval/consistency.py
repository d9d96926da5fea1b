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
pins a new snapshot, taken after the graph was read and so at least as new: checked again, the
filter's answer is then used with it. Should that too be torn (the writer committed again in
between), the whole read starts again after a short wait (2 ms doubling to 100 ms, so the
writer can finish the step it is in), at most ``READ_ATTEMPTS`` times; the last attempt
answers as well as it can and says so in ``RetrievalResult.notes``.

A read-only Oxigraph graph is a view of the moment it was opened (refreshed first when the
revision stamp on disk says its writer has written since, ADR 0029) (``Context.open(...,
read_only=True)`` beside a writer), so there the graph is *older* than the store and the same
check finds the documents its view has lost; a retry then first pins the new snapshot and then
refreshes the graph (:meth:`~trails.kg.oxigraph.OxigraphGraph.refresh`), so the graph it reads
is again the newer of the two.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

import pyoxigraph as ox

from trails.kg.base import GenerationGraph, KnowledgeGraph, RevisionGraph, select
from trails.kg.opening import read_revision
from trails.records import RetrievalResult
from trails.retrieval.chunk_versions import candidate_versions, coded_unselected, unselected_live
from trails.vector.stores.base import NumberedStates, Snapshots, VectorStore, VersionedStore
from trails.vector.stores.records import CodedIris, DocumentIris

if TYPE_CHECKING:
    from typing import Self

__all__ = ["READ_ATTEMPTS", "PinnedRead", "can_check_documents", "committed_in_flight",
           "gone_from_graph", "pinned_reads", "view_current"]

# Reads of one retrieve() at most: each ends torn only if a writer commits a version of a
# candidate document in the moment between the graph filter and the next snapshot.
READ_ATTEMPTS = 10


class _TornRead(Exception):
    """The graph moved past the pinned snapshot: read again."""


def gone_from_graph(suspects: dict[str, str], kg: KnowledgeGraph) -> list[str]:
    """The documents among ``suspects`` whose live version has no chunk in the graph."""
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

    def __init__(self, store: VectorStore, kg: KnowledgeGraph | None, *, last: bool,
                 again: bool = False) -> None:
        self.store = store
        self.kg = kg
        self.last = last
        self.again = again  # a previous attempt was torn
        self.notes: list[str] = []
        self._held = contextlib.ExitStack()
        self._generation: int | None = None  # the graph's, once pinned (GenerationGraph)

    def __enter__(self) -> Self:
        if isinstance(self.store, Snapshots):
            self._held.enter_context(self.store.snapshot())
        refresh = getattr(self.kg, "refresh", None)  # a read-only Oxigraph graph has one
        stale = self.kg is not None and getattr(self.kg, "read_only", False) and \
            not view_current(self.kg)  # its writer has written since the view opened
        if (self.again or stale) and callable(refresh):
            try:
                refresh()  # after the pin: the graph read next is the newer of the two
            except BaseException:
                self._held.close()
                raise
        if isinstance(self.kg, GenerationGraph):
            self._generation = self.kg.generation
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> bool:
        self._held.close()
        return kind is _TornRead  # read again, with a fresh snapshot

    def _view_moved(self) -> bool:
        """Whether a read-only graph's view changed since this attempt pinned its snapshot (a
        live graph only grows newer, which the checks allow for)."""
        return (getattr(self.kg, "read_only", False) and self._generation is not None
                and self._generation != getattr(self.kg, "generation", None))

    def checked(self, iris: Sequence[str]) -> Sequence[str]:
        """``iris`` (the filter's answer), after checking that the graph it came from is not
        newer than the snapshot; if it is, a newer snapshot is pinned and checked in turn (see
        the module docstring)."""
        store = self.store
        if isinstance(iris, DocumentIris):
            return self._checked_documents(iris)
        if self.kg is None or not isinstance(store, VersionedStore):
            return iris
        coded = iris.coded if isinstance(iris, CodedIris) else None
        versions = {} if coded is not None else candidate_versions(iris)

        def unselected() -> dict[str, str]:  # under the store's snapshot pinned now
            return (coded_unselected(coded, store) if coded is not None
                    else unselected_live(versions, store))

        suspects = unselected()
        if not suspects:
            return iris
        # Judged under the first snapshot (pinned before the graph read, so sound), while it
        # is held: a document whose live version is still in the graph was just not selected.
        torn = gone_from_graph(suspects, self.kg)
        if self._view_moved():
            # The view judged is not the one the answer came from (another thread opened a
            # newer one): a version it shows may be one the answer never saw.
            if not self.last:
                raise _TornRead
            self.notes.append(
                f"the graph changed while this read ran, {READ_ATTEMPTS} times in a row (an "
                "ingest is running): documents being re-ingested may be missing from this "
                "answer; retrieve again once it ends")
        if not torn:
            return iris
        if isinstance(store, Snapshots):
            self._held.close()  # a snapshot pinned now is at least as new as that graph read
            self._held = contextlib.ExitStack()
            self._held.enter_context(store.snapshot())
            # It may also be newer, and the graph can then not judge it: each document must
            # show a version the filter named, or (not selected) the same live version.
            legit = {doc: version for doc, version in suspects.items() if doc not in torn}
            torn = sorted(doc for doc, version in unselected().items()
                          if legit.get(doc) != version)
            if not torn:
                return iris
        if not self.last:
            raise _TornRead
        self.notes.append(
            f"{len(torn)} document(s) changed in the graph during this read, "
            f"{READ_ATTEMPTS} times in a row (being re-ingested, e.g. {torn[0]}): they may "
            "be missing from this answer; retrieve again once ingestion finishes")
        return iris

    def _checked_documents(self, iris: DocumentIris) -> DocumentIris:
        """A filter evaluated over documents selected each by its document triples (which step
        4 of an ingest replaces); the store expands each to its live version in the snapshot.
        The answer is whole versions; it is torn when a candidate's live version in the
        snapshot is not the one whose triples the graph showed. With a newer snapshot pinned
        after the graph read (the graph is a live one: ``can_check_documents``), the only such
        documents are those committed whose step 4 had not run when the graph was read: their
        staged manifest was still there. Those are read again; the graph having changed since
        the filter read means reading again too."""
        kg, store = self.kg, self.store
        assert kg is not None and isinstance(kg, GenerationGraph)  # can_check_documents
        if isinstance(store, Snapshots):
            self._held.close()  # the newest snapshot: every step 4 the graph showed is in it
            self._held = contextlib.ExitStack()
            self._held.enter_context(store.snapshot())
        # A read-only view does not move when its writer writes: the stamp on disk does.
        moved = iris.generation != kg.generation or (
            getattr(kg, "read_only", False) and not view_current(kg))
        torn = [] if moved else committed_in_flight(kg, store, iris)
        if not moved and not torn:
            return iris
        if not self.last:
            raise _TornRead
        if moved:
            self.notes.append(
                f"the graph changed while this read ran, {READ_ATTEMPTS} times in a row (an "
                "ingest is running): some documents may have been selected on the metadata "
                "of the version before or after the one shown; retrieve again once it ends")
            return iris
        self.notes.append(
            f"{len(torn)} document(s) were being written while this read ran, "
            f"{READ_ATTEMPTS} times in a row (being re-ingested, e.g. {torn[0]}): they are "
            "left out of this answer; retrieve again once ingestion finishes, or finish an "
            "interrupted ingest with `trails verify --repair`")
        gone = set(torn)
        kept = DocumentIris(i for i in iris if i not in gone)
        kept.generation = iris.generation
        return kept

    def noted(self, result: RetrievalResult) -> RetrievalResult:
        """``result`` with this read's notes."""
        if not self.notes:
            return result
        return RetrievalResult(list(result), mode=result.mode, plan=result.plan,
                               candidates=result.candidates, exhaustive=result.exhaustive,
                               rankings=result.rankings, notes=[*result.notes, *self.notes],
                               fusion_weights=result.fusion_weights)


_STAGED = ("SELECT ?m ?doc WHERE { GRAPH <urn:trails:minted> { "
           "?m <https://trails.dev/ns#stagedFor> ?doc } }")


def can_check_documents(kg: KnowledgeGraph | None, store: VectorStore, *,
                        again: bool = False) -> bool:
    """Whether a filter's answer may be documents here: the graph numbers its states and the
    store names its committed state and versions (:meth:`PinnedRead.checked`).

    A read-only graph is a view of the moment it opened: it may lift only while no write to
    the graph has completed since (its revision stamp is still the one on disk; checked again
    after the read), and never on a read that is being done again: beside a busy writer each
    lifted read would be torn and refreshed in turn, so those evaluate over chunks."""
    if not (isinstance(kg, GenerationGraph) and isinstance(store, NumberedStates)
            and isinstance(store, VersionedStore)):
        return False
    return not getattr(kg, "read_only", False) or (not again and view_current(kg))


def view_current(kg: KnowledgeGraph) -> bool:
    """Whether a read-only graph's view still has the revision stamp on disk (no write to the
    graph completed since it opened)."""
    return isinstance(kg, RevisionGraph) and read_revision(getattr(kg, "path", None)) == kg.revision


def committed_in_flight(kg: KnowledgeGraph, store: VectorStore,
                        documents: Sequence[str]) -> list[str]:
    """The ``documents`` whose staged manifest (``<doc>/v/<version> trails:stagedFor <doc>``,
    written by step 2, dropped by step 4) names the version live in the store's snapshot:
    committed, while the graph still shows the previous version's document triples."""
    staged: dict[str, set[str]] = {}
    for row in select(kg, _STAGED).rows:
        marker, doc = str(row["m"]), str(row["doc"])
        if marker.startswith(doc + "/v/"):
            staged.setdefault(doc, set()).add(marker[len(doc) + 3:])
    if not staged:  # no ingest in flight (the usual case): no set of every candidate to make
        return []
    wanted = set(documents) & set(staged)
    if not wanted or not isinstance(store, VersionedStore):
        return []
    live = store.current_versions(sorted(wanted))
    return sorted(doc for doc, record in live.items() if record.version in staged[doc])


def pinned_reads(store: VectorStore, kg: KnowledgeGraph | None) -> Iterator[PinnedRead]:
    """Attempts at one consistent read, ``READ_ATTEMPTS`` at most; the caller returns from
    the first one that completes::

        for read in pinned_reads(store, kg):
            with read:
                iris = read.checked(kg.select_iris(...))
                return read.noted(answer(iris))
    """
    for attempt in range(READ_ATTEMPTS):
        if attempt:  # let the writer finish the step it is in: retrying at once meets it again
            time.sleep(min(0.002 * 2**attempt, 0.1))
        yield PinnedRead(store, kg, last=attempt == READ_ATTEMPTS - 1, again=attempt > 0)
