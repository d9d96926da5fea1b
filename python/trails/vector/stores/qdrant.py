"""QdrantStore: the scale vector store, on a Qdrant server or cluster, or in qdrant-client's
local mode (in-process, in memory or in a folder) for tests and small data.

How it keeps the promises of ``SqliteVecStore`` (ADR 0001, 0002, 0005):

- **Point ids.** A vector id (a chunk IRI) is not a valid Qdrant point id, so each point's id is
  ``uuid5(POINT_NAMESPACE, id)`` (:func:`point_id`): the same in every process. The payload keeps
  the string ``id``, the user ``metadata`` and promoted, indexed fields ``doc_iri``, ``scope``,
  ``version``, ``pending`` (plus ``versioned``, set on points written through staging).
- **Same vectors, same scores.** Vectors are validated and unit-normalised exactly as
  SqliteVecStore does and stored as those float32 values in a ``Dot`` collection. (A ``Cosine``
  collection would normalise them a second time in float32, moving ~10% of them by an ulp and
  scores by up to ~2e-8; on unit vectors the two distances are the same similarity.) Every hit is
  re-scored in float64 from its stored vector with the same code as ``VectorMatrix`` and sorted by
  ``(-score, id)``, so both stores return bit-identical scores and the same ties-by-id order.
- **Filter first, exactly.** Candidate IRIs go into the query's filter (``HasId`` on the point
  ids, ``MatchAny`` on ``doc_iri`` for document IRIs), with ``pending`` excluded and scopes as a
  ``MatchAny`` on ``scope``. Qdrant is asked for ``k + OVERFETCH`` points and for more while
  the k-th float64 score is within the float32 error bound of the last one returned, so a point
  Qdrant left out can never belong to the top k. Up to ``EXACT_THRESHOLD`` eligible points the
  query runs with ``SearchParams(exact=True)`` (exhaustive); above it a server uses its HNSW
  index (``exhaustive=False``) and falls back to exact search when the index returns a short
  list. qdrant-client's local mode always searches by brute force, so it is always exhaustive.
- **Local mode filters in numpy.** qdrant-client's local mode checks a filter in Python, point
  by point, walking the candidate lists for each point (seconds per pass at 100,000 points).
  There the store reads the in-process collection's payloads and float32 vectors itself,
  applies the same rules, scores every eligible point with one BLAS product and re-scores the
  possible top k in float64: the same hits, scores and plans as the filter path
  (tests/test_qdrant_local.py), in milliseconds. A server still gets the filter.
- **Versions.** ``<collection>__versions`` holds one point per document (its current version)
  and one for the store itself (dimension, embedder identity). See :meth:`QdrantStore.publish`.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import threading
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from trails._lazy import require
from trails.errors import ConfigurationError, ContextLockedError, DimensionMismatchError
from trails.rank.keyword import keyword_terms
from trails.scopes import DEFAULT_SCOPE
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores.matrix import _exact_cosine
from trails.vector.stores.base import (
    BaseVectorStore,
    DocumentVersion,
    SearchPlan,
    StoredVector,
    VectorHit,
    VectorLike,
    optional_str,
)

__all__ = ["EXACT_THRESHOLD", "KEYWORD_FIELD", "OVERFETCH", "POINT_NAMESPACE", "QdrantStore",
           "point_id"]

# uuid5(NAMESPACE_URL, "https://trails.dev/ns#qdrant-point-id"); fixed forever: it names every point.
POINT_NAMESPACE = uuid.UUID("bbf8736e-dca4-5306-b713-ba6fa5f3392c")
# Up to this many eligible points a query runs with exact=True on a server.
EXACT_THRESHOLD = 10_000
# Points fetched beyond k, so near ties at the k-th place can be ordered in float64.
OVERFETCH = 16
_PAGE = 1_000  # scroll page and write batch size
_FORMAT = 1
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PROMOTED = ("doc_iri", "scope")  # delete_where compares these fields directly
# The payload field holding a point's text (its metadata "text", else its snippet), indexed
# for BM25 (keyword_search).
KEYWORD_FIELD = "keyword_text"

F = TypeVar("F", bound=Callable[..., Any])


def point_id(key: str) -> str:
    """The Qdrant point id of a vector id (or of a document's version record): a UUID string.

    >>> point_id("trails://local/doc/a/v/1/c/0") == point_id("trails://local/doc/a/v/1/c/0")
    True
    """
    return str(uuid.uuid5(POINT_NAMESPACE, key))


# A space cannot occur in an IRI, so no document's version record can take this id.
_META_ID = point_id(" trails store")


def _locked(method: F) -> F:
    @functools.wraps(method)
    def wrapper(self: QdrantStore, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class _LocalClients:
    """qdrant-client's local mode locks its folder for one client, even within a process, so
    stores opened on the same path in one process share one client (and one lock)."""

    _open: ClassVar[dict[str, list[Any]]] = {}  # realpath -> [client, users, lock]
    _guard = threading.Lock()

    @classmethod
    def acquire(cls, qdrant: Any, path: str) -> tuple[Any, threading.RLock, str]:
        key = os.path.realpath(path)
        with cls._guard:
            entry = cls._open.get(key)
            if entry is None:
                entry = cls._open[key] = [cls._open_folder(qdrant, key), 0, threading.RLock()]
            entry[1] += 1
            return entry[0], entry[2], key

    @classmethod
    def _open_folder(cls, qdrant: Any, path: str) -> Any:
        cls._check_unlocked(path)  # qdrant-client leaks the lock file when it finds it locked
        try:
            return qdrant.QdrantClient(path=path)
        except RuntimeError as exc:
            if "already accessed" not in str(exc):
                raise
            raise _locked_folder(path) from exc

    @staticmethod
    def _check_unlocked(path: str) -> None:
        lock = os.path.join(path, ".lock")
        if not os.path.exists(lock):
            return
        import portalocker  # qdrant-client's own dependency for this very lock

        with open(lock, "r+") as handle:
            try:
                portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE
                                 | portalocker.LockFlags.NON_BLOCKING)
            except portalocker.exceptions.LockException as exc:
                raise _locked_folder(path) from exc
            portalocker.unlock(handle)

    @classmethod
    def release(cls, key: str) -> None:
        with cls._guard:
            entry = cls._open.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    del cls._open[key]
                    entry[0].close()


class QdrantStore(BaseVectorStore):
    """Vectors in a Qdrant collection, searched exactly over SPARQL candidate sets.

    One constructor argument picks where the data lives: nothing for qdrant-client's in-process
    ``:memory:`` mode, ``path=`` for a local folder, ``url=`` (or ``host=``/``port=``) for a
    server or cluster, or ``client=`` for a ``QdrantClient`` you configured yourself (it is not
    closed by :meth:`close`). The store uses two collections: ``collection`` for the vectors and
    ``<collection>__versions`` for the document versions and the store's own record.

    Args:
        collection: the Qdrant collection name.
        dim: vector dimension; required for a new store, checked against an existing one.
        url, host, port, api_key: a Qdrant server (``api_key`` for Qdrant Cloud).
        path: a folder for qdrant-client's local mode (one process at a time).
        embedder: optional identity to record (new store) or check (existing store).
        read_only: open an existing store without writing to it.
        client: an existing ``qdrant_client.QdrantClient``.

    Raises:
        DimensionMismatchError: ``dim`` differs from the store's dimension.
        EmbeddingModelMismatchError: ``embedder`` differs from the recorded identity.
        ConfigurationError: a missing store opened read-only, or a collection trails did not make.
        ContextLockedError: ``path=`` is open in another process (local mode's folder lock).
        MissingExtraError: qdrant-client is not installed (``pip install "trails[vector-qdrant]"``).

    >>> store = QdrantStore(dim=3)
    >>> store.add("a", [1.0, 0.0, 0.0], {"snippet": "x"})
    >>> [hit.id for hit in store.search([1.0, 0.1, 0.0], k=1)]
    ['a']
    """

    _new_home = "a new collection"

    def __init__(
        self,
        collection: str = "trails",
        dim: int | None = None,
        *,
        url: str | None = None,
        host: str | None = None,
        port: int | None = None,
        path: str | os.PathLike[str] | None = None,
        api_key: str | None = None,
        embedder: EmbedderIdentity | None = None,
        read_only: bool = False,
        client: Any = None,
    ) -> None:
        qdrant = require("qdrant_client", "QdrantStore")
        self._m = qdrant.models
        self.collection = collection
        self.versions_collection = f"{collection}__versions"
        self.read_only = read_only
        self._closed = False
        self._shared: str | None = None
        self._identity: EmbedderIdentity | None = None
        self._connect(qdrant, url, host, port, path, api_key, client)
        try:
            with self._lock:
                self._dim = self._prepare(dim)
                if embedder is not None:
                    self.bind_embedder(embedder)
        except BaseException:
            self.close()
            raise

    def _connect(self, qdrant: Any, url: str | None, host: str | None, port: int | None,
                 path: str | os.PathLike[str] | None, api_key: str | None, client: Any) -> None:
        given = [n for n, v in (("url", url), ("host", host), ("path", path), ("client", client))
                 if v is not None]
        if len(given) > 1:
            raise ValueError(f"pass at most one of url=, host=, path=, client=; got {given}")
        if (api_key is not None or port is not None) and (path is not None or client is not None
                                                           or not given):
            raise ValueError("api_key= and port= apply to a server given by url= or host=")
        self._owns_client = client is None
        self._lock = threading.RLock()
        if client is not None:
            self._client, self.location = client, "client"
        elif path is not None:
            self.location = os.fspath(path)
            if self.read_only and not os.path.exists(os.path.join(self.location, "meta.json")):
                raise ConfigurationError(
                    f"cannot open Qdrant folder {self.location!r} read-only: it holds no store "
                    "yet; open it once without read_only=True to create it")
            self._client, self._lock, self._shared = _LocalClients.acquire(qdrant, self.location)
        elif url is not None or host is not None:
            self.location = url if url is not None else f"{host}:{port or 6333}"
            options = {} if port is None else {"port": port}
            self._client = qdrant.QdrantClient(url=url, host=host, api_key=api_key, **options)
        else:
            if self.read_only:
                raise ConfigurationError(
                    "cannot open an in-memory QdrantStore read-only: it would always be empty")
            self.location = ":memory:"
            self._client = qdrant.QdrantClient(":memory:")
        from qdrant_client.local.qdrant_local import QdrantLocal

        # Local mode scores every point by brute force (it warns that search_params, exact
        # included, "have no effect"): its searches are always exhaustive.
        self.local = isinstance(getattr(self._client, "_client", None), QdrantLocal)

    @property
    def name(self) -> str:
        return f"qdrant:{self.collection}@{self.location}"

    @property
    def _label(self) -> str:
        return self.name

    @property
    def _c(self) -> Any:
        if self._closed:
            raise ConfigurationError(f"vector store {self.name!r} is closed; open a new one")
        return self._client

    # -- schema and identity --------------------------------------------------------------

    def _prepare(self, dim: int | None) -> int:
        meta = self._read_meta() if self._c.collection_exists(self.versions_collection) else None
        if self._c.collection_exists(self.collection):
            if meta is None:
                raise ConfigurationError(
                    f"Qdrant collection {self.collection!r} at {self.location} exists but is not "
                    "a trails vector store; choose another collection name")
            return self._check_existing(meta, dim)
        if self.read_only:
            raise ConfigurationError(
                f"cannot open vector store {self.name!r} read-only: it does not exist yet; open "
                "it once without read_only=True to create it")
        if dim is None or dim < 1:
            raise ConfigurationError(
                f"a new vector store needs its dimension: pass dim=... (got {dim!r})")
        self._create(dim)
        return dim

    def _check_existing(self, meta: dict[str, Any], dim: int | None) -> int:
        stored = int(meta["dim"])
        if dim is not None and dim != stored:
            raise DimensionMismatchError(
                f"vector store {self.name!r} holds {stored}-dimensional vectors but dim={dim} "
                f"was requested; use an embedder of dimension {stored} or a new collection")
        info = self._c.get_collection(self.collection)
        vectors = info.config.params.vectors
        if getattr(vectors, "size", None) != stored or vectors.distance != self._m.Distance.DOT:
            raise ConfigurationError(
                f"Qdrant collection {self.collection!r} is not configured as trails made it "
                f"(one unnamed {stored}-d Dot vector); choose another collection name")
        if KEYWORD_FIELD not in (info.payload_schema or {}) and not self.read_only:
            self._create_keyword_index()  # a collection from before keyword search
        return stored

    def _create(self, dim: int) -> None:
        m = self._m
        if not self._c.collection_exists(self.versions_collection):
            self._c.create_collection(
                self.versions_collection, vectors_config=m.VectorParams(size=1, distance=m.Distance.DOT))
        self._c.upsert(self.versions_collection, wait=True, points=[m.PointStruct(
            id=_META_ID, vector=[1.0],
            payload={"kind": "store", "format": _FORMAT, "dim": dim, "embedder": None})])
        self._c.create_collection(
            self.collection, vectors_config=m.VectorParams(size=dim, distance=m.Distance.DOT))
        with warnings.catch_warnings():  # local mode warns that it keeps no payload indexes
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            for field, schema in (("doc_iri", "KEYWORD"), ("scope", "KEYWORD"),
                                  ("pending", "BOOL")):
                self._c.create_payload_index(self.collection, field,
                                             getattr(m.PayloadSchemaType, schema))
            self._c.create_payload_index(self.versions_collection, "kind",
                                         m.PayloadSchemaType.KEYWORD)
        self._create_keyword_index()

    def _create_keyword_index(self) -> None:
        """A BM25-scored text index on ``KEYWORD_FIELD`` (qdrant-client and server 1.20+).

        Default tokenization (words, lower-cased, no stemming): the only one qdrant-client's
        local mode ranks, so local and server collections rank alike."""
        m = self._m
        if not hasattr(m, "TextQuery"):
            return  # an older qdrant-client: keyword_search explains what to upgrade
        self._c.create_payload_index(self.collection, KEYWORD_FIELD, m.TextIndexParams(
            type=m.TextIndexType.TEXT, scoring=m.TextScoringParams(type=m.TextScoringType.BM25)))

    def _read_meta(self) -> dict[str, Any] | None:
        found = self._c.retrieve(self.versions_collection, [_META_ID], with_payload=True)
        return dict(found[0].payload) if found else None

    @property
    @_locked
    def embedder_identity(self) -> EmbedderIdentity | None:
        if self._identity is None:  # once recorded, an identity never changes
            raw = (self._read_meta() or {}).get("embedder")
            self._identity = None if raw is None else EmbedderIdentity.model_validate(raw)
        return self._identity

    bind_embedder = _locked(BaseVectorStore.bind_embedder)

    def _record_embedder(self, identity: EmbedderIdentity) -> None:
        self._c.set_payload(self.versions_collection, wait=True, points=[_META_ID],
                            payload={"embedder": identity.model_dump(mode="json")})
        self._identity = identity

    # -- writes ---------------------------------------------------------------------------

    @_locked
    def add_many(
        self,
        ids: Sequence[str],
        vectors: Sequence[VectorLike] | np.ndarray,
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
        *,
        pending: bool = False,
    ) -> None:
        """Insert or replace vectors. Every vector is checked before anything is written; the
        write is one Qdrant request per 1,000 points (each as atomic as Qdrant makes it).

        ``pending=True`` stages them: stored, invisible to search until :meth:`publish`."""
        ids, unit, metas = self._checked_batch(ids, vectors, metadata)
        if not ids:
            return
        points = [self._m.PointStruct(id=point_id(i), vector=v.tolist(), payload=_payload(i, m, pending))
                  for i, v, m in zip(ids, unit, metas)]
        for start in range(0, len(points), _PAGE):
            self._c.upsert(self.collection, points=points[start : start + _PAGE], wait=True)

    @_locked
    def publish(self, versions: Sequence[DocumentVersion]) -> None:
        """Make staged document versions current; the version record is the commit point.

        Qdrant has no transaction across requests (nor, for readers, within a batch), so the
        commit point is the one thing it does write atomically: a single point. For each
        document, in three requests:

        1. its staged points of ``version`` are flipped to ``pending=false`` (still hidden:
           a point written through staging is shown only while its document's record names
           its version);
        2. the version record is upserted in ``<collection>__versions`` — the commit point:
           readers switch from the whole old version to the whole new one;
        3. every other point of the document (the previous version, abandoned stagings) is
           deleted.

        A crash (or a reader) between any two requests sees the old version or the new one,
        never part of one; superseded points left by a crash stay hidden and are removed by
        the next ingest or ``verify(repair=True)``.
        """
        self._check_writable()
        if not versions:
            return
        m = self._m
        self._c.batch_update_points(self.collection, wait=True, update_operations=[
            m.SetPayloadOperation(set_payload=m.SetPayload(payload={"pending": False}, filter=m.Filter(
                must=[_eq(m, "doc_iri", v.doc_iri), _eq(m, "version", v.version),
                      _eq(m, "pending", True)])))
            for v in versions])
        self._c.upsert(self.versions_collection, wait=True, points=[
            m.PointStruct(id=point_id(v.doc_iri), vector=[1.0],
                          payload={"kind": "version", **v._asdict()})
            for v in versions])
        self._c.batch_update_points(self.collection, wait=True, update_operations=[
            m.DeleteOperation(delete=m.FilterSelector(filter=m.Filter(
                must=[_eq(m, "doc_iri", v.doc_iri)], must_not=[_eq(m, "version", v.version)])))
            for v in versions])

    @_locked
    def current_versions(self, doc_iris: Iterable[str] | None = None) -> dict[str, DocumentVersion]:
        """The recorded current version of each document (all documents when ``None``)."""
        if doc_iris is None:
            records: Iterable[Any] = self._scroll(
                self.versions_collection, self._m.Filter(must=[_eq(self._m, "kind", "version")]))
        else:
            wanted = list(dict.fromkeys(point_id(d) for d in doc_iris))
            records = self._c.retrieve(self.versions_collection, wanted, with_payload=True) if wanted else []
        found = {}
        for r in records:
            if r.payload.get("kind") == "version":
                found[r.payload["doc_iri"]] = DocumentVersion(
                    *(r.payload.get(f) for f in DocumentVersion._fields))
        return found

    @_locked
    def document_rows(self, doc_iri: str) -> list[tuple[str, str | None, bool]]:
        """Every point of a document: ``(id, version, pending)``, sorted by id."""
        records = self._scroll(self.collection, self._m.Filter(must=[_eq(self._m, "doc_iri", doc_iri)]))
        return sorted((r.payload["id"], r.payload.get("version"), bool(r.payload.get("pending")))
                      for r in records)

    @_locked
    def managed_rows(self) -> list[tuple[str, str, str | None, bool]]:
        """``(id, doc_iri, version, pending)`` of every point that belongs to a document, by id."""
        m = self._m
        records = self._scroll(self.collection, m.Filter(
            must_not=[m.IsEmptyCondition(is_empty=m.PayloadField(key="doc_iri"))]))
        return sorted((r.payload["id"], r.payload["doc_iri"], r.payload.get("version"),
                       bool(r.payload.get("pending"))) for r in records)

    @_locked
    def pending_ids(self) -> list[str]:
        records = self._scroll(self.collection, self._m.Filter(must=[_eq(self._m, "pending", True)]))
        return sorted(r.payload["id"] for r in records)

    @_locked
    def delete_document(self, doc_iri: str) -> int:
        """Remove every vector of a document and its version record; returns vectors removed.

        The record goes first: from that moment no staged-then-published point of the document
        is shown, whatever happens to the deletes after it."""
        self._check_writable()
        ids = [r[0] for r in self.document_rows(doc_iri)]
        self._c.delete(self.versions_collection, wait=True,
                       points_selector=self._m.PointIdsList(points=[point_id(doc_iri)]))
        return self._delete_ids(ids)

    @_locked
    def delete_where(self, filters: Mapping[str, Any]) -> int:
        """Remove every vector whose metadata equals all of ``filters``; returns how many.

        ``doc_iri`` and ``scope`` compare the promoted fields; other keys compare metadata
        values (strings, numbers or booleans; ``None`` matches nothing).

        >>> store = QdrantStore(dim=2)
        >>> store.add_many(["a", "b"], [[1, 0], [0, 1]], [{"doc_iri": "d1"}, {"doc_iri": "d2"}])
        >>> store.delete_where({"doc_iri": "d1"}), store.count()
        (1, 1)
        """
        if not filters:
            raise ValueError("delete_where needs at least one filter; to empty a store use a new one")
        conditions = [self._condition(key, value) for key, value in filters.items() if key != "text"]
        self._check_writable()
        if any(c is None for c in conditions):
            return 0
        records = self._scroll(self.collection, self._m.Filter(must=conditions or None),
                               payload=["id", KEYWORD_FIELD, "text_given"])
        if "text" in filters:  # stored as the keyword field (see _payload): compared here
            records = (r for r in records if r.payload.get("text_given")
                       and r.payload.get(KEYWORD_FIELD) == filters["text"])
        return self._delete_ids([r.payload["id"] for r in records])

    def _condition(self, key: str, value: Any) -> Any:
        m = self._m
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError(f"metadata key {key!r} must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")
        if key in _PROMOTED:
            return None if value is None else _eq(m, key, str(value))
        if value is None:
            return None
        if isinstance(value, (str, bool)):
            return _eq(m, f"metadata.{key}", value)
        if isinstance(value, (int, float)):  # numbers compare by value, as SQLite's json does
            return m.FieldCondition(key=f"metadata.{key}", range=m.Range(gte=value, lte=value))
        raise ValueError(f"delete_where compares strings, numbers and booleans; got {value!r}")

    @_locked
    def _delete_ids(self, ids: list[str]) -> int:
        self._check_writable()
        wanted = list(dict.fromkeys(point_id(i) for i in ids))
        if not wanted:
            return 0
        found = [r.id for r in self._c.retrieve(self.collection, wanted, with_payload=False)]
        if found:
            self._c.delete(self.collection, wait=True,
                           points_selector=self._m.PointIdsList(points=found))
        return len(found)

    # -- reads ----------------------------------------------------------------------------

    @_locked
    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        # Payloads arrive with the points either way: with_metadata=False saves nothing here.
        named = None if ids is None else (i for i in ids if isinstance(i, str))
        points = self._local_points()
        if points is not None:
            return self._local_search(points, query, k, named, scopes)
        iris = None if named is None else list(dict.fromkeys(named))
        scope_list = None if scopes is None else list(scopes)
        if iris == [] or scope_list == []:
            return [], SearchPlan("qdrant-filtered-exact" if iris is not None else "qdrant-full",
                                  0, True)
        flt = self._live_filter(iris, scope_list)
        candidates = self._c.count(self.collection, count_filter=flt, exact=True).count
        exact = self.local or candidates <= EXACT_THRESHOLD
        if iris is None:
            name = "qdrant-full"
        else:
            name = "qdrant-filtered-exact" if exact else "qdrant-ann+exact-fallback"
        if k == 0 or candidates == 0:
            return [], SearchPlan(name, candidates, exact)
        ranked, exact = self._top_k(query, k, flt, candidates, exact)
        hits = [VectorHit(p.payload["id"], score, _metadata_of(p.payload))
                for p, score in ranked]
        return hits, SearchPlan(name, candidates, exhaustive=exact)

    def _live_filter(self, iris: list[str] | None, scopes: list[str] | None) -> Any:
        m = self._m
        must = []
        if iris is not None:
            must.append(m.Filter(should=[
                m.HasIdCondition(has_id=[point_id(i) for i in iris]),
                m.FieldCondition(key="doc_iri", match=m.MatchAny(any=iris))]))
        if scopes is not None:
            must.append(m.FieldCondition(key="scope", match=m.MatchAny(any=scopes)))
        return m.Filter(must=must or None, must_not=[_eq(m, "pending", True)])

    def _top_k(self, query: np.ndarray, k: int, flt: Any, candidates: int,
               exact: bool) -> tuple[list[tuple[Any, float]], bool]:
        """The exact top-k of the points ``flt`` admits, as ``[(point, score)]``.

        Any point Qdrant did not return scores (in its float32) at most the lowest one it
        did, so in float64 at most ``lowest + 2·err``; while the k-th score is not above that,
        or superseded points were dropped, or an HNSW answer came back short, ask again.
        """
        m = self._m
        err = (self._dim + 2) * 2.0**-23  # float32 dot of two unit vectors vs. float64
        limit, hidden = min(k + OVERFETCH, candidates), set()
        q32 = query.astype(np.float32).tolist()
        while True:
            admit = flt if not hidden else m.Filter(
                must=flt.must, must_not=[*flt.must_not, m.HasIdCondition(has_id=sorted(hidden))])
            points = self._query(q32, admit, limit, exact)
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
        return self._c.query_points(
            self.collection, query=q32, query_filter=flt, limit=limit, with_payload=True,
            with_vectors=True, search_params=params).points

    def _superseded(self, records: Sequence[Any]) -> set[str]:
        """Point ids among ``records`` of versions that are not (or no longer) current."""
        stale = self._stale([r.payload for r in records])
        return {str(r.id) for r, old in zip(records, stale) if old}

    def _stale(self, payloads: Sequence[Mapping[str, Any]]) -> list[bool]:
        """For each payload: is it a point of a version that is not (or no longer) current?"""
        docs = {p.get("doc_iri") for p in payloads if p.get("versioned")}
        current = self.current_versions(docs) if docs else {}
        return [bool(p.get("versioned")) and (p.get("doc_iri") not in current or
                                               current[p["doc_iri"]].version != p.get("version"))
                for p in payloads]

    # -- local mode: the filter and the scoring in numpy ----------------------------------

    def _local_points(self) -> Any:
        """The in-process collection behind qdrant-client's local mode, or None (a server, or a
        qdrant-client that keeps its points otherwise).

        Local mode checks a filter in Python, point by point, and ``MatchAny``/``HasId`` walk
        their whole lists for each point: seconds per pass at 100,000 points. So local mode
        reads the collection's own ``payload`` list, ``deleted`` mask and float32 ``vectors``
        (under the store's lock) and applies :meth:`_live_filter`'s rules itself.
        """
        if not self.local:
            return None
        points = getattr(getattr(self._c, "_client", None), "collections", {}).get(self.collection)
        if not (isinstance(getattr(points, "payload", None), list)
                and isinstance(getattr(points, "deleted", None), np.ndarray)
                and isinstance(getattr(points, "vectors", {}).get(""), np.ndarray)):
            return None
        return points

    @staticmethod
    def _local_rows(points: Any, iris: set[str] | None, scopes: set[str] | None) -> np.ndarray:
        """Rows of the points :meth:`_live_filter` admits, ascending: not deleted, not pending,
        named by id (as ``HasId`` on its point id) or by ``doc_iri``, in one of ``scopes``."""
        rows = np.array([r for r, p in enumerate(points.payload)
                         if (iris is None or p.get("id") in iris or p.get("doc_iri") in iris)
                         and (scopes is None or p.get("scope") in scopes)
                         and p.get("pending") is not True], dtype=np.intp)
        return rows[points.deleted[rows] == 0]  # an int array once points are appended

    def _local_search(self, points: Any, query: np.ndarray, k: int, iris: Iterable[str] | None,
                      scopes: Iterable[str] | None) -> tuple[list[VectorHit], SearchPlan]:
        """:meth:`_search_unit` on local mode's own arrays: the same hits, scores and plan.

        Every eligible point is scored in float32 (one BLAS product), those that may belong to
        the top k (within twice the float32 error bound of the k-th) are checked for superseded
        versions and re-scored in float64 with ``VectorMatrix``'s function, ties by id."""
        wanted = None if iris is None else set(iris)
        scope_set = None if scopes is None else set(scopes)
        name = "qdrant-full" if wanted is None else "qdrant-filtered-exact"
        if wanted == set() or scope_set == set():
            return [], SearchPlan(name, 0, True)
        rows = self._local_rows(points, wanted, scope_set)
        plan = SearchPlan(name, len(rows), True)
        if k == 0 or not len(rows):
            return [], plan
        vectors, payloads = points.vectors[""], points.payload
        q32 = query.astype(np.float32)
        if 8 * len(rows) >= len(payloads):  # a gather copies the rows: slower beyond ~1/8
            scores = (vectors[: len(payloads)] @ q32)[rows]
        else:
            scores = vectors[rows] @ q32
        margin = 2 * (self._dim + 2) * 2.0**-23  # twice the float32 error bound (as _top_k)
        while True:
            short = rows[_shortlist(scores, k, margin)]
            stale = self._stale([payloads[r] for r in short])
            if not any(stale):
                break
            keep = ~np.isin(rows, short[np.array(stale)])
            rows, scores = rows[keep], scores[keep]
        exact = _exact_cosine(vectors[short], query).tolist()
        ranked = sorted(zip((payloads[r]["id"] for r in short), exact, short.tolist()),
                        key=lambda t: (-t[1], t[0]))[:k]
        return [VectorHit(id, score, _metadata_of(copy.deepcopy(payloads[r])))
                for id, score, r in ranked], plan

    @_locked
    def keyword_search(
        self,
        query: str,
        k: int = 10,
        ids: Iterable[str] | None = None,
        *,
        scopes: Sequence[str] | None = None,
        stopwords: Iterable[str] | None = None,
        with_metadata: bool = True,  # payloads come with the points: nothing to save
    ) -> list[VectorHit]:
        """Top-``k`` live points by BM25 over their text (Qdrant's text index), optionally
        over ``ids``; ``ids``, ``scopes`` and ``stopwords`` as in ``SqliteVecStore``.

        The candidates, scopes and liveness go into the query's filter exactly as in
        :meth:`search`; scores are Qdrant's BM25 (default tokenization, no stemming; statistics
        of every point holding text, staged ones included), sorted descending, ties by id.

        Raises:
            ConfigurationError: qdrant-client (or the server) predates text-index scoring.
        """
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        m = self._m
        if not hasattr(m, "TextQuery"):
            raise ConfigurationError(
                "keyword_search on Qdrant needs qdrant-client 1.20 or later (and a 1.20+ server):"
                ' pip install -U "trails[vector-qdrant]"')
        terms = keyword_terms(query, stopwords)
        iris = None if ids is None else list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        scope_list = None if scopes is None else list(scopes)
        if not terms or k == 0 or iris == [] or scope_list == []:
            return []
        text = m.TextQuery(text=" ".join(terms))
        points = self._local_points()
        if points is not None:
            return self._local_keyword(points, text, k, iris, scope_list)
        flt, limit, hidden = self._live_filter(iris, scope_list), k + OVERFETCH, set()
        while True:
            admit = flt if not hidden else m.Filter(
                must=flt.must, must_not=[*flt.must_not, m.HasIdCondition(has_id=sorted(hidden))])
            points = self._c.query_points(self.collection, query=text, using=KEYWORD_FIELD,
                                          query_filter=admit, limit=limit, with_payload=True).points
            stale = self._superseded(points)
            if stale:
                hidden |= stale
                continue
            ranked = sorted(((p.payload["id"], float(p.score), p) for p in points),
                            key=lambda r: (-r[1], r[0]))
            # Done when every match is here, or the k-th score beats the last one returned (a
            # point left out cannot tie with it, so the order by id is settled).
            if len(points) < limit or ranked[min(k, len(ranked)) - 1][1] > ranked[-1][1]:
                return [VectorHit(id, score, _metadata_of(p.payload)) for id, score, p in ranked[:k]]
            limit *= 2

    def _local_keyword(self, points: Any, text: Any, k: int, iris: list[str] | None,
                       scopes: list[str] | None) -> list[VectorHit]:
        """:meth:`keyword_search` in local mode: the same hits and scores.

        qdrant-client ranks every matching point in one query without a filter (with one, it
        would check it point by point, and again for each larger ``limit``); the points
        :meth:`_live_filter` admits are picked from that ranking, superseded ones dropped."""
        ranking = self._c.query_points(self.collection, query=text, using=KEYWORD_FIELD,
                                       limit=max(1, len(points.payload)),
                                       with_payload=["id"]).points
        rows = self._local_rows(points, None if iris is None else set(iris),
                                None if scopes is None else set(scopes))
        row_of = {points.payload[r]["id"]: r for r in rows}
        ranked = sorted(((p.payload["id"], float(p.score)) for p in ranking
                         if p.payload["id"] in row_of), key=lambda hit: (-hit[1], hit[0]))
        hits: list[VectorHit] = []
        for start in range(0, len(ranked), k + OVERFETCH):  # stale points only in this part
            part = ranked[start : start + k + OVERFETCH]
            payloads = [points.payload[row_of[id]] for id, _ in part]
            hits += [VectorHit(id, score, _metadata_of(copy.deepcopy(p)))
                     for (id, score), p, old in zip(part, payloads, self._stale(payloads))
                     if not old]
            if len(hits) >= k:
                break
        return hits[:k]

    @_locked
    def expand_ids(self, iris: Iterable[str]) -> list[str]:
        """Live vector ids named by ``iris``: the ids themselves, or the chunks of document IRIs."""
        wanted = list(dict.fromkeys(i for i in iris if isinstance(i, str)))
        if not wanted:
            return []
        points = self._local_points()
        if points is not None:
            payloads = [points.payload[r] for r in self._local_rows(points, set(wanted), None)]
        else:
            payloads = [r.payload for r in self._scroll(
                self.collection, self._live_filter(wanted, None),
                payload=["id", "doc_iri", "version", "versioned"])]
        return sorted(p["id"] for p, old in zip(payloads, self._stale(payloads)) if not old)

    @_locked
    def get(self, ids: Iterable[str]) -> list[StoredVector]:
        """Stored vectors (unit-normalised) and metadata for the ids that exist, in input order."""
        wanted = list(ids)
        unique = list(dict.fromkeys(point_id(i) for i in wanted if isinstance(i, str)))
        found = {}
        for start in range(0, len(unique), _PAGE):
            for r in self._c.retrieve(self.collection, unique[start : start + _PAGE],
                                      with_payload=True, with_vectors=True):
                vector = np.asarray(r.vector, dtype=np.float32).tolist()
                found[r.payload["id"]] = StoredVector(r.payload["id"], vector,
                                                      _metadata_of(r.payload))
        return [found[i] for i in wanted if i in found]

    @_locked
    def all_ids(self) -> list[str]:
        """Ids of live (published) vectors, sorted."""
        points = self._local_points()
        if points is not None:
            return sorted(points.payload[r]["id"] for r in self._local_rows(points, None, None))
        records = self._scroll(self.collection, self._live_filter(None, None), payload=["id"])
        return sorted(r.payload["id"] for r in records)

    @_locked
    def count(self) -> int:
        """Live vectors (staged ones are not counted until published)."""
        points = self._local_points()
        if points is not None:
            return len(self._local_rows(points, None, None))
        return self._c.count(self.collection, count_filter=self._live_filter(None, None),
                             exact=True).count

    def _scroll(self, collection: str, flt: Any, payload: Any = True) -> Iterator[Any]:
        offset = None
        while True:
            records, offset = self._c.scroll(collection, scroll_filter=flt, limit=_PAGE,
                                             offset=offset, with_payload=payload)
            yield from records
            if offset is None:
                return

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the client (a shared local folder's client when its last store closes)."""
        if self._closed or not hasattr(self, "_client"):
            return
        self._closed = True
        if self._shared is not None:
            _LocalClients.release(self._shared)
        elif self._owns_client:
            self._client.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"count={self.count()}"
        return (f"<QdrantStore collection={self.collection!r} location={self.location!r} "
                f"dim={self._dim} {state}>")


def _locked_folder(path: str) -> ContextLockedError:
    return ContextLockedError(
        f"Qdrant folder {path!r} is open in another process, and qdrant-client's local mode "
        "allows one process per folder; close it there, or serve the data from a Qdrant "
        "server (url=...)")


def _shortlist(scores: np.ndarray, k: int, margin: float) -> np.ndarray:
    """Indices of ``scores`` (float32) that may belong to the exact top ``k``: every score
    within ``margin`` of the k-th largest (all of them when there are at most k)."""
    if len(scores) <= k:
        return np.arange(len(scores))
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    return np.flatnonzero(scores >= kth - margin)


def _eq(m: Any, key: str, value: Any) -> Any:
    return m.FieldCondition(key=key, match=m.MatchValue(value=value))


def _payload(id: str, metadata: dict[str, Any], pending: bool) -> dict[str, Any]:
    """The point payload: the id, the metadata (through JSON, as SqliteVecStore stores it) and
    the promoted fields that filters use.

    A string ``text`` in the metadata is stored once, as ``KEYWORD_FIELD`` (the BM25-indexed
    text), and put back into the metadata when read; without one the snippet is indexed."""
    text = metadata.get("text")
    given = isinstance(text, str)
    if given:
        metadata = {key: value for key, value in metadata.items() if key != "text"}
    else:
        text = metadata.get("snippet")
    return {
        "id": id,
        "metadata": json.loads(json.dumps(metadata, default=str)),
        KEYWORD_FIELD: text if isinstance(text, str) else None,
        "text_given": given,
        "doc_iri": optional_str(metadata.get("doc_iri")),
        "scope": str(metadata.get("scope") or DEFAULT_SCOPE),
        "version": optional_str(metadata.get("version")),
        "pending": pending,
        "versioned": pending,  # written through staging: shown only while its version is current
    }


def _metadata_of(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A point's metadata as the caller gave it (``text`` back from the keyword field)."""
    metadata = dict(payload.get("metadata") or {})
    if payload.get("text_given"):
        metadata["text"] = payload.get(KEYWORD_FIELD)
    return metadata
