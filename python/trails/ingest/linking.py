"""Linking chunks to the entities of the user's graph: the ``Linker`` protocol and
``LabelLinker``, which finds the entities' own labels in the text (ADR 0031).

A linker is bound to one scope's graph (:meth:`Linker.for_scope`), where it reads what it
needs once (the labels), and then reports each chunk's :class:`Mention` s: the entity, the
characters that justify the link and their offsets in the *document's* text. The writer
turns them into ``<chunk> trails:mentions <entity>`` and a mention node with that
provenance (:mod:`trails.ingest.mentions`), in the chunk's scope, as part of its version.

>>> import pyoxigraph as ox
>>> from trails.kg import OxigraphGraph
>>> kg = OxigraphGraph()
>>> kg.add(ox.Quad(ox.NamedNode("https://ex.org/acme"),
...                ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label"), ox.Literal("ACME")))
>>> from trails.ingest.document import Chunk
>>> [(m.entity, m.text, m.start) for m in
...  LabelLinker().for_scope(kg, "default").mentions(Chunk("Sold to Acme.", 10, 23, 0))]
[('https://ex.org/acme', 'Acme', 18)]
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import pyoxigraph as ox

from trails._lazy import require
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.document import Chunk
from trails.ingest.scripts import is_mark, is_word, joined, particle_follows
from trails.kg.base import KnowledgeGraph, select
from trails.kg.sparql import PREFIXES
from trails.scopes import DEFAULT_SCOPE

__all__ = [
    "DEFAULT_LABEL_PREDICATES",
    "LABEL_PREFIXES",
    "LabelLinker",
    "Linker",
    "Mention",
    "ScopeLinker",
    "check_linker",
    "fold",
    "linker_warnings",
]

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKOS = "http://www.w3.org/2004/02/skos/core#"
DEFAULT_LABEL_PREDICATES = (RDFS_LABEL, SKOS + "prefLabel", SKOS + "altLabel",
                            "https://schema.org/name")
# Prefixed names a label predicate is written with ("rdfs:label"). Each is also a well-formed
# IRI (of the scheme "rdfs") that no triple uses: taken as one, it would read no labels, and a
# re-link would remove every link.
LABEL_PREFIXES = {**PREFIXES, "skos": SKOS, "owl": "http://www.w3.org/2002/07/owl#",
                  "foaf": "http://xmlns.com/foaf/0.1/", "dc": "http://purl.org/dc/elements/1.1/"}


@dataclass(frozen=True, order=True)
class Mention:
    """One link from a chunk to an entity, with what justifies it.

    ``start``/``end`` are offsets in the document's text (``document.text[start:end] ==
    text``); ``label`` and ``predicate`` say which of the entity's labels matched (None for a
    linker that does not match labels, a model); ``linker`` names the linker."""

    start: int
    end: int
    entity: str
    text: str
    label: str | None = None
    predicate: str | None = None
    linker: str = "label"


@runtime_checkable
class ScopeLinker(Protocol):
    """A linker bound to one scope's graph: the mentions in one chunk."""

    def mentions(self, chunk: Chunk) -> list[Mention]: ...


@runtime_checkable
class Linker(Protocol):
    """Links text to the entities of a graph. ``for_scope`` reads what the linker needs from
    the scope's graph, once per run; an NER model or an extractor can implement it too, with
    the same provenance (:class:`Mention`)."""

    def for_scope(self, kg: KnowledgeGraph, scope: str) -> ScopeLinker: ...


def check_linker(linker: object) -> None:
    """Refuse, before anything is written, a ``linker`` that is none.

    Raises:
        InvalidArgumentTypeError: it has no ``for_scope(kg, scope)`` method.
    """
    if linker is not None and not isinstance(linker, Linker):
        raise InvalidArgumentTypeError(
            f"linker must be a Linker (LabelLinker(), or any object with a for_scope(kg, "
            f"scope) method), got {type(linker).__name__}")


def linker_warnings(bound: ScopeLinker, scope: str) -> list[str]:
    """Why ``bound``, a :class:`LabelMatcher`, links nothing in ``scope`` (it read no labels
    there: most often an ontology loaded into another scope), or leaves entities out (labels
    of blank nodes, which no link can point at); none for any other linker."""
    if not isinstance(bound, LabelMatcher):
        return []
    warnings = []
    if bound.blank_labels:
        warnings.append(
            f"{bound.blank_labels} label{'s' if bound.blank_labels > 1 else ''} in the graph "
            f"of scope {scope!r} {'are' if bound.blank_labels > 1 else 'is'} of blank nodes "
            "([ ... ] or _:x), which no link can point at, so chunks naming them link to "
            "nothing: give those entities IRIs")
    if not len(bound):
        settings = bound.settings
        where = "" if scope == DEFAULT_SCOPE else f" --scope {scope}"
        languages = ("" if settings.languages is None
                     else f" in the languages {', '.join(map(repr, settings.languages))}")
        warnings.append(
            f"the linker found no labels to link to in the graph of scope {scope!r} "
            f"({', '.join(settings.predicates)}{languages}, of at least "
            f"{settings.min_length} characters), so it links nothing there: labels are read "
            f"from the chunks' own scope; load your ontology into it (trails load FILE{where}, "
            f"or ctx.kg.load(FILE, scope={scope!r})), then run trails link")
    return warnings


def fold(text: str, *, case: bool = True, accents: bool = True) -> str:
    """``text`` as the matcher compares it: compatibility-decomposed (NFKD, so a precomposed
    "é" and "e" with a combining accent are the same), case folded, accents removed, every
    run of whitespace one space, invisible format characters (a soft hyphen) dropped (each
    character with the marks that follow it folded on its own, so offsets can be mapped
    back).

    >>> fold("Société  Générale\\n")
    'societe generale '
    """
    return _SPACE_RUN.sub(" ", "".join(
        _fold_cluster(cluster, case, accents) for _, cluster in _clusters(text)))


def _clusters(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, cluster)``: each character with the combining marks that follow it. A
    match never splits one, so "Cafe" is not found in "Cafe\\u0301" (café) nor a Hindi
    consonant without its vowel sign."""
    start = 0
    for offset in range(1, len(text) + 1):
        if offset == len(text) or not is_mark(text[offset]):
            yield start, text[start:offset]
            start = offset


def _fold_cluster(cluster: str, case: bool, accents: bool) -> str:
    if cluster.isascii():  # one character: marks are never ASCII
        return " " if cluster.isspace() else cluster.lower() if case else cluster
    folded = unicodedata.normalize("NFKD", cluster).translate(_TYPOGRAPHIC)
    if case:  # casefolding does not keep a normal form: decompose again after it
        folded = unicodedata.normalize("NFKD", folded.casefold())
        # "I" is the capital of both "i" and the Turkish dotless "ı", and "İ" of both "i"
        # (Turkish) and "i̇": all four are one letter, or "IŞIK" would not be "ışık".
        folded = folded.replace("i\u0307", "i").replace("ı", "i")
    return "".join(" " if c.isspace() else c for c in folded
                   if not (accents and unicodedata.combining(c)) and not _invisible(c))


# Typographic forms of ASCII punctuation a label is written with: a curly apostrophe
# ("McDonald’s") and a (non-breaking) hyphen ("Coca‑Cola") are the label's "'" and "-".
_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u2010": "-", "\u2011": "-"})


def _invisible(ch: str) -> bool:
    """A format character that is no part of the word it sits in: a soft hyphen ("Micro­soft"
    from HTML's &shy; or a PDF's hyphenation), a joiner, a direction mark. A zero-width space
    stays: it separates words."""
    return ch != "\u200b" and unicodedata.category(ch) == "Cf"


def _checked_iri(predicate: object) -> str:
    """A label predicate, checked as an absolute IRI before it reaches a query; a prefixed
    name of :data:`LABEL_PREFIXES` is expanded."""
    if isinstance(predicate, str):
        prefix, colon, local = predicate.partition(":")
        if colon and prefix in LABEL_PREFIXES and not local.startswith("//"):
            predicate = LABEL_PREFIXES[prefix] + local
    try:
        return ox.NamedNode(predicate).value  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"label predicate {predicate!r} is no absolute IRI ({exc}); "
                                   "give one such as http://www.w3.org/2000/01/rdf-schema#label"
                                   ) from None


@dataclass(frozen=True)
class _Label:
    entity: str
    label: str
    predicate: str


class LabelLinker:
    """Links a chunk to every entity of the scope's graph one of whose labels occurs in it.

    Args:
        predicates: the label predicates: IRIs, or prefixed names of the well-known
            prefixes (``rdfs:``, ``skos:``, ``schema:``, ``owl:``, ``foaf:``, ``dc:``,
            ``dcterms:``...); by default ``rdfs:label``, ``skos:prefLabel``,
            ``skos:altLabel`` and ``schema:name``.
        languages: the language tags a label may have (``"en"`` also takes ``"en-GB"``;
            ``""`` is a label without one); None: every label.
        case, accents: fold case and remove accents before matching (both by default).
        nested: also report a label found inside a longer one found at the same place
            ("America" in "Bank of America"); by default only the longest, leftmost match.
        min_length: labels shorter than this (folded, in characters) are ignored: a one-letter
            label would link every chunk.

    Matches fall on word boundaries (a label's first and last letters or digits are not
    next to another, unless one of the two is of a script written without spaces, such as
    Chinese or Thai), on many labels at once (Aho-Corasick, ``ahocorasick-rs``). The labels
    are read when the linker is bound to a scope: documents and chunks trails wrote are no
    entities (their ``schema:name`` is a title).
    """

    name = "label"

    def __init__(self, predicates: Iterable[str] = DEFAULT_LABEL_PREDICATES, *,
                 languages: Iterable[str] | None = None, case: bool = True,
                 accents: bool = True, nested: bool = False, min_length: int = 2) -> None:
        if isinstance(predicates, str):
            raise InvalidArgumentTypeError("LabelLinker(predicates=...) takes a list of "
                                           "predicate IRIs, not one string")
        self.predicates = tuple(_checked_iri(p) for p in predicates)
        if not self.predicates:
            raise InvalidArgumentError("LabelLinker(predicates=[]) reads no labels; name at "
                                       "least one label predicate (rdfs:label...)")
        self.languages = None if languages is None else tuple(
            lang.lower() for lang in ([languages] if isinstance(languages, str) else languages))
        self.case, self.accents, self.nested = case, accents, nested
        if not isinstance(min_length, int) or min_length < 1:
            raise InvalidArgumentError(f"LabelLinker(min_length={min_length!r}) must be an "
                                       "int >= 1")
        self.min_length = min_length

    def for_scope(self, kg: KnowledgeGraph, scope: str) -> LabelMatcher:
        """Read the labels of the scope's graph (one query) and build the matcher."""
        labels, blank = self._labels(kg, scope)
        bound = self.matcher(labels)
        bound.blank_labels = blank
        return bound

    def matcher(self, labels: Iterable[tuple[str, str, str]]) -> LabelMatcher:
        """A matcher over ``(entity IRI, label, predicate IRI)`` triples."""
        return LabelMatcher([_Label(*item) for item in labels], self)

    def _labels(self, kg: KnowledgeGraph, scope: str) -> tuple[list[tuple[str, str, str]], int]:
        """The labels of IRIs, and how many labels of blank nodes were left out."""
        predicates = ", ".join(f"<{p}>" for p in self.predicates)
        rows = select(kg, "SELECT ?e ?label ?p (LANG(?label) AS ?lang) (isBlank(?e) AS ?blank) "
                          f"WHERE {{ ?e ?p ?label FILTER(?p IN ({predicates}) && "
                          "isLiteral(?label)) FILTER NOT EXISTS { ?e a ?own FILTER(?own IN "
                          "(trails:Document, trails:Chunk, trails:Mention)) } }", scopes=[scope])
        kept = [row for row in rows if self._language_kept(str(row["lang"] or ""))]
        blank = [row for row in kept if row["blank"] in (True, "true")]
        return [(str(row["e"]), str(row["label"]), str(row["p"])) for row in kept
                if row["blank"] not in (True, "true")], len(blank)

    def _language_kept(self, lang: str) -> bool:
        if self.languages is None:
            return True
        lang = lang.lower()
        return lang in self.languages or lang.split("-")[0] in self.languages


class LabelMatcher:
    """A :class:`LabelLinker` bound to a set of labels: finds them in chunks."""

    def __init__(self, labels: Sequence[_Label], settings: LabelLinker) -> None:
        self.settings = settings
        self.blank_labels = 0  # labels of blank nodes read and left out (for_scope)
        by_pattern: dict[str, list[_Label]] = {}
        for label in labels:
            pattern = fold(label.label, case=settings.case, accents=settings.accents).strip()
            if len(pattern.strip()) >= settings.min_length:
                by_pattern.setdefault(pattern, []).append(label)
        self.patterns = list(by_pattern)
        self.labels = [sorted(set(found), key=lambda x: (x.entity, x.predicate, x.label))
                       for found in by_pattern.values()]
        self._automaton: Any = None
        if self.patterns:
            ac = require("ahocorasick_rs", "linking chunks to entities by their labels")
            self._automaton = ac.AhoCorasick(self.patterns)

    def __len__(self) -> int:
        """How many distinct folded labels it looks for."""
        return len(self.patterns)

    def mentions(self, chunk: Chunk) -> list[Mention]:
        """The chunk's mentions, ordered by offset, with document offsets."""
        return [Mention(chunk.start + start, chunk.start + end, label.entity,
                        chunk.text[start:end], label.label, label.predicate,
                        self.settings.name)
                for start, end, index in self.spans(chunk.text)
                for label in self.labels[index]]

    def spans(self, text: str) -> list[tuple[int, int, int]]:
        """``(start, end, pattern index)`` of every label found in ``text`` (offsets in
        ``text``), on word boundaries; only the leftmost longest of overlapping ones unless
        ``nested``."""
        if self._automaton is None or not text:
            return []
        folded, origin = self._folded(text)
        matches = self._automaton.find_matches_as_indexes(folded, overlapping=True)
        if origin is _same:  # ASCII: offsets kept, and the text's word boundaries found at once
            bounds = {m.start() for m in _BOUNDARY.finditer(folded)}
            found = [(start, end, index) for index, start, end in matches
                     if (start in bounds or not is_word(folded[start]))
                     and (end in bounds or not is_word(folded[end - 1]))]
        else:
            found = [(origin(start), origin(end), index) for index, start, end in matches
                     if self._bounded(folded, start, end, origin, text)]
        return found if self.settings.nested else _leftmost_longest(found)

    def _folded(self, text: str) -> tuple[str, Any]:
        """The folded text, and a map from its offsets to the text's (a folded character's
        offset is that of the character it came from; past the end is the text's length)."""
        settings = self.settings
        if text.isascii():  # folding keeps every offset, unless whitespace runs are cut
            folded = text.translate(_ASCII_SPACES)
            folded = folded.lower() if settings.case else folded
            return (folded, _same) if "  " not in folded else _collapsed(folded)
        parts: list[str] = []
        starts: list[int] = []
        for offset, cluster in _clusters(text):
            part = _fold_cluster(cluster, settings.case, settings.accents)
            if part == " " and parts and parts[-1].endswith(" "):
                continue  # a run of whitespace is one space (a line wrapped, indented)
            parts.append(part)
            starts.extend([offset] * len(part))
        starts.append(len(text))
        return "".join(parts), starts.__getitem__

    @staticmethod
    def _bounded(folded: str, start: int, end: int, origin: Any, text: str) -> bool:
        """A match on word boundaries (or followed by a Korean particle), of whole
        characters of the text."""
        if start > 0 and joined(folded[start - 1], folded[start]):
            return False
        if end < len(folded) and joined(folded[end - 1], folded[end]) and not (
                particle_follows(text, origin(end))):
            return False
        # A character that folds to several ("ß" -> "ss"), or with its marks, is matched whole
        # or not at all.
        return (start == 0 or origin(start - 1) != origin(start)) and (
            end == len(folded) or origin(end - 1) != origin(end))


# Where a word character meets a non-word one (or the text's end): in ASCII, \w is exactly
# _is_word's letters, digits and "_". A match is on word boundaries when each of its ends is
# one of these, or is not inside a word at all (a label that starts or ends with punctuation).
_BOUNDARY = re.compile(r"\b")
_ASCII_SPACES = str.maketrans("\t\n\v\f\r\x1c\x1d\x1e\x1f", " " * 9)


_SPACE_RUN = re.compile(" {2,}")


def _same(offset: int) -> int:
    return offset


def _collapsed(folded: str) -> tuple[str, Any]:
    """``folded`` with each run of spaces one space, and the map from its offsets back."""
    starts, origins, pieces, at, kept = [], [], [], 0, 0
    for run in _SPACE_RUN.finditer(folded):
        pieces.append(folded[kept : run.start() + 1])
        starts.append(at)
        origins.append(kept)
        at, kept = at + run.start() + 1 - kept, run.end()
    pieces.append(folded[kept:])
    starts.append(at)
    origins.append(kept)
    collapsed = "".join(pieces)

    def origin(offset: int) -> int:
        if offset >= len(collapsed):
            return len(folded)
        piece = bisect.bisect_right(starts, offset) - 1
        return origins[piece] + offset - starts[piece]

    return collapsed, origin


def _leftmost_longest(found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Of overlapping matches, the leftmost, then the longest (a span is one pattern: the
    patterns are distinct folded labels)."""
    kept: list[tuple[int, int, int]] = []
    end = -1
    for start, stop, index in sorted(found, key=lambda m: (m[0], -m[1])):
        if start >= end:
            kept.append((start, stop, index))
            end = stop
    return kept
