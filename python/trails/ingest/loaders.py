"""Loaders: files and folders in, :class:`Document` records out.

One pure function per format turns a string (or PDF bytes) into a :class:`Parsed` record, so
each format is testable without files; :class:`FileLoader` walks paths, picks the function by
suffix and gives every document a deterministic id (its POSIX path relative to the root)::

    >>> parse_markdown("---\\ntitle: Guide\\ndate: 2024-05-01\\n---\\nHello.").metadata
    {'title': 'Guide', 'date': datetime.date(2024, 5, 1)}
    >>> docs = list(load(["kb"], include=["*.md"]))  # doctest: +SKIP
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from trails._lazy import require
from trails.errors import MissingExtraError
from trails.ingest.document import Document, Loader, LoadFailure

__all__ = [
    "FileLoader",
    "Parsed",
    "load",
    "parse_html",
    "parse_jsonl_record",
    "parse_markdown",
    "parse_pdf",
    "parse_text",
]

PathLike = str | os.PathLike


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


# --------------------------------------------------------------------------- format parsers

def parse_text(text: str) -> Parsed:
    """Plain text, kept as it is.

    >>> parse_text("hello").text
    'hello'
    """
    return Parsed(text, None, {})


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")


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
        try:
            loaded = yaml.safe_load(match.group(1) or "")
        except yaml.YAMLError as exc:
            raise ValueError(f"invalid YAML front matter: {exc}") from exc
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
        elif not in_fence and (match := _ATX_H1.match(line)):
            return match.group(1)
    return None


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
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else None
    metadata = _html_meta(soup)
    _drop_invisible(soup)
    _mark_blocks(soup)
    text = _BREAKS.sub(lambda m: "\n\n" if _PARAGRAPH in m.group() else "\n", soup.get_text())
    return Parsed(_tidy_whitespace(text), title or None, metadata, "text/html")


# Private-use characters mark block breaks until the text is out; one in the page itself
# would read as a break, which is harmless.
_PARAGRAPH, _LINE = "\ue000", "\ue001"
_BREAKS = re.compile(r"[\s\ue000\ue001]*[\ue000\ue001][\s\ue000\ue001]*")


def _drop_invisible(soup: Any) -> None:
    from bs4 import Comment, NavigableString

    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    # Source line breaks are just spaces in HTML (except in <pre>); blocks get theirs below.
    for string in soup.find_all(string=True):
        if type(string) is NavigableString and string.find_parent("pre") is None:
            string.replace_with(re.sub(r"\s+", " ", str(string)))


def _mark_blocks(soup: Any) -> None:
    """Markers around blocks, not newlines: adjacent blocks then give one break, not several,
    and inline tags (<b>, <a>) do not split words."""
    for br in soup.find_all("br"):
        br.replace_with(_LINE)
    for tags, marker in ((_PARAGRAPH_TAGS, _PARAGRAPH), (_LINE_TAGS, _LINE)):
        for tag in soup.find_all(tags):
            tag.insert_before(marker)
            tag.insert_after(marker)


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


# --------------------------------------------------------------------------- files

_PARSERS = {".txt": parse_text, ".md": parse_markdown, ".markdown": parse_markdown,
            ".html": parse_html, ".htm": parse_html}
KNOWN_SUFFIXES = (*_PARSERS, ".jsonl", ".pdf")


@dataclass
class FileLoader:
    """Documents from files and folders (recursive), sorted by id.

    Args:
        paths: a file or folder, or several. Folders are walked recursively; hidden entries
            (names starting with ".") are skipped there.
        root: ids are paths relative to this folder; default: relative to each folder given
            (a file given directly is identified by its name).
        include: glob patterns (``fnmatch``: ``*`` also crosses "/"), matched against the
            path relative to the root and against the file name. When given, only walked
            files that match are loaded, and matching files of unknown type are read as text.
        exclude: glob patterns of files or folders to skip.
        jsonl_text_field, jsonl_id_field: the fields of a JSONL record holding text and id.

    Ids: ``docs/guide.md``; a JSONL record ``data.jsonl#<id>`` (``#L<line>`` without an id).
    Files given explicitly are loaded whatever include/exclude say. Files of unknown type are
    skipped unless include matches them. Unreadable or non-UTF-8 files become
    :class:`LoadFailure` records and loading goes on.

    >>> loader = FileLoader("kb", include=["*.md"])  # doctest: +SKIP
    """

    paths: PathLike | Sequence[PathLike]
    _: KW_ONLY
    root: PathLike | None = None
    include: str | Sequence[str] | None = None
    exclude: str | Sequence[str] | None = None
    jsonl_text_field: str = "text"
    jsonl_id_field: str = "id"
    _patterns: tuple[tuple[str, ...], tuple[str, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._patterns = (_as_tuple(self.include), _as_tuple(self.exclude))
        for path in _as_paths(self.paths) if self.root is not None else []:
            rel = _rel_id(Path(path), Path(self.root))
            if rel == ".." or rel.startswith("../"):
                raise ValueError(f"{path} is not inside root {self.root}: ids are paths "
                                 "relative to root, so pass a root that holds every path")

    def load(self) -> Iterator[Document | LoadFailure]:
        seen: dict[str, Path] = {}
        for doc_id, path in self._files():
            if isinstance(path, LoadFailure):
                yield path
            elif doc_id not in seen:
                seen[doc_id] = path
                yield from self._load_file(doc_id, path)
            elif not _same_file(seen[doc_id], path):  # the same file named twice is no error
                yield LoadFailure(str(path), f"same id {doc_id!r} as {seen[doc_id]}; pass root= "
                                  "(a common parent folder) so ids keep the folder names")

    def _files(self) -> list[tuple[str, Path | LoadFailure]]:
        """(id, path) for every file to load, sorted by id, so runs are reproducible."""
        found: list[tuple[str, Path | LoadFailure]] = []
        for given in map(Path, _as_paths(self.paths)):
            base = Path(self.root) if self.root is not None else given.parent
            if given.is_dir():
                base = Path(self.root) if self.root is not None else given
                found += [(_rel_id(p, base), p) if isinstance(p, Path) else ("", p)
                          for p in self._walk(given, base)]
            elif given.exists() or given.is_symlink():
                found.append((_rel_id(given, base), given))
            else:
                found.append(("", LoadFailure(str(given), "no such file or directory")))
        return sorted(found, key=lambda item: (item[0], str(item[1])))

    def _walk(self, folder: Path, base: Path) -> Iterator[Path | LoadFailure]:
        include, exclude = self._patterns
        errors: list[OSError] = []  # folders that cannot be listed: reported, not skipped
        for dirpath, dirnames, filenames in os.walk(folder, onerror=errors.append):
            here = Path(dirpath)
            # Prune in place so excluded and hidden folders are never descended into.
            dirnames[:] = [d for d in dirnames if not d.startswith(".")
                           and not _matches(_rel_id(here / d, base), d, exclude)]
            for name in filenames:
                rel = _rel_id(here / name, base)
                if name.startswith(".") or _matches(rel, name, exclude):
                    continue
                if include and not _matches(rel, name, include):
                    continue
                if include or Path(name).suffix.lower() in KNOWN_SUFFIXES:
                    yield here / name
        yield from (LoadFailure(str(e.filename), _reason(e)) for e in errors)

    def _load_file(self, doc_id: str, path: Path) -> Iterator[Document | LoadFailure]:
        source = str(path)
        try:
            data = _read_regular(path)
            suffix = path.suffix.lower()
            if suffix == ".jsonl":
                yield from self._load_jsonl(doc_id, source, _decode(data))
            elif suffix == ".pdf":
                yield _parse_pdf_safely(data).to_document(doc_id, source)
            else:
                yield _PARSERS.get(suffix, parse_text)(_decode(data)).to_document(doc_id, source)
        except (OSError, ValueError, MissingExtraError) as exc:  # UnicodeDecodeError: a ValueError
            # A missing extra fails this file only, and its message names the pip command.
            yield LoadFailure(source, _reason(exc))

    def _load_jsonl(self, doc_id: str, source: str, text: str) -> Iterator[Document | LoadFailure]:
        seen: dict[str, int] = {}
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                parsed = parse_jsonl_record(json.loads(line), self.jsonl_text_field,
                                            self.jsonl_id_field)
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                yield LoadFailure(f"{source}:{lineno}", f"line {lineno}: {exc}")
                continue
            record_id = f"{doc_id}#{parsed.key if parsed.key is not None else f'L{lineno}'}"
            if record_id in seen:
                yield LoadFailure(f"{source}:{lineno}",
                                  f"duplicate id {record_id!r}, first on line {seen[record_id]}")
                continue
            seen[record_id] = lineno
            yield parsed.to_document(record_id, source)


def _as_tuple(patterns: str | Sequence[str] | None) -> tuple[str, ...]:
    if patterns is None:
        return ()
    return (patterns,) if isinstance(patterns, str) else tuple(patterns)


def _as_paths(paths: PathLike | Sequence[PathLike]) -> list[PathLike]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    return list(paths)


def _matches(rel: str, name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(rel, p) or fnmatchcase(name, p)
               or (p.startswith("**/") and fnmatchcase(rel, p[3:])) for p in patterns)


def _rel_id(path: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(base))).as_posix()
    except ValueError:  # another drive on Windows: fall back to the name
        return path.name


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # a broken link: compare the paths themselves
        return os.path.abspath(a) == os.path.abspath(b)


def _read_regular(path: Path) -> bytes:
    # Reading a FIFO or device would block or never end: refuse anything but a regular file.
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(f"not a regular file: {path}")
    return path.read_bytes()


def _decode(data: bytes) -> str:
    # utf-8-sig drops a BOM; one newline convention keeps content hashes equal across machines.
    return data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")


def _parse_pdf_safely(data: bytes) -> Parsed:
    try:
        return parse_pdf(data)
    except (ImportError, ValueError):
        raise
    except Exception as exc:  # pypdf raises many types on malformed files; one file only fails
        raise ValueError(f"cannot parse PDF: {type(exc).__name__}: {exc}") from exc


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return (f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                "convert the file to UTF-8 first")
    if isinstance(exc, FileNotFoundError):
        return "no such file (a broken link?)"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------- load()

def load(source: Any, **kwargs: Any) -> Iterator[Document | LoadFailure]:
    """Documents from whatever describes them.

    Args:
        source: a path; a list of paths; a :class:`Loader`; a :class:`Document`; or an
            iterable of Documents (and LoadFailures).
        **kwargs: :class:`FileLoader` options, for paths only.

    Raises:
        ValueError: the source is none of those, or options were given with a non-path source.

    >>> [d.id for d in load([Document("a", "mem", "text")])]
    ['a']
    """
    if isinstance(source, (str, os.PathLike)) or _is_path_list(source):
        return FileLoader(source, **kwargs).load()
    if kwargs:
        raise ValueError(f"options {sorted(kwargs)} apply to paths only, not to "
                         f"{type(source).__name__}")
    if isinstance(source, Loader):
        return source.load()
    if isinstance(source, (Document, LoadFailure)):
        return iter([source])
    if isinstance(source, Iterable) and not isinstance(source, (bytes, dict)):
        return _checked(source)
    raise ValueError(_BAD_SOURCE.format(type(source).__name__))


_BAD_SOURCE = ("cannot load from {}: pass a path, a list of paths, a Loader (with .load()), "
               "a Document, or an iterable of Documents")


def _is_path_list(source: Any) -> bool:
    return (isinstance(source, (list, tuple)) and bool(source)
            and all(isinstance(p, (str, os.PathLike)) for p in source))


def _checked(items: Iterable[Any]) -> Iterator[Document | LoadFailure]:
    for item in items:
        if not isinstance(item, (Document, LoadFailure)):
            msg = _BAD_SOURCE.format(f"an iterable holding {type(item).__name__}")
            raise ValueError(msg)  # noqa: TRY004 - bad arguments are ValueErrors here
        yield item
