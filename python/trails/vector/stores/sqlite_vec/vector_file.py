"""The store's vectors, outside SQLite: two append-only files of fixed-size slots, memory-mapped.

``<store>.f32`` holds one unit float32 vector per slot, contiguous, so the scoring matrix is
the file itself (a read-only memory map: pages the kernel can drop and share, no copy at open).
``<store>.keys`` holds, per slot, what a search needs without asking SQLite: 64-bit hashes of
the row's id and of its document IRI, its scope's code and a CRC-32 of its vector.

A slot is written once. ``items.slot`` names the slot of each row, and ``meta.vector_slots``
counts the slots committed; both change only in SQLite transactions, so SQLite stays the commit
point (ADR 0005): a writer appends at ``vector_slots`` and flushes the files to disk *before*
the transaction that names the new slots commits. A crash (or a failed commit) leaves only
slots no committed row names, which the next writer overwrites; a slot a committed row named is
never written again, so a reader's snapshot never sees a vector change under it.

Each file starts with a 64-byte header: a magic string, the dimension and a random id that
``meta.vector_file`` records, so a store file copied without its vector files (or beside
another store's) is refused instead of read.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import struct
import uuid
import zlib
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from trails.errors import StorageError
from trails.faults import corrupt_file, storage_fault

__all__ = ["KEY_DTYPE", "VectorFiles", "key_hashes", "vector_paths"]

HEADER = 64
_MAGIC = {"f32": b"TRAILS-VECTORS-1", "keys": b"TRAILS-KEYS----1"}
_LAYOUT = struct.Struct("<16sII16s")  # magic, dim, row bytes, file id
# Per slot: the id's and the document IRI's 64-bit hashes (0: no document), the scope's code
# (its position in meta.scopes) and the CRC-32 of the vector's bytes.
KEY_DTYPE = np.dtype([("id", "<u8"), ("doc", "<u8"), ("scope", "<i4"), ("crc", "<u4")])


def vector_paths(path: str, generation: int = 0) -> dict[str, str]:
    """The two files beside a store file ``path`` (a compaction writes the next generation:
    ``<path>.<generation>.f32``)."""
    stem = path if generation == 0 else f"{path}.{generation}"
    return {kind: f"{stem}.{kind}" for kind in ("f32", "keys")}


def key_hashes(names: Iterable[str | None]) -> np.ndarray:
    """A 64-bit hash of each name (BLAKE2b, stable across processes and machines); 0 for None.

    Hashes only shortlist: the store checks every hit's real id against the names asked for,
    so a collision (about 1 in 2^64 per pair) can never admit a row."""
    names = names if isinstance(names, (list, tuple)) else list(names)
    blake = hashlib.blake2b
    try:
        digests = [_NONE if name is None else blake(name.encode("utf-8", "surrogatepass"),
                                                     digest_size=8).digest() for name in names]
    except AttributeError:  # a name that is no string: it names nothing (and hashes apart)
        digests = [_NONE if name is None else blake(
            name.encode("utf-8", "surrogatepass") if isinstance(name, str)
            else b"\0" + repr(name).encode(), digest_size=8).digest() for name in names]
    hashes = np.frombuffer(b"".join(digests), dtype="<u8").copy()
    for i in np.flatnonzero(hashes == 0).tolist():  # 0 stands for None: a name never gets it
        if names[i] is not None:
            hashes[i] = 1
    return hashes


_NONE = bytes(8)


class VectorFiles:
    """The slot files of one store file (or, for ``":memory:"``, two growing arrays).

    ``vectors(n)`` and ``keys(n)`` are read-only views of the first ``n`` slots; ``append``
    writes slots at a given position and flushes them to disk before returning.
    """

    def __init__(self, path: str, dim: int, generation: int = 0) -> None:
        self.path = path
        self.dim = dim
        self.generation = generation
        self.row_bytes = 4 * dim
        self.paths = {} if path == ":memory:" else vector_paths(path, generation)
        self._maps: dict[str, tuple[mmap.mmap, int]] = {}  # kind -> (map, bytes mapped)
        # ":memory:": arrays grown by doubling (views handed out keep the old ones alive).
        self._memory: dict[str, np.ndarray] = {
            "f32": np.empty((0, dim), dtype="<f4"), "keys": np.empty(0, dtype=KEY_DTYPE)}
        self.file_id: str | None = None

    # -- creating and checking ------------------------------------------------------------

    def create(self, file_id: str | None = None) -> str:
        """Write empty files with a new (or the given) id; returns the id."""
        self.file_id = file_id or uuid.uuid4().hex
        for kind, target in self.paths.items():
            with self._faults(target, "creating"), open(target, "wb") as handle:
                handle.write(self._header(kind))
                handle.flush()
                os.fsync(handle.fileno())
        self._maps.clear()
        return self.file_id

    def _header(self, kind: str) -> bytes:
        width = self.row_bytes if kind == "f32" else KEY_DTYPE.itemsize
        raw = _LAYOUT.pack(_MAGIC[kind], self.dim, width, uuid.UUID(self.file_id).bytes)
        return raw.ljust(HEADER, b"\0")

    def attach(self, file_id: str, slots: int) -> None:
        """Check both files (header, id, a size holding ``slots`` slots) and map them.

        Raises:
            ContextDamagedError: a file is missing, not a vector file of this store, or
                shorter than the committed slots (names the file).
            StorageError: a file cannot be read.
        """
        self.file_id = file_id
        for kind, target in self.paths.items():
            try:
                with open(target, "rb") as handle:
                    head = handle.read(HEADER)
            except FileNotFoundError as exc:
                raise corrupt_file(target, "the vector file of the store is missing") from exc
            except OSError as exc:
                raise self._fault(exc, target, "reading") from exc
            if len(head) < HEADER or head[: _LAYOUT.size] != self._header(kind)[: _LAYOUT.size]:
                raise corrupt_file(target, "its header is not the one this store recorded (a "
                                           "vector file of another store, or damaged)")
        self.ensure(slots)

    def ensure(self, slots: int) -> None:
        """Map at least ``slots`` slots of each file (a no-op in memory).

        Raises:
            ContextDamagedError: a file holds fewer slots than committed (truncated).
        """
        for kind, target in self.paths.items():
            width = self.row_bytes if kind == "f32" else KEY_DTYPE.itemsize
            needed = HEADER + slots * width
            current = self._maps.get(kind)
            if current is not None and current[1] >= needed:
                continue
            try:
                size = os.stat(target).st_size
            except FileNotFoundError as exc:
                raise corrupt_file(target, "the vector file of the store is missing") from exc
            if size < needed:
                raise corrupt_file(target, f"it holds {max(0, size - HEADER) // width} of the "
                                           f"{slots} committed slots (truncated)")
            with self._faults(target, "reading"), open(target, "rb") as handle:
                mapped = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ)
            if current is None and hasattr(mmap, "MADV_WILLNEED"):
                # Start reading a file that is not in the page cache yet, in the background:
                # the first full scan then finds its pages there.
                with contextlib.suppress(OSError):
                    mapped.madvise(mmap.MADV_WILLNEED)
            self._maps[kind] = (mapped, size)

    # -- reading --------------------------------------------------------------------------

    def vectors(self, slots: int) -> np.ndarray:
        """The first ``slots`` vectors, ``(slots, dim)`` float32, read-only."""
        return self._view("f32", np.dtype("<f4"), slots, self.dim)

    def keys(self, slots: int) -> np.ndarray:
        """The first ``slots`` key records (:data:`KEY_DTYPE`), read-only."""
        return self._view("keys", KEY_DTYPE, slots, None)

    def _view(self, kind: str, dtype: np.dtype, slots: int, width: int | None) -> np.ndarray:
        shape = (slots,) if width is None else (slots, width)
        if not self.paths:
            view = self._memory[kind][:slots]
        else:
            self.ensure(slots)
            view = np.ndarray(shape, dtype=dtype, buffer=self._maps[kind][0], offset=HEADER)
        view.flags.writeable = False
        return view

    # -- writing --------------------------------------------------------------------------

    def append(self, first: int, unit: np.ndarray, keys: np.ndarray) -> None:
        """Write slots ``first, first + 1, ...`` and flush them to disk (fsync) before returning.

        The caller holds the store's write transaction and commits the rows that name these
        slots only after this returns.

        Raises:
            StorageError: the disk is full or the files cannot be written; the slots written
                are garbage no committed row names, overwritten by the next append.
        """
        rows = np.ascontiguousarray(unit, dtype="<f4")
        records = np.ascontiguousarray(keys, dtype=KEY_DTYPE)
        if not self.paths:
            for kind, data in (("f32", rows), ("keys", records)):
                held, end = self._memory[kind], first + len(data)
                if end > len(held):
                    grown = np.empty((max(end, 2 * len(held)), *held.shape[1:]), held.dtype)
                    grown[:first] = held[:first]
                    self._memory[kind] = held = grown
                held[first:end] = data
            return
        for kind, data, width in (("f32", rows, self.row_bytes),
                                  ("keys", records, KEY_DTYPE.itemsize)):
            target = self.paths[kind]
            with self._faults(target, "writing"):
                fd = os.open(target, os.O_WRONLY)
                try:
                    view, offset = memoryview(data.tobytes()), HEADER + first * width
                    while view:
                        written = os.pwrite(fd, view, offset)
                        view, offset = view[written:], offset + written
                    os.fsync(fd)
                finally:
                    os.close(fd)

    # -- helpers --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _faults(self, target: str, action: str) -> Iterator[None]:
        """Raise an OSError met inside as a StorageError naming ``target``."""
        try:
            yield
        except OSError as exc:
            raise self._fault(exc, target, action) from exc

    def _fault(self, exc: BaseException, target: str, action: str) -> StorageError:
        fault = storage_fault(exc, target, f"{action} the vector file")
        if fault is not None:
            return fault
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return StorageError(f"{action} the vector file {target} failed ({reason}); check the "
                            "disk and the permissions, then run it again.")

    def close(self) -> None:
        """Drop the maps (views still held keep theirs alive until released)."""
        self._maps.clear()

    def remove(self) -> None:
        """Delete the files (after a compaction committed the next generation). A process
        that mapped them keeps reading them until it lets go."""
        self.close()
        for target in self.paths.values():
            with contextlib.suppress(OSError):  # gone already, or a later open retries
                os.unlink(target)


def vector_checksums(unit: np.ndarray) -> np.ndarray:
    """The CRC-32 of each row's float32 bytes (the ``crc`` field of its key record)."""
    rows = np.ascontiguousarray(unit, dtype="<f4")
    return np.fromiter((zlib.crc32(row) for row in rows), dtype=np.uint32, count=len(rows))


def make_keys(ids: Sequence[str], docs: Sequence[str | None], scopes: Sequence[int],
              unit: np.ndarray) -> np.ndarray:
    """The key records of new slots."""
    keys = np.empty(len(ids), dtype=KEY_DTYPE)
    keys["id"] = key_hashes(ids)
    keys["doc"] = key_hashes(docs)
    keys["scope"] = scopes
    keys["crc"] = vector_checksums(unit)
    return keys
