"""Text into terms: the tokeniser that keyword queries and keyword indexes share (layer 0).

A store's ``keyword_search`` never passes user text to its query language. The text is split
into words (runs of letters and digits, as SQLite FTS5's ``unicode61`` tokenizer splits it),
stopwords are dropped, and each remaining word becomes one quoted term, ORed with the others:
``What is "BM25"?`` becomes ``"bm25"``. Quotes, ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``^``,
``:`` and parentheses are never operators, only separators (or, for the words, plain words).

Nothing here imports the rest of trails: stores (below ranking) and ranking both use it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable

__all__ = ["MAX_TERMS", "STOPWORDS", "fts5_match", "keyword_terms", "text_words"]

# Lucene's English stopword set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET), which the Anserini /
# Pyserini BM25 baselines use. Dropped from queries only: the index keeps every word.
STOPWORDS: frozenset[str] = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
})
# A longer query keeps its first MAX_TERMS distinct terms (each term costs a doclist scan).
MAX_TERMS = 256
# Letters and digits (FTS5 unicode61 token characters); "_" and everything else separate.
_WORD = re.compile(r"[^\W_]+")


def keyword_terms(query: str, stopwords: Iterable[str] | None = None) -> list[str]:
    """The distinct, lower-cased words of ``query`` that a keyword ranking scores.

    Lower-cased, not case-folded: FTS5's tokenizer, which reads the rows, keeps ``ß`` and
    ligatures as they are, and ``casefold()`` would turn the query's ``Straße`` into
    ``strasse``, which no row that says ``Straße`` holds.

    ``stopwords=None`` drops :data:`STOPWORDS`; pass ``()`` to keep every word. A query made
    only of stopwords keeps them (``"to be or not to be"`` still finds something).

    >>> keyword_terms('What is "BM25" (NEAR the*)?')
    ['what', 'bm25', 'near']
    >>> keyword_terms("to be or not to be")
    ['to', 'be', 'or', 'not']
    >>> keyword_terms("  ")
    []
    """
    if not isinstance(query, str):
        raise TypeError(f"a keyword query must be a string, got {type(query).__name__}")
    stop: Collection[str] = STOPWORDS if stopwords is None else frozenset(
        s.lower() for s in stopwords)
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(unicodedata.normalize("NFC", query))))
    kept = [w for w in words if w not in stop]
    return (kept or words)[:MAX_TERMS]


def text_words(text: str) -> list[str]:
    """Every lower-cased word of ``text`` in order, repeats kept: what an index that counts
    term frequencies itself holds of a row (the same words :func:`keyword_terms` makes of a
    query).

    >>> text_words("Rails, rails and RAILS_2")
    ['rails', 'rails', 'and', 'rails', '2']
    """
    return [w.lower() for w in _WORD.findall(unicodedata.normalize("NFC", text))]


def fts5_match(terms: Iterable[str]) -> str | None:
    """An FTS5 MATCH expression ORing each term as a quoted string (None when no terms).

    >>> print(fts5_match(["bm25", 'a"b']))
    "bm25" OR "a""b"
    """
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms if t]
    return " OR ".join(quoted) if quoted else None
