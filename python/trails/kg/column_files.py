"""Columns of the graph kept on disk per graph revision, so a fresh process starts warm (ADR 0029).

A column (``kg/filter_index.py``) is read from the graph once per process (:func:`read_rows`);
for a process that asks one question (``trails query``) that read *is* the question's cost.
Here each column built under a **settled** revision stamp (``kg/opening.py``: a stamp on disk
names exactly one state of the graph, and every write replaces it with a mark before it
starts) is written to ``<graph>/trails-columns/<revision>/<key>.npz`` and read back by any
process whose graph shows that same revision.

Exactness does not depend on the files being intact: each holds its revision, scopes and
predicate and a digest of its arrays, is renamed into place whole, and is used only when all of
them match; anything else (a torn or foreign file, a file of another revision, an unreadable
folder) is ignored and the column is read from the graph. Writing is best effort: a read-only
mount or a full disk only costs the next process the read. Folders of other revisions are
removed when a new one is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import shutil
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trails.kg.reserved import AUDIT_GRAPH_IRI

__all__ = ["COLUMN_ROWS", "FOLDER", "ColumnFiles", "Kept", "RunTsv", "SubjectCodes", "Terms",
           "keepable", "read_rows", "tsv_rows"]

FOLDER = "trails-columns"
_FORMAT = 1
log = logging.getLogger("trails.filter")


@dataclass
class Kept:
    """What one file holds: rows as (subject, object) pairs of local codes, the subjects and
    objects as TSV terms; ``whole`` False: the column was too large to keep. ``names_key``
    (a file's) names its list of subjects: kept columns of the same subjects share it."""

    subjects: np.ndarray  # int64 index into names
    objects: np.ndarray  # int64 index into values
    names: Sequence[str]
    values: Sequence[str]
    whole: bool = True
    names_key: str | None = None


class SubjectCodes:
    """One code per subject of every column an index reads (``names``: code -> TSV term).

    Coding a column's subjects looks each name up: ~0.4 us a name, 25-50 ms for a column of
    every document, paid again by every column of the same documents. A column read from the
    graph lists its subjects by name (:func:`read_rows`), so two files of the same subjects
    list them alike (``names_key``), and the second is coded by the first's codes."""

    def __init__(self) -> None:
        self.names: list[str] = []  # only ever appended to: a code never changes
        self._codes: dict[str, int] = {}
        self._local: dict[str, np.ndarray] = {}  # names_key -> code of each of those names

    def coded(self, kept: Kept) -> np.ndarray:
        """The rows' subjects of ``kept`` as codes."""
        local = None if kept.names_key is None else self._local.get(kept.names_key)
        if local is None:
            codes = self._codes
            # New names first, in order, then one lookup each in C: no Python call per name.
            added = [name for name in dict.fromkeys(kept.names) if name not in codes]
            codes.update(zip(added, range(len(self.names), len(self.names) + len(added))))
            self.names.extend(added)
            local = np.fromiter(map(codes.__getitem__, kept.names), dtype=np.int64,
                                count=len(kept.names))
            if kept.names_key is not None:
                self._local[kept.names_key] = local
        coded: np.ndarray = local[kept.subjects]
        return coded


# A column is read whole only up to this many triples; a predicate with more is left to
# Oxigraph (its column would cost more memory than the scan it saves).
COLUMN_ROWS = 5_000_000
# (query text, scopes) -> TSV bytes of its solutions, as the graph's own serialiser writes them
RunTsv = Callable[[str, "Sequence[str] | None"], bytes]


def tsv_rows(data: bytes) -> list[list[str]]:
    """The rows of a TSV result (the header dropped), each a list of terms as text."""
    lines = data.decode().split("\n")
    return [line.split("\t") for line in lines[1:] if line]


def keepable(run: RunTsv, pattern: str, scopes: Sequence[str] | None) -> bool:
    """Whether what ``pattern`` matches in ``scopes`` may be kept per revision: the audit
    graph, which a union of all graphs reads too, is written without a new revision (ADR 0021)."""
    if scopes is not None:
        return True
    probe = f"SELECT ?s WHERE {{ GRAPH <{AUDIT_GRAPH_IRI}> {{ {pattern} }} }} LIMIT 1"
    return not tsv_rows(run(probe, None))


def read_rows(run: RunTsv, pattern: str, pairs: bool, scopes: Sequence[str] | None) -> Kept:
    """The rows of ``pattern`` (``?s``, and ``?o`` with ``pairs``) in ``scopes``, read whole
    from the graph (not ``whole`` past :data:`COLUMN_ROWS`)."""
    rows = tsv_rows(run(f"SELECT ?s{' ?o' if pairs else ''} WHERE {{ {pattern} }} "
                        f"LIMIT {COLUMN_ROWS + 1}", scopes))
    if len(rows) > COLUMN_ROWS:
        return Kept(np.empty(0, np.int64), np.empty(0, np.int64), [], [], whole=False)
    names: dict[str, int] = {}
    subjects = np.fromiter((names.setdefault(r[0], len(names)) for r in rows),
                           dtype=np.int64, count=len(rows))
    codes: dict[str, int] = {}
    objects = np.fromiter((codes.setdefault(r[1], len(codes)) for r in rows),
                          dtype=np.int64, count=len(rows)) if pairs else subjects[:0]
    # The subjects by name: columns of the same subjects then keep the same list of names,
    # and a process codes them once (SubjectCodes).
    ordered = sorted(names)
    place = dict(zip(ordered, range(len(ordered))))
    rank = np.fromiter(map(place.__getitem__, names), dtype=np.int64, count=len(names))
    return Kept(rank[subjects], objects, ordered, list(codes))


class ColumnFiles:
    """The kept columns of one graph directory, one revision and one set of scopes."""

    def __init__(self, graph_path: str, revision: str, scopes: Sequence[str] | None) -> None:
        self.folder = os.path.join(graph_path, FOLDER, revision)
        self.revision = revision
        self.scopes = None if scopes is None else list(scopes)

    def _path(self, kind: str, key: str) -> str:
        name = json.dumps([kind, key, self.scopes]).encode()
        return os.path.join(self.folder, hashlib.sha256(name).hexdigest()[:32] + ".npz")

    def _meta(self, kind: str, key: str) -> dict[str, object]:
        return {"format": _FORMAT, "revision": self.revision, "scopes": self.scopes,
                "kind": kind, "key": key}

    def has(self, kind: str, key: str) -> bool:
        """Whether a file is kept for the column ``kind``/``key`` (not yet read: see load)."""
        return os.path.exists(self._path(kind, key))

    def load(self, kind: str, key: str) -> Kept | None:
        """The column ``kind``/``key`` kept for this revision and scopes, or None (no file, or
        one that is not exactly it)."""
        try:
            with np.load(self._path(kind, key), allow_pickle=False) as data:
                arrays = {name: data[name] for name in ("subjects", "objects", "names",
                                                        "values", "meta")}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            if not isinstance(exc, FileNotFoundError):
                log.info("kept column %s %s ignored: %s", kind, key, exc)
            return None
        try:
            meta = json.loads(arrays["meta"].tobytes().decode())
            expected = {**self._meta(kind, key), "digest": _digest(arrays)}
            if any(meta.get(name) != value for name, value in expected.items()):
                log.info("kept column %s %s ignored: not this revision's, or torn", kind, key)
                return None
            names_key = meta.get("names_key")
            return Kept(arrays["subjects"].astype(np.int64), arrays["objects"].astype(np.int64),
                        Terms(arrays["names"], int(meta["names"])),
                        Terms(arrays["values"], int(meta["values"])), bool(meta["whole"]),
                        names_key if isinstance(names_key, str) else None)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            log.info("kept column %s %s ignored: %s", kind, key, exc)
            return None

    @staticmethod
    def kept(graph_path: str, revision: str) -> list[tuple[str, str, list[str] | None]]:
        """(kind, key, scopes) of each file kept for ``revision`` (unreadable ones left out;
        :meth:`load` checks the rest whole)."""
        folder = os.path.join(graph_path, FOLDER, revision)
        found = []
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(folder)):
                if not name.endswith(".npz") or ".tmp." in name:
                    continue
                try:
                    with np.load(os.path.join(folder, name), allow_pickle=False) as data:
                        meta = json.loads(data["meta"].tobytes().decode())
                    if meta.get("revision") == revision:
                        found.append((str(meta["kind"]), str(meta["key"]), meta["scopes"]))
                except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                    continue
        return found

    def save(self, kind: str, key: str, kept: Kept) -> None:
        """Keep ``kept`` as the column ``kind``/``key`` of this revision (best effort)."""
        names = _blob(kept.names)
        arrays = {"subjects": kept.subjects.astype(np.int64), "objects":
                  kept.objects.astype(np.int64), "names": names, "values": _blob(kept.values)}
        meta = {**self._meta(kind, key), "names": len(kept.names), "values": len(kept.values),
                "whole": kept.whole, "digest": _digest(arrays),
                "names_key": hashlib.blake2b(names.tobytes(), digest_size=16).hexdigest()}
        target = self._path(kind, key)
        temporary = f"{target}.{secrets.token_hex(4)}.tmp.npz"
        try:
            if not os.path.isdir(self.folder):
                self._drop_other_revisions()
                os.makedirs(self.folder, exist_ok=True)
            with open(temporary, "wb") as file:
                arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
                np.savez(file, allow_pickle=False, **arrays)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except OSError as exc:
            log.info("column %s %s not kept: %s", kind, key, exc)
            with contextlib.suppress(OSError):
                os.remove(temporary)

    def _drop_other_revisions(self) -> None:
        parent = os.path.dirname(self.folder)
        with contextlib.suppress(OSError):
            for name in os.listdir(parent):
                if name != self.revision:
                    shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _blob(terms: Sequence[str]) -> np.ndarray:
    """TSV terms joined by newlines (TSV escapes a literal's newlines), as bytes."""
    return np.frombuffer("\n".join(terms).encode(), dtype=np.uint8)


class Terms(Sequence[str]):
    """The ``count`` terms of a blob, read at their first use: a column coded by another's
    codes (:class:`SubjectCodes`) never reads its names."""

    def __init__(self, blob: np.ndarray, count: int) -> None:
        found = int(np.count_nonzero(blob == ord("\n"))) + 1 if count else 0
        if found != count:
            raise ValueError(f"{found} terms where {count} were kept")
        self._blob, self._count = blob, count
        self._terms: list[str] | None = None

    def _read(self) -> list[str]:
        if self._terms is None:
            self._terms = self._blob.tobytes().decode().split("\n") if self._count else []
        return self._terms

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        return self._read()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())


def _digest(arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for name in ("subjects", "objects", "names", "values"):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.size};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()
