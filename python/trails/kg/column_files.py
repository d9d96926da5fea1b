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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from trails.kg.reserved import AUDIT_GRAPH_IRI

__all__ = ["COLUMN_ROWS", "FOLDER", "ColumnFiles", "Kept", "RunTsv", "keepable", "read_rows", "tsv_rows"]

FOLDER = "trails-columns"
_FORMAT = 1
log = logging.getLogger("trails.filter")


@dataclass
class Kept:
    """What one file holds: rows as (subject, object) pairs of local codes, the subjects and
    objects as TSV terms; ``whole`` False: the column was too large to keep."""

    subjects: np.ndarray  # int64 index into names
    objects: np.ndarray  # int64 index into values
    names: list[str]
    values: list[str]
    whole: bool = True


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
    return Kept(subjects, objects, list(names), list(codes))


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
            return Kept(arrays["subjects"].astype(np.int64), arrays["objects"].astype(np.int64),
                        _terms(arrays["names"], int(meta["names"])),
                        _terms(arrays["values"], int(meta["values"])), bool(meta["whole"]))
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
        arrays = {"subjects": kept.subjects.astype(np.int64), "objects":
                  kept.objects.astype(np.int64), "names": _blob(kept.names),
                  "values": _blob(kept.values)}
        meta = {**self._meta(kind, key), "names": len(kept.names), "values": len(kept.values),
                "whole": kept.whole, "digest": _digest(arrays)}
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


def _blob(terms: list[str]) -> np.ndarray:
    """TSV terms joined by newlines (TSV escapes a literal's newlines), as bytes."""
    return np.frombuffer("\n".join(terms).encode(), dtype=np.uint8)


def _terms(blob: np.ndarray, count: int) -> list[str]:
    terms = blob.tobytes().decode().split("\n") if count else []
    if len(terms) != count:
        raise ValueError(f"{len(terms)} terms where {count} were kept")
    return terms


def _digest(arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for name in ("subjects", "objects", "names", "values"):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.size};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()
