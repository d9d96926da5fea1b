"""Chunkers: split a document into spans of its own text.

Every chunker here returns chunks with ``chunk.text == document.text[chunk.start:chunk.end]``,
positions ``0..n-1``, no empty or whitespace-only chunk, and together they cover every
non-whitespace character of the document::

    >>> from trails.ingest.document import Document
    >>> doc = Document("d", "mem", "Dr. Smith arrived. He sat down. Then he left.")
    >>> [c.text for c in SentenceChunker(max_chars=32, overlap=0).chunk(doc)]
    ['Dr. Smith arrived. He sat down.', 'Then he left.']

Which one to use: :func:`default_chunker` (sentences, capped by the embedder's token limit),
:class:`TokenChunker` (fixed token windows) or :class:`SentenceChunker` (sentences by size).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from trails.ingest.document import Chunk, Document

__all__ = [
    "SentenceChunker",
    "TokenChunker",
    "default_chunker",
    "split_sentences",
    "token_chunker_for",
]

# Bump when splitting or packing changes, so stored documents are chunked again.
SPLITTER_VERSION = 1

# Words that end in a period without ending a sentence ("Dr. Smith", "e.g. this").
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "mx", "dr", "prof", "sr", "jr", "st", "mt", "ft", "vs", "cf", "al", "eg",
    "ie", "fig", "figs", "no", "nos", "vol", "vols", "pp", "approx", "dept", "est", "inc", "ltd",
    "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
    "dec", "ca", "resp", "op", "ed", "eds", "rev", "gen", "col", "lt", "sgt", "capt", "hon",
})
_CANDIDATES = re.compile(
    r"(?P<para>\n[^\S\n]*\n\s*)"                       # a blank line: always a break
    r"|(?P<nl>\n)"                                      # one newline: a break before a block
    r"|(?P<cjk>[。！？]+[」』）)\"'”’]*)"               # CJK stops need no space after them
    r"|(?P<stop>[.!?…]+[)\]\"'”’»]*(?=\s|\Z))")         # . ! ? then space or the end
# Every candidate starts with one of these: finding them first lets the engine skip ahead
# (an alternation of groups gets no such prefix scan from re), ~4x faster on prose.
_CANDIDATE_START = re.compile(r"[\n。！？.!?…]")
_BLOCK_START = re.compile(r"[^\S\n]*(?:#{1,6}\s|[-*+>|]\s|\d{1,3}[.)]\s|```)")
_NEXT_CHAR = re.compile(r"\s*(\S)")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of the sentences in ``text``, trimmed of whitespace.

    A sentence ends at ``.``/``!``/``?`` followed by space and a word that is not lower case,
    unless the word before the period is a known abbreviation or an initial; at a blank line;
    at a newline before a Markdown block (heading, list item, quote, table, fence) or after a
    heading; and at CJK full stops. Wrapped lines inside a paragraph stay together.

    >>> text = "See e.g. Fig. 2. It works!\\nYes."
    >>> [text[a:b] for a, b in split_sentences(text)]
    ['See e.g. Fig. 2.', 'It works!', 'Yes.']
    """
    cuts = [0]
    cuts += [m.end() for m in _candidates(text) if _is_break(text, m)]
    cuts.append(len(text))
    spans = (_trim(text, a, b) for a, b in itertools.pairwise(cuts))
    return [(a, b) for a, b in spans if a < b]


def _candidates(text: str) -> Iterator[re.Match[str]]:
    """``_CANDIDATES.finditer(text)``: the same matches, tried only where one can start."""
    search, match, pos = _CANDIDATE_START.search, _CANDIDATES.match, 0
    while (start := search(text, pos)) is not None:
        m = match(text, start.start())
        if m is None:
            pos = start.start() + 1
        else:
            yield m
            pos = m.end()  # every alternative takes at least one character


def _is_break(text: str, m: re.Match[str]) -> bool:
    kind = m.lastgroup
    if kind in ("para", "cjk"):
        return True
    if kind == "nl":
        line_start = text.rfind("\n", 0, m.start()) + 1
        return bool(_BLOCK_START.match(text, m.end())
                    or re.match(r" {0,3}#{1,6}\s", text[line_start:m.start() + 1]))
    following = _NEXT_CHAR.match(text, m.end())
    if following and following.group(1).islower():
        return False  # "approx. three", "he asked? she said": the sentence goes on
    return "." not in m.group() or not _is_abbreviation(text, m.start())


def _is_abbreviation(text: str, stop: int) -> bool:
    # The end of this line only, in a bounded window: a long line must not make it quadratic.
    words = text[max(0, stop - 40):stop].rsplit("\n", 1)[-1].split()
    if not words:
        return False
    word = words[-1].lstrip("([{\"'“‘«")
    if word.isdigit():
        return len(words) == 1  # "1. First" opens a numbered list item
    return (len(word) == 1 and word.isalpha()) or word.replace(".", "").lower() in _ABBREVIATIONS


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


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
        if self.max_chars < 1 or self.overlap < 0:
            raise ValueError(f"need max_chars >= 1 and overlap >= 0, got max_chars="
                             f"{self.max_chars}, overlap={self.overlap}")
        if (self.max_tokens is None) != (self.count_tokens is None):
            raise ValueError("give both max_tokens and count_tokens, or neither")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"need max_tokens >= 1, got {self.max_tokens}")

    @property
    def fingerprint(self) -> str:
        """The settings that decide the chunks, stable across machines (kept per version)."""
        tokens = _token_name(self.count_tokens) if self.count_tokens else None
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
    separated by spaces or newlines: see ``_HFTokens.additive``), and the range is tokenised
    only otherwise. The answers are the same as tokenising every range, so the chunks are too:
    a 640 KB document no longer costs a tokenisation of ~5 chunks' worth of text per chunk.
    """

    def __init__(self, chunker: SentenceChunker, text: str, units: list[tuple[int, int]]) -> None:
        self.text, self.units = text, units
        self.max_chars, self.overlap = chunker.max_chars, chunker.overlap
        self.max_tokens, self.count = chunker.max_tokens, chunker.count_tokens
        self.known: dict[tuple[int, int], int] = {}  # (start, end) -> exact token count
        owner = getattr(self.count, "__self__", None)
        tokens = owner if isinstance(owner, (_HFTokens, _TiktokenTokens)) else None
        # Other tokenizers count each range whole, as asked: no sentence counts up front.
        self.additive = tokens is not None and tokens.additive
        if self.additive and self.count == tokens.count:  # type: ignore[union-attr]
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
            cut = _longest_fit(lambda e, s=start: self.fits(s, e), start,
                               min(end, start + self.max_chars))
            soft = _soft_cut(text, start, cut)
            cut = soft if self.fits(start, soft) else cut
            pieces.append(_trim(text, start, cut))  # start is never whitespace: not empty
            start = _trim(text, cut, end)[0]
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
        return _longest_fit(lambda b: self.fits_units(a, b), a, hi)


def _longest_fit(fits: Callable[[int], bool], start: int, end: int) -> int:
    """The largest ``e`` in ``(start, end]`` with ``fits(e)``; at least ``start + 1``."""
    lo, hi = start + 1, end
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _soft_cut(text: str, start: int, cut: int) -> int:
    """Move a cut back to whitespace in the piece's second half, so words stay whole."""
    if cut == len(text) or text[cut].isspace() or text[cut - 1].isspace():
        return cut
    for i in range(cut - 1, start + (cut - start) // 2, -1):
        if text[i].isspace():
            return i
    return cut


# --------------------------------------------------------------------------- tokens

class _HFTokens:
    """A Hugging Face (fast) tokenizer: spans from ``return_offsets_mapping``."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        # Tokenising a whole document is deliberate here; silence "sequence is too long".
        params = inspect.signature(tokenizer.__call__).parameters
        self.options = {"add_special_tokens": False, **({"verbose": False}
                                                       if "verbose" in params else {})}

    @property
    def name(self) -> str:
        # Class and vocabulary size, not name_or_path: that is a local path for packaged models.
        return f"{type(self.tokenizer).__name__}:{getattr(self.tokenizer, 'vocab_size', '?')}"

    def spans(self, text: str) -> list[tuple[int, int]]:
        try:
            encoded = self.tokenizer(text, return_offsets_mapping=True, **self.options)
        except NotImplementedError as exc:  # slow (Python) tokenizers have no offsets
            raise ValueError("TokenChunker needs a fast tokenizer with offsets: load it with "
                             "AutoTokenizer.from_pretrained(..., use_fast=True)") from exc
        return sorted((int(a), int(b)) for a, b in encoded["offset_mapping"] if b > a)

    def count(self, text: str) -> int:
        return self.count_many([text])[0]

    def count_many(self, texts: list[str]) -> list[int]:
        """``[count(t) for t in texts]``, exactly, in one tokenizer call at most.

        For a BERT-style tokenizer (:attr:`additive`), a text is counted from its pieces: it is
        cut at ASCII spaces, tabs and newlines and around ASCII punctuation, where BERT always
        splits (and which its normalising leaves alone), so each piece gets the same word
        pieces wherever it stands. A piece is tokenised the first time it is seen, alone, and
        remembered; a text is then the sum of its pieces' counts, several times cheaper than
        tokenising it. Text with an added token, or a capital sigma (whose lower case depends
        on the next letter, across any cut), goes to the tokenizer whole.
        """
        counts: list[int | None] = [None] * len(texts)
        if self.additive:
            known = self._word_counts
            if len(known) > _WORD_CACHE:
                known.clear()
            words = {i: w for i, text in enumerate(texts)
                     if (w := self._pieces(text)) is not None}
            try:
                for i, ws in words.items():
                    counts[i] = sum(map(known.__getitem__, ws))
            except KeyError:  # words not seen before: tokenise them (alone), then sum again
                new = list(dict.fromkeys(x for ws in words.values() for x in ws
                                         if x not in known))
                known.update(zip(new, self._piece_counts(new)))
                for i, ws in words.items():
                    counts[i] = sum(map(known.__getitem__, ws))
        rest = [i for i, count in enumerate(counts) if count is None]
        if rest:
            for i, count in zip(rest, self._tokenize_counts([texts[i] for i in rest])):
                counts[i] = count
        return counts  # type: ignore[return-value]

    def _tokenize_counts(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self.tokenizer(texts, **self.options)["input_ids"]]

    def _piece_counts(self, pieces: list[str]) -> list[int]:
        """Token counts of new pieces from the Rust tokenizer itself: the Python wrapper
        spends ~80 µs a text converting each result, more than tokenising a word costs."""
        backend = self._backend
        encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
        return [len(e.ids) for e in encode(pieces, add_special_tokens=False)]

    @functools.cached_property
    def _backend(self) -> Any:
        """A copy of the Rust tokenizer that never truncates or pads (the wrapper changes
        those settings on its own tokenizer at every call)."""
        backend = self.tokenizer.backend_tokenizer
        copy = type(backend).from_str(backend.to_str())
        copy.no_truncation()
        copy.no_padding()
        return copy

    def _pieces(self, text: str) -> list[str] | None:
        """``text`` cut where BERT always splits, or None if it must be tokenised whole."""
        if "\u03a3" in text or (self._added is not None and self._added.search(text)):
            return None
        return _PIECES.findall(text)

    @functools.cached_property
    def _word_counts(self) -> dict[str, int]:
        return {}

    @functools.cached_property
    def additive(self) -> bool:
        """Whether two texts joined by a space, tab or newline count as the sum of their counts.

        True for BERT-style word pieces (``BertNormalizer``, ``BertPreTokenizer``,
        ``WordPiece``): normalising is per character, words split at whitespace and
        punctuation and never span them, and a word's pieces depend on that word alone. Added
        tokens are matched in the raw text, so none may contain whitespace. Anything else is
        counted as a whole.
        """
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        try:
            parts = (type(backend.normalizer).__name__, type(backend.pre_tokenizer).__name__,
                     type(backend.model).__name__)
        except AttributeError:  # not a tokenizers-backed tokenizer
            return False
        return (parts == ("BertNormalizer", "BertPreTokenizer", "WordPiece")
                and not any(c.isspace() for token in self._added_tokens for c in token))

    @functools.cached_property
    def _added_tokens(self) -> list[str]:
        decoder = getattr(self.tokenizer, "added_tokens_decoder", None) or {}
        return [str(getattr(t, "content", t)) for t in decoder.values()]

    @functools.cached_property
    def _added(self) -> re.Pattern[str] | None:
        """Any added token, in any case (one may be matched after lower-casing)."""
        tokens = [re.escape(t) for t in self._added_tokens if t]
        return re.compile("|".join(tokens), re.IGNORECASE) if tokens else None


# Where BERT always splits, whatever surrounds it: at an ASCII space, tab or newline (other
# spaces and control characters may be deleted by its normalising, joining what is around
# them, so they stay inside pieces) and around each ASCII punctuation mark (every printable
# ASCII character that is not a letter, digit or space). A piece is everything between.
_PIECES = re.compile(r"[^ \t\n\r!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]")
_WORD_CACHE = 1_000_000  # distinct words remembered per tokenizer (then it starts over)


class _TiktokenTokens:
    """A tiktoken Encoding: each token starts where ``decode_with_offsets`` says."""

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding

    @property
    def name(self) -> str:
        return f"tiktoken:{self.encoding.name}"

    def spans(self, text: str) -> list[tuple[int, int]]:
        tokens = self.encode(text)
        decoded, starts = self.encoding.decode_with_offsets(tokens)
        if decoded != text:  # lone surrogates are replaced by encode(): offsets would drift
            raise ValueError("the tiktoken encoding does not round-trip this text "
                             "(does it hold lone surrogates?)")
        return list(zip(starts, [*starts[1:], len(text)]))

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(t) for t in self.encoding.encode_batch(texts, disallowed_special=())]

    # BPE merges across a space ("a" + " b" is not "a" + "b"): ranges are always counted whole.
    additive = False

    def encode(self, text: str) -> list[int]:
        # Text that looks like "<|endoftext|>" is ordinary document text, not a control token.
        return self.encoding.encode(text, disallowed_special=())


def _token_name(count: Callable[[str], int]) -> str:
    owner = getattr(count, "__self__", None)
    return owner.name if isinstance(owner, (_HFTokens, _TiktokenTokens)) else count.__qualname__


def _tokens_of(tokenizer: Any) -> _HFTokens | _TiktokenTokens:
    if hasattr(tokenizer, "decode_with_offsets") and hasattr(tokenizer, "encode"):
        return _TiktokenTokens(tokenizer)
    if callable(tokenizer):
        return _HFTokens(tokenizer)
    raise ValueError(f"unsupported tokenizer {type(tokenizer).__name__}: pass a Hugging Face "
                     "tokenizer (callable with return_offsets_mapping=True) or a tiktoken "
                     "Encoding (encode and decode_with_offsets)")


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
            raise ValueError(f"need max_tokens >= 1 and 0 <= overlap_tokens < max_tokens, got "
                             f"max_tokens={max_tokens}, overlap_tokens={overlap_tokens}")
        self.tokens = _tokens_of(tokenizer)
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
            start, end = _trim(text, 0, len(text))
            return [Chunk(text[start:end], start, end, 0)] if start < end else []
        chunks: list[Chunk] = []
        i, floor = 0, 0  # floor: where the next chunk may start after a cut inside a token
        while True:
            start = _skip_space(text, max(0 if i == 0 else spans[i][0], floor))
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
            end = _trim(text, start, spans[j][0] if j < len(spans) else len(text))[1]
            if self._fits(text, start, end):
                return j, end
            if j == i + 1:
                cut = _longest_fit(lambda e: self._fits(text, start, _trim(text, start, e)[1]),
                                   start, end)
                return None, max(_trim(text, start, cut)[1], start + 1)
            j -= 1

    def _fits(self, text: str, start: int, end: int) -> bool:
        return self.tokens.count(text[start:end]) <= self.max_tokens


def _skip_space(text: str, start: int) -> int:
    while start < len(text) and text[start].isspace():
        start += 1
    return start


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


def _model_tokenizer(embedder: Any) -> tuple[Any, int] | None:
    """(tokenizer, max tokens per chunk) that an embedder exposes, or None."""
    tokenizer = getattr(embedder, "tokenizer", None)
    max_tokens = getattr(embedder, "max_tokens", None)
    if tokenizer is not None and max_tokens:
        # max_seq_length counts [CLS] and [SEP] (or the model's own specials): leave room.
        special = getattr(tokenizer, "num_special_tokens_to_add", lambda pair=False: 2)()
        return tokenizer, int(max_tokens) - int(special)
    encoding = getattr(embedder, "encoding", None)
    if encoding is not None:
        return encoding, int(max_tokens or OPENAI_MAX_TOKENS)
    return None


# OpenAI's embedding models take at most 8191 tokens per input.
OPENAI_MAX_TOKENS = 8191


def token_chunker_for(embedder: Any, overlap_tokens: int = 0) -> TokenChunker | SentenceChunker:
    """A :class:`TokenChunker` at the embedder's own token limit.

    Uses ``embedder.tokenizer`` and ``embedder.max_tokens`` (a sentence-transformers model;
    the special tokens are reserved), else ``embedder.encoding`` (tiktoken; ``max_tokens`` or
    8191), else falls back to a :class:`SentenceChunker`. Reading ``tokenizer`` may load the
    model.

    >>> token_chunker_for(object())
    SentenceChunker(max_chars=1000, overlap=1, max_tokens=None)
    """
    found = _model_tokenizer(embedder)
    if found is None:
        return SentenceChunker()
    return TokenChunker(found[0], found[1], overlap_tokens)


def default_chunker(embedder: Any = None, *, max_chars: int = 1000,
                    overlap: int = 1) -> SentenceChunker:
    """Sentences packed up to ``max_chars``, and never past the embedder's token limit.

    Chunks keep whole sentences (the best unit for retrieval) while the model still sees all
    of each chunk: with a tokenizer (see :func:`token_chunker_for`) packing counts tokens, so
    nothing is truncated by the model. Without one, it is a plain :class:`SentenceChunker`.

    >>> default_chunker(None)
    SentenceChunker(max_chars=1000, overlap=1, max_tokens=None)
    """
    found = _model_tokenizer(embedder) if embedder is not None else None
    if found is None:
        return SentenceChunker(max_chars, overlap)
    tokenizer, max_tokens = found
    return SentenceChunker(max_chars, overlap, max_tokens, _tokens_of(tokenizer).count)
