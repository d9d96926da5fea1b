"""Passages for people: Markdown rendered to its plain text, cut on a word with an ellipsis,
the query's terms marked."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from trails.display.markup import escape
from trails.text import keyword_terms

__all__ = ["SNIPPET_CHARS", "markdown_text", "marked", "plain_snippet", "query_terms"]

# The characters of a chunk its stored snippet holds, and a passage shows by default.
SNIPPET_CHARS = 280
# Block markup a chunk may open with that a parser would not take as markup out of context:
# a front matter fence, a table row's pipe (without its header row), a list bullet or a
# quote mark left where a chunk was cut from its document.
_LEADING = re.compile(r"^(?:\s+|-{3,}|\*{3,}|#{1,6}(?=\s)|>|[-*+](?=\s)|\d+[.)](?=\s)|`{3,}\w*|\|)")
# CommonMark with raw HTML off (a tag is text, shown as written) and GitHub's tables and
# strikethrough, which Markdown documents use.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
# What a prefix of a document may end inside: a link or image not closed yet, an open code
# span or emphasis run. A passage cut from a longer text ends before the first of them.
_OPEN_AT_END = re.compile(r"!?\[[^\]]*(?:\]\([^)]*)?$|!?\[[^\]]*\]$|`+[^`]*$"
                          r"|(?<![*_~\w])(?:\*\*|__|~~|\*|_)(?=\S)[^*_~]*$")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+")


def markdown_text(text: str) -> str:
    """The words ``text`` shows when rendered as Markdown: emphasis, links (their text),
    images (their alt text), code, headings, lists, quotes and tables as plain text, with
    whitespace collapsed. A raw HTML tag stays text, as written.

    >>> markdown_text("## *Agreement*\\n\\nSee [ADR 10](../adr/0010.md) and `__init__`.")
    'Agreement See ADR 10 and __init__.'
    """
    pieces: list[str] = []
    for token in _MARKDOWN.parse(text):
        if token.type == "inline":
            pieces.append(_inline_text(token.children or []))
        elif token.type in ("fence", "code_block"):
            pieces.append(token.content)
    return _SPACES.sub(" ", " ".join(pieces)).strip()


def _inline_text(children: Sequence[Token]) -> str:
    out: list[str] = []
    opened: list[int] = []  # where each "__" strong run began in ``out``
    for child in children:
        if child.type in ("text", "code_inline", "image"):
            out.append(child.content)  # an image's content is its alt text
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif child.type == "strong_open" and child.markup == "__":
            opened.append(len(out))
        elif child.type == "strong_close" and child.markup == "__" and opened:
            # ``__init__`` outside code is an identifier, not bold "init": one word keeps
            # its underscores.
            begin = opened.pop()
            inner = "".join(out[begin:])
            if inner and not any(c.isspace() for c in inner):
                out[begin:] = [f"__{inner}__"]
    return "".join(out)


def plain_snippet(text: str | None, limit: int = SNIPPET_CHARS, whole: bool = True) -> str:
    """``text`` as plain words (:func:`markdown_text`), cut at the last word boundary within
    ``limit`` characters with an ellipsis; empty for None (a hit a custom retriever made
    without a snippet still displays).

    ``whole=False`` says ``text`` is itself a prefix cut from something longer (a stored
    snippet): its last, maybe partial, word and any Markdown construct left open at its end
    are dropped, and the ellipsis is always there.

    >>> plain_snippet("## Fusion\\n\\n**Auto** fusion weighs each ranking", limit=30)
    'Fusion Auto fusion weighs each…'
    >>> plain_snippet("Agreed in [ADR 10](../adr/0010-fus", whole=False)
    'Agreed in…'
    """
    rest = text or ""
    while True:
        found = _LEADING.match(rest)
        if found is None or not found.group(0):
            break
        rest = rest[found.end():]
    cut = not whole
    if cut:
        space = max(rest.rfind(" "), rest.rfind("\n"), rest.rfind("\t"))
        rest = rest[:max(space, 0)]  # no space: all of it is one partial word
        while (opened := _OPEN_AT_END.search(rest)) is not None:
            rest = rest[:opened.start()]
    flat = markdown_text(rest)
    if len(flat) > limit:
        # The last space at most at ``limit`` (a word ending exactly there is whole); only a
        # first word longer than the limit is cut inside.
        space = flat.rfind(" ", 0, limit + 1)
        flat, cut = (flat[:space] if space > 0 else flat[:limit]), True
    return flat.rstrip(" ,;:.-") + "…" if cut and flat else flat


def query_terms(query: str | None) -> frozenset[str]:
    """The words of ``query`` a keyword ranking scores (lower-cased, stopwords dropped)."""
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
        if any(w.lower() in wanted for w in _WORD.findall(composed)):
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
