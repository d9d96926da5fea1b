"""The checks every store applies to input vectors, and their float32 encoding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from trails.errors import DimensionMismatchError, InvalidVectorError

__all__ = ["SEARCH_REFUSED", "VectorLike", "as_matrix", "decode", "encode", "normalize_rows", "optional_str",
           "unit_rows"]

VectorLike = Sequence[float] | np.ndarray
# What a refused query vector did not do (a write says "nothing was stored").
SEARCH_REFUSED = "the search was not run"


def as_matrix(vectors: VectorLike | Sequence[VectorLike], dim: int, *,
              refused: str = "nothing was stored") -> np.ndarray:
    """Validate vectors and return them as a float64 ``(n, dim)`` array.

    Raises DimensionMismatchError for a wrong width and InvalidVectorError for NaN, inf or a
    zero vector (whose cosine similarity is undefined); ``refused`` says what did not happen
    (a search passes ``SEARCH_REFUSED``).
    """
    try:
        array = np.asarray(vectors, dtype=np.float64)
    except OverflowError:  # an int no float holds: as infinite as a float beyond the range
        raise InvalidVectorError(f"a vector holds an integer too large for a float (so "
                                 f"infinity); {refused}") from None
    except (TypeError, ValueError) as exc:
        row, width = _first_wrong_width(vectors, dim)
        if row is not None:
            raise DimensionMismatchError(
                f"expected vectors of dimension {dim}, but vector {row} has dimension {width}; "
                f"{refused}"
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
        raise InvalidVectorError(f"vector {row} contains NaN or infinity; {refused}")
    nonzero = (array != 0).any(axis=1)
    if not nonzero.all():
        row = int(np.argmin(nonzero))
        raise InvalidVectorError(
            f"vector {row} is all zeros, so its cosine similarity is undefined; {refused}"
        )
    return array


def _first_wrong_width(vectors: Any, dim: int) -> tuple[int | None, int]:
    """In a ragged batch, the first row whose length is not ``dim`` (None if there is none)."""
    try:
        for row, vector in enumerate(vectors):
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
    unit: np.ndarray = scaled / np.linalg.norm(scaled, axis=1, keepdims=True)
    return unit


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
