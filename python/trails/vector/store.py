"""The VectorStore protocol, its record types, and the checks every store applies to input."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from trails.errors import DimensionMismatchError, InvalidVectorError
from trails.vector.embedder import EmbedderIdentity

__all__ = [
    "SearchPlan",
    "StoredVector",
    "VectorHit",
    "VectorLike",
    "VectorStore",
    "as_matrix",
    "decode",
    "encode",
    "normalize_rows",
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
