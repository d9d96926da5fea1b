"""IRIs and triples for documents and chunks, following ontologies/trails.ttl."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import pyoxigraph as ox

from trails.display.snippets import SNIPPET_CHARS  # what a stored snippet holds
from trails.errors import ConfigurationError, InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.dates import date_created
from trails.ingest.document import Chunk, Document
from trails.ingest.expiry import EXPIRES, document_expiry
from trails.kg.sparql import META, PREFIXES, TRAILS
from trails.kg.terms import IRI, check_text, to_term
from trails.scopes import DEFAULT_SCOPE, scope_graph

__all__ = ["CHUNK_IRI", "CHUNK_PREDICATES", "MINTED", "MINTED_GRAPH", "SOURCE_FILE",
           "check_base_iri", "chunk_iri", "chunk_nquads", "chunk_quads",
           "doc_iri", "document_manifest", "document_named", "document_nquads", "document_quads",
           "document_title",
           "expand_predicates", "metadata_predicate", "version_of"]

SCHEMA = "https://schema.org/"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
_KEY = re.compile(r"[^A-Za-z0-9_\-]")


def _s(local: str) -> ox.NamedNode:
    return ox.NamedNode(SCHEMA + local)


def _t(local: str) -> ox.NamedNode:
    return ox.NamedNode(TRAILS + local)


def document_named(given: object, base: str) -> str:
    """``given``, a document's IRI, refused when it is none (an id passed where the IRI goes).

    Raises:
        InvalidArgumentError: it is no absolute IRI, naming the IRI an id would have.
    """
    if isinstance(given, str) and _ABSOLUTE.match(given) and not any(c in given for c in " <>\""):
        return given
    hint = (f"; the document of id {given!r} in the default scope is {doc_iri(base, given)!r}"
            if isinstance(given, str) and given.strip() else "")
    raise InvalidArgumentError(
        f"a document is named by its IRI, and {given!r} is none{hint}. A hit names its "
        "document's IRI as hit.document; trails.ingest.minting.doc_iri(base_iri, id, scope) "
        "mints one")


_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def doc_iri(base: str, doc_id: str, scope: str = DEFAULT_SCOPE) -> str:
    """The document's IRI: deterministic from base, scope and the loader's document id.

    >>> doc_iri("trails://local/", "docs/a b.md")
    'trails://local/doc/docs/a%20b.md'
    >>> doc_iri("trails://local/", "docs/a.md", scope="legal")
    'trails://local/scope/legal/doc/docs/a.md'

    A segment that IRI normalisation would remove or merge (``..``, ``.``, an empty one), or
    a ``v`` before a version (another document's chunk, ``<doc>/v/<version>/c/<n>``), is
    marked, so that no id can climb out of its scope's path or onto another one's IRI:

    >>> doc_iri("trails://local/", "../../scope/legal/doc/a.md")
    'trails://local/doc/..!/..!/scope/legal/doc/a.md'
    >>> doc_iri("trails://local/", "a.md/v/0123456789abcdef/c/0")
    'trails://local/doc/a.md/v!/0123456789abcdef/c/0'
    """
    segments = quote(doc_id, safe="/-._~").split("/")
    path = "/".join(_marked(segment, after)
                    for segment, after in zip(segments, [*segments[1:], ""]))
    if scope == DEFAULT_SCOPE:
        return f"{base}doc/{path}"
    return f"{base}scope/{scope}/doc/{path}"


_VERSION_TEXT = "[0-9a-f]{16}"  # a version as version_of writes it
# What chunk_iri mints.
CHUNK_IRI = re.compile(rf"^(?P<doc>.+)/v/(?P<version>{_VERSION_TEXT})/c/\d+$")


def _marked(segment: str, after: str) -> str:
    """A path segment that normalisation (RFC 3986: ``remove_dot_segments``; and the
    normalisers that merge ``//``) would rewrite, or a ``v`` before what reads as a version
    (``after``), with a ``!`` after it. ``quote`` writes every other ``!`` as ``%21``, and
    ``%`` as ``%25`` (so no ``%2E`` can be decoded into a dot), so the marked form is no
    other id's: minting stays one to one, and an id without such a segment mints the IRI it
    always did."""
    if segment in ("", ".", "..") or (segment == "v" and re.fullmatch(_VERSION_TEXT, after)):
        return segment + "!"
    return segment


def check_base_iri(base: Any, option: str = "base_iri", *, given: bool = False) -> str:
    """``base`` itself if documents' IRIs can be minted under it, else an error, so that a
    bad base is refused before anything is written. ``given``: a base the caller passes
    now (not one a context recorded), which must also end in ``/`` or ``#``: IRIs are minted
    by appending, so ``https://example.org/kb`` would mint ``https://example.org/kbdoc/...``.

    >>> check_base_iri("https://example.org/kb/")
    'https://example.org/kb/'
    >>> check_base_iri("not an iri")
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentError: base_iri 'not an iri' is not an absolute IRI (Invalid IRI code point ' '); give one such as trails://local/ or https://example.org/kb/ (ending in / or #)

    Raises:
        InvalidArgumentTypeError: ``base`` is not a str.
        InvalidArgumentError: (a ConfigurationError) it is no absolute IRI, or the IRIs minted
            under it would not be.
    """
    if not isinstance(base, str):
        raise InvalidArgumentTypeError(f"{option} must be a str (an absolute IRI such as "
                                       f"trails://local/), got {type(base).__name__}")
    check_text(base, option)
    hint = "give one such as trails://local/ or https://example.org/kb/ (ending in / or #)"
    try:
        ox.NamedNode(base)
    except ValueError as exc:
        raise InvalidArgumentError(f"{option} {base!r} is not an absolute IRI ({exc}); "
                                   f"{hint}") from None
    if given and not base.endswith(("/", "#")):
        raise InvalidArgumentError(
            f"{option} {base!r} does not end in / or #, so the IRIs minted under it would run "
            f"on from it ({doc_iri(base, 'a.md')!r}); give {base + '/'!r}")
    for minted in (doc_iri(base, "a.md"), doc_iri(base, "a.md", "s")):
        try:
            ox.NamedNode(minted)
        except ValueError as exc:
            raise InvalidArgumentError(f"{option} {base!r} mints no valid IRI ({minted!r}: "
                                       f"{exc}); {hint}") from None
    return base


def version_of(document: Document, chunker_id: str, embedder_id: str) -> str:
    """A document version: the same text, chunking and embedder give the same version."""
    digest = hashlib.sha256()
    for part in (document.text, chunker_id, embedder_id):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def chunk_iri(document_iri: str, version: str, position: int) -> str:
    """Chunk IRIs carry the version, so a changed document never reuses a chunk IRI."""
    return f"{document_iri}/v/{version}/c/{position}"


def _terms(value: Any, prefixes: Mapping[str, str]) -> Iterator[ox.Literal | ox.NamedNode | ox.BlankNode | ox.Triple]:
    """The RDF objects of one metadata value: a list gives several (a set in a stable order);
    an IRI written as ``<https://...>``, a CURIE with a known prefix (``schema:Person``), a
    JSON-LD ``{"@id": ...}`` or a ``trails.kg.IRI`` gives an IRI; a dict a JSON literal;
    anything else a typed literal. A plain ``https://...`` string stays a string: a URL in a
    text field is not a claim about a resource.

    Raises:
        InvalidArgumentTypeError: a value of a type with no RDF form (``object()``, bytes).
        InvalidArgumentError: an ``IRI`` that is not one.
    """
    if value is None:
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _terms(item, prefixes)
    elif isinstance(value, (set, frozenset)):  # iteration order differs between processes
        yield from sorted((t for item in value for t in _terms(item, prefixes)), key=str)
    elif isinstance(value, dict):
        target = value.get("@id")
        iri = _iri(str(target), prefixes, bare=True) if isinstance(target, str) else None
        yield ox.NamedNode(iri) if iri else ox.Literal(json.dumps(value, sort_keys=True,
                                                                  default=_json_default))
    elif isinstance(value, str) and not isinstance(value, IRI):
        iri = _iri(value, prefixes, bare=False)
        yield ox.NamedNode(iri) if iri else to_term(value)
    elif isinstance(value, (ox.BlankNode, ox.Triple)):
        # A manifest is deleted with DELETE DATA, which cannot name a blank node.
        raise InvalidArgumentTypeError(f"a {type(value).__name__} cannot be a metadata value; "
                                       "use an IRI or a literal")
    else:
        yield to_term(value)  # typed: xsd:integer, xsd:double, xsd:boolean, xsd:date, IRIs...


def _json_default(value: Any) -> Any:
    """What a dict value JSON has no form for becomes: a set a sorted list, else its text."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)


_ANGLED = re.compile(r"^<([^<>\"{}|^`\\\s]+)>$")
_CURIE = re.compile(r"^([A-Za-z][\w.-]*):(?!//)([^\s<>\"{}|^`\\]*)$")  # not scheme://


def _iri(text: str, prefixes: Mapping[str, str], *, bare: bool) -> str | None:
    """The absolute IRI ``text`` writes (``<iri>``, a known CURIE; with ``bare`` also a
    plain absolute IRI, as JSON-LD's ``@id`` has it), or None."""
    text = text.strip()
    angled = _ANGLED.match(text)
    candidate: str | None = angled.group(1) if angled else None
    curie = _CURIE.match(text) if candidate is None else None
    if curie and curie.group(1) in prefixes:
        candidate = prefixes[curie.group(1)] + curie.group(2)
    elif candidate is None and bare:
        candidate = text
    if candidate is None or ":" not in candidate:
        return None
    try:
        return ox.NamedNode(candidate).value
    except ValueError:
        return None


def metadata_predicate(key: str, predicates: Mapping[str, str]) -> ox.NamedNode:
    """The predicate a metadata key is written with: the context's mapping
    (``author`` -> ``dcterms:creator``), else ``meta:<key>``."""
    mapped = predicates.get(key)
    return ox.NamedNode(mapped) if mapped else ox.NamedNode(META + _local_name(str(key)))


def _local_name(key: str) -> str:
    """``key`` as the local name of its ``meta:`` predicate, one to one, so that two keys
    never share a predicate (``автор`` and ``номер`` were both ``meta:_____``): letters,
    digits, ``_`` and ``-`` stay, any other character is its UTF-8 bytes percent-encoded,
    which IRIs and SPARQL prefixed names allow (``a b`` -> ``meta:a%20b``).

    >>> _local_name("author"), _local_name("a b"), _local_name("größe")
    ('author', 'a%20b', 'gr%C3%B6%C3%9Fe')
    """
    return _KEY.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), key)


def expand_predicates(mapping: Mapping[str, str]) -> dict[str, str]:
    """A key -> predicate mapping with CURIEs expanded and every IRI checked.

    >>> expand_predicates({"author": "dcterms:creator"})
    {'author': 'http://purl.org/dc/terms/creator'}
    """
    out = {}
    for key, value in mapping.items():
        iri = _iri(value, PREFIXES, bare=True)
        if not iri:
            raise ConfigurationError(f"metadata key {key!r} maps to {value!r}, which is no absolute IRI "
                             f"or CURIE with a known prefix ({', '.join(sorted(PREFIXES))})")
        out[str(key)] = iri
    return out


def _document_triples(
    document: Document, iri: str, version: str, chunks: int, scope: str,
    predicates: Mapping[str, str] | None = None, retention: Mapping[str, str] | None = None,
) -> list[tuple[ox.NamedNode, ox.NamedNode, Any]]:
    s = ox.NamedNode(iri)
    title = document_title(document)
    triples = [
        (s, RDF_TYPE, _DOCUMENT),
        (s, _DOCUMENT_ID, ox.Literal(document.id)),
        (s, _SOURCE, ox.Literal(document.source)),
        (s, _NAME, ox.Literal(title)),
        (s, _CONTENT_HASH, ox.Literal(document.hash)),
        (s, _CHUNK_COUNT, to_term(chunks)),
        (s, _CURRENT_VERSION, ox.Literal(version)),
        (s, _MEDIA_TYPE, ox.Literal(document.media_type)),
        (s, _SCOPE, ox.Literal(scope)),
    ]
    if document.origin is not None:  # in the manifest: ingesting a file again records it
        triples.append((s, SOURCE_FILE, ox.Literal(document.origin)))
    created = date_created(document.metadata)
    if created is not None:
        triples.append((s, _DATE_CREATED, to_term(created)))
    expires = document_expiry(document.metadata, created, scope, retention)
    if expires is not None:  # always UTC and xsd:dateTime, so SPARQL compares every expiry
        triples.append((s, _EXPIRES, ox.Literal(expires.isoformat().replace("+00:00", "Z"),
                                                datatype=_DATE_TIME)))
    for key, value in document.metadata.items():
        predicate = metadata_predicate(str(key), predicates or {})
        triples.extend((s, predicate, o) for o in _terms(value, PREFIXES))
    return triples


def document_manifest(
    document: Document, iri: str, version: str, chunks: int, scope: str,
    predicates: Mapping[str, str] | None = None, retention: Mapping[str, str] | None = None,
) -> str:
    """The document's own triples as N-Triples text: what trails wrote about the document.

    It is kept with the document (:data:`MINTED_GRAPH`), so that a new version or a metadata
    change deletes exactly these triples and none a user added (ADR 0012); comparing it with
    the text a new run would write tells a metadata change apart from no change.
    """
    return "".join(f"{s} {p} {o} .\n"
                   for s, p, o in _document_triples(document, iri, version, chunks, scope, predicates,
                                             retention))


def document_quads(
    document: Document, iri: str, version: str, chunks: int, scope: str,
    predicates: Mapping[str, str] | None = None, retention: Mapping[str, str] | None = None,
) -> list[ox.Quad]:
    """The document's own triples (not its chunks'), and its manifest."""
    g = scope_graph(scope)
    manifest = document_manifest(document, iri, version, chunks, scope, predicates, retention)
    return [*(ox.Quad(s, p, o, g)
              for s, p, o in _document_triples(document, iri, version, chunks, scope, predicates,
                                             retention)),
            ox.Quad(ox.NamedNode(iri), MINTED, ox.Literal(manifest), MINTED_GRAPH)]


def document_nquads(
    document: Document, iri: str, version: str, chunks: int, scope: str,
    predicates: Mapping[str, str] | None = None, retention: Mapping[str, str] | None = None,
) -> str:
    """:func:`document_quads` as N-Quads text (terms serialise themselves; no Quad objects)."""
    end = _statement_end(scope)
    manifest = document_manifest(document, iri, version, chunks, scope, predicates, retention)
    return "".join(f"{s} {p} {o}{end}"
                   for s, p, o in _document_triples(document, iri, version, chunks, scope, predicates,
                                             retention)) + (
        f"<{iri}> {MINTED} {_string(manifest)} {MINTED_GRAPH} .\n")


def chunk_quads(
    chunks: Sequence[Chunk], iri: str, version: str, scope: str
) -> list[ox.Quad]:
    g, document, v = scope_graph(scope), ox.NamedNode(iri), ox.Literal(version)
    quads: list[ox.Quad] = []
    for chunk in chunks:
        c = ox.NamedNode(chunk_iri(iri, version, chunk.position))
        quads += [
            ox.Quad(c, RDF_TYPE, _CHUNK, g),
            ox.Quad(c, _IS_PART_OF, document, g),
            ox.Quad(c, _TEXT, ox.Literal(chunk.text), g),
            ox.Quad(c, _POSITION, to_term(chunk.position), g),
            ox.Quad(c, _START_OFFSET, to_term(chunk.start), g),
            ox.Quad(c, _END_OFFSET, to_term(chunk.end), g),
            ox.Quad(c, _VERSION, v, g),
        ]
    return quads


def chunk_nquads(
    chunks: Sequence[Chunk], iri: str, version: str, scope: str
) -> str:
    """:func:`chunk_quads` as N-Quads text, the same quads.

    Building a pyoxigraph ``Quad`` costs ~10 µs (each term is converted and copied); the text
    costs ~1 µs a quad and Oxigraph parses it without the GIL. The document IRI is checked as
    a ``NamedNode``; chunk IRIs extend it with hex and digits, literals are escaped here.
    """
    doc = str(ox.NamedNode(iri))
    end = _statement_end(scope)
    prefix = f"<{iri}/v/{version}/c/"
    v = _string(version)
    lines = []
    for chunk in chunks:
        c = f"{prefix}{chunk.position}>"
        lines.append(
            f"{c} {_RDF_TYPE_NT} {_CHUNK_NT}{end}"
            f"{c} {_IS_PART_OF_NT} {doc}{end}"
            f"{c} {_TEXT_NT} {_string(chunk.text)}{end}"
            f'{c} {_POSITION_NT} "{chunk.position}"{_INTEGER}{end}'
            f'{c} {_START_OFFSET_NT} "{chunk.start}"{_INTEGER}{end}'
            f'{c} {_END_OFFSET_NT} "{chunk.end}"{_INTEGER}{end}'
            f"{c} {_VERSION_NT} {v}{end}")
    return "".join(lines)


def _statement_end(scope: str) -> str:
    graph = scope_graph(scope)
    return " .\n" if isinstance(graph, ox.DefaultGraph) else f" {graph} .\n"


# A JSON string is an N-Quads string literal: JSON escapes '"', '\\' and every control
# character (\n, \r, \uXXXX), all of which N-Quads reads back; other characters stay as they
# are (ensure_ascii off). This is the C encoder.
_string = json.encoder.encode_basestring
# Where each document's manifest lives: outside every scope's graph, so no scoped query or
# retrieval filter sees it.
MINTED_GRAPH = ox.NamedNode("urn:trails:minted")
MINTED = _t("minted")  # a document's manifest, in MINTED_GRAPH
# The predicates trails writes on chunk subjects: all a new version or a delete removes from
# a chunk (its rdf:type only when it is trails:Chunk), so a user's triples about it survive.
# Its mentions (trails.ingest.mentions) are part of the version too.
CHUNK_PREDICATES = tuple(p.value for p in (
    _s("isPartOf"), _s("text"), _s("position"), _t("startOffset"), _t("endOffset"),
    _t("version"), _t("mentions"), _t("hasMention")))
_INTEGER = "^^<http://www.w3.org/2001/XMLSchema#integer>"
_DOCUMENT, _CHUNK = _t("Document"), _t("Chunk")
_DOCUMENT_ID, _SOURCE, _NAME = _t("documentId"), _t("source"), _s("name")
SOURCE_FILE = _t("sourceFile")  # the file a document was loaded from (prune reads it)
_CONTENT_HASH, _CHUNK_COUNT, _CURRENT_VERSION = _t("contentHash"), _t("chunkCount"), _t("currentVersion")
_MEDIA_TYPE, _SCOPE, _DATE_CREATED = _t("mediaType"), _t("scope"), _s("dateCreated")
_EXPIRES = ox.NamedNode(EXPIRES)
_DATE_TIME = ox.NamedNode("http://www.w3.org/2001/XMLSchema#dateTime")
_IS_PART_OF, _TEXT, _POSITION = _s("isPartOf"), _s("text"), _s("position")
_START_OFFSET, _END_OFFSET, _VERSION = _t("startOffset"), _t("endOffset"), _t("version")
_RDF_TYPE_NT, _CHUNK_NT, _IS_PART_OF_NT, _TEXT_NT = map(str, (RDF_TYPE, _CHUNK, _IS_PART_OF, _TEXT))
_POSITION_NT, _START_OFFSET_NT, _END_OFFSET_NT, _VERSION_NT = map(
    str, (_POSITION, _START_OFFSET, _END_OFFSET, _VERSION))


def document_title(document: Document) -> str:
    """The document's title, or the last part of its id when it has none."""
    return document.title or document.id.rsplit("/", 1)[-1]


def vector_metadata(
    chunk: Chunk, iri: str, version: str, scope: str, payload: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What each vector carries: what retrieval needs to rank and show a hit, and ``payload``,
    the document fields the context's allowlist lets into the store
    (:func:`trails.ingest.payload.document_payload`).

    ``text`` (the whole chunk) feeds the store's keyword index; a store keeps it once, out of
    the rest of the metadata (SqliteVecStore: its own column)."""
    return {
        **(payload or {}),  # first: a payload field never replaces what retrieval needs
        "iri": chunk_iri(iri, version, chunk.position),
        "doc_iri": iri,
        "snippet": chunk.text[:SNIPPET_CHARS],
        "text": chunk.text,
        "scope": scope,
        "version": version,
        "position": chunk.position,
        "start": chunk.start,
        "end": chunk.end,
    }
