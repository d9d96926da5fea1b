"""The live slots of a committed state and their rowids: from the rows, or from the file a
writer kept for that state beside the store (``<store>.live``, ADR 0053).

A process's first read must know which slots are live and each one's SQLite rowid (the index
of :mod:`.slot_index`). Read from the rows, that is one pass over every live row (an aggregate
over the ``items_live`` index, then parsing it): ~0.3 us a row, a few hundred milliseconds at a
million chunks, paid by every new process (each ``trails query``) before its first answer. The
file holds the same facts in a few kilobytes, read in about a millisecond.

The file is a cache, never the record: SQLite is. A writer writes it inside its write
transaction, after the commit's last change and before COMMIT, stamped with what that commit
leaves in ``meta`` (:func:`stamp_of`): the revision, a random stamp every commit renews; the
vector file; the slot count; the schema. A reader takes it only when its snapshot's ``meta``
says the same and the file's checksum and shape hold. Otherwise (a store written before the
file existed, a commit that failed after writing it, a power loss that took a commit back, a
compaction, a second writer's file, any damage) the reader reads the rows as before. A stale,
missing or damaged file can cost time, never change an answer.

The live slots are kept as runs: slots ``first .. first + length - 1`` with rowids ``rowid ..
rowid + length - 1``. Ingestion appends rows in slot order with new rowids, so a million chunks
make a few hundred runs. A row written again under its id (a new slot, its old rowid) starts
runs; when runs would outnumber an eighth of the live slots, no file is kept.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from trails.faults import corrupt_file

if TYPE_CHECKING:
    from trails.vector.stores.sqlite_vec.driver import Database
    from trails.vector.stores.sqlite_vec.slot_index import SlotIndex
    from trails.vector.stores.sqlite_vec.vector_file import VectorFiles

__all__ = ["keep_live", "live_path", "read_live", "read_rows", "runs_of", "stamp_of"]

log = logging.getLogger(__name__)

_MAGIC = b"TRAILS-LIVE----1"
_LENGTH = struct.Struct("<I")  # bytes of the JSON head that follows the magic
_RUN = 24  # bytes of a run: three little-endian int64
# Past this many runs per live slot, the file saves too little over reading the rows.
MOST_RUNS = 1 / 8


def live_path(store_path: str) -> str:
    return f"{store_path}.live"


def stamp_of(meta: Callable[[str], str | None]) -> dict[str, object]:
    """What names a committed state, read from ``meta`` in the caller's transaction."""
    return {"revision": meta("revision"), "vector_file": meta("vector_file"),
            "slots": int(meta("vector_slots") or 0), "schema": meta("schema")}


def read_rows(db: Database, store_path: str, slot_count: int, where: str,
              params: Sequence[Any] = ()) -> tuple[np.ndarray, np.ndarray]:
    """The slots and rowids of the rows matching ``where`` (items ``i``), each column read
    as one string: no Python object per row."""
    joined = db.execute(
        f"SELECT group_concat(i.slot), group_concat(i.rowid) FROM items i {where}", params)
    text = joined[0][0] if joined else None
    if not text:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    slots = np.fromstring(str(text), dtype=np.int64, sep=",")  # C speed, no list
    if slots.min() < 0 or slots.max() >= slot_count:
        raise corrupt_file(store_path, "a row names a vector slot that was never committed")
    # Both aggregates walk the same rows in the same order.
    return slots, np.fromstring(str(joined[0][1]), dtype=np.int64, sep=",")


def runs_of(slots: np.ndarray, rowids: np.ndarray) -> np.ndarray:
    """``(first slot, length, first rowid)`` of each run of ``slots`` (sorted, unique) along
    which slots and rowids both go up by one, as an ``(n, 3)`` int64 array."""
    if not len(slots):
        return np.empty((0, 3), dtype=np.int64)
    breaks = np.flatnonzero((np.diff(slots) != 1) | (np.diff(rowids) != 1)) + 1
    starts = np.concatenate([[0], breaks])
    lengths = np.diff(np.concatenate([starts, [len(slots)]]))
    return np.stack([slots[starts], lengths, rowids[starts]], axis=1).astype(np.int64)


def keep_live(store_path: str, stamp: Mapping[str, object], files: VectorFiles,
              index: SlotIndex) -> None:
    """In a writer's transaction, after its last change: keep the live slots of the state it
    commits, when the index holds exactly that state. Not in a compaction's transaction (its
    new files are not the index's until after the commit): then the file goes, and readers
    read the rows. (Every write notes the rowids of the slots it makes live, publish reads
    them from the rows; a live slot without one would also keep no file.) A failure costs
    readers time only, never the commit. ~7-11 ms a commit at 1.18M live slots (a pass over
    the live flags and rowids)."""
    path = live_path(store_path)
    if files.file_id != stamp["vector_file"] or index.slots != stamp["slots"]:
        _remove(path)  # the index is not of this state: no pass over it
        return
    live = index.live()
    rowids = index.rowids(live)
    runs = None if rowids is None else runs_of(live, rowids)
    if runs is None or len(runs) > max(64, MOST_RUNS * len(live)):
        _remove(path)
        return
    try:
        body = runs.astype("<i8").tobytes()
        head = json.dumps({**stamp, "runs": len(runs), "crc": zlib.crc32(body)},
                          sort_keys=True).encode()
        temporary = f"{path}.tmp"  # one writer at a time: the transaction's lock
        with open(temporary, "wb") as out:
            out.write(_MAGIC + _LENGTH.pack(len(head)) + head + body)
        os.replace(temporary, path)  # readers open the old file or this one, whole
    except OSError as exc:  # a folder not writable, a full disk: readers read the rows
        log.info("live slots not kept beside %s: %s", store_path, exc)
        _remove(path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass  # gone already; or it stays, naming a state no reader will hold


def read_live(store_path: str, stamp: Mapping[str, object], slot_count: int
              ) -> tuple[np.ndarray, np.ndarray] | None:
    """The live slots (sorted) and their rowids kept for the state ``stamp`` names (of
    ``slot_count`` slots), or None when no such file is whole."""
    try:
        with open(live_path(store_path), "rb") as file:
            data = file.read()
    except OSError:
        return None
    start = len(_MAGIC) + _LENGTH.size
    if len(data) < start or not data.startswith(_MAGIC):
        return None
    (length,) = _LENGTH.unpack_from(data, len(_MAGIC))
    body = data[start + length :]
    try:
        head = json.loads(data[start : start + length])
    except (ValueError, RecursionError):  # not a head keep_live wrote
        return None
    if (not isinstance(head, dict) or any(head.get(key) != value for key, value in stamp.items())
            or len(body) % _RUN or head.get("runs") != len(body) // _RUN
            or head.get("crc") != zlib.crc32(body)):
        return None
    return _expanded(np.frombuffer(body, dtype="<i8").reshape(-1, 3), slot_count)


def _expanded(runs: np.ndarray, slot_count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Every slot and rowid of ``runs``; None unless the runs are in order, apart, within
    the committed slots and of positive rowids (a file that passed its checksum yet is not
    one :func:`keep_live` wrote)."""
    firsts, lengths, rowids = runs[:, 0], runs[:, 1], runs[:, 2]
    if not len(runs):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if (int(lengths.min()) < 1 or int(lengths.max()) > slot_count or int(firsts.min()) < 0
            or int(firsts.max()) >= slot_count or int(rowids.min()) < 1
            or int(rowids.max()) > 1 << 62):
        return None
    ends = firsts + lengths  # no overflow now: each term below the slot count
    if int(ends[-1]) > slot_count or bool((firsts[1:] < ends[:-1]).any()):
        return None
    offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths)
    return np.repeat(firsts, lengths) + offsets, np.repeat(rowids, lengths) + offsets
