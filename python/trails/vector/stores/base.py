"""The VectorStore protocol, its record types, the checks every store applies to input, and
``BaseVectorStore``, which derives the rest of a store from the few methods a backend writes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import numpy as np

from trails.errors import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    InvalidVectorError,
)
from trails.vector.embedders.base import Embedder, EmbedderIdentity

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "BaseVectorStore",
    "DocumentVersion",
    "SearchPlan",
    "StoredVector",
    "VectorHit",
    "VectorLike",
    "VectorStore",
    "as_matrix",
    "check_compatible",
    "decode",
    "encode",
    "normalize_rows",
    "optional_str",
    "unit_rows",
]

VectorLike = Sequence[float] | np.ndarray


class VectorHit(NamedTuple):
    """One search result: cosine similarity in [-1, 1], higher is better."""

    id: str
    score: float
    metadata: dict[str, Any]


class StoredVector(NamedTuple):
    id: str
    vector: list[float]
    metadata: dict[str, Any]


class SearchPlan(NamedTuple):
    """How a store answered a search, so short results are never ambiguous.

    ``name`` is the plan (``full-scan``, ``gather``, ``masked-scan``, ``ann+exact-fallback``...),
    ``candidates`` how many vectors were eligible, ``exhaustive`` whether every eligible vector
    was scored exactly.
    """

    name: str
    candidates: int
    exhaustive: bool


class DocumentVersion(NamedTuple):
    """The current version of one ingested document, as the vector store records it."""

    doc_iri: str
    version: str
    scope: str
    content_hash: str
    chunks: int


@runtime_checkable
class VectorStore(Protocol):
    """A collection of unit-normalised vectors keyed by string id, searched by cosine similarity.

    ``search`` returns hits sorted by score descending, ties broken by id ascending; with
    ``ids`` it ranks exactly those ids (missing ones are ignored) and must be exact over them.
    """

    @property
    def dim(self) -> int: ...

    @property
    def embedder_identity(self) -> EmbedderIdentity | None: ...

    def bind_embedder(self, identity: EmbedderIdentity) -> None: ...

    def add(self, id: str, vector: VectorLike, metadata: Mapping[str, Any] | None = None) -> None: ...

    def add_many(
        self,
        ids: Sequence[str],
        vectors: Sequence[VectorLike] | np.ndarray,
        metadata: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> None: ...

    def search(
        self, vector: VectorLike, k: int = 10, ids: Iterable[str] | None = None
    ) -> list[VectorHit]: ...

    def search_with_plan(
        self, vector: VectorLike, k: int = 10, ids: Iterable[str] | None = None
    ) -> tuple[list[VectorHit], SearchPlan]: ...

    def expand_ids(self, iris: Iterable[str]) -> list[str]: ...

    def get(self, ids: Iterable[str]) -> list[StoredVector]: ...

    def delete(self, id: str) -> bool: ...

    def delete_where(self, filters: Mapping[str, Any]) -> int: ...

    def count(self) -> int: ...

    def close(self) -> None: ...


class BaseVectorStore:
    """Derives ``add``, ``search``, ``delete``, ``delete_many``, ``bind_embedder``, ``with`` and
    ``len()`` from the few methods a backend writes: those declared below, and the properties
    ``embedder_identity`` and ``_label`` (the store's name in messages).
    """

    _dim: int
    read_only: bool
    add_many: Callable[..., None]  # (ids, vectors, metadata=None, *, pending=False)
    # (unit query, k >= 0, ids, scopes) -> search_with_plan's answer
    _search_unit: Callable[..., tuple[list[VectorHit], SearchPlan]]
    count: Callable[[], int]
    close: Callable[[], None]
    _delete_ids: Callable[[list[str]], int]  # returns how many existed
    _record_embedder: Callable[[EmbedderIdentity], None]
    # Where to re-ingest when the recorded embedder differs.
    _new_home: ClassVar[str] = "a new store"

    @property
    def _label(self) -> str:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        raise NotImplementedError

    def bind_embedder(self, identity: EmbedderIdentity) -> None:
        """Record the embedder that makes this store's vectors, or check it is the same one."""
        if identity.dim != self._dim:
            raise DimensionMismatchError(
                f"embedder {identity.describe()} makes {identity.dim}-d vectors but store "
                f"{self._label!r} holds {self._dim}-d vectors; use a matching embedder or store"
            )
        recorded = self.embedder_identity
        if recorded is None:
            if not self.read_only:
                self._record_embedder(identity)
            return
        if not recorded.compatible_with(identity):
            raise EmbeddingModelMismatchError(
                f"vector store {self._label!r} was built with {recorded.describe()} but "
                f"{identity.describe()} is in use; scores across models are meaningless. "
                f"Use the original embedder, or re-ingest into {self._new_home}."
            )

    def add(self, id: str, vector: VectorLike, metadata: Mapping[str, Any] | None = None) -> None:
        """Insert or replace one vector."""
        self.add_many([id], [vector], [metadata])

    def _checked_batch(
        self,
        ids: Sequence[str],
        vectors: Sequence[VectorLike] | np.ndarray,
        metadata: Sequence[Mapping[str, Any] | None] | None,
    ) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
        """``add_many``'s arguments, checked before anything is written: the ids, the vectors
        as unit float32 rows, and a copy of each metadata. No ids: no vectors are checked."""
        self._check_writable()
        ids = [self._check_id(i) for i in ids]
        if len(set(ids)) != len(ids):
            raise ValueError("ids passed to add_many must be unique within the call")
        metas = [dict(m or {}) for m in (metadata or [None] * len(ids))]
        if len(metas) != len(ids):
            raise ValueError(f"got {len(ids)} ids but {len(metas)} metadata entries")
        if not ids:
            return ids, np.empty((0, self._dim), dtype=np.float32), metas
        unit = normalize_rows(as_matrix(vectors, self._dim))
        if len(unit) != len(ids):
            raise ValueError(f"got {len(ids)} ids but {len(unit)} vectors")
        return ids, unit, metas

    def search(
        self,
        vector: VectorLike,
        k: int = 10,
        ids: Iterable[str] | None = None,
        *,
        scopes: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """Exact top-``k`` by cosine similarity, optionally over ``ids`` only.

        ``ids`` may name vector ids or document IRIs (every chunk of the document is then a
        candidate). ``scopes`` keeps only vectors of those scopes (a vector without a ``scope``
        field is in the default scope). Sorted by score descending, ties by id.
        """
        return self.search_with_plan(vector, k, ids, scopes=scopes)[0]

    def search_with_plan(
        self,
        vector: VectorLike,
        k: int = 10,
        ids: Iterable[str] | None = None,
        *,
        scopes: Sequence[str] | None = None,
        with_metadata: bool = True,
    ) -> tuple[list[VectorHit], SearchPlan]:
        """:meth:`search`'s hits, and the :class:`SearchPlan` that says how they were found.

        ``with_metadata=False`` lets a store leave the hits' metadata empty (``{}``) when
        reading it costs time: fusion ranks hundreds of hits and then needs the metadata of
        the few it keeps, which :meth:`metadata` fetches."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        return self._search_unit(unit_rows(as_matrix(vector, self._dim))[0], k, ids, scopes,
                                 with_metadata=with_metadata)

    def metadata(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The metadata of the ids that exist, as search hits carry it."""
        return {row.id: row.metadata for row in self.get(ids)}

    def delete(self, id: str) -> bool:
        """Remove one vector; True if it existed."""
        return self.delete_many([id]) == 1

    def delete_many(self, ids: Iterable[str]) -> int:
        """Remove vectors by id; returns how many existed."""
        return self._delete_ids(list(ids))

    def _check_writable(self) -> None:
        if self.read_only:
            raise ConfigurationError(
                f"vector store {self._label!r} was opened read-only; reopen it without "
                "read_only=True to change it"
            )

    @staticmethod
    def _check_id(id: str) -> str:
        if not isinstance(id, str) or not id:
            raise ValueError(f"vector ids must be non-empty strings, got {id!r}")
        return id

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.count()


def as_matrix(vectors: Sequence[VectorLike] | np.ndarray, dim: int) -> np.ndarray:
    """Validate vectors and return them as a float64 ``(n, dim)`` array.

    Raises DimensionMismatchError for a wrong width and InvalidVectorError for NaN, inf or a
    zero vector (whose cosine similarity is undefined).
    """
    try:
        array = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        row, width = _first_wrong_width(vectors, dim)
        if row is not None:
            raise DimensionMismatchError(
                f"expected vectors of dimension {dim}, but vector {row} has dimension {width}; "
                "nothing was stored"
            ) from exc
        raise InvalidVectorError(
            f"vectors must be sequences of {dim} numbers of equal length: {exc}"
        ) from exc
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.shape[1] != dim:
        width = array.shape[-1] if array.ndim >= 1 else 0
        raise DimensionMismatchError(
            f"expected vectors of dimension {dim}, got {width}; embed with a model of "
            f"dimension {dim} or open a store created for dimension {width}"
        )
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise InvalidVectorError(f"vector {row} contains NaN or infinity; nothing was stored")
    nonzero = (array != 0).any(axis=1)
    if not nonzero.all():
        row = int(np.argmin(nonzero))
        raise InvalidVectorError(
            f"vector {row} is all zeros, so its cosine similarity is undefined; nothing was stored"
        )
    return array


def _first_wrong_width(vectors: object, dim: int) -> tuple[int | None, int]:
    """In a ragged batch, the first row whose length is not ``dim`` (None if there is none)."""
    try:
        for row, vector in enumerate(vectors):  # type: ignore[arg-type]
            if len(vector) != dim:
                return row, len(vector)
    except TypeError:
        pass
    return None, 0


def unit_rows(array: np.ndarray) -> np.ndarray:
    """Unit-normalise each (non-zero, finite) row in float64.

    Rows are first scaled by their largest magnitude, so the norm neither overflows to inf for
    huge components (which would store a zero vector) nor underflows to 0 for tiny ones.
    """
    scaled = array / np.abs(array).max(axis=1, keepdims=True)
    return scaled / np.linalg.norm(scaled, axis=1, keepdims=True)


def normalize_rows(array: np.ndarray) -> np.ndarray:
    """Unit-normalise each row in float64, returned as float32 (the stored precision)."""
    return unit_rows(array).astype(np.float32)


def encode(vector: np.ndarray) -> bytes:
    """Little-endian float32 bytes, the layout sqlite-vec and numpy share."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def decode(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


def optional_str(value: Any) -> str | None:
    """A metadata field promoted to a column or payload field: ``None`` stays ``None``."""
    return None if value is None else str(value)


def check_compatible(embedder: Embedder, store: VectorStore) -> None:
    """Refuse an embedder whose vectors cannot be compared with ``store``'s (dimension or
    recorded model differ); never records anything."""
    if embedder.dim != store.dim:
        raise DimensionMismatchError(
            f"the embedder makes {embedder.dim}-d vectors but the store holds {store.dim}-d "
            "vectors; use the embedder the store was built with"
        )
    if store.embedder_identity is not None:  # only check: retrieval never writes
        store.bind_embedder(embedder.identity)
