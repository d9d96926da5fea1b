"""Loaders: files and folders in, :class:`Document` records out.

:class:`FileLoader` walks paths, picks the format parser (:mod:`trails.ingest.formats`) by
suffix and gives every document a deterministic id (its POSIX path relative to the root);
:func:`load` turns whatever describes documents into them::

    >>> docs = list(load(["kb"], include=["*.md"]))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeGuard

from trails.config import CONFIG_FILE
from trails.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingExtraError,
)
from trails.ingest.decoding import decode, undecodable_name
from trails.ingest.decoding import read_failure as _reason
from trails.ingest.decoding import unexpected_failure as _unexpected
from trails.ingest.document import Document, Loader, LoadFailure
from trails.ingest.formats import (
    Parsed,
    parse_html,
    parse_jsonl_record,
    parse_markdown,
    parse_pdf,
    parse_text,
)
from trails.kg.rdfio import RDF_SUFFIXES
from trails.writer_lock import LOCK_FILE

__all__ = ["FileLoader", "Parsed", "Source", "load", "parse_html", "parse_jsonl_record",
           "parse_markdown", "parse_pdf", "parse_text"]

PathLike = str | os.PathLike[str]
# What load() and ingest() accept: see load().
Source = PathLike | Sequence[PathLike] | Loader | Document | LoadFailure | Iterable[
    Document | LoadFailure]

_PARSERS = {".txt": parse_text, ".md": parse_markdown, ".markdown": parse_markdown,
            ".html": parse_html, ".htm": parse_html}
KNOWN_SUFFIXES = (*_PARSERS, ".jsonl", ".pdf")


@dataclass
class FileLoader:
    """Documents from files and folders (recursive), sorted by id.

    Args:
        paths: a file or folder, or several. Folders are walked recursively; hidden entries
            (names starting with ".") are skipped there unless an include pattern spells
            the dot (``.github/*.md``, ``.env.md``), and trails contexts, said so.
        root: ids are paths relative to this folder; default: relative to each folder given
            (a file given directly is identified by its name).
        include: glob patterns (``fnmatch``: ``*`` also crosses "/"), matched against the
            path relative to the root and against the file name. When given, only walked
            files that match are loaded, and matching files of unknown type are read as text.
        exclude: glob patterns of files or folders to skip.
        jsonl_text_field, jsonl_id_field: the fields of a JSONL record holding text and id.

    Ids: ``docs/guide.md``; a JSONL record ``data.jsonl#<id>`` (``#L<line>`` without an id).
    Files given explicitly are loaded whatever include/exclude say. Files of unknown type are
    skipped unless include matches them (``unread``: how many of each suffix the last walk
    skipped so). Unreadable files, and files that are no text
    (:mod:`trails.ingest.decoding`: UTF-8, or UTF-16/32 with a byte order mark), become
    :class:`LoadFailure` records and loading goes on. RDF files (.ttl .trig .nt .nq .n3 .rdf
    .owl .jsonld) hold facts, not documents: met in a folder, each is skipped as a
    ``LoadFailure(skipped=True)`` (a warning); given explicitly, the loader refuses them. A
    folder that gives no file at all (empty, or every file left out by the patterns or of an
    unknown type: a typo in include) is a warning too, naming what left its files out.

    Raises:
        ConfigurationError: a path given explicitly is an RDF file (load it into the graph
            with ``trails load`` / ``ctx.kg.load``).

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
    # Files the last walk left out for their type (no include given): suffix -> files.
    unread: Counter[str] = field(init=False, repr=False, default_factory=Counter)

    def __post_init__(self) -> None:
        self._patterns = (_as_tuple(self.include, "include"), _as_tuple(self.exclude, "exclude"))
        for option in ("jsonl_text_field", "jsonl_id_field"):
            if not isinstance(getattr(self, option), str):
                raise InvalidArgumentTypeError(f"{option} must be a str (a field name), got "
                                               f"{type(getattr(self, option)).__name__}")
        if self.root is not None and not isinstance(self.root, (str, os.PathLike)):
            raise InvalidArgumentTypeError(f"root must be a path, got {type(self.root).__name__}")
        _refuse_rdf_files(_as_paths(self.paths))
        if self.root is not None:
            _check_inside(_as_paths(self.paths), self.root)

    def load(self) -> Iterator[Document | LoadFailure]:
        seen: dict[str, Path] = {}
        for doc_id, path in self._files():
            if isinstance(path, LoadFailure):
                yield path
            elif doc_id not in seen:
                seen[doc_id] = path
                if bad_name := undecodable_name(path):
                    yield LoadFailure(str(path), bad_name)  # no IRI nor source can hold it
                else:
                    yield from self._load_file(doc_id, path)
            elif not _same_file(seen[doc_id], path):  # the same file named twice is no error
                yield LoadFailure(str(path), f"same id {doc_id!r} as {seen[doc_id]}; pass root= "
                                  "(a common parent folder) so ids keep the folder names")

    def count(self) -> int:
        """How many documents and failures :meth:`load` will yield, found without parsing:
        one per file, one per non-blank line of a JSON Lines file, one per unreadable path;
        skipped entries (RDF files met in a folder) count none. A file that changes between
        the count and the load makes the count an estimate.
        """
        total = 0
        for _, path in self._files():
            if isinstance(path, LoadFailure):
                total += 0 if path.skipped else 1
            elif path.suffix.lower() == ".jsonl":
                total += _non_blank_lines(path)
            else:
                total += 1
        return total

    def _files(self) -> list[tuple[str, Path | LoadFailure]]:
        """(id, path) for every file to load, sorted by id, so runs are reproducible."""
        found: list[tuple[str, Path | LoadFailure]] = []
        self.unread.clear()
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
        files, given = 0, False  # files the walk met; whether any was given (or warned of)
        inside = folder.resolve()
        if _holds_context(folder):
            yield LoadFailure(str(folder), _CONTEXT_SKIPPED, skipped=True)
            return
        for dirpath, dirnames, filenames in os.walk(folder, onerror=errors.append):
            here = Path(dirpath)
            # Prune in place so excluded and hidden folders are never descended into.
            dirnames[:] = [d for d in dirnames if (not d.startswith(".") or _spelt(d, include))
                           and not _matches(_rel_id(here / d, base), d, exclude)]
            for context in [d for d in dirnames if _holds_context(here / d)]:
                dirnames.remove(context)  # its audit log holds who searched for what
                given = True
                yield LoadFailure(str(here / context), _CONTEXT_SKIPPED, skipped=True)
            for linked in [d for d in dirnames if (here / d).is_symlink()]:
                given = True  # os.walk does not descend into it: said, not silent
                yield LoadFailure(str(here / linked), _LINK_SKIPPED.format(
                    "folder", os.path.realpath(here / linked), "folders behind links are not "
                    "walked"), skipped=True)
            files += len(filenames)
            for name in filenames:
                rel = _rel_id(here / name, base)
                if _matches(rel, name, exclude) or _hidden(rel) and not _matches(rel, name, [
                        p for p in include if _hidden(p)]):
                    continue  # hidden: read when an include pattern spells its dot
                if include and not _matches(rel, name, include):
                    continue
                if (here / name).is_symlink() and not Path(
                        os.path.realpath(here / name)).is_relative_to(inside):
                    # A link out of the folder would read a file nobody named (a key, a
                    # password file) into the index.
                    given = True
                    yield LoadFailure(str(here / name), _LINK_SKIPPED.format(
                        "file", os.path.realpath(here / name), f"it is outside {folder}"),
                                      skipped=True)
                elif Path(name).suffix.lower() in RDF_SUFFIXES:
                    given = True
                    yield LoadFailure(str(here / name), _RDF_SKIPPED.format(here / name),
                                      skipped=True)
                elif include or Path(name).suffix.lower() in KNOWN_SUFFIXES:
                    given = True
                    yield here / name
                else:  # said in a note (trails.ingest.unread), not silent
                    self.unread[Path(name).suffix.lower()] += 1
        if not given and not errors:
            # A folder that gives nothing (a typo in include, an empty folder) is said so,
            # rather than read as a run with nothing to do.
            yield LoadFailure(str(folder), self._nothing_in(files), skipped=True)
        yield from (LoadFailure(str(e.filename), _reason(e)) for e in errors)

    def _nothing_in(self, files: int) -> str:
        include, exclude = self._patterns
        if not files:
            return "no file to load: the folder is empty"
        why = (f"matches include {list(include)}" if include
               else f"is of a type ingest reads ({' '.join(KNOWN_SUFFIXES)})")
        left = f"hidden files and exclude {list(exclude)}" if exclude else "hidden files"
        return (f"no file to load: none of its {files:,} files {why} (leaving out {left}); "
                "check the patterns, or pass include to read other types as text")

    def _load_file(self, doc_id: str, path: Path) -> Iterator[Document | LoadFailure]:
        source = str(path)
        origin = os.path.abspath(path)  # what --prune checks, whatever the working directory
        try:
            data = _read_regular(path)
            suffix = path.suffix.lower()
            if suffix == ".jsonl":
                yield from self._load_jsonl(doc_id, source, decode(data), origin)
            elif suffix == ".pdf":
                yield _parse_pdf_safely(data).to_document(doc_id, source, origin)
            else:
                yield _PARSERS.get(suffix, parse_text)(decode(data)).to_document(
                    doc_id, source, origin)
        except (OSError, ValueError, MissingExtraError) as exc:  # UnicodeDecodeError: a ValueError
            # A missing extra fails this file only, and its message names the pip command.
            yield LoadFailure(source, _reason(exc))
        except Exception as exc:  # noqa: BLE001 - whatever a file makes a parser do, it fails alone
            yield LoadFailure(source, _unexpected(exc))

    def _load_jsonl(self, doc_id: str, source: str, text: str,
                    origin: str) -> Iterator[Document | LoadFailure]:
        seen: dict[str, int] = {}
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            where = f"{source}:{lineno}"
            try:
                parsed = parse_jsonl_record(json.loads(line), self.jsonl_text_field,
                                            self.jsonl_id_field)
            except json.JSONDecodeError as exc:  # json's words alone name no file format
                yield LoadFailure(where, f"line {lineno} is not JSON ({exc.msg} at column "
                                  f"{exc.colno}); each line of a .jsonl file holds one JSON "
                                  f"object", origin=origin)
                continue
            except ValueError as exc:
                yield LoadFailure(where, f"line {lineno}: {exc}", origin=origin)
                continue
            except Exception as exc:  # noqa: BLE001 - nesting past the recursion limit, ...
                yield LoadFailure(where, f"line {lineno}: {_unexpected(exc)}", origin=origin)
                continue
            record_id = f"{doc_id}#{parsed.key if parsed.key is not None else f'L{lineno}'}"
            if record_id in seen:
                yield LoadFailure(where, f"duplicate id {record_id!r}, first on line "
                                  f"{seen[record_id]}", origin=origin)
                continue
            seen[record_id] = lineno
            yield parsed.to_document(record_id, source, origin)
        if not seen and not text.strip():  # said, not silent: and --prune empties it in step
            yield LoadFailure(source, "a JSONL file with no record: nothing to ingest",
                              skipped=True, origin=origin)


_RDF_SKIPPED = ("an RDF file (facts, not a document), skipped: load it into the graph with "
                "`trails load {}` (ctx.kg.load in Python)")


_CONTEXT_SKIPPED = ("skipped: a trails context (its index and audit log), not documents; "
                    "ingest the folders of your documents")


def _holds_context(folder: Path) -> bool:  # its lock file may be gone, not its audit folder
    return (folder / CONFIG_FILE).is_file() and any(
        (folder / name).exists() for name in (LOCK_FILE, "audit"))


_LINK_SKIPPED = ("skipped: a symbolic link to the {} {}, not followed ({}); ingest the "
                 "target itself to read it")


def _refuse_rdf_files(paths: list[PathLike]) -> None:
    for path in map(Path, paths):
        if path.suffix.lower() in RDF_SUFFIXES and not path.is_dir():
            raise ConfigurationError(
                f"{path} is an RDF file: it holds facts, not a document. Load it into the "
                f"graph with `trails load {path}` (ctx.kg.load in Python); ingest reads "
                f"documents ({' '.join(KNOWN_SUFFIXES)})")


def _check_inside(paths: list[PathLike], root: PathLike) -> None:
    for path in paths:
        rel = _rel_id(Path(path), Path(root))
        if rel == ".." or rel.startswith("../"):
            raise InvalidArgumentError(f"{path} is not inside root {root}: ids are paths "
                             "relative to root, so pass a root that holds every path")


def _as_tuple(patterns: str | Sequence[str] | None, option: str) -> tuple[str, ...]:
    if patterns is None:
        return ()
    found = (patterns,) if isinstance(patterns, str) else (
        tuple(patterns) if isinstance(patterns, (list, tuple)) else None)
    if found is None or not all(isinstance(p, str) for p in found):
        raise InvalidArgumentTypeError(f"{option} must be a glob pattern (str) or a list of "
                                       f"them, got {patterns!r}")
    return found


def _as_paths(paths: PathLike | Sequence[PathLike]) -> list[PathLike]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    found = list(paths) if isinstance(paths, (list, tuple)) else None
    if not found or not all(isinstance(p, (str, os.PathLike)) for p in found):
        raise InvalidArgumentTypeError(f"paths must be a path or a non-empty list of paths, "
                                       f"got {paths!r}")
    return found


def _matches(rel: str, name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(rel, p) or fnmatchcase(name, p)
               or (p.startswith("**/") and fnmatchcase(rel, p[3:])) for p in patterns)


def _hidden(path: str) -> bool:
    """Whether a part of ``path`` (a relative path or a pattern) starts with a dot."""
    return any(part[:1] == "." and part not in (".", "..") for part in path.split("/"))


def _spelt(name: str, patterns: Sequence[str]) -> bool:
    """Whether a pattern spells hidden ``name``'s dot (``.github/*.md``, ``.*``): a ``*``
    never reads a hidden file or folder, as in a shell."""
    return any(fnmatchcase(name, part) for p in patterns for part in p.split("/") if _hidden(part))


def _rel_id(path: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(base))).as_posix()
    except ValueError:  # another drive on Windows: fall back to the name
        return path.name


def _non_blank_lines(path: Path) -> int:
    """Non-blank lines of a file, read in blocks (1 when it cannot be read: it will fail)."""
    count = 0
    try:
        with path.open("rb") as file:
            for line in file:
                count += bool(line.strip())
    except OSError:
        return 1
    return count


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


def _parse_pdf_safely(data: bytes) -> Parsed:
    try:
        return parse_pdf(data)
    except (ImportError, ValueError):
        raise
    except Exception as exc:  # pypdf raises many types on malformed files; one file only fails
        raise ValueError(f"cannot parse PDF: {type(exc).__name__}: {exc}") from exc


# --------------------------------------------------------------------------- load()

def load(source: Source, **kwargs: Any) -> Iterator[Document | LoadFailure]:
    """Documents from whatever describes them.

    Args:
        source: a path; a list of paths; a :class:`Loader`; a :class:`Document`; or an
            iterable of Documents (and LoadFailures).
        **kwargs: :class:`FileLoader` options, for paths only.

    An iterable that is not a list or tuple is read lazily: an item in it that is no
    Document becomes a :class:`LoadFailure` (that item fails, the run goes on).

    Raises:
        InvalidArgumentTypeError: the source is none of those, or a list or tuple holds
            something else (an InvalidArgumentError, also a ValueError and a TypeError).
        InvalidArgumentError: options were given with a non-path source.
        ConfigurationError: a path names an RDF file (see :class:`FileLoader`).

    >>> [d.id for d in load([Document("a", "mem", "text")])]
    ['a']
    """
    if isinstance(source, (str, os.PathLike)) or _is_path_list(source):
        return FileLoader(source, **kwargs).load()
    if kwargs:
        raise InvalidArgumentError(f"options {sorted(kwargs)} apply to paths only, not to "
                                   f"{type(source).__name__}")
    if isinstance(source, Loader):
        return source.load()
    if isinstance(source, (Document, LoadFailure)):
        return iter([source])
    if isinstance(source, (list, tuple)):
        for index, item in enumerate(source):
            if not isinstance(item, (Document, LoadFailure)):
                raise InvalidArgumentTypeError(_BAD_SOURCE.format(
                    f"a {type(source).__name__} holding {type(item).__name__} (item {index})"))
        return iter(source)
    if isinstance(source, Iterable) and not isinstance(source, (str, bytes, bytearray, dict)):
        return _checked(source)
    raise InvalidArgumentTypeError(_BAD_SOURCE.format(type(source).__name__))


_BAD_SOURCE = ("cannot load from {}: pass a path, a list of paths, a Loader (with .load()), "
               "a Document, or an iterable of Documents")


def _is_path_list(source: object) -> TypeGuard[list[PathLike] | tuple[PathLike, ...]]:
    return (isinstance(source, (list, tuple)) and bool(source)
            and all(isinstance(p, (str, os.PathLike)) for p in source))


def _checked(items: Iterable[Any]) -> Iterator[Document | LoadFailure]:
    for index, item in enumerate(items):
        if isinstance(item, (Document, LoadFailure)):
            yield item
        else:
            yield LoadFailure(f"item {index}", f"a {type(item).__name__}, not a Document: an "
                              "iterable given to ingest holds Documents (or LoadFailures)")
