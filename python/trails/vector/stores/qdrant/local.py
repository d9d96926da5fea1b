"""qdrant-client's local mode: the one module that relies on qdrant-client's internals.

Local mode (a client built with ``":memory:"`` or ``path=``) runs in this process. Three
things about it are not in qdrant-client's public API, and this module alone relies on them:

- **Which client is local.** ``QdrantClient._client`` is a
  ``qdrant_client.local.qdrant_local.QdrantLocal``. Local mode always searches by brute force,
  so its plans are exhaustive.
- **The folder lock.** ``QdrantLocal`` locks ``<path>/.lock`` with portalocker (exclusive,
  non-blocking) and raises ``RuntimeError("... already accessed ...")`` when another client
  holds it; found locked, it leaks its file handle, so :func:`open_folder` checks the lock
  first and turns either way of failing into ``ContextLockedError``.
- **The points.** ``QdrantLocal.collections[name]`` keeps a collection's ``payload`` (a list,
  one dict per row), ``deleted`` (a numpy mask) and ``vectors[""]`` (float32 rows).
  qdrant-client checks a filter in Python point by point (seconds per pass at 100,000 points),
  so the store reads these arrays and filters and scores in numpy instead (ADR 0008's
  amendment): :func:`search`, :func:`keyword`, :func:`rows`.

When any of these is not as expected (a qdrant-client release that keeps them otherwise),
:func:`points` returns None and the store takes the public API's filter path: exact, slower.
:func:`internals_problem` says which one changed; ``tests/test_qdrant_local.py`` fails on it,
so an upgrade of qdrant-client past the tested version (pyproject's bound) is noticed.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trails.errors import ContextLockedError
from trails.vector.stores.matrix import _exact_cosine
from trails.vector.stores.qdrant.schema import metadata_of
from trails.vector.stores.records import DocumentIris, SearchPlan, VectorHit

__all__ = ["LocalPoints", "internals_problem", "is_local", "keyword", "locked_folder",
           "open_folder", "points", "rows", "search"]

# For each payload: is it a point of a version that is not (or no longer) current?
Stale = Callable[[Sequence[Mapping[str, Any]]], list[bool]]


# -- which client is local ----------------------------------------------------------------


def _local_class() -> type | None:
    try:
        from qdrant_client.local.qdrant_local import QdrantLocal
    except ImportError:
        return None
    return QdrantLocal


def is_local(client: Any) -> bool:
    """Whether ``client`` is a ``QdrantClient`` in local mode (False when that cannot be
    told: the store then treats it as a server, which is exact too)."""
    local = _local_class()
    return local is not None and isinstance(getattr(client, "_client", None), local)


# -- the folder lock ----------------------------------------------------------------------


def open_folder(qdrant: Any, path: str) -> Any:
    """``qdrant.QdrantClient(path=path)``, or ContextLockedError if another client holds it."""
    _check_unlocked(path)  # qdrant-client leaks the lock file when it finds it locked
    try:
        return qdrant.QdrantClient(path=path)
    except RuntimeError as exc:
        if "already accessed" not in str(exc):
            raise
        raise locked_folder(path) from exc


def _check_unlocked(path: str) -> None:
    lock = os.path.join(path, ".lock")
    if not os.path.exists(lock):
        return
    try:
        import portalocker  # qdrant-client's own dependency for this very lock
    except ImportError:
        return  # qdrant-client's own check still refuses a held folder
    with open(lock, "r+") as handle:
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE
                             | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException as exc:
            raise locked_folder(path) from exc
        portalocker.unlock(handle)


def locked_folder(path: str) -> ContextLockedError:
    return ContextLockedError(
        f"Qdrant folder {path!r} is open in another process, and qdrant-client's local mode "
        "allows one process per folder; close it there, or serve the data from a Qdrant "
        "server (url=...)")


# -- the points ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalPoints:
    """A local collection's rows: ``payload[r]``, ``deleted[r]``, ``vectors[r]`` (float32)."""

    payload: list[dict[str, Any]]
    deleted: np.ndarray
    vectors: np.ndarray


def internals_problem(client: Any, collection: str) -> str | None:
    """What about ``client``'s local-mode internals is not as this module expects, or None."""
    local = _local_class()
    if local is None:
        return "qdrant_client.local.qdrant_local.QdrantLocal cannot be imported"
    inner = getattr(client, "_client", None)
    if not isinstance(inner, local):
        return f"QdrantClient._client is a {type(inner).__name__}, not a QdrantLocal"
    collections = getattr(inner, "collections", None)
    if not isinstance(collections, dict):
        return "QdrantLocal.collections is not a dict"
    found = collections.get(collection)
    if found is None:
        return f"QdrantLocal.collections has no entry for collection {collection!r}"
    if not isinstance(getattr(found, "payload", None), list):
        return "LocalCollection.payload is not a list"
    if not isinstance(getattr(found, "deleted", None), np.ndarray):
        return "LocalCollection.deleted is not a numpy array"
    vectors = getattr(found, "vectors", None)
    if not isinstance(vectors, dict) or not isinstance(vectors.get(""), np.ndarray):
        return "LocalCollection.vectors[''] (the unnamed vector) is not a numpy array"
    return None


def points(client: Any, collection: str) -> LocalPoints | None:
    """The rows of a local-mode collection, read in place; None when ``client`` is not local
    or its internals are not as expected (see :func:`internals_problem`)."""
    collections = getattr(getattr(client, "_client", None), "collections", None)
    found = collections.get(collection) if isinstance(collections, dict) else None
    payload, deleted = getattr(found, "payload", None), getattr(found, "deleted", None)
    vectors = getattr(found, "vectors", None)
    unnamed = vectors.get("") if isinstance(vectors, dict) else None
    if (isinstance(payload, list) and isinstance(deleted, np.ndarray)
            and isinstance(unnamed, np.ndarray)):
        return LocalPoints(payload, deleted, unnamed)
    return None


def rows(points: LocalPoints, iris: set[str] | None, scopes: set[str] | None, *,
         documents_only: bool = False) -> np.ndarray:
    """Rows of the points the live filter admits, ascending: not deleted, not pending,
    named by id (as ``HasId`` on its point id; not with ``documents_only``) or by
    ``doc_iri``, in one of ``scopes``."""
    by_id = not documents_only
    found = np.array([r for r, p in enumerate(points.payload)
                      if (iris is None or p.get("doc_iri") in iris
                          or (by_id and p.get("id") in iris))
                      and (scopes is None or p.get("scope") in scopes)
                      and p.get("pending") is not True], dtype=np.intp)
    return found[points.deleted[found] == 0]  # type: ignore[no-any-return]


def search(points: LocalPoints, query: np.ndarray, k: int, iris: Sequence[str] | None,
           scopes: Iterable[str] | None, stale: Stale) -> tuple[list[VectorHit], SearchPlan]:
    """The filter path's search on the collection's own arrays: the same hits, scores, plan
    (``iris`` as in the filter: a ``DocumentIris`` names documents only).

    Every eligible point is scored in float32 (one BLAS product), those that may belong to
    the top k (within twice the float32 error bound of the k-th) are checked for superseded
    versions and re-scored in float64 with ``VectorMatrix``'s function, ties by id."""
    wanted = None if iris is None else set(iris)
    scope_set = None if scopes is None else set(scopes)
    name = "qdrant-full" if wanted is None else "qdrant-filtered-exact"
    if wanted == set() or scope_set == set():
        return [], SearchPlan(name, 0, True)
    eligible = rows(points, wanted, scope_set, documents_only=isinstance(iris, DocumentIris))
    plan = SearchPlan(name, len(eligible), True)
    if k == 0 or not len(eligible):
        return [], plan
    vectors, payloads = points.vectors, points.payload
    q32 = query.astype(np.float32)
    if 8 * len(eligible) >= len(payloads):  # a gather copies the rows: slower beyond ~1/8
        scores = (vectors[: len(payloads)] @ q32)[eligible]
    else:
        scores = vectors[eligible] @ q32
    margin = 2 * (len(query) + 2) * 2.0**-23  # twice the float32 error bound (as _top_k)
    while True:
        short = eligible[shortlist(scores, k, margin)]
        old = stale([payloads[r] for r in short])
        if not any(old):
            break
        keep = ~np.isin(eligible, short[np.array(old)])
        eligible, scores = eligible[keep], scores[keep]
    exact = _exact_cosine(vectors[short], query).tolist()
    ranked = sorted(zip((payloads[r]["id"] for r in short), exact, short.tolist()),
                    key=lambda t: (-t[1], t[0]))[:k]
    return [VectorHit(id, score, metadata_of(copy.deepcopy(payloads[r])))
            for id, score, r in ranked], plan


def keyword(points: LocalPoints, ranking: Iterable[tuple[str, float]], k: int, page: int,
            iris: Sequence[str] | None, scopes: list[str] | None, stale: Stale) -> list[VectorHit]:
    """``keyword_search`` from qdrant-client's BM25 ``ranking`` of every matching point
    (``(id, score)``, asked for without a filter: with one, local mode would check it point by
    point, and again for each larger limit): the eligible points of it, superseded ones
    dropped, ``page`` at a time."""
    eligible = rows(points, None if iris is None else set(iris),
                    None if scopes is None else set(scopes),
                    documents_only=isinstance(iris, DocumentIris))
    row_of = {points.payload[r]["id"]: r for r in eligible}
    ranked = sorted(((id, score) for id, score in ranking if id in row_of),
                    key=lambda hit: (-hit[1], hit[0]))
    hits: list[VectorHit] = []
    for start in range(0, len(ranked), page):  # stale points only in this part
        part = ranked[start : start + page]
        payloads = [points.payload[row_of[id]] for id, _ in part]
        hits += [VectorHit(id, score, metadata_of(copy.deepcopy(p)))
                 for (id, score), p, old in zip(part, payloads, stale(payloads)) if not old]
        if len(hits) >= k:
            break
    return hits[:k]


def shortlist(scores: np.ndarray, k: int, margin: float) -> np.ndarray:
    """Indices of ``scores`` (float32) that may belong to the exact top ``k``: every score
    within ``margin`` of the k-th largest (all of them when there are at most k)."""
    if len(scores) <= k:
        return np.arange(len(scores))
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    return np.flatnonzero(scores >= kth - margin)
