"""A deterministic, dependency-free embedder for tests and examples."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

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


def _token_vector(token: str, seed: int, dim: int) -> np.ndarray:
    """A fixed Gaussian direction for ``(seed, token)``: SHAKE-256 bits through Box-Muller.

    Hashing instead of seeding a generator per token keeps the first sight of a word cheap
    (large vocabularies are the common case in benchmarks).
    """
    bits = hashlib.shake_256(f"{seed}\x00{token}".encode()).digest(8 * dim)
    uniform = (np.frombuffer(bits, dtype="<u4").astype(np.float64) + 0.5) / 2.0**32
    u1, u2 = uniform[:dim], uniform[dim:]
    vector = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
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

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.batches += 1
        vocabulary = _vocabulary(self.seed, self._dim)
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            counts: dict[str, int] = {}
            for token in tokens(text):
                counts[token] = counts.get(token, 0) + 1
            vector = None
            if counts:
                weights = 1.0 + np.log(np.fromiter(counts.values(), np.float64, len(counts)))
                rows = vocabulary.rows(counts)  # may grow the matrix: look it up after
                vector = weights @ vocabulary.vectors[rows]
                norm = float(np.linalg.norm(vector))
                vector = vector / norm if norm > 0.0 else None
            if vector is None:
                # The empty text (or words cancelling exactly) still needs a direction:
                # cosine is undefined for the zero vector.
                vector = _token_vector("\x00empty", self.seed, self._dim)
                vector = vector / float(np.linalg.norm(vector))
            out[i] = vector
        return out


class _Vocabulary:
    """Word -> row of a growing matrix of word directions (shared per seed and dim)."""

    def __init__(self, seed: int, dim: int) -> None:
        self.seed, self.dim = seed, dim
        self.index: dict[str, int] = {}
        self.vectors = np.empty((1024, dim))

    def rows(self, words: Iterable[str]) -> list[int]:
        out = []
        for word in words:
            row = self.index.get(word)
            if row is None:
                row = len(self.index)
                if row == len(self.vectors):
                    self.vectors = np.concatenate([self.vectors, np.empty_like(self.vectors)])
                self.vectors[row] = _token_vector(word, self.seed, self.dim)
                self.index[word] = row
            out.append(row)
        return out


_VOCABULARIES: dict[tuple[int, int], _Vocabulary] = {}


def _vocabulary(seed: int, dim: int) -> _Vocabulary:
    key = (seed, dim)
    if key not in _VOCABULARIES:
        _VOCABULARIES[key] = _Vocabulary(seed, dim)
    return _VOCABULARIES[key]
