"""Compaction of the vector files: the slots rows name, copied into the next generation.

Slots are append-only (a replaced or deleted row's slot stays, since a snapshot may read it),
so the files grow with every re-ingest. When the slots no row names outnumber the rows (and a
floor), the store copies the named ones, in slot order, into new files (``<store>.<n>.f32``,
``<store>.<n>.keys``), flushed to disk, and renumbers ``items.slot`` and records the new files
in one transaction: the commit is the switch. A crash before it leaves the new files as garbage,
a crash just after it the old ones; each compaction first deletes every generation but the
live one, so at most one is ever left behind. After the switch the old files are deleted. A process that
mapped them keeps reading its snapshot from them (the inode lives while mapped); one whose
snapshot names them but finds them gone reads again in a fresh snapshot.
"""

from __future__ import annotations

import contextlib
import os
import re

import numpy as np

from trails.vector.stores.sqlite_vec import schema
from trails.vector.stores.sqlite_vec.driver import Database
from trails.vector.stores.sqlite_vec.vector_file import VectorFiles

__all__ = ["GARBAGE_FLOOR", "compact", "remove_stale_generations", "worth_compacting"]

# Below this many unnamed slots a compaction saves too little to be worth a rewrite.
GARBAGE_FLOOR = 4096
_BATCH = 65_536


def worth_compacting(slots: int, rows: int, floor: int | None = None) -> bool:
    """Whether ``slots`` committed slots for ``rows`` rows hold enough garbage: more than the
    rows (so each compaction copies at most as many slots as writes made garbage since the
    last one: the rewrite costs O(1) per written slot) and more than the floor."""
    garbage = slots - rows
    return garbage > max(rows, GARBAGE_FLOOR if floor is None else floor)


def compact(db: Database, files: VectorFiles, slots: int) -> VectorFiles:
    """In the caller's write transaction: copy every named slot into the next generation's
    files and point the rows and ``meta`` at them. Returns the new files; the caller deletes
    the old ones once the transaction has committed.

    Raises:
        StorageError: the new files cannot be written (nothing is switched).
    """
    remove_stale_generations(files)
    named = np.array([r[0] for r in db.execute("SELECT slot FROM items ORDER BY slot")],
                     dtype=np.int64)
    fresh = VectorFiles(files.path, files.dim, files.generation + 1)
    fresh.create()
    vectors, keys = files.vectors(slots), files.keys(slots)
    for start in range(0, len(named), _BATCH):
        part = named[start : start + _BATCH]
        fresh.append(start, vectors[part], keys[part])
    # Two passes through negative numbers: the unique index on slot never sees a clash.
    db.executemany("UPDATE items SET slot = ? WHERE slot = ?",
                   [(-1 - new, int(old)) for new, old in enumerate(named.tolist())])
    db.execute("UPDATE items SET slot = -1 - slot WHERE slot < 0")
    schema.write_meta(db, "vector_file", str(fresh.file_id))
    schema.write_meta(db, "vector_generation", str(fresh.generation))
    schema.write_meta(db, "vector_slots", str(len(named)))
    return fresh


def remove_stale_generations(live: VectorFiles) -> None:
    """Delete the files of every generation but ``live``'s: the old files a writer killed just
    after a switch did not delete, and a next generation a writer killed before its switch
    never committed. Runs in the write transaction, so no other writer is compacting."""
    if live.path == ":memory:":
        return
    folder, name = os.path.split(os.path.abspath(live.path))
    generation = re.compile(rf"^{re.escape(name)}(?:\.(\d+))?\.(?:f32|keys)$")
    for entry in os.listdir(folder):
        match = generation.match(entry)
        if match and int(match.group(1) or 0) != live.generation:
            with contextlib.suppress(OSError):  # gone already: another open removed it
                os.unlink(os.path.join(folder, entry))
