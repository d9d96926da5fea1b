"""TokenChunker: windows of a fixed number of tokens, mapped back to character spans."""

from __future__ import annotations

from typing import Any

from trails.errors import InvalidArgumentError
from trails.ingest.chunkers.spans import SPLITTER_VERSION, longest_fit, skip_space, trim
from trails.ingest.chunkers.tokens import tokens_of
from trails.ingest.document import Chunk, Document

__all__ = ["TokenChunker"]


class TokenChunker:
    """Windows of at most ``max_tokens`` tokens, mapped back to character spans.

    Windows end before a word when one starts in their second half, and overlaps start at a
    word, so words stay whole. Each chunk is re-tokenised and shrunk until it fits: no chunk is
    longer than ``max_tokens`` tokens when tokenised on its own (without special tokens). The
    one exception: a single character that alone takes more tokens (an emoji is 2-3 tiktoken
    tokens, a Hangul syllable 3 word pieces) is a chunk of its own, which only happens for
    ``max_tokens`` below 4.

    Args:
        tokenizer: a Hugging Face fast tokenizer or a tiktoken ``Encoding``.
        max_tokens: the longest chunk, in tokens (a model's limit less its special tokens).
        overlap_tokens: tokens repeated at the start of the next chunk.

    Raises:
        ValueError: ``max_tokens < 1``, ``overlap_tokens`` not in ``[0, max_tokens)``, or a
            tokenizer of another kind.

    >>> import tiktoken  # doctest: +SKIP
    >>> TokenChunker(tiktoken.get_encoding("cl100k_base"), 512).chunk(doc)  # doctest: +SKIP
    """

    def __init__(self, tokenizer: Any, max_tokens: int, overlap_tokens: int = 0) -> None:
        if max_tokens < 1 or not 0 <= overlap_tokens < max_tokens:
            raise InvalidArgumentError(
                f"need max_tokens >= 1 and 0 <= overlap_tokens < max_tokens, got "
                f"max_tokens={max_tokens}, overlap_tokens={overlap_tokens}")
        self.tokens = tokens_of(tokenizer)
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens

    def __repr__(self) -> str:
        return (f"TokenChunker(max_tokens={self.max_tokens}, "
                f"overlap_tokens={self.overlap_tokens})")

    @property
    def fingerprint(self) -> str:
        """The settings that decide the chunks, stable across machines (kept per version)."""
        return (f"TokenChunker/{SPLITTER_VERSION}(max_tokens={self.max_tokens}, "
                f"overlap_tokens={self.overlap_tokens}, tokens={self.tokens.name})")

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        spans = self.tokens.spans(text)
        if not spans:  # nothing tokenises (control characters only): keep it whole
            start, end = trim(text, 0, len(text))
            return [Chunk(text[start:end], start, end, 0)] if start < end else []
        chunks: list[Chunk] = []
        i, floor = 0, 0  # floor: where the next chunk may start after a cut inside a token
        while True:
            start = skip_space(text, max(0 if i == 0 else spans[i][0], floor))
            j, end = self._window(text, spans, i, start)
            if start < end:
                chunks.append(Chunk(text[start:end], start, end, len(chunks)))
            if j is None:  # one token did not fit alone: the window was cut by characters
                floor = end
            elif j >= len(spans):
                return chunks
            else:
                i = _soft_start(text, spans, max(i + 1, j - self.overlap_tokens), j)

    def _window(self, text: str, spans: list[tuple[int, int]], i: int,
                start: int) -> tuple[int | None, int]:
        """``(j, end)``: tokens ``[i, j)`` fit, ending at ``end``; j None if cut by characters.

        ``end`` is trimmed of whitespace, so the text counted is exactly the chunk's text.
        """
        j = _soft_end(text, spans, i, min(i + self.max_tokens, len(spans)))
        while True:
            # Up to the next token's start, so characters no token covers are kept.
            end = trim(text, start, spans[j][0] if j < len(spans) else len(text))[1]
            if self._fits(text, start, end):
                return j, end
            if j == i + 1:
                cut = longest_fit(lambda e: self._fits(text, start, trim(text, start, e)[1]),
                                   start, end)
                return None, max(trim(text, start, cut)[1], start + 1)
            j -= 1

    def _fits(self, text: str, start: int, end: int) -> bool:
        return self.tokens.count(text[start:end]) <= self.max_tokens


def _soft_end(text: str, spans: list[tuple[int, int]], i: int, j: int) -> int:
    """Move a window's end back to a token that starts a word, if one is in its second half."""
    if j >= len(spans):
        return j
    return next((k for k in range(j, i + (j - i) // 2, -1) if _starts_word(text, spans, k)), j)


def _soft_start(text: str, spans: list[tuple[int, int]], i: int, j: int) -> int:
    """Move an overlapping window's start forward to a word start before ``j``, if any."""
    return next((k for k in range(i, j) if _starts_word(text, spans, k)), i)


def _starts_word(text: str, spans: list[tuple[int, int]], k: int) -> bool:
    a = spans[k][0]
    return k == 0 or a > spans[k - 1][1] or text[a].isspace() or text[a - 1].isspace()
