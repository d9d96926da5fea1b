"""SentenceChunker: whole sentences packed into chunks, capped in characters and tokens."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.chunkers.sentences import split_sentences
from trails.ingest.chunkers.spans import SPLITTER_VERSION, longest_fit, trim
from trails.ingest.chunkers.tokens import token_name, tokens_behind
from trails.ingest.document import Chunk, Document
from trails.keywords import named_fields

__all__ = ["SentenceChunker"]


@named_fields()  # chunk_size=... (a count of sentences elsewhere) is refused by name
@dataclass(frozen=True)
class SentenceChunker:
    """Packs whole sentences into chunks of at most ``max_chars`` characters.

    Args:
        max_chars: the longest chunk, in characters. A sentence longer than that is cut at
            whitespace (or, in one long word, anywhere).
        overlap: sentences repeated at the start of the next chunk, for context.
        max_tokens, count_tokens: also keep every chunk at ``count_tokens(text) <= max_tokens``
            (see :func:`default_chunker`). Give both or neither.

    Raises:
        ValueError: a limit is below 1, ``overlap`` is negative, or only one of
            ``max_tokens``/``count_tokens`` is given.

    >>> doc = Document("d", "mem", "One. Two. Three.")
    >>> [c.text for c in SentenceChunker(max_chars=15, overlap=1).chunk(doc)]
    ['One. Two.', 'Two. Three.']
    """

    max_chars: int = 1000
    overlap: int = 1
    max_tokens: int | None = None
    count_tokens: Callable[[str], int] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("max_chars", "overlap", "max_tokens"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, int)) and not (
                    name == "max_tokens" and value is None):
                raise InvalidArgumentTypeError(
                    f"SentenceChunker: {name} must be an int, got {value!r:.40}"
                    + (" (max_chars counts characters, overlap sentences)"
                       if name != "max_tokens" else " (or None)"))
        if self.max_chars < 1 or self.overlap < 0:
            raise InvalidArgumentError(
                f"need max_chars >= 1 and overlap >= 0, got max_chars="
                f"{self.max_chars}, overlap={self.overlap}")
        if (self.max_tokens is None) != (self.count_tokens is None):
            raise InvalidArgumentError("give both max_tokens and count_tokens, or neither")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InvalidArgumentError(f"need max_tokens >= 1, got {self.max_tokens}")

    @property
    def fingerprint(self) -> str:
        """The settings that decide the chunks, stable across machines (kept per version)."""
        tokens = token_name(self.count_tokens) if self.count_tokens else None
        return (f"SentenceChunker/{SPLITTER_VERSION}(max_chars={self.max_chars}, "
                f"overlap={self.overlap}, max_tokens={self.max_tokens}, tokens={tokens})")

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        spans = _Packer(self, text, split_sentences(text)).pack()
        return [Chunk(text[a:b], a, b, position) for position, (a, b) in enumerate(spans)]


class _Packer:
    """One document's greedy packing of sentences into chunk spans (``overlap`` shared).

    The packing asks "do units ``[a, b)`` fit?" a few times per chunk (a bisection). Every
    sentence's token count is taken once, in one batch, up front; then a range's count is the
    sum of its sentences' counts wherever that sum is exact (a word-piece tokenizer, sentences
    separated by spaces or newlines: see ``HFTokens.additive``), and the range is tokenised
    only otherwise. The answers are the same as tokenising every range, so the chunks are too:
    a 640 KB document no longer costs a tokenisation of ~5 chunks' worth of text per chunk.
    """

    def __init__(self, chunker: SentenceChunker, text: str, units: list[tuple[int, int]]) -> None:
        self.text, self.units = text, units
        self.max_chars, self.overlap = chunker.max_chars, chunker.overlap
        self.max_tokens, self.count = chunker.max_tokens, chunker.count_tokens
        self.known: dict[tuple[int, int], int] = {}  # (start, end) -> exact token count
        tokens = tokens_behind(self.count) if self.count is not None else None
        # Other tokenizers count each range whole, as asked: no sentence counts up front.
        self.additive = tokens is not None and tokens.additive
        if tokens is not None and self.additive and self.count == tokens.count:
            short = [(a, b) for a, b in units if b - a <= self.max_chars]
            counts = tokens.count_many([text[a:b] for a, b in short]) if short else []
            self.known.update(zip(short, counts))

    def pack(self) -> list[tuple[int, int]]:
        units, spans, a = self.units, [], 0
        while a < len(units):
            if not self.fits(*units[a]):
                # Split a too-long sentence only when met, so the other sentences need no
                # token count of their own (packing already counts them).
                units[a:a + 1] = self._fit(*units[a])
            b = self._last_fitting(a)
            spans.append((units[a][0], units[b - 1][1]))
            if b == len(units):
                break
            a = max(a + 1, b - self.overlap)
            while a < b and not self.fits_units(a, b + 1):
                a += 1  # less overlap when the overlap and the next unit do not fit together
        return spans

    def tokens(self, start: int, end: int) -> int:
        count = self.known.get((start, end))
        if count is None:
            count = self.known[start, end] = self.count(self.text[start:end])  # type: ignore[misc]
        return count

    def fits(self, start: int, end: int) -> bool:
        """``text[start:end]`` is within both limits (tokenised if not known)."""
        if end - start > self.max_chars:
            return False
        return self.count is None or self.tokens(start, end) <= self.max_tokens  # type: ignore[operator]

    def fits_units(self, a: int, b: int) -> bool:
        """Units ``[a, b)`` fit in one chunk."""
        units, text = self.units, self.text
        start, end = units[a][0], units[b - 1][1]
        if end - start > self.max_chars:
            return False
        if self.count is None:
            return True
        if self.additive and (start, end) not in self.known:
            known, total, previous = self.known, 0, None
            for unit in units[a:b]:
                if previous is not None:
                    # Only a space, tab or newline breaks words for every tokenizer (other
                    # spaces may be dropped as control characters; a piece of a long sentence
                    # cut inside a word has no gap at all): else count the range whole.
                    gap = text[previous:unit[0]]
                    if not (" " in gap or "\n" in gap or "\t" in gap or "\r" in gap):
                        break
                count = known.get(unit)
                total += self.tokens(*unit) if count is None else count
                previous = unit[1]
            else:
                return total <= self.max_tokens  # type: ignore[operator]
        return self.tokens(start, end) <= self.max_tokens  # type: ignore[operator]

    def _fit(self, start: int, end: int) -> list[tuple[int, int]]:
        """Cut one over-long sentence into pieces that fit, preferring whitespace."""
        text, pieces = self.text, []
        while start < end and not self.fits(start, end):
            cut = longest_fit(functools.partial(self.fits, start), start,
                              min(end, start + self.max_chars))
            soft = _soft_cut(text, start, cut)
            cut = soft if self.fits(start, soft) else cut
            pieces.append(trim(text, start, cut))  # start is never whitespace: not empty
            start = trim(text, cut, end)[0]
        return [*pieces, (start, end)] if start < end else pieces

    def _last_fitting(self, a: int) -> int:
        """The largest ``b`` such that units ``[a, b)`` fit in one chunk."""
        units = self.units
        hi = a + 1
        while hi < len(units) and units[hi][1] - units[a][0] <= self.max_chars:
            hi += 1
        if self.count is None:
            return hi  # within max_chars every b up to hi fits
        # Bisect rather than grow one unit at a time: a few range counts per chunk, not one
        # per sentence (a list of short lines has hundreds).
        return longest_fit(lambda b: self.fits_units(a, b), a, hi)


def _soft_cut(text: str, start: int, cut: int) -> int:
    """Move a cut back to whitespace in the piece's second half, so words stay whole."""
    if cut == len(text) or text[cut].isspace() or text[cut - 1].isspace():
        return cut
    for i in range(cut - 1, start + (cut - start) // 2, -1):
        if text[i].isspace():
            return i
    return cut
