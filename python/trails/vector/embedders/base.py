"""The Embedder protocol and a base class that derives everything from one batch method."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["BaseEmbedder", "Embedder", "EmbedderIdentity"]


class EmbedderIdentity(BaseModel):
    """What a vector store records about the embedder that made its vectors.

    Two identities are compatible when model, dimension and normalisation agree; the revision is
    informative (a changed revision of the same model is reported, not refused).
    """

    model_config = ConfigDict(frozen=True)

    model: str
    dim: int
    normalized: bool = True
    revision: str | None = None

    def compatible_with(self, other: EmbedderIdentity) -> bool:
        return (self.model, self.dim, self.normalized) == (other.model, other.dim, other.normalized)

    def describe(self) -> str:
        rev = f"@{self.revision}" if self.revision else ""
        return f"{self.model}{rev} (dim={self.dim}, normalized={self.normalized})"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed dimension."""

    @property
    def dim(self) -> int: ...

    @property
    def identity(self) -> EmbedderIdentity: ...

    def embed(self, text: str) -> list[float]: ...

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]: ...


class BaseEmbedder:
    """Derives ``embed``, ``embed_many`` and ``embed_array`` from one method, ``embed_batch``.

    Subclasses implement ``embed_batch(texts) -> np.ndarray`` of shape ``(len(texts), dim)``
    and provide ``dim`` and ``model_id``.
    """

    model_id: ClassVar[str] = "unknown"
    batch_size: int = 32
    normalized: bool = True

    @property
    def dim(self) -> int:
        raise NotImplementedError

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(model=self.model_id, dim=self.dim, normalized=self.normalized)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_array(self, texts: Iterable[str]) -> np.ndarray:
        """Embed any number of texts in batches of ``batch_size``; float32, one row per text."""
        parts = []
        iterator = iter(texts)
        while batch := list(islice(iterator, self.batch_size)):
            parts.append(np.asarray(self.embed_batch(batch), dtype=np.float32))
        if not parts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.vstack(parts)

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.identity.describe()}>"
