"""The embedder contract, and a base class that derives everything from one batch method.

:class:`Embedder` declares every call the engine makes on an embedder; every backend
(:class:`~trails.vector.embedders.mock.MockEmbedder`, ``SentenceTransformerEmbedder``,
``OpenAIEmbedder``) implements all of it. What only some embedders can do is a narrower
protocol, checked with ``isinstance``:

- :class:`TokenAwareEmbedder`: reads text through a tokenizer with a length limit, so chunkers
  can cut documents into pieces the model sees whole.
- :class:`TokenCountingEmbedder`: counts tokens the way its API limits and bills them, so
  ingestion can budget each embedding batch in tokens.

A registered embedder (:mod:`trails.registry`) is also :class:`Rebuildable`: ``trails.json``
records its settings and rebuilds it from them and the identity its vectors carry;
:class:`BaseEmbedder` gives the defaults (its constructor's options; nothing recorded).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.recorded import Settings
from trails.vector.stores.arguments import utf8

if TYPE_CHECKING:
    from typing import Self

__all__ = [
    "BaseEmbedder",
    "Embedder",
    "EmbedderIdentity",
    "Rebuildable",
    "TokenAwareEmbedder",
    "TokenCountingEmbedder",
    "Vectors",
    "batch_texts",
    "declared_price",
    "token_estimator",
]

# One float32 row per text.
Vectors = npt.NDArray[np.float32]


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
    """Turns texts into vectors of a fixed dimension: everything the engine calls on one.

    ``identity`` is what a vector store records, so a store refuses vectors of another model.
    ``embed_array`` is what ingestion and retrieval call; ``embed`` and ``embed_many`` give
    plain lists. ``batch_size`` is how many texts one forward pass or request takes.
    """

    @property
    def dim(self) -> int: ...

    @property
    def identity(self) -> EmbedderIdentity: ...

    @property
    def batch_size(self) -> int: ...

    def embed(self, text: str) -> list[float]: ...

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_array(self, texts: Iterable[str]) -> Vectors: ...


@runtime_checkable
class TokenAwareEmbedder(Embedder, Protocol):
    """An embedder that reads text through a tokenizer and sees at most ``max_tokens`` of it.

    ``tokenizer`` is a Hugging Face fast tokenizer or a tiktoken ``Encoding``; ``max_tokens``
    counts the special tokens the tokenizer adds to every text (``[CLS]``, ``[SEP]``), and
    chunkers keep room for them. Reading ``tokenizer`` may load it (or the model).
    """

    @property
    def tokenizer(self) -> object: ...

    @property
    def max_tokens(self) -> int: ...


@runtime_checkable
class TokenCountingEmbedder(Embedder, Protocol):
    """An embedder limited and billed per token, that counts them as its API does.

    Ingestion cuts embedding batches at ``max_batch_tokens`` by these counts; for any other
    embedder it estimates tokens from characters (counting costs time that buys nothing there).
    """

    def count_tokens(self, text: str) -> int: ...


def declared_price(embedder: object) -> float | None:
    """The price an embedder declares (``price_per_million_tokens``: what a million tokens
    cost), which ingestion turns into each batch's ``cost``; None when it declares none.

    Raises:
        InvalidArgumentError: a price that is not a finite number >= 0 (it would report a
            wrong cost, or none).
    """
    price = getattr(embedder, "price_per_million_tokens", None)
    if price is None:
        return None
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not 0 <= price < math.inf:
        raise InvalidArgumentError(
            "price_per_million_tokens must be a finite number >= 0 (what a million tokens "
            f"cost) or None, got {price!r}")
    return float(price)


def token_estimator(embedder: object) -> Callable[[str], int]:
    """How ingestion counts a text's tokens for ``embedder``: exactly for one limited per
    token (:class:`TokenCountingEmbedder`), from its characters for any other."""
    if isinstance(embedder, TokenCountingEmbedder):
        count = embedder.count_tokens
        return lambda text: int(count(text))
    return _characters_to_tokens


def batch_texts(texts: object) -> list[str]:
    """``texts`` as a list, refused as ``embed_many`` refuses it: one text rather than a list
    of them (a str would be embedded letter by letter), a mapping (its keys would be), an
    item that is no str or that holds a lone surrogate. Every ``embed_batch`` calls it
    first, as callers may call that method directly.

    Raises:
        InvalidArgumentTypeError: naming what was given, and what to give instead.
        InvalidArgumentError: a text holding a lone surrogate, naming its index.
    """
    _check_several(texts)
    return list(map(_text, itertools.count(), cast(Iterable[object], texts)))


def _check_several(texts: object) -> None:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise InvalidArgumentTypeError(
            f"texts must be a list of str, not one {type(texts).__name__}: embed(text) "
            "embeds one text, embed_many([text, ...]) several")
    if isinstance(texts, Mapping):  # iterating it gives its keys, which would be embedded
        raise InvalidArgumentTypeError(
            f"texts must be a list of str, not a {type(texts).__name__} (its keys would be "
            "embedded): pass list(texts.values()) for its values")


def _text(i: int, text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgumentTypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
    if not utf8(text):  # the local model's tokenizer raised a TypeError naming no text
        raise InvalidArgumentError(
            f"texts[{i}] holds a lone surrogate (half of a UTF-16 pair), which no model reads "
            "as text; decode the text it came from properly (or with errors='replace')")
    return text


def _characters_to_tokens(text: str) -> int:
    return len(text) // 4 + 1  # ~4 characters per token for English text


class BaseEmbedder:
    """Derives the rest of :class:`Embedder` from one method, ``embed_batch``.

    A backend implements ``embed_batch(texts)``, returning an array of shape
    ``(len(texts), dim)``, and sets ``model_id`` and ``_dim`` (or overrides ``dim``), plus
    ``revision`` and ``normalized`` where they differ from the defaults: ``identity`` is
    derived from those four.
    """

    model_id: str = "unknown"
    revision: str | None = None
    normalized: bool = True
    batch_size: int = 32
    _dim: int

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(model=self.model_id, dim=self.dim, normalized=self.normalized,
                                revision=self.revision)

    def embed_batch(self, texts: Sequence[str]) -> npt.NDArray[Any]:
        raise NotImplementedError

    def embed_array(self, texts: Iterable[str]) -> Vectors:
        """Embed any number of texts in batches of ``batch_size``; float32, one row per text."""
        _check_several(texts)
        parts = []
        iterator = map(_text, itertools.count(), texts)
        while batch := list(islice(iterator, self.batch_size)):
            parts.append(np.asarray(self.embed_batch(batch), dtype=np.float32))
        if not parts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.vstack(parts)

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        return cast(list[list[float]], self.embed_array(texts).tolist())

    def embed(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(
                f"embed(text) takes one str, got {type(text).__name__}; for several texts "
                "use embed_many([text, ...])")
        return cast(list[float], self.embed_array([text])[0].tolist())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.identity.describe()}>"

    # -- trails.json (Rebuildable) ----------------------------------------------------------

    @classmethod
    def from_record(cls, settings: Settings, identity: EmbedderIdentity) -> Self:
        """The embedder ``settings`` record, as its constructor's options."""
        options: dict[str, Any] = dict(settings)
        return cast(Any, cls)(**options)  # type: ignore[no-any-return]

    def recorded_settings(self, root: Path) -> Settings | None:
        """The settings that rebuild this embedder, or None: then ``trails.json`` keeps only
        its identity, and the embedder is passed in again (or inferred from the identity)."""
        return None


@runtime_checkable
class Rebuildable(Protocol):
    """An embedder ``trails.json`` can record, and rebuild to embed as its vectors were made."""

    @classmethod
    def from_record(cls, settings: Settings, identity: EmbedderIdentity) -> Self: ...

    def recorded_settings(self, root: Path) -> Settings | None: ...
