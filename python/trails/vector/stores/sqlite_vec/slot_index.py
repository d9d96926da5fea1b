"""The scoring index over the vector files' slots: which slots are live, and lookups by name.

Nothing here holds a Python object per row. A committed state of the store is the number of
slots committed and the set of live slots (a boolean mask, read from SQLite in one aggregate);
the vectors and each slot's key record stay in the memory-mapped files
(:mod:`.vector_file`). Names become slots through the keys' 64-bit hashes: a chunk IRI
finds its slots in the id hashes kept sorted (built on the first lookup of a chunk id,
extended as slots are appended), a document IRI all its chunks' slots through the runs of
slots each document holds (:mod:`.document_runs`), and only live ones are kept. A hash only
shortlists; the store
checks the real names of what it returns (:meth:`Candidates.admits`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from trails._arrays import firsts, spread
from trails.vector.stores.matrix import shortlist
from trails.vector.stores.records import DocumentIris
from trails.vector.stores.sqlite_vec.document_runs import DocumentRuns
from trails.vector.stores.sqlite_vec.vector_file import VectorFiles, key_hashes

__all__ = ["Candidates", "SlotIndex"]


# The most names whose key hashes are remembered (~100 bytes each): every document of a
# million-chunk context, or a chunk-level filter's names.
NAME_KEYS = 2_000_000
# At least one document in this many named: their slots are found by a pass over every
# slot's document (:meth:`SlotIndex._document_rows`) rather than through their runs.
DOCUMENT_PASS = 16
# The lists of names (a filter index's, ``CodedIris.coded``) whose hashes are kept.
CODED_LISTS = 8


class Candidates:
    """The live slots some names stand for (sorted, unique), and the names, to check hits."""

    def __init__(self, slots: np.ndarray, names: Sequence[str], *,
                 documents_only: bool = False) -> None:
        self.slots = slots
        self.names = names
        self.documents_only = documents_only
        self._named: frozenset[str] | None = None  # the names as a set, made at the first check

    def admits(self, id: str, doc: str | None) -> bool:
        """Whether the row ``id`` (of document ``doc``) is one the names stand for: its real
        names compared with the names asked for (a hash collision never admits a row).

        A set of the names, made once per candidate set, answers each hit in constant time:
        a fused search checks hundreds of hits against tens of thousands of names."""
        if self._named is None:  # the names are strings (``check_ids``)
            self._named = frozenset(self.names)
        return (doc is not None and doc in self._named) or (
            not self.documents_only and id in self._named)


class SlotIndex:
    """One committed state of the vector files: ``slots`` committed, ``alive`` among them.

    ``generation`` changes whenever the state does (a reload, a write), so results computed
    from one state can be cached against it. ``lock`` orders every use (the store holds it).
    """

    def __init__(self, files: VectorFiles) -> None:
        self.files = files
        self.dim = files.dim
        self.lock = threading.RLock()
        self.slots = 0
        self.count = 0
        self.generation = 0
        self.scope_codes: dict[str, int] = {}
        self._alive = np.zeros(0, dtype=bool)
        self._live: np.ndarray | None = None  # flatnonzero(alive), cached per generation
        # Lookup tables over every slot (dead ones too: slots never change), extended lazily.
        self._covered = 0
        self._ids = np.empty(0, dtype=np.uint64)  # sorted id hashes
        self._id_slots = np.empty(0, dtype=np.int64)  # the slot of each
        self._scopes = np.empty(0, dtype=np.int32)  # each slot's scope code
        self._runs: DocumentRuns | None = None  # each slot's document, made for self.slots
        # Each slot's SQLite rowid (-1: not read yet), so a candidate set of slots becomes a
        # mask over the keyword postings (by rowid) without a lookup by name.
        self._rowids = np.full(0, -1, dtype=np.int64)
        # name -> its key hash (a pure function of the name, so never stale): a new filter
        # mostly names documents an earlier one named, and hashing is most of its lookup.
        self._name_keys: dict[str, int] = {}
        # token -> the hashes of a list of names (CodedIris.coded), most recent last
        self._token_keys: OrderedDict[object, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return self.count

    # -- state ----------------------------------------------------------------------------

    def reset(self, slots: int, live: np.ndarray, scopes: Sequence[str]) -> None:
        """Take a committed state: ``slots`` committed, ``live`` the live ones."""
        if slots < self._covered:  # slots a failed write appended, then rolled back
            self.use(self.files)
        self.files.ensure(slots)
        self.slots = slots
        self._alive = np.zeros(max(slots, 1), dtype=bool)
        self._alive[live] = True
        self.count = int(self._alive.sum())
        self.scope_codes = {name: code for code, name in enumerate(scopes)}
        self._changed()

    def use(self, files: VectorFiles) -> None:
        """Read another generation of the vector files (slots renumbered: lookups rebuilt)."""
        self.files = files
        self.slots = self.count = self._covered = 0
        self._ids = np.empty(0, dtype=np.uint64)
        self._id_slots = np.empty(0, dtype=np.int64)
        self._scopes = np.empty(0, dtype=np.int32)
        self._runs = None
        self._rowids = np.full(0, -1, dtype=np.int64)
        self._changed()

    def grow(self, slots: int) -> None:
        """Slots up to ``slots`` are written (by this store's own transaction)."""
        self.files.ensure(slots)
        if slots > len(self._alive):
            grown = np.zeros(max(slots, 2 * len(self._alive)), dtype=bool)
            grown[: len(self._alive)] = self._alive
            self._alive = grown
        self.slots = max(self.slots, slots)
        self._changed()

    def set_alive(self, slots: Iterable[int], alive: bool) -> None:
        chosen = slots if isinstance(slots, np.ndarray) else np.fromiter(slots, dtype=np.int64)
        if len(chosen):
            self._alive[chosen] = alive
            self.count = int(self._alive[: self.slots].sum())
            self._changed()

    def note_rowids(self, slots: np.ndarray, rowids: np.ndarray) -> None:
        """Record the rowids of the rows naming ``slots`` (a slot is written for one row and
        never reused, so the pair never changes)."""
        if not len(slots):
            return
        needed = int(slots.max()) + 1
        if needed > len(self._rowids):
            grown = np.full(max(needed, 2 * len(self._rowids)), -1, dtype=np.int64)
            grown[: len(self._rowids)] = self._rowids
            self._rowids = grown
        self._rowids[slots] = rowids

    def rowids(self, slots: np.ndarray) -> np.ndarray | None:
        """The rowids of ``slots`` (live ones), or None when one was never read."""
        if len(slots) and int(slots.max()) >= len(self._rowids):
            return None
        found = self._rowids[slots]
        return None if len(found) and int(found.min()) < 0 else found

    def _changed(self) -> None:
        self.generation += 1
        self._live = None

    def live(self) -> np.ndarray:
        """The live slots, sorted."""
        if self._live is None:
            self._live = np.flatnonzero(self._alive[: self.slots])
        return self._live

    def vectors(self) -> np.ndarray:
        """Every committed slot's vector (read-only, memory-mapped)."""
        return self.files.vectors(self.slots)

    # -- lookups --------------------------------------------------------------------------

    def _tables(self) -> None:
        """Bring the sorted id hashes up to every committed slot (lookups of chunk ids)."""
        if self._covered >= self.slots:
            return
        keys = self.files.keys(self.slots)[self._covered :]
        new_slots = np.arange(self._covered, self.slots, dtype=np.int64)
        self._ids, self._id_slots = _merged(self._ids, self._id_slots, keys["id"], new_slots)
        self._covered = self.slots

    def _slot_scopes(self) -> np.ndarray:
        """Each committed slot's scope code (extended as slots are appended)."""
        if len(self._scopes) < self.slots:
            added = self.files.keys(self.slots)["scope"][len(self._scopes) :]
            self._scopes = np.concatenate([self._scopes, added.astype(np.int32)])
        return self._scopes

    def _documents(self) -> DocumentRuns:
        """Each committed slot's document (made again when slots were appended)."""
        if self._runs is None or self._runs.slots != self.slots:
            self._runs = DocumentRuns(np.asarray(self.files.keys(self.slots)["doc"]))
        return self._runs

    def rows_for(self, names: Sequence[str], scopes: Sequence[str] | None = None
                 ) -> Candidates:
        """The live slots of ``names`` (in ``scopes``, when given): chunk ids, or document IRIs
        (all their chunks); only the chunks of documents when ``names`` is a
        ``DocumentIris``."""
        documents_only = isinstance(names, DocumentIris)
        needles = np.sort(self._keys(names))
        slots = self._document_rows(needles, scopes)
        if not documents_only:  # chunk ids too
            self._tables()
            found = _matches(self._ids, self._id_slots, needles)
            found = found[found < self.slots]
            found = found[self._alive[found]]
            if scopes is not None:
                found = self.in_scopes(scopes, found)
            # sorted, each once (a sort and a pass: numpy's unique hashes every value, ~4x
            # slower on the few hundred thousand chunks a chunk-level filter names)
            slots = np.sort(np.concatenate([slots, found]))
            slots = slots[firsts(slots)]
        return Candidates(slots, names, documents_only=documents_only)

    def _document_rows(self, needles: np.ndarray, scopes: Sequence[str] | None
                       ) -> np.ndarray:
        """The live slots (in ``scopes``, when given) of the documents whose hashes are
        ``needles`` (sorted), sorted. Many documents: one pass over every slot's document,
        with the scopes tested in the same pass (no arrays as long as the rows it finds, then
        cut); a few: through their runs."""
        runs = self._documents()
        ordinals = runs.ordinals(needles)
        if len(ordinals) * DOCUMENT_PASS < len(runs.distinct):
            found = runs.slots_of(ordinals)
            found = found[self._alive[found]]
            return found if scopes is None else self.in_scopes(scopes, found)
        mask = runs.mask(ordinals)
        mask &= self._alive[: self.slots]
        if scopes is not None:
            mask &= self._scoped(self._slot_scopes()[: self.slots], scopes)
        return np.flatnonzero(mask)

    def _keys(self, names: Sequence[str]) -> np.ndarray:
        """``key_hashes(names)``, through the memo of names hashed before."""
        coded = getattr(names, "coded", None)  # a CodedIris that knows its names' codes
        if coded is not None:
            known = self._coded_keys(*coded)
            if known is not None:
                return known
        memo = self._name_keys
        try:  # every name hashed before (a filter's documents, mostly): lookups in C alone
            return np.fromiter(map(memo.__getitem__, names), dtype=np.uint64, count=len(names))
        except KeyError:
            pass
        missing = list(dict.fromkeys(name for name in names if name not in memo))
        if missing:
            if len(memo) + len(missing) > NAME_KEYS:  # full: start again with these names
                memo.clear()
                missing = list(dict.fromkeys(names))
                if len(missing) > NAME_KEYS:
                    return key_hashes(names)
            memo.update(zip(missing, key_hashes(missing).tolist()))
        return np.fromiter(map(memo.__getitem__, names), dtype=np.uint64, count=len(names))

    def _coded_keys(self, token: object, names: np.ndarray, codes: np.ndarray
                    ) -> np.ndarray | None:
        """The hashes of ``names[codes]``, picked from those of ``names`` kept under ``token``
        (``CodedIris.coded``), its names not hashed yet hashed first; None when those are
        more than 4 per name wanted (then hashing the wanted ones is cheaper). A filter naming
        half the documents then costs a gather, not a dictionary lookup per name."""
        kept = self._token_keys.get(token)
        done = 0 if kept is None else len(kept)
        if len(names) - done > 4 * len(codes):
            return None
        if kept is None or len(names) > done:
            added = self._keys(names[done:].tolist())
            kept = added if kept is None else np.concatenate([kept, added])
            self._token_keys[token] = kept
            while len(self._token_keys) > CODED_LISTS:
                self._token_keys.popitem(last=False)
        self._token_keys.move_to_end(token)
        picked: np.ndarray = kept[codes]
        return picked

    def in_scopes(self, scopes: Sequence[str], rows: np.ndarray | None = None) -> np.ndarray:
        """The live slots (all, or of ``rows``) whose scope is one of ``scopes``; sorted."""
        rows = self.live() if rows is None else rows
        kept: np.ndarray = rows[self._scoped(self._slot_scopes()[rows], scopes)]
        return kept

    def _scoped(self, codes: np.ndarray, scopes: Sequence[str]) -> np.ndarray:
        """Whether each scope code of ``codes`` is one of ``scopes``'."""
        wanted = [self.scope_codes[s] for s in scopes if s in self.scope_codes]
        if len(wanted) == 1:  # one scope: a comparison, 4x faster than isin's sort
            same: np.ndarray = codes == wanted[0]
            return same
        return np.isin(codes, wanted)

    # -- search ---------------------------------------------------------------------------

    def search(self, query: np.ndarray, k: int, rows: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray, str, int]:
        """The shortlist of :func:`~trails.vector.stores.matrix.shortlist` over live slots
        (``rows``: some of them; None: all): ``(slots, exact scores, plan, candidates)``."""
        data = self.vectors()
        if rows is not None:
            return shortlist(data, query, k, rows)
        if self.count == self.slots:  # no dead slots: a plain full scan
            return shortlist(data, query, k, None)
        return shortlist(data, query, k, self.live(), plan="full-scan")


def _merged(keys: np.ndarray, slots: np.ndarray, new_keys: np.ndarray, new_slots: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ``keys`` (with their ``slots``) and the new ones merged, still sorted."""
    order = np.argsort(new_keys)  # the order of equal keys does not matter
    added = np.asarray(new_keys)[order]
    if not len(keys):  # the first build: nothing to merge into
        return added, new_slots[order]
    where = np.searchsorted(keys, added, side="right")
    return np.insert(keys, where, added), np.insert(slots, where, new_slots[order])


def _matches(keys: np.ndarray, slots: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The slots whose key equals any of ``wanted`` (``keys`` sorted)."""
    left = np.searchsorted(keys, wanted, side="left")
    right = np.searchsorted(keys, wanted, side="right")
    found: np.ndarray = slots[spread(left, right - left)]
    return found
