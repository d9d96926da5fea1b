"""OpenAIEmbedder: OpenAI's embeddings API (or any OpenAI-compatible server), with our own retries.

The ``openai`` client is created on the first batch with its own retries switched off
(``max_retries=0``): backoff, jitter and ``Retry-After`` are handled here, so they are the same
on every client version and tests can drive them with an injected ``sleep``. Texts are counted
with tiktoken (``cl100k_base``, the tokenizer of every OpenAI embedding model) so requests are
packed under the API's limits before anything is sent.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from trails._lazy import load_cl100k, require
from trails._openai import KEY_ENV, OpenAIClient, status_message
from trails.errors import EmbeddingError, InvalidArgumentError
from trails.recorded import Settings, with_resilience
from trails.resilience import (
    CircuitBreaker,
    Failure,
    Resilience,
    breaker_for,
    public_url,
    retry_after,
)
from trails.vector.embedders.base import (
    BaseEmbedder,
    EmbedderIdentity,
    Vectors,
    batch_texts,
    declared_price,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["KNOWN_MODELS", "OpenAIEmbedder", "Usage", "load_cl100k"]

# Native output size of each model trails knows; the text-embedding-3 models can be shortened.
KNOWN_MODELS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
MAX_INPUT_TOKENS = 8191          # per input text, every OpenAI embedding model
MAX_INPUTS_PER_REQUEST = 2048    # array inputs per request
MAX_REQUEST_TOKENS = 300_000     # summed over one request's inputs
# Status codes worth another try: request timeout, lock conflict, rate limit, server errors.
RETRY_STATUSES = frozenset({408, 409, 429})
# The breaker's policy when none is given: a batch of embeddings may take minutes.
DEFAULT_RESILIENCE = Resilience(deadline=300.0)


class Usage(NamedTuple):
    """Tokens the API reported for one ``embed_batch`` call (summed over its requests)."""

    prompt_tokens: int
    total_tokens: int
    requests: int


class OpenAIEmbedder(BaseEmbedder, OpenAIClient):
    """Embeddings from OpenAI's API (``openai/<model>``), re-normalised to unit float32 vectors.

    Args:
        model: an embedding model; ``text-embedding-3-small`` (1536-d), ``-3-large`` (3072-d)
            and ``text-embedding-ada-002`` (1536-d) are known. Another name (a compatible
            server's model) needs ``dim``, its output size.
        dim: shorter vectors from a ``text-embedding-3`` model (the API's ``dimensions``).
        api_key: the key; default ``$OPENAI_API_KEY``, read on the first request.
        base_url: another OpenAI-compatible endpoint; default ``$OPENAI_BASE_URL`` or OpenAI.
        batch_size: most texts in one request (at most 2048).
        max_retries: retries after a timeout, connection error, 408, 409, 429 or 5xx.
        timeout: seconds one request may take before it counts as failed (and is retried).
        organization: the OpenAI organisation id; default ``$OPENAI_ORG_ID``.
        max_request_tokens: most tokens summed over one request's texts.
        initial_backoff, max_backoff: retry ``n`` waits a random time up to
            ``min(initial * 2**n, max)`` seconds (full jitter), unless the server says how long
            (``Retry-After``).
        max_retry_after: a server asking for a longer wait than this is not waited for.
        resilience: the circuit breaker's settings and the ``deadline`` after which no retry
            starts (:class:`trails.resilience.Resilience` or a mapping of its fields; default
            its defaults with a 300 s deadline). The arguments above set its retries. After
            ``failure_threshold`` failed calls in a row, calls to this API's endpoint fail at
            once with EndpointUnavailableError until a probe succeeds (docs/resilience.md).
        price_per_million_tokens: what a million tokens cost (your plan's price, e.g. 0.02
            dollars for ``text-embedding-3-small``): ingestion's ``BatchEmbedded`` events then
            carry each batch's ``cost``; None (the default) reports no cost.
        sleep, clock: ``time.sleep`` and ``time.time``, replaceable in tests.

    Raises:
        ValueError: ``dim`` with a model that cannot shorten its vectors, or a bad limit.

    >>> e = OpenAIEmbedder("text-embedding-3-small", dim=256, api_key="sk-...")
    >>> e.identity.model, e.dim
    ('openai/text-embedding-3-small', 256)
    """

    max_tokens: int = MAX_INPUT_TOKENS
    _own_retries = True  # see _with_retries

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        dim: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        batch_size: int = MAX_INPUTS_PER_REQUEST,
        max_retries: int = 6,
        timeout: float = 30.0,
        organization: str | None = None,
        max_request_tokens: int = MAX_REQUEST_TOKENS,
        initial_backoff: float = 0.5,
        max_backoff: float = 20.0,
        max_retry_after: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        resilience: Resilience | Mapping[str, Any] | None = None,
        price_per_million_tokens: float | None = None,
    ) -> None:
        self.price_per_million_tokens = price_per_million_tokens
        declared_price(self)  # refuses a price that is none
        if not 1 <= batch_size <= MAX_INPUTS_PER_REQUEST:
            raise InvalidArgumentError(
                f"batch_size must be in [1, {MAX_INPUTS_PER_REQUEST}], got {batch_size}")
        if max_retries < 0 or max_request_tokens < 1 or timeout <= 0:
            raise InvalidArgumentError(
                "need max_retries >= 0, max_request_tokens >= 1 and timeout > 0")
        self.model = model
        self.model_id = f"openai/{model}"
        self._dim, self._dimensions = _resolve_dim(model, dim)
        self.api_key = api_key
        from_env = os.environ.get("OPENAI_BASE_URL")
        if base_url is not None and from_env and from_env != base_url == public_url(from_env):
            # trails.json records the endpoint without its user:password@; the environment's
            # URL for the same endpoint holds them.
            base_url = from_env
        self.base_url = base_url
        self.organization = organization
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_request_tokens = max_request_tokens
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        self._policy = Resilience.from_settings(
            resilience if resilience is not None else DEFAULT_RESILIENCE)
        self._policy.check_url("the embeddings endpoint",
                               base_url or os.environ.get("OPENAI_BASE_URL"))
        self.deadline = self._policy.deadline
        self._clock = clock
        self._encoding: Any = None
        self.last_usage: Usage | None = None
        self.total_tokens = 0

    @classmethod
    def from_identity(cls, identity: EmbedderIdentity, **options: Any) -> OpenAIEmbedder:
        """The embedder an ``openai/<model>`` identity describes (key and URL from the env)."""
        if not identity.model.startswith("openai/"):
            raise ValueError(f"not an OpenAI embedder identity: {identity.describe()}")
        return cls(identity.model.split("/", 1)[1], dim=identity.dim, **options)

    def recorded_settings(self, root: Path) -> Settings | None:
        """Model, dimension, endpoint and the policy as given (``resilience`` folds in
        ``max_retries`` and the backoff, recorded apart); the key is ``$OPENAI_API_KEY``."""
        settings: Settings = {"model": self.model, "dim": self.dim}
        if self.base_url is not None:
            settings["base_url"] = public_url(self.base_url)  # a secret is never recorded
        return with_resilience(settings, self._policy, DEFAULT_RESILIENCE)

    # -- tokens -------------------------------------------------------------------------------

    @property
    def encoding(self) -> Any:
        """The tiktoken Encoding (cl100k_base) the API counts with; ingestion chunks by it."""
        if self._encoding is None:
            self._encoding = load_cl100k("OpenAIEmbedder's token counting")
        return self._encoding

    @property
    def tokenizer(self) -> Any:
        """:attr:`encoding`, under the name chunkers read (see ``TokenAwareEmbedder``)."""
        return self.encoding

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` as the API counts them (special-token lookalikes are plain text)."""
        return len(self.encoding.encode_ordinary(text))

    # -- embedding ----------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in as few requests as the limits allow; unit float32 rows.

        Raises:
            EmbeddingError: the API rejected a request (4xx other than 408/409/429), or it
                kept failing past ``max_retries``.
            ConfigurationError: no API key (before any request).
            EndpointUnavailableError: the endpoint's circuit is open after calls in a row
                failed (nothing was sent; :mod:`trails.resilience`).
            InvalidArgumentError: an empty text (the API refuses those), or one over 8191
                tokens, before any request; InvalidArgumentTypeError: one str, None, or an
                item that is no str.
        """
        texts = batch_texts(texts)
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        counts = self._checked_counts(texts)
        client = self._get_client()
        parts, prompt, total = [], 0, 0
        for start, end in self._requests(counts):
            vectors, usage = self._embed_request(client, texts[start:end], sum(counts[start:end]))
            parts.append(vectors)
            prompt, total = prompt + usage[0], total + usage[1]
        self.last_usage = Usage(prompt, total, len(parts))
        self.total_tokens += total
        return np.vstack(parts)

    def _checked_counts(self, texts: list[str]) -> list[int]:
        counts = []
        for i, text in enumerate(texts):
            if not text:  # batch_texts refused what is no str
                raise InvalidArgumentError(f"text {i} is empty: the OpenAI embeddings API "
                                           "refuses empty texts; leave it out")
            n = self.count_tokens(text)
            if n > self.max_tokens:  # the caller's text, not the service: never retried
                raise InvalidArgumentError(
                    f"text {i} is {n} tokens long ({len(text)} characters); {self.model} takes "
                    f"at most {self.max_tokens} tokens per text. Shorten a query; split a "
                    "document with a token-aware chunker: "
                    "trails.ingest.chunkers.token_chunker_for(embedder) or "
                    "default_chunker(embedder)"
                )
            counts.append(n)
        return counts

    def _requests(self, counts: list[int]) -> list[tuple[int, int]]:
        """``[start, end)`` ranges: at most ``batch_size`` texts, ``max_request_tokens`` tokens."""
        ranges, start, tokens = [], 0, 0
        for i, n in enumerate(counts):
            if i > start and (i - start >= self.batch_size or tokens + n > self.max_request_tokens):
                ranges.append((start, i))
                start, tokens = i, 0
            tokens += n
        ranges.append((start, len(counts)))
        return ranges

    def _embed_request(self, client: Any, texts: list[str],
                       counted: int) -> tuple[np.ndarray, tuple[int, int]]:
        options: dict[str, Any] = {"model": self.model, "input": texts,
                                   "encoding_format": "base64"}
        if self._dimensions is not None:
            options["dimensions"] = self._dimensions
        response = self._with_retries(lambda: client.embeddings.create(**options))
        vectors = self._vectors(response, len(texts))
        usage = getattr(response, "usage", None)
        if usage is None:  # some compatible servers omit usage: our count is the API's
            return vectors, (counted, counted)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        return vectors, (prompt, int(getattr(usage, "total_tokens", 0) or prompt))

    def _vectors(self, response: Any, n: int) -> np.ndarray:
        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(n)):
            raise EmbeddingError(f"the API returned {len(data)} embeddings for {n} texts")
        out = np.empty((n, self._dim), dtype=np.float32)
        for i, item in enumerate(data):
            vector = _decode(item.embedding)
            if vector.shape != (self._dim,):
                raise EmbeddingError(
                    f"{self.model} returned {vector.shape[0]}-d vectors, expected {self._dim}: "
                    "pass dim= with the model's real output size"
                )
            out[i] = vector
        return _normalized(out)

    # -- retries ------------------------------------------------------------------------------

    def _with_retries(self, call: Callable[[], Any]) -> Any:
        """``call()`` under the resilience policy (:mod:`trails.resilience`): retried after a
        timeout, a connection error, 408, 409, 429 or 5xx, behind the endpoint's breaker."""
        openai = require("openai", "OpenAIEmbedder")
        failures: list[str] = []

        def classify(exc: BaseException) -> Failure | None:
            if isinstance(exc, openai.APIStatusError):
                failures.append(status_message(exc))
                return Failure(retry_after=self._status_delay(exc))
            if isinstance(exc, openai.APIConnectionError):  # APITimeoutError included
                failures.append(f"{exc.message} ({self._endpoint()})")
                return Failure()
            return None

        try:
            return self.resilience.call(call, classify, self._breaker(), sleep=self._sleep)
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            raise EmbeddingError(
                f"OpenAI embeddings request failed {len(failures)} times "
                f"(max_retries={self.max_retries}); last error: {failures[-1]}. Try again "
                "later, or raise max_retries / timeout") from exc

    @property
    def resilience(self) -> Resilience:
        """The retry policy this embedder's settings make (``max_retries`` and the backoff),
        with the circuit breaker's settings (``breaker=``)."""
        return replace(self._policy, attempts=self.max_retries + 1,
                       initial_backoff=self.initial_backoff, max_backoff=self.max_backoff,
                       max_retry_after=self.max_retry_after, deadline=self.deadline)

    def _breaker(self) -> CircuitBreaker:
        return breaker_for("the OpenAI embeddings API", self._endpoint(), self.resilience)

    def _status_delay(self, exc: Any) -> float | None:
        """How long the server asked to wait before retrying ``exc`` (None: back off);
        raises EmbeddingError if it is not retried."""
        headers = exc.response.headers
        should = headers.get("x-should-retry")
        retryable = (exc.status_code in RETRY_STATUSES or exc.status_code >= 500
                     if should not in ("true", "false") else should == "true")
        if not retryable:
            hint = f" (check {KEY_ENV} or api_key=)" if exc.status_code == 401 else ""
            raise EmbeddingError(
                f"OpenAI rejected the embeddings request: {status_message(exc)}{hint}")
        wait = retry_after(headers, self._clock)
        if wait is not None and wait > self.max_retry_after:
            raise EmbeddingError(
                f"OpenAI asked to wait {wait:.0f} s before retrying ({status_message(exc)}), more "
                f"than max_retry_after={self.max_retry_after:g} s; try again later"
            )
        return wait


def _resolve_dim(model: str, dim: int | None) -> tuple[int, int | None]:
    """``(output dim, the API's dimensions parameter or None)``."""
    native = KNOWN_MODELS.get(model)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
        raise InvalidArgumentError(f"dim must be a positive integer, got {dim!r}")
    if native is None:
        if dim is None:
            raise InvalidArgumentError(
                f"unknown OpenAI model {model!r}: pass dim= (its output size) or "
                f"use one of {sorted(KNOWN_MODELS)}")
        return dim, None  # a compatible server's model: dim declares what it returns
    if dim is None or dim == native:
        return native, None
    if not model.startswith("text-embedding-3"):
        raise InvalidArgumentError(
            f"{model} cannot shorten its vectors (always {native}-d); dim= works "
            "with the text-embedding-3 models")
    if dim > native:
        raise InvalidArgumentError(f"{model} makes at most {native}-d vectors, got dim={dim}")
    return dim, dim


def _decode(embedding: Any) -> np.ndarray:
    if isinstance(embedding, str):  # encoding_format="base64": little-endian float32
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4")
    return np.asarray(embedding, dtype=np.float32)


def _normalized(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(vectors)) or np.any(norms == 0):
        raise EmbeddingError("the API returned a zero or non-finite vector")
    unit: Vectors = (vectors / norms).astype(np.float32)
    return unit
