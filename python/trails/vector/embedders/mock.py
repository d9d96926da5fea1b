"""A deterministic, dependency-free embedder for tests and examples."""

from __future__ import annotations

import hashlib
import math
import operator
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import filterfalse
from pathlib import Path

import numpy as np
import numpy.typing as npt

from trails import _state
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.recorded import Settings
from trails.vector.embedders.base import BaseEmbedder, batch_texts

__all__ = ["MockEmbedder"]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Function words carry no topic: dropping them is what lets "what is Rails" land near
# "Rails is a web framework" rather than near every sentence containing "is".
_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "you", "your"]
)


def _token_vector(token: str, seed: int, dim: int) -> np.ndarray:
    """A fixed Gaussian direction for ``(seed, token)``: SHAKE-256 bits through Box-Muller.

    Hashing instead of seeding a generator per token keeps the first sight of a word cheap
    (large vocabularies are the common case in benchmarks).
    """
    vector: npt.NDArray[np.float64] = _token_vectors([token], seed, dim)[0]
    vector.flags.writeable = False
    return vector


def _token_vectors(words: Sequence[str], seed: int, dim: int) -> np.ndarray:
    """``_token_vector`` of many words at once, row by row the same numbers.

    Each row goes through the same element-wise operations on ``dim`` contiguous values as a
    single word would, so a word's direction never depends on which words it is made with.
    """
    bits = b"".join(hashlib.shake_256(f"{seed}\x00{w}".encode()).digest(8 * dim) for w in words)
    uniform = (np.frombuffer(bits, dtype="<u4").astype(np.float64) + 0.5) / 2.0**32
    uniform = uniform.reshape(len(words), 2 * dim)
    u1, u2 = uniform[:, :dim], uniform[:, dim:]
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


# Word characters that are ASCII letters and digits, lower-cased; everything else splits.
_ASCII_WORDS = str.maketrans({chr(i): (chr(i).lower() if chr(i).isalnum() else " ")
                              for i in range(128)})


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` without stop words (all tokens if every one is one)."""
    if text.isascii():  # the same words as the regex below, several times faster
        words = text.translate(_ASCII_WORDS).split()
    else:
        words = [w.lower() for w in _TOKEN.findall(text)]
    content = list(filterfalse(_STOPWORDS.__contains__, words))
    return content or words


def _integer(name: str, value: object, what: str) -> int:
    """``value`` as an int (a numpy integer too); a bool, float or string is refused."""
    try:
        if isinstance(value, bool):
            raise TypeError(name)
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidArgumentTypeError(f"{name} must be {what}, got {value!r}") from None


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

    def __init__(self, dim: int = 384, seed: int = 0, batch_size: int = 256) -> None:
        # Both may come from a hand-edited trails.json: a wrong type is refused, not a TypeError.
        self._dim = _integer("dim", dim, "a positive integer")
        if self._dim < 1:
            raise InvalidArgumentError(f"dim must be a positive integer, got {dim}")
        self.seed = _integer("seed", seed, "an integer")
        self.model_id = f"trails-mock-bow:seed={self.seed}"  # the seed changes every vector
        self.batch_size = batch_size
        self.batches = 0

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        texts = batch_texts(texts)
        self.batches += 1
        vocabulary = _vocabulary(self.seed, self._dim)
        words = [Counter(tokens(text)) for text in texts]
        index, vectors = vocabulary.learn(words)  # new words of the whole batch at once
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for i, counts in enumerate(words):
            vector = None
            if counts:
                n = len(counts)
                weights = 1.0 + np.log(np.fromiter(counts.values(), np.float64, n))
                vector = weights @ vectors[np.fromiter(map(index.__getitem__, counts), np.intp, n)]
                norm = math.sqrt(vector.dot(vector))  # what np.linalg.norm computes, bit for bit
                vector = vector / norm if norm > 0.0 else None
            if vector is None:
                # The empty text (or words cancelling exactly) still needs a direction:
                # cosine is undefined for the zero vector.
                vector = _token_vector("\x00empty", self.seed, self._dim)
                vector = vector / float(np.linalg.norm(vector))
            out[i] = vector
        return out

    def recorded_settings(self, root: Path) -> Settings | None:
        return {"dim": self.dim, "seed": self.seed}



class _Vocabulary:
    """Word -> row of a growing matrix of word directions (shared per seed and dim)."""

    def __init__(self, seed: int, dim: int) -> None:
        self.seed, self.dim = seed, dim
        self.index: dict[str, int] = {}
        self.vectors = np.empty((1024, dim))
        self.lock = threading.Lock()

    def learn(self, texts: Iterable[Mapping[str, int]]) -> tuple[dict[str, int], np.ndarray]:
        """Give every word of ``texts`` a row (new words' directions made in one go).

        Returns the index and the matrix that hold them all (threads may share a vocabulary).
        """
        with self.lock:
            index = self.index
            known = index.keys()
            new = list(dict.fromkeys(w for words in texts if not known >= words.keys()
                                     for w in words if w not in index))
            if new:
                first = len(index)
                if first + len(new) > len(self.vectors):
                    grown = np.empty((max(2 * len(self.vectors), first + len(new)), self.dim))
                    grown[:first] = self.vectors[:first]
                    self.vectors = grown
                self.vectors[first:first + len(new)] = _token_vectors(new, self.seed, self.dim)
                index.update(zip(new, range(first, first + len(new))))
            return index, self.vectors


def _vocabulary(seed: int, dim: int) -> _Vocabulary:
    """The vocabulary every MockEmbedder of this seed and dim shares (words seen by one are
    known to all, in the process-wide cache)."""
    return _state.cached(("mock-vocabulary", seed, dim), lambda: _Vocabulary(seed, dim))
