"""Format parsers: one pure function per file format, from a string (or PDF bytes) to a
:class:`Parsed` record, so each format is testable without files::

    >>> parse_markdown("---\\ntitle: Guide\\ndate: 2024-05-01\\n---\\nHello.").metadata
    {'title': 'Guide', 'date': datetime.date(2024, 5, 1)}
"""

from __future__ import annotations

import io
import re
from typing import Any, NamedTuple

import yaml

from trails._lazy import require
from trails.ingest.document import Document

__all__ = [
    "Parsed",
    "parse_html",
    "parse_jsonl_record",
    "parse_markdown",
    "parse_pdf",
    "parse_text",
]


class Parsed(NamedTuple):
    """What a format parser extracts; ``key`` is a record's own id (JSONL), else None."""

    text: str
    title: str | None = None
    metadata: dict[str, Any] = {}  # noqa: RUF012 - NamedTuple defaults are never mutated here
    media_type: str = "text/plain"
    key: str | None = None

    def to_document(self, id: str, source: str) -> Document:
        return Document(id=id, source=source, text=self.text, title=self.title,
                        metadata=dict(self.metadata), media_type=self.media_type)


def parse_text(text: str) -> Parsed:
    """Plain text, kept as it is.

    >>> parse_text("hello").text
    'hello'
    """
    return Parsed(text, None, {})


MAX_FRONT_MATTER = 256 * 1024  # characters of YAML front matter
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_ATX_H1 = re.compile(r" {0,3}#[ \t]+(.*)")


class _FrontMatterLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a value shaped like a date that is no date
    (``2024-13-45``) stays a string instead of failing the whole front matter: the pipeline
    then reports it as a warning and the document is still ingested."""

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError:
            return self.construct_scalar(node)

    def compose_node(self, parent: Any, index: Any) -> Any:
        # Aliases (*name) are refused, not expanded: 450 bytes of nested aliases expand to
        # billions of values ("billion laughs"), and an alias inside its own anchor makes a
        # value that contains itself. Front matter never needs them.
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "front matter uses a YAML alias (*name); trails does not expand "
                "aliases: write the value out", event.start_mark)
        return super().compose_node(parent, index)


_FrontMatterLoader.add_constructor("tag:yaml.org,2002:timestamp",
                                   _FrontMatterLoader.construct_yaml_timestamp)


def parse_markdown(text: str) -> Parsed:
    """Markdown: YAML front matter becomes metadata, the body becomes the text.

    The title is the front matter's ``title``, else the first ``# heading`` outside code
    fences. Dates stay as YAML gives them (``datetime.date``/``datetime`` when unquoted).

    Raises:
        ValueError: the front matter is not valid YAML or not a mapping.

    >>> p = parse_markdown("# Intro\\n\\nSome text.")
    >>> p.title, p.media_type
    ('Intro', 'text/markdown')
    """
    metadata: dict[str, Any] = {}
    match = _FRONT_MATTER.match(text)
    if match:
        if len(match.group(1) or "") > MAX_FRONT_MATTER:
            raise ValueError(f"front matter is over {MAX_FRONT_MATTER:,} characters; keep "
                             "metadata short and put the rest in the body")
        try:
            loaded = yaml.load(match.group(1) or "", Loader=_FrontMatterLoader)
        except yaml.YAMLError as exc:
            raise ValueError(f"invalid YAML front matter: {exc}") from exc
        except RecursionError as exc:
            raise ValueError("front matter nests too deeply to read") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError("front matter must be a YAML mapping (key: value lines), "
                             f"got {type(loaded).__name__}")
        metadata = {str(k): v for k, v in (loaded or {}).items()}
        text = text[match.end():]
    title = metadata.get("title")
    title = str(title) if title is not None else _first_heading(text)
    return Parsed(text, title, metadata, "text/markdown")


def _first_heading(text: str) -> str | None:
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence  # a '# comment' inside a code block is not a heading
        elif not in_fence and (match := _ATX_H1.fullmatch(line)):
            heading = _heading_text(match.group(1))
            if heading:
                return heading
    return None


def _heading_text(text: str) -> str:
    """An ATX heading's text without its closing ``#`` sequence and the space around it.

    Done with ``rstrip`` rather than a regex: a lazy group followed by an optional
    space-and-hashes group backtracks through a long run of spaces once per character, which
    made one long line take minutes.

    >>> _heading_text("Intro ##  "), _heading_text("C#"), _heading_text("###")
    ('Intro', 'C#', '###')
    """
    text = text.rstrip(" \t")
    unclosed = text.rstrip("#")
    if unclosed != text and unclosed.endswith((" ", "\t")) and unclosed.strip(" \t"):
        return unclosed.rstrip(" \t")
    return text


_DROP_TAGS = ["title", "script", "style", "noscript", "template", "head", "svg", "iframe"]
_PARAGRAPH_TAGS = ["p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table",
                   "ul", "ol", "dl", "section", "article", "header", "footer", "figure", "hr"]
_LINE_TAGS = ["div", "li", "tr", "dt", "dd", "figcaption", "main", "nav", "aside", "form"]
_META_NAMES = {"author", "description", "keywords", "date", "article:published_time"}


def parse_html(text: str) -> Parsed:
    """HTML: the visible text, one block per line, with scripts and styles dropped.

    ``<title>`` becomes the title; ``<meta>`` author, description, keywords and date become
    metadata. Uses beautifulsoup4 with the standard library's parser.

    >>> p = parse_html("<title>T</title><script>x()</script><p>Hi <b>there</b>.</p>")
    >>> p.title, p.text
    ('T', 'Hi there.')
    """
    # Imported here: beautifulsoup4 takes ~130 ms to import and only HTML needs it.
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else None
    metadata = _html_meta(soup)
    _drop_invisible(soup)
    text = _BREAKS.sub(lambda m: "\n\n" if _PARAGRAPH in m.group() else "\n",
                       _text_with_breaks(soup))
    return Parsed(_tidy_whitespace(text), title or None, metadata, "text/html")


# Private-use characters mark block breaks until the text is out; one in the page itself
# would read as a break, which is harmless.
_PARAGRAPH, _LINE = "\ue000", "\ue001"
_BREAKS = re.compile(r"[\s\ue000\ue001]*[\ue000\ue001][\s\ue000\ue001]*")


def _drop_invisible(soup: Any) -> None:
    from bs4.element import Comment, NavigableString

    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    # Source line breaks are just spaces in HTML (except in <pre>); blocks get theirs below.
    # The strings inside <pre> are collected once: asking each string for a <pre> ancestor
    # walks up the whole tree, quadratic in a deeply nested page.
    preformatted = {id(s) for pre in soup.find_all("pre") for s in pre.find_all(string=True)}
    for string in soup.find_all(string=True):
        if type(string) is NavigableString and id(string) not in preformatted:
            string.replace_with(re.sub(r"\s+", " ", str(string)))


_MARKERS = {**dict.fromkeys(_PARAGRAPH_TAGS, _PARAGRAPH), **dict.fromkeys(_LINE_TAGS, _LINE)}


def _text_with_breaks(soup: Any) -> str:
    """The page's text (as ``get_text``) with markers around blocks, not newlines: adjacent
    blocks then give one break, not several, and inline tags (<b>, <a>) do not split words.

    One walk with an explicit stack: linear in the page, and no recursion, however deeply
    its tags nest (inserting markers into the tree instead costs a walk to each block's last
    descendant: quadratic in a deeply nested page)."""
    from bs4.element import CData, NavigableString, Tag

    out: list[str] = []
    stack: list[tuple[Any, str | None]] = [(soup, None)]
    while stack:
        node, closing = stack.pop()
        if closing is not None:
            out.append(closing)
        elif type(node) in (NavigableString, CData):
            out.append(str(node))
        elif isinstance(node, Tag):
            if node.name == "br":
                out.append(_LINE)
                continue
            marker = _MARKERS.get(node.name)
            if marker is not None:
                out.append(marker)
                stack.append((node, marker))
            stack.extend((child, None) for child in reversed(node.contents))
    return "".join(out)


def _html_meta(soup: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for meta in soup.find_all("meta"):
        name = str(meta.get("name") or meta.get("property") or "").lower()
        if name in _META_NAMES and meta.get("content"):
            found["date" if name == "article:published_time" else name] = str(meta["content"])
    return found


def _tidy_whitespace(text: str) -> str:
    lines = [re.sub(r"[^\S\n]+", " ", line).strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def parse_jsonl_record(obj: Any, text_field: str = "text", id_field: str = "id",
                       title_field: str = "title") -> Parsed:
    """One JSON Lines record (already decoded): the text field is the text, every other field
    is metadata, and the id field (if present) is the record's ``key``.

    Raises:
        ValueError: the record is not an object or has no string ``text_field``.

    >>> parse_jsonl_record({"id": 7, "text": "Hi", "lang": "en"}).key
    '7'
    """
    # Bad data in a file, not a programming error: ValueError, which the loader reports.
    if not isinstance(obj, dict):
        raise ValueError(f"a JSONL record must be an object, got {type(obj).__name__}")  # noqa: TRY004
    text = obj.get(text_field)
    if not isinstance(text, str):
        raise ValueError(f"record has no string field {text_field!r} (fields: {sorted(obj)}); "  # noqa: TRY004
                         "pass text_field= to name the field that holds the text")
    title = obj.get(title_field)
    key = obj.get(id_field)
    metadata = {k: v for k, v in obj.items() if k != text_field}
    return Parsed(text, None if title is None else str(title), metadata, "text/plain",
                  None if key is None else str(key))


def parse_pdf(data: bytes) -> Parsed:
    """A PDF's text layer, pages separated by blank lines (needs ``trails[pdf]``).

    Metadata holds ``pages``, and ``author``/``created`` when the PDF records them.

    Raises:
        ValueError: the PDF is encrypted or has no extractable text (scanned: OCR it first).
        MissingExtraError: pypdf is not installed.
    """
    pypdf = require("pypdf", "loading PDF files")
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise ValueError("the PDF is encrypted; decrypt it first")
    pages = [(page.extract_text() or "").strip() for page in reader.pages]
    text = "\n\n".join(p for p in pages if p)
    if not text:
        raise ValueError("the PDF has no extractable text (a scan? run OCR on it first)")
    info = reader.metadata
    metadata: dict[str, Any] = {"pages": len(reader.pages)}
    if info is not None and info.author:
        metadata["author"] = str(info.author)
    if info is not None and info.get("/CreationDate"):
        try:
            metadata["created"] = info.creation_date
        except ValueError:  # a malformed date string: keep it rather than lose the document
            metadata["created"] = str(info["/CreationDate"])
    title = str(info.title) if info is not None and info.title else None
    return Parsed(text, title, metadata, "application/pdf")
