"""Format parsers: one pure function per file format, from a string (or PDF bytes) to a
:class:`Parsed` record, so each format is testable without files::

    >>> parse_markdown("---\\ntitle: Guide\\ndate: 2024-05-01\\n---\\nHello.").metadata
    {'title': 'Guide', 'date': datetime.date(2024, 5, 1)}
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any, NamedTuple

from trails._lazy import require
from trails.ingest.document import Document
from trails.ingest.frontmatter import load_front_matter
from trails.ingest.html import html_to_text

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

    def to_document(self, id: str, source: str, origin: str | None = None) -> Document:
        return Document(id=id, source=source, text=self.text, title=self.title,
                        metadata=dict(self.metadata), media_type=self.media_type, origin=origin)


def parse_text(text: str) -> Parsed:
    """Plain text, kept as it is.

    >>> parse_text("hello").text
    'hello'
    """
    return Parsed(text, None, {})


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_ATX_H1 = re.compile(r" {0,3}#[ \t]+(.*)")


def parse_markdown(text: str) -> Parsed:
    """Markdown: YAML front matter becomes metadata, the body becomes the text.

    The title is the front matter's ``title``, else the first ``# heading`` outside code
    fences. Dates stay as YAML gives them (``datetime.date``/``datetime`` when unquoted).

    Raises:
        ValueError: the front matter is not valid YAML or not a mapping, or crosses a limit
            of :mod:`trails.ingest.frontmatter` (size, nesting, aliases expanded).

    >>> p = parse_markdown("# Intro\\n\\nSome text.")
    >>> p.title, p.media_type
    ('Intro', 'text/markdown')
    """
    metadata: dict[str, Any] = {}
    match = _FRONT_MATTER.match(text)
    if match:
        loaded = load_front_matter(match.group(1) or "")
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


def parse_html(text: str) -> Parsed:
    """HTML: the visible text, one block per line, with scripts and styles dropped.

    ``<title>`` becomes the title; ``<meta>`` author, description, keywords and date become
    metadata. Read in one pass, in time linear in the page however deep it nests
    (:mod:`trails.ingest.html`).

    >>> p = parse_html("<title>T</title><script>x()</script><p>Hi <b>there</b>.</p>")
    >>> p.title, p.text
    ('T', 'Hi there.')
    """
    page = html_to_text(text)
    return Parsed(page.text, page.title, dict(page.metadata), "text/html")


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
                         "name the field that holds the text (jsonl_text_field= when "
                         "ingesting, trails ingest --jsonl-text-field FIELD)")
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
    _quiet("pypdf")
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


def _quiet(library: str) -> None:
    """Give ``library``'s logger a handler that drops its records, unless it has one: with
    none anywhere, Python prints a record's bare message on stderr ("EOF marker not
    found"), naming no file, beside the failure the loader reports for that file. An
    application that configures logging still gets the records through its own handlers."""
    logger = logging.getLogger(library)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
