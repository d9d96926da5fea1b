"""Your own RDF out: writing quads as a file or text in every format pyoxigraph knows,
never as something :func:`trails.kg.rdfio.read_quads` could not read back."""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from trails.errors import ConfigurationError, StorageError, TrailsError
from trails.faults import storage_fault
from trails.kg.rdfio import MAX_LITERAL_CHARS

__all__ = ["write_quads"]

# What a dump may hold so that load reads it back (measured on pyoxigraph): the line-based
# readers hold a statement in MAX_LITERAL_CHARS bytes of UTF-8, the JSON-LD reader a string
# in half of that. Kept a little under, for the syntax around a term.
_LOADABLE_STATEMENT = MAX_LITERAL_CHARS - (64 << 10)
_LOADABLE_JSON_STRING = MAX_LITERAL_CHARS // 2 - (64 << 10)

# The formats whose writer abbreviates IRIs with the graph's prefixes.
_PREFIXED = {ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG, ox.RdfFormat.N3, ox.RdfFormat.RDF_XML}
# The formats that cannot hold an RDF 1.2 triple term (``<<( s p o )>>``, what an update's
# ``<< s p o >>`` makes): pyoxigraph's JSON-LD writer refuses one, its N3 reader cannot read
# back what its N3 writer wrote.
_NO_TRIPLE_TERMS = {ox.RdfFormat.JSON_LD, ox.RdfFormat.N3}


# Characters XML 1.0 cannot hold, even escaped: RDF/XML would silently lose them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_safe(quads: Iterable[ox.Quad]) -> Iterable[ox.Quad]:
    for quad in quads:
        value = quad.object.value if isinstance(quad.object, ox.Literal) else ""
        bad = _NOT_XML.search(value)
        if bad:
            raise ConfigurationError(
                f"RDF/XML cannot hold the literal {str(quad.object)[:60]} of {quad.subject}: XML "
                f"has no character U+{ord(bad.group()):04X}; export as Turtle, N-Triples, TriG "
                "or N-Quads instead")
        yield quad


def _loadable(quads: Iterable[ox.Quad], format: ox.RdfFormat) -> Iterable[ox.Quad]:
    """The quads, refusing one with a term too long for load to read back in ``format``
    (an export that could never be restored)."""
    json = format == ox.RdfFormat.JSON_LD
    bound = _LOADABLE_JSON_STRING if json else _LOADABLE_STATEMENT
    for quad in quads:
        terms = (quad.subject, quad.predicate, quad.object)
        if format in _NO_TRIPLE_TERMS and isinstance(quad.object, ox.Triple):
            raise ConfigurationError(
                f"{format.name} cannot hold the RDF 1.2 triple term {quad.object} (of "
                f"{quad.subject} {quad.predicate}), so the export could never be loaded again; "
                "nothing was exported: export as TriG, N-Quads or Turtle instead")
        # Cheap first: no character takes more than 6 bytes written (an escape, \uXXXX).
        if sum(len(getattr(term, "value", "")) for term in terms) * 6 > bound:
            size = max(len(str(term).encode("utf-8")) for term in terms) if json else len(
                str(quad).encode("utf-8"))
            if size > bound:
                other = (f"export as N-Quads or TriG (up to {_LOADABLE_STATEMENT:,} bytes a "
                         "statement), or " if json and size <= _LOADABLE_STATEMENT else "")
                raise ConfigurationError(
                    f"{quad.subject} {quad.predicate} holds a value of {size:,} bytes written, "
                    f"more than load reads back in {format.name} ({bound:,}): the export could "
                    f"never be loaded again, so nothing was exported; {other}keep a text that "
                    "large out of the graph (ingest it as a document)")
        yield quad


def write_quads(quads: Iterable[ox.Quad], format: ox.RdfFormat,
                path: str | os.PathLike[str] | None,
                prefixes: Mapping[str, str] | None = None) -> str | None:
    """Serialise ``quads`` (as triples when ``format`` holds one graph): the text, or None
    after writing ``path`` (whole or not at all: a temporary file is renamed over it)."""
    items: Iterable[Any] = _loadable(quads, format)
    if format == ox.RdfFormat.RDF_XML:
        items = _xml_safe(items)
    if not format.supports_datasets:
        items = (ox.Triple(q.subject, q.predicate, q.object) for q in items)
    options: dict[str, Any] = {"format": format}
    if prefixes and format in _PREFIXED:
        options["prefixes"] = dict(prefixes)
    if path is None:
        with _refusals(format):
            return (ox.serialize(items, **options) or b"").decode("utf-8")
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temporary, "xb") as out, _refusals(format):  # mode as usual, not 0600
            ox.serialize(items, out, **options)
        os.replace(temporary, target)
    except BaseException as exc:
        temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError):  # named by the file asked for, not the temporary one
            raise _write_fault(exc, target) from exc
        raise
    return None


@contextlib.contextmanager
def _refusals(format: ox.RdfFormat) -> Iterator[None]:
    """What the serialiser refuses to write (an OSError with no error number, such as
    "JSON-LD does not support RDF 1.2 yet") as a ConfigurationError, never a disk fault."""
    try:
        yield
    except OSError as exc:
        if exc.errno is not None:
            raise
        raise ConfigurationError(f"{format.name} cannot hold this graph ({exc}); nothing was "
                                 "exported: export as TriG or N-Quads, which hold every "
                                 "graph and term") from exc


def _write_fault(exc: OSError, target: Path) -> TrailsError:
    if target.is_dir():
        return ConfigurationError(f"cannot export to {target}: it is a folder; name a file in "
                                  "it (backup.trig)")
    if not target.parent.is_dir():
        return ConfigurationError(f"cannot export to {target}: the folder {target.parent} does "
                                  "not exist; create it, or name a file in one that does")
    return storage_fault(exc, str(target), "exporting to") or StorageError(
        f"exporting to {target} failed: {exc.strerror or exc}; check the path and the disk, "
        "then run it again (nothing was written; a file there before is unchanged)")
