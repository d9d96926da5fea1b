"""A deterministic, dependency-free embedder for tests and examples."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from trails.vector.embedder import BaseEmbedder, EmbedderIdentity

__all__ = ["MockEmbedder"]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Function words carry no topic: dropping them is what lets "what is Rails" land near
# "Rails is a web framework" rather than near every sentence containing "is".
_STOPWORDS = frozenset(
    "a an and are as at be been but by did do does for from had has have he her his how i if in "
    "into is it its me my no not of on or our she so than that the their them then there these "
    "they this those to was we were what when where which who whom why will with you your".split()
)


@lru_cache(maxsize=65536)
def _token_vector(token: str, seed: int, dim: int) -> np.ndarray:
    digest = hashlib.blake2b(f"{seed}\x00{token}".encode(), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    vector = rng.standard_normal(dim)
    vector.flags.writeable = False
    return vector


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` without stop words (all tokens if every one is one)."""
    words = [w.lower() for w in _TOKEN.findall(text)]
    content = [w for w in words if w not in _STOPWORDS]
    return content or words


class MockEmbedder(BaseEmbedder):
    """Bag-of-words random projection: a pure function of ``(text, seed, dim)``.

    Each distinct word gets a fixed pseudo-random Gaussian direction derived from a hash of
    ``(seed, word)``; a text is the normalised sum of its words' directions with sublinear term
    frequency. Texts that share words therefore land closer than texts that do not, so examples
    and tests get meaningful (if shallow) orderings without a model. Nothing is downloaded and
    ``batches`` counts calls to ``embed_batch`` so tests can check batching.

    >>> e = MockEmbedder(dim=16, seed=1)
    >>> e.embed("Rails") == e.embed("rails")
    True
    >>> len(e.embed("anything"))
    16
    """

    model_id = "trails-mock-bow"

    def __init__(self, dim: int = 384, seed: int = 0, batch_size: int = 256) -> None:
        if dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim}")
        self._dim = int(dim)
        self.seed = int(seed)
        self.batch_size = batch_size
        self.batches = 0

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(model=f"{self.model_id}:seed={self.seed}", dim=self._dim)

    def _one(self, text: str) -> np.ndarray:
        counts: dict[str, int] = {}
        for token in tokens(text):
            counts[token] = counts.get(token, 0) + 1
        vector = np.zeros(self._dim)
        for token, count in counts.items():
            vector += (1.0 + np.log(count)) * _token_vector(token, self.seed, self._dim)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            # The empty text (or words cancelling exactly) still needs a direction: cosine is
            # undefined for the zero vector.
            vector = _token_vector("\x00empty", self.seed, self._dim)
            norm = float(np.linalg.norm(vector))
        return vector / norm

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.batches += 1
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._one(text)
        return out
