"""HTML to text in one pass over the standard library's parser, in time linear in the page.

No tree is built: a tree walked per text node (is a ``<pre>`` above it?) or per tag (where
does it end?) costs the depth of the page each time, and 100,000 nested ``<div>`` made that
minutes. Here a stack of open tags and counters answer those questions in constant time.

>>> page = html_to_text("<title>T</title><script>x()</script><p>Hi <b>there</b>.</p>")
>>> page.title, page.text
('T', 'Hi there.')
"""

from __future__ import annotations

import re
from collections import Counter
from html import unescape
from html.parser import HTMLParser
from typing import NamedTuple

__all__ = ["HtmlText", "html_to_text"]

# Elements whose content is never visible text.
_DROP_TAGS = frozenset({"title", "script", "style", "noscript", "template", "head", "svg",
                        "iframe"})
# Tags whose content is code or inert markup, never text, not even a title's.
_CODE_TAGS = frozenset({"script", "style", "template"})
# Blocks that stand apart by a blank line, and blocks that take a line of their own.
_PARAGRAPH_TAGS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
                             "table", "ul", "ol", "dl", "section", "article", "header",
                             "footer", "figure", "hr"})
_LINE_TAGS = frozenset({"div", "li", "tr", "dt", "dd", "figcaption", "main", "nav", "aside",
                        "form", "br"})
# Elements that never have content or an end tag (an end tag of one is ignored).
_VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen",
                        "link", "menuitem", "meta", "param", "source", "track", "wbr",
                        "basefont", "bgsound", "command", "frame", "image", "isindex",
                        "nextid", "spacer"})
_META_NAMES = frozenset({"author", "description", "keywords", "date", "article:published_time"})

# Private-use characters mark block breaks until the text is out; one in the page itself
# would read as a break, which is harmless.
_PARAGRAPH, _LINE = "\ue000", "\ue001"
_SPACE_RUN = re.compile(r"\s+")
# An unfinished construct at the end longer than this is read as text (see _Reader.close).
_TAIL_LIMIT = 4096
_BREAK_RUN = re.compile(r"[\s\ue000\ue001]+")


class HtmlText(NamedTuple):
    """What a page holds for ingestion: its visible text, title and ``<meta>`` fields."""

    text: str
    title: str | None
    metadata: dict[str, str]


def html_to_text(page: str) -> HtmlText:
    """The visible text of ``page``, one block per line (a blank line between paragraphs),
    with scripts, styles and comments dropped; the first ``<title>``; ``<meta>`` author,
    description, keywords and date (``article:published_time``).

    Unclosed tags end with their parent and stray end tags are ignored, so any input gives
    a result; the time is linear in the length of the page whatever its nesting.
    """
    reader = _Reader()
    reader.feed(page)
    reader.close()
    return HtmlText(reader.text(), reader.title(), reader.metadata)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # open tags, and whether each hides its text
        self.open = Counter[str]()  # open tags by name: a stray end tag costs no stack search
        self.hidden = 0  # open tags that hide their content (and those inside them)
        self.in_pre = 0
        self.in_code = 0  # open script, style and template tags: their content is no text
        self.pieces: list[str] = []
        self.title_parts: list[str] | None = None  # collecting the first <title>'s text
        self.title_depth = -1  # where the first <title> sits on the stack
        self.title_done = False
        self.metadata: dict[str, str] = {}

    # -- the parser's callbacks --------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            self._meta(attrs)
        if tag == "title" and self.title_parts is None:
            self.title_parts, self.title_depth = [], len(self.stack)
        self._mark(tag)
        if tag in _VOID_TAGS:
            self._mark(tag)
            return
        hides = self.hidden > 0 or tag in _DROP_TAGS
        self.stack.append((tag, hides))
        self.open[tag] += 1
        self.hidden += hides
        self.in_pre += tag == "pre"
        self.in_code += tag in _CODE_TAGS

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open[tag]:
            return  # a stray end tag (or a void element's): nothing to close
        while self.stack:
            name, _ = self.stack[-1]
            self._pop()
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None and not self.title_done and not self.in_code:
            self.title_parts.append(data)
        if self.hidden:
            return
        self.pieces.append(data if self.in_pre else _SPACE_RUN.sub(" ", data))

    def unknown_decl(self, data: str) -> None:
        if data.upper().startswith("CDATA[") and not self.hidden:
            self.pieces.append(data[len("CDATA["):])

    def close(self) -> None:
        if len(self.rawdata) > _TAIL_LIMIT:
            # What feed() left is one construct that never ends (`<a <a <a ...`, `<!-- ...`).
            # The standard parser's end-of-input mode re-scans it from each "<" (quadratic in
            # Python before 3.13.5): past a few KiB, read it as the text it displays as.
            tail, self.rawdata = self.rawdata, ""
            self.handle_data(unescape(tail))
        super().close()
        while self.stack:  # tags left open end with the page
            self._pop()

    # -- helpers -----------------------------------------------------------------------------

    def _pop(self) -> None:
        name, hides = self.stack.pop()
        self.open[name] -= 1
        self.hidden -= hides
        self.in_pre -= name == "pre"
        self.in_code -= name in _CODE_TAGS
        if name == "title" and len(self.stack) == self.title_depth:
            self.title_done = True  # the first <title> ended (not one nested in it)
        if not hides:
            self._mark(name)

    def _mark(self, tag: str) -> None:
        """A break before and after a block (markers, not newlines: adjacent blocks then give
        one break, not several, and inline tags such as <b> do not split words)."""
        if self.hidden:
            return
        if tag in _PARAGRAPH_TAGS:
            self.pieces.append(_PARAGRAPH)
        elif tag in _LINE_TAGS:
            self.pieces.append(_LINE)

    def _meta(self, attrs: list[tuple[str, str | None]]) -> None:
        fields = {key: value or "" for key, value in attrs}
        name = (fields.get("name") or fields.get("property") or "").lower()
        content = fields.get("content")
        if name in _META_NAMES and content:
            self.metadata["date" if name == "article:published_time" else name] = content

    def title(self) -> str | None:
        if self.title_parts is None:
            return None
        return " ".join("".join(self.title_parts).split()) or None

    def text(self) -> str:
        joined = _BREAK_RUN.sub(_break, "".join(self.pieces))
        lines = [_INLINE_SPACE.sub(" ", line).strip() for line in joined.split("\n")]
        return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


_INLINE_SPACE = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def _break(run: re.Match[str]) -> str:
    """A run of space and markers: a blank line if it holds a paragraph mark, a newline if a
    line mark, else the space as it was."""
    text = run.group()
    if _PARAGRAPH in text:
        return "\n\n"
    return "\n" if _LINE in text else text
