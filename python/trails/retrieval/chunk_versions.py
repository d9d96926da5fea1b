"""The versions a chunk-level answer names, and the documents whose live version it misses.

A filter over chunks answers chunk IRIs, and each carries its document and version
(``<doc>/v/<version>/c/<position>``, ``ingest/minting.py``). A read is torn (ADR 0005,
``consistency.py``) where a document's candidates name none of its live version in the store's
snapshot: these functions find those documents. A filter's answer holds up to hundreds of
thousands of chunk IRIs; one from the graph's columns (a :class:`CodedIris`) is read by codes,
each name parsed once per list of names and each document's live version asked once per store
state, so its next answers cost array operations.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from trails.ingest.minting import CHUNK_IRI
from trails.vector.stores.base import NumberedStates, VersionedStore
from trails.vector.stores.records import CodedIris

__all__ = ["candidate_versions", "coded_unselected", "minted_chunk", "unselected_live"]

_HEX = "0123456789abcdef"  # a version's characters (minting.version_of)


def minted_chunk(iri: str) -> bool:
    """Whether ``iri`` has the shape of a chunk IRI ingestion mints."""
    return CHUNK_IRI.match(iri) is not None


def candidate_versions(iris: Sequence[str]) -> dict[str, set[str]]:
    """For each document with chunk IRIs among ``iris``, the versions they name.

    Read as :data:`CHUNK_IRI` reads them, by cutting the IRI at its last ``/c/`` and the
    fixed-length version before it; only a name that does not read so is asked of the
    pattern (a filter's answer holds tens of thousands of chunk IRIs: the pattern cost
    ~2 µs each). The names of a :class:`CodedIris` are read once per list of names (a
    chunk-level filter's next answers from the same columns read none again)."""
    coded = getattr(iris, "coded", None)
    if isinstance(iris, CodedIris) and coded is not None:
        return _coded_versions(*coded)
    versions: dict[str, set[str]] = {}
    for doc, version in filter(None, map(_version_of, iris)):
        versions.setdefault(doc, set()).add(version)
    return versions


def _version_of(iri: str) -> tuple[str, str] | None:
    """The document and version a chunk IRI names (None: not a minted chunk IRI)."""
    return _cut(iri) or _matched(iri)


def _cut(iri: str) -> tuple[str, str] | None:
    """:func:`_version_of` for a name that reads by its cut at the last ``/c/``, else None."""
    head, cut, position = iri.rpartition("/c/")
    if (cut and position.isdecimal() and len(head) > 19 and head[-19:-16] == "/v/"
            and not head[-16:].strip(_HEX) and "\n" not in head):
        return head[:-19], head[-16:]
    return None


def _matched(iri: str) -> tuple[str, str] | None:
    match = CHUNK_IRI.match(iri)
    return (match["doc"], match["version"]) if match else None


class _ReadVersions:
    """The (document, version) each name of one list reads as, read as filters ask for them
    (``of[code]``: a place in ``pairs``, -1 for no chunk IRI, -2 for not read yet), and each
    document's live version in one store state, as the place of its pair (``live_pair``: -1
    for a document the store does not record, -2 for a version no name read has, -3 for not
    asked yet). A chunk-level filter's answer then costs array operations, not a loop over
    its documents."""

    def __init__(self) -> None:
        self.pairs: dict[tuple[str, str], int] = {}
        self.pair_doc = np.empty(0, dtype=np.int64)  # pair place -> document code
        self.docs: dict[str, int] = {}
        self.of = np.empty(0, dtype=np.int64)
        self.state: Any = _NO_STATE  # (the store, its state) the live versions are of
        self.live_pair = np.empty(0, dtype=np.int64)
        self.live_version: dict[int, str] = {}

    def used(self, names: Sequence[str | None], codes: np.ndarray) -> np.ndarray:
        """A mask over ``pairs``: those the names at ``codes`` read as."""
        if len(self.of) < len(names):  # the list grew (a filter read more of the graph)
            self.of = np.concatenate([self.of, np.full(len(names) - len(self.of), -2)])
        unread = codes[self.of[codes] == -2]
        if len(unread):
            known = len(self.pairs)
            self.of[unread] = self._read([names[code] for code in unread.tolist()])
            if len(self.pairs) > known:  # new pairs: their documents' live pair is asked again
                added = np.array([self.docs[doc] for doc, _ in list(self.pairs)[known:]])
                self.pair_doc = np.concatenate([self.pair_doc, added])
                self._grow_live()
                self.live_pair[added] = -3
        mask = np.zeros(len(self.pairs) + 1, dtype=bool)
        mask[self.of[codes] + 1] = True  # a mask, not a unique: one pass over the codes
        return mask[1:]

    def _read(self, names: list[str | None]) -> list[int]:
        """The place of each name's pair. A list's names are in order, so a document
        version's chunks come together: a name that is the previous one's ``<head>/c/``
        and a position reads as that one did, without cutting it again."""
        places: list[int] = []
        run, place = "\0", -1  # the last name's "<head>/c/", when it read by its cut
        for name in names:
            if not isinstance(name, str):
                places.append(-1)
                continue
            if name.startswith(run) and name[len(run):].isdecimal():
                places.append(place)  # the same head, so the same cut and the same pair
                continue
            cut = _cut(name)
            place = self._place(cut or _matched(name))
            places.append(place)
            run = "\0" if cut is None else name[:len(cut[0]) + 22]  # <doc>/v/<16>/c/
        return places

    def _place(self, pair: tuple[str, str] | None) -> int:
        if pair is None:
            return -1
        self.docs.setdefault(pair[0], len(self.docs))
        return self.pairs.setdefault(pair, len(self.pairs))

    def _grow_live(self) -> None:
        if len(self.live_pair) < len(self.docs):
            self.live_pair = np.concatenate(
                [self.live_pair, np.full(len(self.docs) - len(self.live_pair), -3)])

    def versions(self, names: Sequence[str | None], codes: np.ndarray) -> dict[str, set[str]]:
        used = self.used(names, codes)  # first: it may read new pairs
        listed = list(self.pairs)
        versions: dict[str, set[str]] = {}
        for place in np.flatnonzero(used).tolist():
            doc, version = listed[place]
            versions.setdefault(doc, set()).add(version)
        return versions

    def unselected(self, names: Sequence[str | None], codes: np.ndarray,
                   store: VersionedStore, state: object) -> dict[str, str]:
        """``unselected_live(candidate_versions(...), store)``, ``state`` the store's."""
        used = self.used(names, codes)
        if self.state is _NO_STATE or self.state[0] is not store or self.state[1] != state:
            # another store (one graph may serve two), or another commit: asked again
            self.state, self.live_version = (store, state), {}
            self.live_pair = np.full(len(self.docs), -3, dtype=np.int64)
        self._grow_live()
        present = np.zeros(len(self.docs), dtype=bool)
        present[self.pair_doc[used]] = True
        docs = np.flatnonzero(present)
        ask = docs[self.live_pair[docs] == -3]
        if len(ask):
            listed = list(self.docs)
            live = _live_versions([listed[d] for d in ask.tolist()], store)
            for code in ask.tolist():
                version = live.get(listed[code])
                if version is not None:
                    self.live_version[code] = version
                self.live_pair[code] = -1 if version is None else self.pairs.get(
                    (listed[code], version), -2)
        lives = self.live_pair[docs]
        kept = (lives == -1) | ((lives >= 0) & used[np.maximum(lives, 0)])
        listed = list(self.docs) if not kept.all() else []
        return {listed[d]: self.live_version[d] for d in docs[~kept].tolist()}


_NO_STATE = object()
# The names read per list (CodedIris.coded's token), for this many lists at most.
_READ_LISTS = 8
_read: OrderedDict[object, _ReadVersions] = OrderedDict()
_read_lock = threading.Lock()


def _reading(token: object) -> _ReadVersions:
    read = _read.get(token)
    if read is None:
        read = _read[token] = _ReadVersions()
        while len(_read) > _READ_LISTS:
            _read.popitem(last=False)
    _read.move_to_end(token)
    return read


def _coded_versions(token: object, names: Sequence[str | None], codes: np.ndarray,
                    ) -> dict[str, set[str]]:
    with _read_lock:
        return _reading(token).versions(names, np.asarray(codes, dtype=np.int64))


def coded_unselected(coded: tuple[object, Any, Any], store: VersionedStore,
                      ) -> dict[str, str]:
    """:func:`unselected_live` of a coded answer's versions (the store's live versions kept
    per list and store state: a chunk-level filter's next answers ask only documents not
    asked before)."""
    token, names, codes = coded
    state = store.state() if isinstance(store, NumberedStates) else object()
    with _read_lock:
        return _reading(token).unselected(names, np.asarray(codes, dtype=np.int64), store,
                                          state)


def _live_versions(docs: list[str], store: VersionedStore) -> dict[str, str]:
    """Each of ``docs``' live version in the store's pinned state (those it records)."""
    quick = getattr(store, "live_versions", None)  # a store's cheaper read of them, if it has one
    return quick(docs) if callable(quick) else {
        doc: record.version for doc, record in store.current_versions(docs).items()}


def unselected_live(versions: dict[str, set[str]], store: VersionedStore) -> dict[str, str]:
    """Documents whose live version (in the store's pinned state) is not among the versions
    their candidates name: document -> live version."""
    if not versions:
        return {}
    live = _live_versions(list(versions), store)
    return {doc: version for doc, version in live.items() if version not in versions[doc]}
