"""The connection to Qdrant and the store's collections: opening, identity, writes, deletes,
and reads by id."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from trails import deadline
from trails._lazy import require
from trails.errors import (
    ConfigurationError,
    DimensionMismatchError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from trails.faults import translated
from trails.resilience import Resilience, public_url
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores import arguments
from trails.vector.stores.base import BaseVectorStore, StoredVector, metadata_matches
from trails.vector.stores.qdrant import local, schema
from trails.vector.stores.qdrant.faults import GuardedClient
from trails.vector.stores.qdrant.lock import SharedFolders, locked
from trails.vector.stores.qdrant.schema import KEYWORD_FIELD, PAGE, eq, metadata_of, point_id

__all__ = ["QdrantCore"]

_PROMOTED = ("doc_iri", "scope")  # delete_where compares these fields directly
DEFAULT_TIMEOUT = 5  # seconds: qdrant-client's own timeout of a REST request


class QdrantCore(BaseVectorStore):
    """What every part of ``QdrantStore`` builds on: the client (``_c``), qdrant-client's
    models (``_m``), the collection names, the lock every request holds (``_lock``) and
    whether the client runs in local mode (``local``)."""

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
        timeout: int | None = None,
        resilience: Resilience | Mapping[str, Any] | None = None,
    ) -> None:
        arguments.check_dim(dim)
        if not isinstance(collection, str) or not collection.strip() or "/" in collection:
            raise (InvalidArgumentError if isinstance(collection, str) else InvalidArgumentTypeError)(
                f"collection must be a non-empty str without '/' (a Qdrant collection name), "
                f"got {collection!r:.80}")
        qdrant = require("qdrant_client", "QdrantStore")
        self.timeout = timeout
        self.resilience = Resilience.from_settings(resilience)
        # host= alone speaks plain http (the client's default).
        self.resilience.check_url("the Qdrant server", url or (f"http://{host}" if host else None))
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
            raise InvalidArgumentError(
                f"pass at most one of url=, host=, path=, client=; got {given}")
        if (api_key is not None or port is not None) and (path is not None or client is not None
                                                           or not given):
            raise InvalidArgumentError(
                "api_key= and port= apply to a server given by url= or host=")
        self._owns_client = client is None
        self._lock = threading.RLock()
        policy: Resilience | None = None  # a server's only: local mode has no network
        if client is not None:
            self._client, self.location = client, "client"
        elif path is not None:
            self.location = os.fspath(path)
            if self.read_only and not os.path.exists(os.path.join(self.location, "meta.json")):
                raise ConfigurationError(
                    f"cannot open Qdrant folder {self.location!r} read-only: it holds no store "
                    "yet; open it once without read_only=True to create it")
            with translated(self.location, "opening the Qdrant folder"):
                self._client, self._lock, self._shared = SharedFolders.acquire(qdrant,
                                                                               self.location)
        elif url is not None or host is not None:
            # Shown in messages, repr, GET /health and trails.json: never a user:password@.
            self.location = public_url(url) if url is not None else f"{host}:{port or 6333}"
            options: dict[str, Any] = {} if port is None else {"port": port}
            if self.timeout is not None:
                options["timeout"] = self.timeout
            # The client's timeout bounds each read; the transport bounds each request in all.
            endpoint = url or f"http://{host}:{port or 6333}"
            options["transport"] = deadline.transport(self.timeout or DEFAULT_TIMEOUT, endpoint)
            self._client = qdrant.QdrantClient(url=url, host=host, api_key=api_key, **options)
            policy = self.resilience
        else:
            if self.read_only:
                raise ConfigurationError(
                    "cannot open an in-memory QdrantStore read-only: it would always be empty")
            self.location = ":memory:"
            self._client = qdrant.QdrantClient(":memory:")
        # Local mode scores every point by brute force (it warns that search_params, exact
        # included, "have no effect"): its searches are always exhaustive.
        self.local = local.is_local(self._client)
        self._guarded = GuardedClient(self._client, self.location, policy)

    @property
    def name(self) -> str:
        return f"qdrant:{self.collection}@{self.location}"

    @property
    def _label(self) -> str:
        return self.name

    @property
    def _c(self) -> Any:
        """The client, its failures raised as trails' errors (:mod:`.faults`)."""
        if self._closed:
            raise ConfigurationError(f"vector store {self.name!r} is closed; open a new one")
        return self._guarded

    # -- schema and identity --------------------------------------------------------------

    def _prepare(self, dim: int | None) -> int:
        meta = (schema.read_meta(self._c, self.versions_collection)
                if self._c.collection_exists(self.versions_collection) else None)
        if self._c.collection_exists(self.collection):
            if meta is None:
                raise ConfigurationError(
                    f"Qdrant collection {self.collection!r} at {self.location} exists but is not "
                    "a trails vector store; choose another collection name")
            stored = int(meta["dim"])
            if dim is not None and dim != stored:
                raise DimensionMismatchError(
                    f"vector store {self.name!r} holds {stored}-dimensional vectors but "
                    f"dim={dim} was requested; use an embedder of dimension {stored} or a new "
                    "collection")
            schema.check_existing(self._c, self._m, self.collection, stored, self.read_only)
            return stored
        if self.read_only:
            raise ConfigurationError(
                f"cannot open vector store {self.name!r} read-only: it does not exist yet; open "
                "it once without read_only=True to create it")
        if dim is None or dim < 1:
            raise ConfigurationError(
                f"a new vector store needs its dimension: pass dim=... (got {dim!r})")
        schema.create(self._c, self._m, self.collection, self.versions_collection, dim)
        return dim

    @property
    @locked
    def embedder_identity(self) -> EmbedderIdentity | None:
        if self._identity is None:  # once recorded, an identity never changes
            raw = (schema.read_meta(self._c, self.versions_collection) or {}).get("embedder")
            self._identity = None if raw is None else EmbedderIdentity.model_validate(raw)
        return self._identity

    bind_embedder = locked(BaseVectorStore.bind_embedder)

    def _record_embedder(self, identity: EmbedderIdentity) -> None:
        self._c.set_payload(self.versions_collection, wait=True, points=[schema.META_ID],
                            payload={"embedder": identity.model_dump(mode="json")})
        self._identity = identity

    # -- writes ---------------------------------------------------------------------------

    @locked
    def _write(self, ids: list[str], unit: np.ndarray, metas: list[dict[str, Any]],
               pending: bool) -> None:
        """``add_many``: one Qdrant request per 1,000 points (each as atomic as Qdrant makes
        it)."""
        points = [self._m.PointStruct(id=point_id(i), vector=v.tolist(),
                                      payload=schema.payload(i, m, pending))
                  for i, v, m in zip(ids, unit, metas)]
        for start in range(0, len(points), PAGE):
            self._c.upsert(self.collection, points=points[start : start + PAGE], wait=True)

    @locked
    def _delete_matching(self, filters: Mapping[str, Any]) -> int:
        """Points whose ``doc_iri``/``scope`` fields and metadata equal ``filters`` (scalars,
        checked by ``delete_where``; ``None`` matches nothing). Qdrant's conditions shortlist
        (a match also admits an array holding the value, a range ``true``...); the metadata
        then decides as JSON values (:func:`~..base.metadata_matches`)."""
        conditions = [self._condition(key, value) for key, value in filters.items()
                      if key != "text"]
        self._check_writable()
        if any(c is None for c in conditions):
            return 0
        rest = {k: v for k, v in filters.items() if k not in _PROMOTED}
        fields = ["id", "metadata", KEYWORD_FIELD, "text_given"] if rest else ["id"]
        records: Iterable[Any] = self._scroll(self.collection, self._m.Filter(
            must=conditions or None), payload=fields)
        return self._delete_ids([r.payload["id"] for r in records
                                 if metadata_matches(metadata_of(r.payload), rest)])

    def _condition(self, key: str, value: Any) -> Any:
        m = self._m
        if value is None:
            return None
        if key in _PROMOTED or isinstance(value, (str, bool)):
            return eq(m, key if key in _PROMOTED else f"metadata.{key}", value)
        # a number: compared by value (1 == 1.0), as SQLite's json does
        return m.FieldCondition(key=f"metadata.{key}", range=m.Range(gte=value, lte=value))

    @locked
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

    # -- reads by id ----------------------------------------------------------------------

    @locked
    def get(self, ids: Iterable[str]) -> list[StoredVector]:
        """Stored vectors (unit-normalised) and metadata for the ids that exist, in input order."""
        wanted = list(arguments.check_ids(ids))
        unique = list(dict.fromkeys(point_id(i) for i in wanted))
        found = {}
        for start in range(0, len(unique), PAGE):
            for r in self._c.retrieve(self.collection, unique[start : start + PAGE],
                                      with_payload=True, with_vectors=True):
                vector = np.asarray(r.vector, dtype=np.float32).tolist()
                found[r.payload["id"]] = StoredVector(r.payload["id"], vector,
                                                      metadata_of(r.payload))
        return [found[i] for i in wanted if i in found]

    def _scroll(self, collection: str, flt: Any, payload: Any = True) -> Iterator[Any]:
        offset = None
        while True:
            records, offset = self._c.scroll(collection, scroll_filter=flt, limit=PAGE,
                                             offset=offset, with_payload=payload)
            yield from records
            if offset is None:
                return

    def close(self) -> None:
        """Release the client (a shared local folder's client when its last store closes)."""
        if self._closed or not hasattr(self, "_client"):
            return
        self._closed = True
        if self._shared is not None:
            SharedFolders.release(self._shared)
        elif self._owns_client:
            self._client.close()
