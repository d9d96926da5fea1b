"""Your own RDF in: formats, reading a file or text into quads (:mod:`trails.kg.rdfwrite`
writes them).

Both graph backends load and dump through these functions, so a file reads the same into the
embedded graph and into a SPARQL endpoint. Formats are pyoxigraph's: Turtle, TriG, N-Triples,
N-Quads, N3, RDF/XML and JSON-LD.

What ``source`` is (:func:`read_quads`):

- a ``pathlib.Path`` (any ``os.PathLike``): a file, whatever its name;
- ``bytes``: RDF content, whatever it looks like;
- a ``str``: a file when it is one line that names an existing path or ends with an RDF
  suffix (a missing file is then an error); otherwise RDF content.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyoxigraph as ox

from trails.errors import (
    ConfigurationError,
    InvalidArgumentError,
    RdfLimitError,
    RdfSyntaxError,
)
from trails.scopes import DEFAULT_SCOPE, SCOPE_BASE, is_scope_name, scope_graph

__all__ = ["DOCUMENT_SUFFIXES", "ENTITY_ALLOWANCE", "ENTITY_AMPLIFICATION", "FORMATS",
           "MAX_LITERAL_CHARS", "MAX_RDF_BYTES", "RDF_SUFFIXES", "RdfSource", "rdf_format",
           "read_quads"]

# Bounds on what load parses, measured before the quads are built (as front matter is): the
# input (after its XML entities are expanded), one literal (pyoxigraph's lexers hold a token in
# 16 MiB; its RDF/XML reader has no such bound), and what XML entities may add to the input:
# 8 MiB, or ten times the input's size if more (nested entities, the "billion laughs", turn
# 750 bytes into 1.2 GB and abort the process).
MAX_RDF_BYTES = 1 << 30
MAX_LITERAL_CHARS = 16 << 20
ENTITY_ALLOWANCE = 8 << 20
ENTITY_AMPLIFICATION = 10

# The names --format and format= take (the first of each format is the one help lists).
FORMATS: dict[str, ox.RdfFormat] = {
    "turtle": ox.RdfFormat.TURTLE, "ttl": ox.RdfFormat.TURTLE,
    "trig": ox.RdfFormat.TRIG,
    "ntriples": ox.RdfFormat.N_TRIPLES, "nt": ox.RdfFormat.N_TRIPLES,
    "nquads": ox.RdfFormat.N_QUADS, "nq": ox.RdfFormat.N_QUADS,
    "n3": ox.RdfFormat.N3,
    "rdfxml": ox.RdfFormat.RDF_XML, "rdf": ox.RdfFormat.RDF_XML, "xml": ox.RdfFormat.RDF_XML,
    "owl": ox.RdfFormat.RDF_XML,
    "jsonld": ox.RdfFormat.JSON_LD, "json-ld": ox.RdfFormat.JSON_LD,
}
FORMAT_NAMES = ("turtle", "trig", "ntriples", "nquads", "n3", "rdfxml", "jsonld")
# File suffixes that hold RDF: ingestion refuses them (they are facts, not documents).
RDF_SUFFIXES = frozenset({".ttl", ".trig", ".nt", ".nq", ".n3", ".rdf", ".owl", ".jsonld"})
# Suffixes load() reads a format from: the above, plus the ones that may hold other things.
_SUFFIX_FORMATS = {".json": ox.RdfFormat.JSON_LD, ".xml": ox.RdfFormat.RDF_XML} | {
    suffix: FORMATS[suffix[1:]] for suffix in RDF_SUFFIXES}

# A path (a str only as described in the module docstring), RDF text or bytes.
RdfSource = str | bytes | os.PathLike[str]


def rdf_format(format: str | None, name: str | os.PathLike[str] | None = None) -> ox.RdfFormat:
    """The format named by ``format`` (a name or a media type), else read from the file
    ``name``'s suffix.

    >>> rdf_format(None, "facts.ttl").name, rdf_format("nquads").name
    ('Turtle', 'N-Quads')

    Raises:
        ConfigurationError: an unknown format, or a file name whose suffix names none.
    """
    if format is not None:
        found = FORMATS.get(format.lower()) or ox.RdfFormat.from_media_type(format)
        if found is None:
            raise ConfigurationError(
                f"unknown RDF format {format!r}; use one of {', '.join(FORMAT_NAMES)}")
        return found
    suffix = Path(name).suffix.lower() if name is not None else ""
    if suffix in _SUFFIX_FORMATS:
        return _SUFFIX_FORMATS[suffix]
    raise ConfigurationError(
        f"cannot tell the RDF format of {str(name)!r} from its suffix; use one of "
        f"{', '.join(sorted(_SUFFIX_FORMATS))}, or name the format with format= (--format): "
        f"{', '.join(FORMAT_NAMES)}")


# The suffixes ingestion reads as documents (trails.ingest.loaders.KNOWN_SUFFIXES): given to
# load, such a file was meant for ingest.
DOCUMENT_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".jsonl", ".pdf")


def read_quads(source: RdfSource, format: str | None = None, scope: str | None = None,
               *, base_iri: str | None = None) -> list[ox.Quad]:
    """Parse ``source`` into quads, all or nothing.

    Without ``scope`` every quad keeps its graph (triples: the default scope's graph). With
    ``scope``, triples go into that scope's graph, and RDF that names graphs of its own (TriG,
    N-Quads, JSON-LD with ``@graph`` names) is refused rather than moved. Blank nodes get
    fresh labels, so loading twice never merges them with others. Text without ``format``
    is read as Turtle/TriG, or N-Quads when TriG cannot read it (JSON-LD when it starts with
    ``{`` or ``[``, RDF/XML with ``<?xml``).

    >>> [str(q.graph_name) for q in read_quads(b'<urn:a> <urn:b> "c" .', scope="legal")]
    ['<urn:trails:scope:legal>']

    Raises:
        RdfSyntaxError: the input does not parse (the message names the line and column).
        RdfLimitError: the input passes a bound (:data:`MAX_RDF_BYTES`, a literal over
            :data:`MAX_LITERAL_CHARS`, XML entities expanding past :data:`ENTITY_ALLOWANCE`).
        ConfigurationError: no such file, an unknown format, or ``scope=`` with named graphs.
    """
    path, data = _input(source)
    name = str(path) if path is not None else "the RDF text"
    if format is None and path is not None and path.suffix.lower() in DOCUMENT_SUFFIXES:
        raise ConfigurationError(
            f"{name!r} is a document, not RDF: ingest it to search it (`trails ingest`, "
            f"ingest_all() in Python); load reads RDF ({', '.join(sorted(_SUFFIX_FORMATS))}), "
            f"or a file whose format= (--format) is named")
    _check_base(base_iri)
    if data.startswith(b"\x1f\x8b"):  # gzip's magic number: no RDF text starts with it
        raise RdfSyntaxError(f"{name} is gzip-compressed; load reads RDF text: decompress it "
                             "(gunzip) and load the file it gives; nothing was loaded",
                             source=name)
    data = _utf8(data, name)
    if format is not None or path is not None:
        fmt = rdf_format(format, path)
    else:
        fmt = _sniff(data)
    _check_size(name, len(data))
    if fmt == ox.RdfFormat.RDF_XML:
        _check_entities(name, data)
    try:
        quads = list(ox.parse(data, format=fmt, base_iri=base_iri, rename_blank_nodes=True))
    except SyntaxError as exc:
        if format is not None or path is not None or fmt != ox.RdfFormat.TRIG:
            hint = _hint(source, path, data, exc) or (_other_format(data, fmt, base_iri)
                                                       if format is None else "")
            raise _syntax_error(name, fmt, exc, hint) from exc
        # Text guessed to be TriG may be N-Quads (a dump's), which TriG does not read: the
        # reading that gets further names the error.
        quads, error = _as_nquads(data, base_iri)
        if error is not None:
            further = _position(error) > _position(exc) if None not in (
                *_position(error), *_position(exc)) else False
            kind, chosen = (ox.RdfFormat.N_QUADS, error) if further else (fmt, exc)
            raise _syntax_error(name, kind, chosen, _hint(source, path, data, chosen)) from exc
    except MemoryError as exc:  # a token past the lexer's buffer: a literal or an IRI
        raise _too_long(name, "a literal or IRI") from exc
    if fmt == ox.RdfFormat.RDF_XML:  # the one reader without the lexer's bound
        _check_literals(name, quads)
    if any(isinstance(quad.graph_name, ox.BlankNode) for quad in quads):
        raise ConfigurationError(
            f"{name} puts triples in a graph named by a blank node (an N3 formula {{ ... }}, "
            "or a TriG graph _:g { ... }), which can never be named again, so no scope, "
            "search or filter would read them: name the graph with an IRI, write its triples "
            "as statements of their own, or quote one as an RDF 1.2 triple term <<( s p o )>>;"
            " nothing was loaded")
    return _scope_graphs(quads, name) if scope is None else _into_scope(quads, scope, name)


def _check_base(base_iri: str | None) -> None:
    if base_iri is None:
        return
    try:
        list(ox.parse(b"", format=ox.RdfFormat.TURTLE, base_iri=base_iri))
    except ValueError as exc:
        reason = str(exc).rpartition(", ")[2] or str(exc)
        raise InvalidArgumentError(
            f"base_iri (--base-iri) {base_iri!r} is no absolute IRI ({reason}): give one "
            "such as https://example.org/ to resolve relative IRIs against; nothing was "
            "loaded") from exc


def _other_format(data: bytes, fmt: ox.RdfFormat, base_iri: str | None) -> str:
    """A hint for a file whose suffix names a format its content is not in, when the content
    reads as another format (a .rdf that is Turtle, a .ttl that is TriG)."""
    other = _sniff(data)
    if other == fmt:
        return ""
    try:
        list(ox.parse(data, format=other, base_iri=base_iri))
    except (SyntaxError, ValueError, MemoryError):
        return ""
    name = {ox.RdfFormat.TRIG: "trig", ox.RdfFormat.JSON_LD: "jsonld"}.get(other, "rdfxml")
    return (f" (its suffix says {fmt.name}, but it reads as {other.name}: name the format, "
            f"format=\"{name}\" (--format {name}), or rename the file)")


def _scope_graphs(quads: list[ox.Quad], name: str) -> list[ox.Quad]:
    """The quads, with a graph ``urn:trails:scope:default`` the default graph (the default
    scope's); a graph ``urn:trails:scope:X`` whose X is no scope name is refused, as its
    triples would sit where no scope reads them."""
    out = quads
    for index, quad in enumerate(quads):
        graph = quad.graph_name
        if not isinstance(graph, ox.NamedNode) or not graph.value.startswith(SCOPE_BASE):
            continue
        scope = graph.value[len(SCOPE_BASE):]
        if scope == DEFAULT_SCOPE:
            if out is quads:
                out = list(quads)
            out[index] = ox.Quad(quad.subject, quad.predicate, quad.object)
        elif not is_scope_name(scope):
            raise ConfigurationError(
                f"{name} names the graph <{graph.value}>, which is no scope's: scope names "
                "are 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit, "
                "so no search or filter would ever read its triples; rename the graph "
                f"<{SCOPE_BASE}NAME> with such a name; nothing was loaded")
    return out


def _as_nquads(data: bytes, base_iri: str | None
               ) -> tuple[list[ox.Quad], SyntaxError | None]:
    try:
        return list(ox.parse(data, format=ox.RdfFormat.N_QUADS, base_iri=base_iri,
                             rename_blank_nodes=True)), None
    except SyntaxError as exc:
        return [], exc
    except MemoryError:  # a term past the lexer's buffer: the TriG reading's error stands
        return [], SyntaxError("a literal or IRI too long")


def _utf8(data: bytes, name: str) -> bytes:
    """``data`` without a UTF-8 byte-order mark, which editors put first and the Turtle and
    N-Triples readers take for a character of the text; UTF-16 or UTF-32 (a mark of theirs
    first) is refused by name, as the readers take only UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:]
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        encoding = "UTF-32" if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00")) else "UTF-16"
        raise RdfSyntaxError(f"{name} is {encoding} text (it starts with a {encoding} byte-order "
                             "mark); RDF is read as UTF-8: save it as UTF-8 and load it again; "
                             "nothing was loaded", source=name)
    return data


def _check_size(name: str, size: int, added_by: str = "") -> None:
    if size > MAX_RDF_BYTES:
        raise RdfLimitError(
            f"{name} is {size:,} bytes{added_by}; load takes at most {MAX_RDF_BYTES:,} bytes "
            "at a time: split it into several files (N-Triples or N-Quads split at any line) "
            "and load each; nothing was loaded", source=name)


def _too_long(name: str, what: str) -> RdfLimitError:
    return RdfLimitError(
        f"{name} holds {what} over {MAX_LITERAL_CHARS:,} bytes (UTF-8), more than load reads "
        "in one term; keep large texts out of the graph (ingest them as documents) or split "
        "the value; nothing was loaded", source=name)


def _check_literals(name: str, quads: list[ox.Quad]) -> None:
    for quad in quads:
        value = quad.object.value if isinstance(quad.object, ox.Literal) else ""
        if len(value) > MAX_LITERAL_CHARS // 4 and len(value.encode()) > MAX_LITERAL_CHARS:
            raise _too_long(name, "a literal")  # in bytes, as the other readers measure


_ENTITY_WORD = re.compile(rb"<!ENTITY\b")
_ENTITY = re.compile(rb"""<!ENTITY\s+(%\s*)?([^\s"'%>]+)\s+(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_REFERENCE = re.compile(rb"&([A-Za-z_:][^\s&;<>\"']*);")


def _check_entities(name: str, data: bytes) -> None:
    """Refuse RDF/XML whose entity declarations would expand past the bounds, measured from
    the declarations before the parser expands anything."""
    declared = list(_ENTITY.finditer(data))
    if not declared:
        if _ENTITY_WORD.search(data):
            raise _entity_error(name, "an entity declaration it cannot read")
        return
    values: dict[bytes, bytes] = {}
    for match in declared:
        if match.group(1) is not None or match.group(5) is not None:
            raise _entity_error(name, "a parameter or external entity (<!ENTITY % ...>, "
                                      "SYSTEM, PUBLIC)")
        values.setdefault(match.group(2), match.group(3) if match.group(3) is not None
                          else match.group(4))
    if len(_ENTITY_WORD.findall(data)) != len(declared):
        raise _entity_error(name, "an entity declaration it cannot read")
    budget = max(ENTITY_ALLOWANCE, ENTITY_AMPLIFICATION * len(data))
    sizes: dict[bytes, int] = {}

    def size(entity: bytes, seen: tuple[bytes, ...]) -> int:
        if entity in seen:
            raise _entity_error(name, f"the entity {entity.decode(errors='replace')!r}, "
                                      "which refers to itself")
        if entity not in sizes:
            total = len(values[entity])
            for ref in _REFERENCE.finditer(values[entity]):
                if ref.group(1) in values:
                    total += size(ref.group(1), (*seen, entity)) - len(ref.group())
                    if total > budget:
                        break
            sizes[entity] = total
        return sizes[entity]

    added = 0
    for ref in _REFERENCE.finditer(data, declared[-1].end()):
        if ref.group(1) in values:
            try:
                added += size(ref.group(1), ()) - len(ref.group())
            except RecursionError:
                raise _entity_error(name, "entities nested too deep to measure") from None
            if added > budget:
                raise _entity_error(name, f"entities that expand to over {budget:,} bytes "
                                          "(nested entities, a \"billion laughs\")")
    _check_size(name, len(data) + added, " once its entities are expanded")


def _entity_error(name: str, what: str) -> RdfLimitError:
    return RdfLimitError(
        f"{name} declares {what}; load reads RDF/XML entities only while they expand to at "
        f"most {ENTITY_ALLOWANCE:,} bytes or {ENTITY_AMPLIFICATION} times the file's size: "
        "write the values out (or convert the file to Turtle) and load it again; nothing was "
        "loaded", source=name)


def _input(source: RdfSource) -> tuple[Path | None, bytes]:
    """The file to read (or None) and the bytes to parse."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return None, bytes(source)
    if isinstance(source, str):
        named = _file_named(source)
        if named is None:
            return None, source.encode("utf-8")
        source = named
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError("load() takes a path, RDF text or bytes, or an rdflib graph; got "
                        f"{type(source).__name__}")
    path = Path(source)
    try:
        _check_size(str(path), path.stat().st_size)
        return path, path.read_bytes()
    except FileNotFoundError as exc:
        raise ConfigurationError(f"no such file: {path}; pass RDF text as bytes (or as a "
                                 "str of several lines) to load it as content") from exc
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _file_named(text: str) -> str | None:
    """The file a str names, or None for RDF content: one line that names an existing path or
    ends with an RDF suffix; whitespace around it (the newline of a line read from a list of
    files) is no part of the name unless a file's name has it."""
    stripped = text.strip()
    if len(text) > 4096 or not stripped or "\n" in stripped or "\r" in stripped:
        return None
    for name in dict.fromkeys((text, stripped)):
        try:
            if Path(name).exists():
                return name
        except (OSError, ValueError):
            continue
    return stripped if stripped.lower().endswith(tuple(_SUFFIX_FORMATS)) else None


def _sniff(data: bytes) -> ox.RdfFormat:
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:64]
    if start[:1] in (b"{", b"["):
        return ox.RdfFormat.JSON_LD
    if start.startswith((b"<?xml", b"<rdf:RDF")):
        return ox.RdfFormat.RDF_XML
    return ox.RdfFormat.TRIG  # Turtle and N-Triples are TriG too


_POSITION = re.compile(r"^Parser error at line \d+ (?:between columns \d+ and \d+|column \d+): ")


def _syntax_error(name: str, fmt: ox.RdfFormat, exc: SyntaxError, hint: str) -> RdfSyntaxError:
    """pyoxigraph's error, reworded: where (file, line, column), what, and that nothing loaded."""
    line, column = _position(exc)
    detail = _POSITION.sub("", str(exc.args[0] if exc.args else exc))
    detail = re.sub(r" \(line \d+\)$", "", detail)
    kind = "Turtle/TriG" if fmt == ox.RdfFormat.TRIG and name == "the RDF text" else fmt.name
    where = f", line {line}, column {column}" if line is not None else ""
    return RdfSyntaxError(f"{name} is not valid {kind}{where}: {detail}; nothing was loaded{hint}",
                          source=name, line=line, column=column)


def _position(exc: SyntaxError) -> tuple[int | None, int | None]:
    line = exc.lineno if isinstance(exc.lineno, int) else None
    column = exc.offset if isinstance(exc.offset, int) else None
    if line is None and len(exc.args) > 1 and isinstance(exc.args[1], tuple):
        details = exc.args[1]  # (filename, line, column, text, end line, end column)
        line, column = (v if isinstance(v, int) else None for v in details[1:3])
    return line, column


# OWL's own syntaxes, which are no RDF (Protégé saves them under .owl too): their start.
# A JSON-LD @context named by URL (alone or in a list), which pyoxigraph does not fetch.
_REMOTE_CONTEXT = re.compile(rb'"@context"\s*:\s*\[?\s*"(https?://[^"]*)"')
_LINES = rb"(?:[ \t\r]*(?:#[^\n]*)?\n)*[ \t\r]*"  # blank or comment lines, one way only
_OWL_SYNTAXES = (
    (re.compile(rb"(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*|<!DOCTYPE[^>]*>\s*)*<Ontology\b",
                re.DOTALL), "OWL/XML"),
    (re.compile(_LINES + rb"(?:Prefix|Ontology)[ \t]*\("), "OWL functional syntax"),
    (re.compile(_LINES + rb"(?:Prefix|Ontology):"), "OWL Manchester syntax"))


def _hint(source: RdfSource, path: Path | None, data: bytes, error: SyntaxError) -> str:
    """What the error's text could not say: a JSON-LD context to fetch, an OWL syntax that
    is no RDF, a file name taken for RDF text."""
    remote = _REMOTE_CONTEXT.search(data) if "remote context" in str(error) else None
    if remote:
        return (f" (its @context {remote.group(1).decode('utf-8', 'replace')} is a document "
                "on the web, which load does not fetch: put the context itself in the file, "
                "or expand the JSON-LD first, and load that)")
    for pattern, syntax in _OWL_SYNTAXES:
        if pattern.match(data[:4096]):
            return (f" (this is {syntax}, not RDF: save the ontology as RDF/XML or Turtle, in "
                    "Protégé with File > Save as, and load that)")
    return _typo_hint(source, path)


def _typo_hint(source: RdfSource, path: Path | None) -> str:
    if path is None and isinstance(source, str) and re.fullmatch(r"[^\s<>\"{}]{1,255}", source):
        return (f" (read as RDF text: no file {source!r} exists; pass a pathlib.Path to "
                "load a file)")
    return ""


def _into_scope(quads: list[ox.Quad], scope: str, name: str) -> list[ox.Quad]:
    target = scope_graph(scope)
    named = sorted({str(q.graph_name) for q in quads
                    if not isinstance(q.graph_name, ox.DefaultGraph)})
    if named:
        shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
        raise ConfigurationError(
            f"{name} names graphs of its own ({shown}), so scope={scope!r} cannot place it: "
            "load it without a scope to keep its graphs (the graph "
            "<urn:trails:scope:NAME> is scope NAME), or drop the graph names")
    return [ox.Quad(q.subject, q.predicate, q.object, target) for q in quads]
