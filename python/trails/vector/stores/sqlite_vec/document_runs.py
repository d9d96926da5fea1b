"""Each slot's document, read from the runs of slots one document holds (ADR 0029).

A document's chunks are written together, so the slots of the vector files come in runs, one
per document version: a million chunks are some 130,000 runs. Sorting the runs by their
document's hash, rather than every slot, gives each distinct document an ordinal and each slot
its document's ordinal: one pass over the slots and a sort of the runs, where a table of every
slot sorted by hash took a sort of a million keys on the first filter of every process. A
filter naming many documents then finds their slots in one pass over the slots' ordinals; a
few documents, through their runs.

Nothing here depends on documents being contiguous: a slot order that interleaves documents
only makes more runs (at worst one per slot), never a wrong answer.
"""

from __future__ import annotations

import numpy as np

from trails._arrays import firsts, spread

__all__ = ["DocumentRuns"]


class DocumentRuns:
    """The document of each of ``len(docs)`` slots, from ``docs`` (each slot's document hash,
    in slot order)."""

    def __init__(self, docs: np.ndarray) -> None:
        self.slots = n = len(docs)
        changes = np.flatnonzero(docs[1:] != docs[:-1]) + 1
        self.starts = np.concatenate([np.zeros(min(n, 1), dtype=np.int64), changes])
        self.lengths = np.diff(np.append(self.starts, n))
        hashes = docs[self.starts]
        self.order = np.argsort(hashes, kind="stable")  # the runs, by their document's hash
        ordered = hashes[self.order]
        first = firsts(ordered)
        self.ranked = np.cumsum(first, dtype=np.int32) - 1  # each run's ordinal, runs in order
        self.distinct = ordered[first]  # the distinct document hashes, sorted
        ordinals = np.empty(len(self.starts), dtype=np.int32)
        ordinals[self.order] = self.ranked
        self.slot_documents = np.repeat(ordinals, self.lengths)  # each slot's ordinal

    def ordinals(self, needles: np.ndarray) -> np.ndarray:
        """The ordinals (sorted, unique) of the hashes among ``needles`` (sorted) that are
        some slot's document."""
        where = np.searchsorted(self.distinct, needles)
        where = where[where < len(self.distinct)]  # needles are sorted: a prefix stays
        found = where[self.distinct[where] == needles[: len(where)]]
        # Sorted too, so a name asked twice is a neighbour: kept once without np.unique's hash.
        kept: np.ndarray = found[firsts(found)]
        return kept

    def mask(self, ordinals: np.ndarray) -> np.ndarray:
        """Whether each slot belongs to one of the documents ``ordinals``."""
        chosen = np.zeros(len(self.distinct), dtype=bool)
        chosen[ordinals] = True
        mask: np.ndarray = chosen[self.slot_documents]
        return mask

    def slots_of(self, ordinals: np.ndarray) -> np.ndarray:
        """Every slot (sorted) of the documents ``ordinals`` (sorted, unique), through their
        runs: no pass over every slot."""
        low = np.searchsorted(self.ranked, ordinals, side="left")
        high = np.searchsorted(self.ranked, ordinals, side="right")
        runs = self.order[spread(low, high - low)]
        slots = spread(self.starts[runs], self.lengths[runs])
        slots.sort()
        return slots
