"""The chunker an embedder gets by default: whole sentences, never more tokens than it reads."""

from __future__ import annotations

from trails.ingest.chunkers.packing import SentenceChunker
from trails.ingest.chunkers.tokens import tokens_of
from trails.ingest.chunkers.windows import TokenChunker
from trails.vector.embedders.base import Embedder, TokenAwareEmbedder

__all__ = ["default_chunker", "token_budget", "token_chunker_for"]


def token_budget(embedder: Embedder | None) -> tuple[object, int] | None:
    """``(tokenizer, most tokens per chunk)`` for a :class:`TokenAwareEmbedder`, else None.

    The embedder's ``max_tokens`` counts the special tokens its tokenizer adds to every text
    (``[CLS]`` and ``[SEP]`` for BERT, none for tiktoken): a chunk gets the rest. Reading the
    tokenizer may load it (or the model).
    """
    if not isinstance(embedder, TokenAwareEmbedder):
        return None
    tokenizer = embedder.tokenizer
    return tokenizer, embedder.max_tokens - tokens_of(tokenizer).special_tokens


def token_chunker_for(embedder: Embedder | None,
                      overlap_tokens: int = 0) -> TokenChunker | SentenceChunker:
    """A :class:`TokenChunker` at the embedder's own token limit (see :func:`token_budget`),
    or a :class:`SentenceChunker` for an embedder without a tokenizer.

    >>> token_chunker_for(object())
    SentenceChunker(max_chars=1000, overlap=1, max_tokens=None)
    """
    found = token_budget(embedder)
    if found is None:
        return SentenceChunker()
    tokenizer, max_tokens = found
    return TokenChunker(tokenizer, max_tokens, overlap_tokens)


def default_chunker(embedder: Embedder | None = None, *, max_chars: int = 1000,
                    overlap: int = 1) -> SentenceChunker:
    """Sentences packed up to ``max_chars``, and never past the embedder's token limit.

    Chunks keep whole sentences (the best unit for retrieval) while the model still sees all
    of each chunk: with a tokenizer (see :func:`token_budget`) packing counts tokens, so
    nothing is truncated by the model. Without one, it is a plain :class:`SentenceChunker`.

    >>> default_chunker(None)
    SentenceChunker(max_chars=1000, overlap=1, max_tokens=None)
    """
    found = token_budget(embedder)
    if found is None:
        return SentenceChunker(max_chars, overlap)
    tokenizer, max_tokens = found
    return SentenceChunker(max_chars, overlap, max_tokens, tokens_of(tokenizer).count)
