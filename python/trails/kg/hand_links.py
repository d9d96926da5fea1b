"""Chunk links written by hand: the writes that may have changed a ``schema:isPartOf`` triple
outside ingestion, remembered beside the graph's files (ADR 0013).

A filter over chunks is answered over documents (``retrieval/candidates.py``) only while every
``schema:isPartOf`` triple of a chunk is the one ingestion minted: a chunk's IRI then names its
document. Counting links cannot prove that: a link moved from one document to another, or
deleted together with its chunk's type, leaves the counts equal, and telling each link from
its chunk's IRI costs tens of seconds at a million chunks. So every write trails does not make
itself (``update``, ``extend``, ``load``, ``load_nquads``, ``remove_graph``, handing out the
raw store) is judged before it runs: one that may change such a triple, a document's
``rdf:type trails:Document`` (which stands for its chunks' links when nothing else in a filter
binds the document) or a chunk's ``rdf:type trails:Chunk`` (which a filter's
``?iri a trails:Chunk`` beside the link then always finds), leaves a mark, and while any mark
is there filters run over chunks, as written (exact; slower on a large graph).
:func:`~trails.ingest.maintenance.verify` reads every link and every document and chunk type;
when each is the minted one it removes the marks it saw.

The judgement errs one way only: a write that could reach ``schema:isPartOf`` or a document's
type is marked (a template's predicate that is a variable, the IRI, a relative IRI or a
prefixed name whose local part could end it, and for a type the object read the same way; a
whole-graph operation; anything the reading cannot follow), and a write that cannot is not.
Escapes are read where Oxigraph reads them, in IRIs and strings. Handing out the raw store
marks that graph object for good.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager

import pyoxigraph as ox

from trails.errors import StorageError
from trails.kg.planning import RDF_TYPE
from trails.kg.sparql import STRING, TRAILS
from trails.kg.sparql_text import WIDE_CHAR, WORD_CHAR

__all__ = ["IS_PART_OF", "MARKS_DIR", "HandLinks", "minted_links", "nquads_may_change_links",
           "quads_change_links", "trails_own_writes", "update_may_change_links"]

IS_PART_OF = "https://schema.org/isPartOf"
_LINK = ox.NamedNode(IS_PART_OF)
# A document's type stands for its chunks' links when nothing else in a filter binds the
# document (``?doc a trails:Document``, the typed lift): writing one by hand is judged too.
_DOCUMENT_IRI, _CHUNK_IRI = TRAILS + "Document", TRAILS + "Chunk"
_TYPE = ox.NamedNode(RDF_TYPE)
# A chunk's type stands beside its link: ``?iri a trails:Chunk ; schema:isPartOf ?doc`` is
# lifted to documents while every linked chunk keeps the type ingestion wrote with the link.
_TYPES = (ox.NamedNode(_DOCUMENT_IRI), ox.NamedNode(_CHUNK_IRI))
# Inside the store's directory, beside the revision stamp: one empty file per marked write.
MARKS_DIR = "trails-links-by-hand"
_MINTED = contextvars.ContextVar("trails_minted_links", default=False)
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
# An IRI with a scheme: one a BASE cannot resolve to another.
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_TERMS = frozenset({"string", "iri", "var", "blank", "name", "number", "word"})
# Operations on whole graphs: any of them can take links with it.
_GRAPH_OPERATIONS = frozenset({"CLEAR", "DROP", "MOVE", "COPY", "ADD", "LOAD"})


@functools.cache
def _token() -> re.Pattern[str]:
    """The tokenizer, compiled at its first use (a few milliseconds a process)."""
    return re.compile(
        rf"(?P<string>{STRING})"
        r'|(?P<iri><(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>)'
        r"|(?P<comment>#[^\n\r]*)"
        r"|(?P<space>\s+)"
        r"|(?P<suffix>\^\^|@[A-Za-z]+(?:-[A-Za-z0-9]+)*)"
        rf"|(?P<var>[?$]{WORD_CHAR}+)"
        rf"|(?P<blank>_:(?:{WORD_CHAR}|[.-])*)"
        rf"|(?P<name>(?:(?:[A-Za-z]|{WIDE_CHAR})(?:{WORD_CHAR}|[.-])*)?:"
        rf"(?:(?:{WORD_CHAR}|[:%-])(?:(?:{WORD_CHAR}|[.:%-])*(?:{WORD_CHAR}|[:%-]))?)?)"
        r"|(?P<number>[+-]?(?:\d*\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?))"
        r"|(?P<word>[A-Za-z_]\w*)"
        r"|(?P<punct>[{}()\[\].;,])"
        r"|(?P<other>\S)")


@contextlib.contextmanager
def minted_links(inner: AbstractContextManager[object] | None = None) -> Iterator[None]:
    """Writes in this block (this thread or task) are trails' own: ingestion's, a delete's,
    repair's. They write and remove chunk links only as minted, so they leave no mark."""
    token = _MINTED.set(True)
    try:
        with inner if inner is not None else contextlib.nullcontext():
            yield
    finally:
        _MINTED.reset(token)


def trails_own_writes() -> bool:
    """Whether this thread or task is inside :func:`minted_links`: its writes are trails'
    own, made of text trails generated (IRIs it minted, values in object position)."""
    return _MINTED.get()


def update_may_change_links(text: str) -> bool:
    """Whether the SPARQL update ``text`` may write or delete a ``schema:isPartOf`` triple
    or a ``trails:Document`` or ``trails:Chunk`` type.

    Only a template writes (``INSERT``/``DELETE`` blocks, ``DATA`` blocks, ``DELETE WHERE``'s
    pattern): a link through its predicate, which may be it when it is a variable, the IRI, a
    relative IRI (a ``BASE`` can make it the IRI) or a prefixed name whose local part could
    end it (``schema:isPartOf``, ``p:Of``, ``p:``); a document's type when its predicate may
    be ``rdf:type`` (``a`` too) and its object ``trails:Document`` or ``trails:Chunk``, read the
    same way. A
    whole-graph operation may, and so may anything this reading does not follow (a backslash
    outside strings and IRIs, a template it cannot walk). Escapes are read in IRIs (and kept
    in strings), as Oxigraph reads them. Reading the links (in a ``WHERE``) changes nothing.

    >>> update_may_change_links('INSERT DATA { <x:d> schema:dateCreated "2024" }')
    False
    >>> update_may_change_links('DELETE WHERE { <x:c> schema:isPartOf ?d }')
    True
    >>> update_may_change_links('DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }')
    True
    """
    tokens = []
    for found in _token().finditer(text):
        kind, token = found.lastgroup or "other", found.group()
        if kind == "iri":  # Oxigraph reads \u escapes in IRIs and strings only, as here
            token = _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), token)
        if kind == "word" and token.upper() in _GRAPH_OPERATIONS:
            return True
        if kind == "other" and token == "\\":
            return True  # a local name's escape (ex:a\#b): the rest would be misread
        if kind not in ("space", "comment"):
            tokens.append((kind, token.upper() if kind == "word" else token))
    return any(_template_writes_links(tokens, at) for at, (kind, token) in enumerate(tokens)
               if token in ("DELETE", "INSERT") and kind == "word")


@functools.lru_cache(maxsize=4096)
def _may_name(kind: str, token: str, iri: str) -> bool:
    """Whether a term written ``token`` could be the IRI ``iri`` (``a`` is ``rdf:type``)."""
    if kind == "var":
        return True
    if kind == "iri":
        return token[1:-1] == iri or not _ABSOLUTE.match(token[1:-1])
    if kind == "name":  # a prefix may end anywhere in the IRI; the local part ends it
        return iri.endswith(token.partition(":")[2])
    return kind == "word" and token == "A" and iri == RDF_TYPE


def _template_writes_links(tokens: list[tuple[str, str]], at: int) -> bool:
    """Whether the template after the DELETE or INSERT at ``at`` (a ``DATA`` block and
    ``DELETE WHERE``'s pattern included) has a predicate that could be ``schema:isPartOf``,
    or a triple that could be a ``trails:Document`` or ``trails:Chunk`` type."""
    at += 1
    if at < len(tokens) and tokens[at][1] in ("DATA", "WHERE"):
        at += 1
    if at >= len(tokens) or tokens[at][1] != "{":
        return False  # not an operation (a name, a string): nothing to read
    # What comes next, and for each open bracket what came before it ("{", "[" or "(") and
    # whether the predicate then could be rdf:type.
    expect, outer = "subject", list[tuple[str, str, bool]]()
    typing = False  # the last predicate could be rdf:type
    for kind, token in tokens[at + 1:]:
        if kind == "suffix":
            expect = "datatype" if token == "^^" else expect
        elif expect == "datatype":
            expect = "end"
        elif token == "GRAPH":
            expect = "graph"
        elif expect == "graph":
            expect = "{"
        elif token == "{":
            expect, outer = "subject", [*outer, ("subject", "{", False)]
        elif token == "}":
            if not outer:
                return False  # the template's end
            expect, outer = "subject", outer[:-1]
        elif token in ".;,":
            expect = {".": "subject", ";": "predicate", ",": "object"}[token]
        elif token in "[(":
            outer = [*outer, (expect, token, typing)]
            expect = "predicate" if token == "[" else "object"
        elif token in "])":
            if not outer or outer[-1][1] != {"]": "[", ")": "("}[token]:
                return True  # unbalanced: assume the worst
            expect, typing, outer = _after(outer[-1][0]), outer[-1][2], outer[:-1]
        elif kind in _TERMS:
            if expect == "end" or (expect == "predicate" and _may_name(kind, token, IS_PART_OF)):
                return True  # a predicate that may be the link, or a reading gone astray
            if expect == "predicate":
                typing = _may_name(kind, token, RDF_TYPE)
            elif expect == "object" and typing and (_may_name(kind, token, _DOCUMENT_IRI)
                                                    or _may_name(kind, token, _CHUNK_IRI)):
                return True  # a document's or a chunk's type
            in_list = bool(outer) and outer[-1][1] == "("
            expect = "object" if in_list else _after(expect)
        else:
            return True  # nothing a template holds: assume the worst
    return True  # no end: assume the worst


def _after(position: str) -> str:
    """What follows a term in ``position``."""
    return {"subject": "predicate", "predicate": "object"}.get(position, "end")


def quads_change_links(quads: Iterable[ox.Quad]) -> bool:
    """Whether any of ``quads`` is a ``schema:isPartOf`` triple or a ``trails:Document`` or
    ``trails:Chunk`` type."""
    return any(q.predicate == _LINK or (q.predicate == _TYPE and q.object in _TYPES)
               for q in quads)


def nquads_may_change_links(text: str) -> bool:
    """Whether N-Quads ``text`` may hold a ``schema:isPartOf`` triple or a ``trails:Document``
    or ``trails:Chunk`` type (an escape may spell any)."""
    return (IS_PART_OF in text or _DOCUMENT_IRI in text or _CHUNK_IRI in text or "\\u" in text
            or "\\U" in text)


class HandLinks:
    """The marks of one graph: files in ``<graph>/trails-links-by-hand`` (a set in memory)."""

    def __init__(self, path: str | None) -> None:
        self.folder = None if path is None else os.path.join(path, MARKS_DIR)
        self._memory: set[str] = set()
        self._raw = False  # the raw store was handed out: it may write at any later time

    @contextlib.contextmanager
    def writing(self, may_change: Callable[[], bool] | None) -> Iterator[None]:
        """Around a write that ``may_change()`` says may change links: a mark before it, so
        a crash mid-write leaves one, and a new one after it, so a :meth:`clear` that listed
        the marks while the write ran leaves this one. Trails' own writes are not judged at
        all (an ingest's updates are large)."""
        marking = may_change is not None and not _MINTED.get() and may_change()
        if marking:
            self.mark()
        try:
            yield
        finally:  # a write that failed may have landed in part (bulk_extend)
            if marking:
                self.mark()

    def handed_out(self) -> None:
        """The raw store was handed out: its writes are never seen, so from now on this
        graph object always counts as marked (a verify cannot clear that)."""
        self._raw = True
        self.mark()

    @property
    def raw(self) -> bool:
        """Whether the raw store was handed out (it may write, unseen, at any time)."""
        return self._raw

    def mark(self) -> None:
        """Leave a mark.

        Raises:
            StorageError: it cannot be written (the write must not go on unmarked).
        """
        name = secrets.token_hex(8)
        if self.folder is None:
            self._memory.add(name)
            return
        try:
            os.makedirs(self.folder, exist_ok=True)
            with open(os.path.join(self.folder, name), "x", encoding="ascii"):
                pass
        except OSError as exc:
            raise StorageError(f"cannot record a write to chunk links or document types in "
                               f"{self.folder!r} "
                               f"({exc}); nothing was written. Free space or make the "
                               "context writable, then write again") from exc

    def marks(self) -> list[str]:
        """The marks there now (none: every chunk link and document type is as ingestion
        minted it)."""
        if self._raw:
            return ["the raw store was handed out"]
        if self.folder is None:
            return sorted(self._memory)
        try:
            return sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return []
        except OSError:
            return ["unreadable"]  # cannot tell: as if marked

    def clear(self, marks: Iterable[str]) -> None:
        """Remove ``marks`` (those listed before every link was read and found minted)."""
        for name in marks:
            self._memory.discard(name)
            if self.folder is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(self.folder, name))
