"""Passages for people: Markdown markup off the start, cut on a word, the query's terms marked."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from trails.display.markup import escape
from trails.text import keyword_terms

__all__ = ["SNIPPET_CHARS", "marked", "plain_snippet", "query_terms"]

SNIPPET_CHARS = 280
# Block markup a chunk may open with: front matter fences, headings, quotes, list bullets,
# numbered items, code fences, table pipes, horizontal rules.
_LEADING = re.compile(r"^(?:\s+|-{3,}|\*{3,}|#{1,6}(?=\s)|>|[-*+](?=\s)|\d+[.)](?=\s)|`{3,}\w*|\|)")
# Bold and code markers (the words between them stay); "__" is left alone: in identifiers
# (``__init__``) it is text, not emphasis.
_INLINE = re.compile(r"(\*\*|`+)")
# A heading inside the passage (a chunk may span sections): its hashes go, its words stay.
_HEADING = re.compile(r"(?m)^[ \t]*#{1,6}[ \t]+")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+")


def plain_snippet(text: str | None, limit: int = SNIPPET_CHARS) -> str:
    """``text`` without leading Markdown markup or inline emphasis, its whitespace collapsed,
    cut at the last word boundary within ``limit`` characters with an ellipsis; empty for
    None (a hit a custom retriever made without a snippet still displays).

    >>> plain_snippet("## Fusion\\n\\n**Auto** fusion weighs each ranking", limit=30)
    'Fusion Auto fusion weighs each…'
    """
    rest = text or ""
    while True:
        found = _LEADING.match(rest)
        if found is None or not found.group(0):
            break
        rest = rest[found.end():]
    flat = _SPACES.sub(" ", _INLINE.sub("", _HEADING.sub("", rest))).strip()
    if len(flat) <= limit:
        return flat
    # The last space at most at ``limit`` (a word ending exactly there is whole); only a
    # first word longer than the limit is cut inside.
    space = flat.rfind(" ", 0, limit + 1)
    cut = flat[:space] if space > 0 else flat[:limit]
    return cut.rstrip(" ,;:.-") + "…"


def query_terms(query: str | None) -> frozenset[str]:
    """The words of ``query`` a keyword ranking scores (case-folded, stopwords dropped)."""
    return frozenset(keyword_terms(query)) if query else frozenset()


def marked(text: str, terms: Iterable[str]) -> str:
    """``text`` escaped for HTML, each word that is one of ``terms`` (as :func:`query_terms`
    gives them) wrapped in ``<mark>``; the characters shown are the passage's own.

    >>> marked("Fusion <b>weighs</b> rankings", {"fusion", "b"})
    '<mark>Fusion</mark> &lt;<mark>b</mark>&gt;weighs&lt;/<mark>b</mark>&gt; rankings'
    >>> marked("U\u0308ber alles", {"\u00fcber"}) == "<mark>U\u0308ber</mark> alles"
    True
    """
    wanted = frozenset(terms)
    if not wanted:
        return escape(text)
    pieces: list[str] = []
    position = 0
    for start, end in _runs(text):
        # Compared composed (NFC), as the query's terms are, but shown as written: NFC
        # also rewrites some characters outright (U+F900 becomes U+8C48).
        found = text[start:end]
        composed = unicodedata.normalize("NFC", found)
        if any(w.casefold() in wanted for w in _WORD.findall(composed)):
            pieces.append(escape(text[position:start]))
            pieces.append(f"<mark>{escape(found)}</mark>")
            position = end
    pieces.append(escape(text[position:]))
    return "".join(pieces)


def _runs(text: str) -> Iterable[tuple[int, int]]:
    """Where the words of ``text`` stand, each with its combining marks: in decomposed text
    (``u`` + a combining diaeresis) the accent is no word character and would split "über"
    in two."""
    start = None
    for index, char in enumerate(text):
        inside = char.isalnum() or (start is not None and unicodedata.category(char)[0] == "M")
        if inside and start is None:
            start = index
        elif not inside and start is not None:
            yield start, index
            start = None
    if start is not None:
        yield start, len(text)
