"""Exact search on Qdrant (ADR 0008): candidates in the filter, then re-scored in float64.

On a server the candidates, scopes and liveness go into the query's filter; Qdrant is asked for
``k + OVERFETCH`` points, and for more while the k-th float64 score is within the float32 error
bound of the last one returned. Up to ``EXACT_THRESHOLD`` eligible points the query runs with
``exact=True``; above it a server uses its HNSW index and falls back to exact search when the
index returns a short list. In local mode the same answers come from numpy
(:mod:`trails.vector.stores.qdrant.local`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from trails.vector.stores.base import metadata_matches
from trails.vector.stores.matrix import _exact_cosine
from trails.vector.stores.qdrant import local
from trails.vector.stores.qdrant.lock import locked
from trails.vector.stores.qdrant.schema import eq, metadata_of, point_id
from trails.vector.stores.qdrant.versions import QdrantVersions
from trails.vector.stores.records import DocumentIris, SearchPlan, VectorHit, distinct_names

__all__ = ["EXACT_THRESHOLD", "OVERFETCH", "QdrantSearch"]

# Up to this many eligible points a query runs with exact=True on a server.
EXACT_THRESHOLD = 10_000
# Points fetched beyond k, so near ties at the k-th place can be ordered in float64.
OVERFETCH = 16


class QdrantSearch(QdrantVersions):
    """Search, ``expand_ids``, ``all_ids`` and ``count``: over live, current points only."""

    def _local_points(self) -> local.LocalPoints | None:
        """The in-process collection's rows in local mode, or None (a server, or a
        qdrant-client whose internals are not as expected: the filter path runs)."""
        return local.points(self._c, self.collection) if self.local else None

    @locked
    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        # Payloads arrive with the points either way: with_metadata=False saves nothing here.
        iris = None if ids is None else distinct_names(ids)
        points = self._local_points()
        if points is not None:
            return local.search(points, query, k, iris, scopes, self._stale)
        scope_list = None if scopes is None else list(scopes)
        if (iris is not None and not iris) or scope_list == []:
            return [], SearchPlan("qdrant-filtered-exact" if iris is not None else "qdrant-full",
                                  0, True)
        flt = self._live_filter(iris, scope_list)
        candidates = int(self._c.count(self.collection, count_filter=flt, exact=True).count)
        exact = self.local or candidates <= EXACT_THRESHOLD
        if iris is None:
            name = "qdrant-full"
        else:
            name = "qdrant-filtered-exact" if exact else "qdrant-ann+exact-fallback"
        if k == 0 or candidates == 0:
            return [], SearchPlan(name, candidates, exact)
        ranked, exact = self._top_k(query, k, flt, candidates, exact)
        hits = [VectorHit(p.payload["id"], score, metadata_of(p.payload)) for p, score in ranked]
        return hits, SearchPlan(name, candidates, exhaustive=exact)

    def _live_filter(self, iris: Sequence[str] | None, scopes: list[str] | None) -> Any:
        """Points named by ``iris`` (point ids or ``doc_iri``; only ``doc_iri`` for a
        ``DocumentIris``), in ``scopes``, not pending."""
        m = self._m
        must = []
        if iris is not None:
            documents = m.FieldCondition(key="doc_iri", match=m.MatchAny(any=list(iris)))
            must.append(documents if isinstance(iris, DocumentIris) else m.Filter(should=[
                m.HasIdCondition(has_id=[point_id(i) for i in iris]), documents]))
        if scopes is not None:
            must.append(m.FieldCondition(key="scope", match=m.MatchAny(any=scopes)))
        return m.Filter(must=must or None, must_not=[eq(m, "pending", True)])

    def _hiding(self, flt: Any, hidden: set[str]) -> Any:
        """``flt`` that also leaves out the points ``hidden`` (superseded ones)."""
        m = self._m
        return flt if not hidden else m.Filter(
            must=flt.must, must_not=[*flt.must_not, m.HasIdCondition(has_id=sorted(hidden))])

    def _top_k(self, query: np.ndarray, k: int, flt: Any, candidates: int,
               exact: bool) -> tuple[list[tuple[Any, float]], bool]:
        """The exact top-k of the points ``flt`` admits, as ``[(point, score)]``.

        Any point Qdrant did not return scores (in its float32) at most the lowest one it
        did, so in float64 at most ``lowest + 2·err``; while the k-th score is not above that,
        or superseded points were dropped, or an HNSW answer came back short, ask again.
        """
        err = (self._dim + 2) * 2.0**-23  # float32 dot of two unit vectors vs. float64
        limit, hidden = min(k + OVERFETCH, candidates), set[str]()
        q32 = query.astype(np.float32).tolist()
        while True:
            points = self._query(q32, self._hiding(flt, hidden), limit, exact)
            available = candidates - len(hidden)
            if not exact and len(points) < min(limit, available):
                exact = True  # the index came back short: score every candidate instead
                continue
            stale = self._superseded(points)
            if stale:
                hidden |= stale
                continue
            rows = np.array([p.vector for p in points], dtype=np.float32).reshape(-1, self._dim)
            scores = _exact_cosine(rows, query)  # no rows: every candidate was superseded
            ranked = sorted(zip(points, scores.tolist()), key=lambda ps: (-ps[1], ps[0].payload["id"]))
            done = len(points) < limit or limit >= available
            if done or (len(ranked) >= k and ranked[k - 1][1] > ranked[-1][1] + 2 * err):
                return ranked[:k], exact
            limit = min(2 * limit, available)

    def _query(self, q32: list[float], flt: Any, limit: int, exact: bool) -> list[Any]:
        m = self._m
        params = None
        if not self.local:  # local mode is brute force and warns about search_params
            params = (m.SearchParams(exact=True, quantization=m.QuantizationSearchParams(ignore=True))
                      if exact else m.SearchParams(hnsw_ef=max(128, limit)))
        found: list[Any] = self._c.query_points(
            self.collection, query=q32, query_filter=flt, limit=limit, with_payload=True,
            with_vectors=True, search_params=params).points
        return found

    @locked
    def expand_ids(self, iris: Iterable[str]) -> list[str]:
        """Live vector ids named by ``iris``: the ids themselves, or the chunks of document IRIs
        (only the latter for a ``DocumentIris``), sorted."""
        documents = isinstance(iris, DocumentIris)  # names documents only, as in search
        wanted = list(dict.fromkeys(i for i in iris if isinstance(i, str)))
        if not wanted:
            return []
        points = self._local_points()
        if points is not None:
            payloads = [points.payload[r] for r in local.rows(points, set(wanted), None,
                                                              documents_only=documents)]
        else:
            payloads = [r.payload for r in self._scroll(
                self.collection, self._live_filter(
                    DocumentIris(wanted) if documents else wanted, None),
                payload=["id", "doc_iri", "version", "versioned"])]
        return sorted(p["id"] for p, old in zip(payloads, self._stale(payloads)) if not old)

    @locked
    def has_back_references(self) -> bool:
        """Whether some live point's ``metadata["iri"]`` is a string other than its id (the
        ``back_reference`` payload field; points written before it existed count as none)."""
        m = self._m
        flt = self._live_filter(None, None)
        flt.must_not.append(m.IsEmptyCondition(is_empty=m.PayloadField(key="back_reference")))
        return int(self._c.count(self.collection, count_filter=flt, exact=True).count) > 0

    @locked
    def rows_named(self, iris: Iterable[str]) -> dict[str, str]:
        """``{id: back-reference}`` of the live points whose back-reference (``metadata["iri"]``,
        else the id) or document is one of ``iris`` (only the document for a
        ``DocumentIris``), by id."""
        documents_only = isinstance(iris, DocumentIris)
        wanted = list(dict.fromkeys(i for i in iris if isinstance(i, str)))
        if not wanted:
            return {}
        m = self._m
        named = [m.FieldCondition(key="doc_iri", match=m.MatchAny(any=wanted))]
        if not documents_only:
            named += [m.HasIdCondition(has_id=[point_id(i) for i in wanted]),
                      m.FieldCondition(key="back_reference", match=m.MatchAny(any=wanted))]
        flt = self._live_filter(None, None)
        flt.must = [m.Filter(should=named)]
        payloads = [r.payload for r in self._scroll(
            self.collection, flt, payload=["id", "doc_iri", "version", "versioned",
                                           "back_reference"])]
        chosen = set(wanted)
        found = {}
        for p, old in zip(payloads, self._stale(payloads)):
            name = p.get("back_reference") or p["id"]  # the SQL store's rule, from the payload
            if not old and (p.get("doc_iri") in chosen or
                            (not documents_only and name in chosen)):
                found[p["id"]] = name
        return dict(sorted(found.items()))

    @locked
    def all_ids(self) -> list[str]:
        """Ids of live (published) vectors, sorted."""
        points = self._local_points()
        if points is not None:
            return sorted(points.payload[r]["id"] for r in local.rows(points, None, None))
        records = self._scroll(self.collection, self._live_filter(None, None), payload=["id"])
        return sorted(r.payload["id"] for r in records)

    @locked
    def scopes(self) -> list[str]:
        """The scopes that hold live vectors (Qdrant's facet count over the scope field)."""
        found = self._c.facet(self.collection, key="scope", exact=True, limit=100_000,
                              facet_filter=self._live_filter(None, None))
        return sorted(str(hit.value) for hit in found.hits)

    @locked
    def _matching(self, filters: dict[str, Any], limit: int | None) -> list[str]:
        """Qdrant narrows by each string, boolean, number and null value; every value is
        then compared as a JSON value (:func:`~..base.metadata_matches`), by id."""
        flt = self._live_filter(None, None)
        flt.must = [self._json_condition(key, value) for key, value in filters.items()
                    if key != "text" and not isinstance(value, (list, dict))
                    and not _past_float_precision(value)] or None
        payloads = [r.payload for r in self._scroll(self.collection, flt)]
        found = sorted(p["id"] for p, old in zip(payloads, self._stale(payloads))
                       if not old and metadata_matches(metadata_of(p), filters))
        return found[:limit]

    def _json_condition(self, key: str, value: Any) -> Any:
        m = self._m
        field = f"metadata.{key}"
        if value is None:
            return m.IsNullCondition(is_null=m.PayloadField(key=field))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return m.FieldCondition(key=field, range=m.Range(gte=value, lte=value))
        return eq(m, field, value)

    def count(self, filters: Mapping[str, Any] | None = None) -> int:
        """Live vectors (staged ones are not counted until published); with ``filters``,
        the live points :meth:`find` would find."""
        if filters:
            return self._count_matching(filters)
        points = self._local_points()
        if points is not None:
            return len(local.rows(points, None, None))
        return int(self._c.count(self.collection, count_filter=self._live_filter(None, None),
                                 exact=True).count)


def _past_float_precision(value: Any) -> bool:
    """An integer a float cannot hold exactly (beyond 2**53): Qdrant's range condition takes
    floats, so such a value is compared in Python only, exactly."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53
