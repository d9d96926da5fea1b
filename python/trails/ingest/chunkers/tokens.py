"""Token counting for chunkers: one adapter per tokenizer kind, with the same four calls.

:func:`tokens_of` wraps a Hugging Face fast tokenizer (:class:`HFTokens`) or a tiktoken
``Encoding`` (:class:`TiktokenTokens`); chunkers then ask for token spans, counts, the
special tokens a model adds, and a stable name for fingerprints.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

__all__ = ["HFTokens", "TiktokenTokens", "Tokens", "token_name", "tokens_behind", "tokens_of"]

class HFTokens:
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

    @property
    def special_tokens(self) -> int:
        """Tokens the tokenizer adds to every text (``[CLS]``, ``[SEP]``): within a model's
        limit, so a chunk has that many fewer."""
        added = getattr(self.tokenizer, "num_special_tokens_to_add", None)
        return 2 if added is None else int(added())

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
        backend: Any = getattr(self.tokenizer, "backend_tokenizer", None)
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


class TiktokenTokens:
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
    # An Encoding adds no tokens of its own: the API's limit is all text.
    special_tokens = 0

    def encode(self, text: str) -> list[int]:
        # Text that looks like "<|endoftext|>" is ordinary document text, not a control token.
        ids: list[int] = self.encoding.encode(text, disallowed_special=())
        return ids


Tokens = HFTokens | TiktokenTokens


def tokens_behind(count: Callable[[str], int]) -> Tokens | None:
    """The adapter whose ``count`` method ``count`` is, or None for any other function."""
    owner = count.__self__ if inspect.ismethod(count) else None
    return owner if isinstance(owner, (HFTokens, TiktokenTokens)) else None


def token_name(count: Callable[[str], int]) -> str:
    """A stable name for a token counter, for fingerprints: the tokenizer's, else the function's."""
    tokens = tokens_behind(count)
    return tokens.name if tokens is not None else count.__qualname__


def tokens_of(tokenizer: Any) -> Tokens:
    """The adapter for a Hugging Face tokenizer or a tiktoken Encoding.

    Raises:
        ValueError: a tokenizer of another kind.
    """
    if hasattr(tokenizer, "decode_with_offsets") and hasattr(tokenizer, "encode"):
        return TiktokenTokens(tokenizer)
    if callable(tokenizer):
        return HFTokens(tokenizer)
    raise ValueError(f"unsupported tokenizer {type(tokenizer).__name__}: pass a Hugging Face "
                     "tokenizer (callable with return_offsets_mapping=True) or a tiktoken "
                     "Encoding (encode and decode_with_offsets)")
