"""Why a filter selected nothing, when a binding's type can never compare with the values.

``FILTER(?signed >= ?since)`` with ``since`` bound to a ``datetime.date`` selects nothing when
the graph's ``?signed`` values are ``xsd:dateTime``: SPARQL compares a date with a date and a
dateTime with a dateTime, and any other pair is an error, which a FILTER reads as false. So
does a number against strings (``"4983"`` > 5000), or a string against numbers. The caller
sees "0 hits" and would read it as an answer.

Only for a filter that selected nothing, :func:`mismatch_notes` asks the graph what the
compared variable holds: the first values of the predicates the filter's patterns give it
(``?doc schema:dateCreated ?d``: ``schema:dateCreated``'s), read by index in the searched
scopes, so the probe costs a lookup whatever the filter's joins cost. When none of them is of
a type the binding compares with, the answer gets a note naming both types. The probe errs toward silence: a
query it cannot rewrite, a comparison a FILTER negates, chooses on or weighs against another
test (``!``, ``IF``, ``||``), or a value of a comparable type among those it reads, gives no
note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyoxigraph as ox

from trails.kg.base import KnowledgeGraph, select
from trails.kg.bindings import check_bindings
from trails.kg.sparql import code_only
from trails.kg.sparql_text import _OPAQUE, STRING, iris_only
from trails.kg.terms import XSD
from trails.kg.variables import _closing
from trails.retrieval.graph_clauses import required

__all__ = ["mismatch_notes"]

# ?a <op> b, either way round, a whole test of its FILTER (no arithmetic on either side):
# b a variable (a binding) or a constant written out, a literal, an IRI or a cast of a string.
_PNAME = r"(?:[A-Za-z][\w.-]*:[\w%.-]*|:[\w%.-]+)"
_CONSTANT = (rf"(?:{STRING})(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^\s*(?:<[^<>\s]*>|{_PNAME}))?"
             r"|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|\b(?:true|false)\b"
             rf"|(?:<[^<>\s]*>|{_PNAME})(?:\s*\(\s*(?:{STRING})\s*\))?")
_COMPARISON = re.compile(rf"([?$]\w+|{_CONSTANT})\s*(<=|>=|!=|=|<|>)\s*([?$]\w+|{_CONSTANT})"
                         r"(?=\s*(?:\)|&&|$))")
_LITERAL = re.compile(rf"(?:{STRING})(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^\s*(?:<[^<>\s]*>|{_PNAME}))?")
# A predicate, then a literal (a string, typed or tagged) as its object.
_PATTERN_LITERAL = re.compile(rf"(?<![\w?$:.%-])(<[^<>\s]*>|{_PNAME})\s+([\"'])")
_WHOLE_TEST = re.compile(r"(?:\(|&&)\s*$")
_FILTER = re.compile(r"\bFILTER\s*\(", re.IGNORECASE)
_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)
# What makes a FILTER hold though a comparison in it fails.
_NOT_SURE = re.compile(r"!(?!=)|\|\||\b(?:NOT|IF|COALESCE)\b", re.IGNORECASE)
_VALUES_READ = 50  # the probe's values: enough to see a column's type, cheap on any graph

_NUMBERS = frozenset(XSD + t for t in (
    "integer", "decimal", "float", "double", "long", "int", "short", "byte",
    "nonNegativeInteger", "nonPositiveInteger", "positiveInteger", "negativeInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte"))
_LANG = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
# Types SPARQL compares with one another (Oxigraph): each under the one it derives from.
_FAMILIES = {XSD + "dayTimeDuration": XSD + "duration",
             XSD + "yearMonthDuration": XSD + "duration",
             XSD + "dateTimeStamp": XSD + "dateTime"}
_NAMES = {XSD + "string": "string", XSD + "date": "xsd:date", XSD + "dateTime": "xsd:dateTime",
          XSD + "duration": "xsd:duration",
          XSD + "boolean": "boolean", XSD + "time": "xsd:time", "number": "number", "iri": "IRI",
          _LANG: "language-tagged string"}
_HINTS = {XSD + "dateTime": "bind a datetime.datetime (--bind NAME=2024-01-01T00:00:00Z)",
          XSD + "date": "bind a datetime.date (--bind NAME=2024-01-01)",
          XSD + "string": "bind a string (--bind 'NAME=\"...\"')",
          "number": "bind a number (--bind NAME=42)"}


def mismatch_notes(kg: KnowledgeGraph, sparql_filter: str, bindings: Mapping[str, Any] | None,
                   scopes: Sequence[str] | None) -> list[str]:
    """A note for each comparison of a filter variable with a binding or a constant written
    out that no value the variable takes (of its first few) can satisfy, by type; [] when
    there is none."""
    terms = check_bindings(bindings) if bindings else {}
    code = code_only(sparql_filter)
    notes = []
    for variable, other in _compared(sparql_filter, code, terms):
        try:
            probe = _probe(sparql_filter, code, variable)
            values = [row.get(variable) for row in select(kg, probe, scopes=scopes).raw]
            term = (terms[other[1:]] if other[0] in "?$" else
                    _constant(kg, probe[:probe.rindex("\nSELECT")], other, scopes))
        except Exception:  # noqa: BLE001, S112 - a probe that cannot run says nothing
            continue
        found = {_kind(v) for v in values if v is not None}
        bound = _kind(term)
        kinds = {k for k in found if k is not None}
        if not kinds or bound is None or bound in kinds or len(kinds) < len(found):
            continue
        shown = " and ".join(sorted(_name(k) for k in kinds))
        kind = min(kinds) if len(kinds) == 1 else ""
        said = (f"nothing matched, and nothing could: ?{variable} holds {shown} values (the "
                f"first {len(values)} read")
        if other[0] in "?$":
            hint = _HINTS.get(kind, "bind a value of the type the graph holds")
            notes.append(f"{said}), and {other} is bound to {_a(_name(bound))}, which SPARQL "
                         f"never compares with {shown} values; {hint.replace('NAME', other[1:])}")
            continue
        sample = next(v for v in values if v is not None)
        instead = _instead(term, kind, sample)
        hint = (f"; or write a variable there and {_HINTS[kind].replace('NAME', 'x')}"
                if kind in _HINTS else "")
        notes.append(f"{said}, such as {_written(sample)}), and the filter compares it with "
                     f"{other.strip()}, {_a(_name(bound))}, which SPARQL never compares with "
                     f"{shown} values; write "
                     + (f"{instead} in its place" if instead else
                        f"a constant of the type ?{variable} holds") + hint)
    return notes + _pattern_notes(kg, sparql_filter, code, scopes)


def _pattern_notes(kg: KnowledgeGraph, text: str, code: str,
                   scopes: Sequence[str] | None) -> list[str]:
    """A note for each literal a required triple pattern gives a predicate (``?doc
    meta:pages "12"``) of a type none of the predicate's first values has: a pattern matches
    the very term, so ``"12"`` never matches ``12``, nor ``"EU"@en`` ``"EU"``."""
    body = _SELECT.search(code)
    if body is None:
        return []
    opaque = {m.start() for m in _OPAQUE.finditer(text)}
    notes = []
    for match in _PATTERN_LITERAL.finditer(text, body.start()):
        predicate, at = match.group(1), match.start(2)
        if (at not in opaque or not _read_as_code(predicate, match.start(), code, opaque)
                or not required(code, body.start(), match.start())):
            continue
        literal = _LITERAL.match(text, at)
        if literal is None or not re.match(r"\s*[.;,}]", text[literal.end():]):
            continue
        try:
            prologue = text[:body.start()]
            values = [row.get("v") for row in select(
                kg, f"{prologue}\nSELECT ?v WHERE {{ ?s {predicate} ?v }} LIMIT {_VALUES_READ}",
                scopes=scopes).raw]
            term = _constant(kg, prologue, literal.group(), scopes)
        except Exception:  # noqa: BLE001, S112 - a probe that cannot run says nothing
            continue
        found = {_kind(v) for v in values if v is not None}
        kinds, bound = {k for k in found if k is not None}, _kind(term)
        if not kinds or bound is None or bound in kinds or len(kinds) < len(found):
            continue
        shown = " and ".join(sorted(_name(k) for k in kinds))
        sample = next(v for v in values if v is not None)
        instead = _instead(term, min(kinds) if len(kinds) == 1 else "", sample)
        notes.append(
            f"nothing matched, and nothing could: {predicate} holds {shown} values (the first "
            f"{len(values)} read, such as {_written(sample)}), and the pattern asks for "
            f"{literal.group()}, {_a(_name(bound))}, which is never one of them; write "
            + (f"{instead} in its place" if instead else f"a {shown} value in its place"))
    return list(dict.fromkeys(notes))


def _compared(text: str, code: str, terms: Mapping[str, object]) -> list[tuple[str, str]]:
    """(variable, other) pairs the filter compares, ``other`` a binding (``?name``) or a
    constant as written, in a FILTER that holds only when the comparison does, with an
    operator that fails on different types (``!=`` is true of an IRI and a literal: not
    one). A FILTER that negates, chooses (``IF``, ``COALESCE``) or weighs the comparison
    against another test (``||``) could hold while the comparison fails, and one in an
    OPTIONAL, MINUS, EXISTS or UNION group need not hold for the query to match: their
    comparisons are not read."""
    select_at = _SELECT.search(code)
    start = 0 if select_at is None else select_at.start()
    opaque = {m.start() for m in _OPAQUE.finditer(text)}  # where strings and IRIs begin
    pairs = []
    for found in _FILTER.finditer(code, start):
        close = _closing(code, found.end() - 1)
        if _NOT_SURE.search(code, found.end(), close) or not required(code, start, found.start()):
            continue
        for match in _COMPARISON.finditer(text, found.end(), close):
            left, operator, right = match.groups()
            sides = [(left, match.start(1)), (right, match.start(3))]
            if (operator == "!=" or code[match.start(2)] != operator[0]
                    or not _WHOLE_TEST.search(code, found.end() - 1, match.start())
                    or not all(_read_as_code(side, at, code, opaque) for side, at in sides)):
                continue
            variables = [side[1:] for side, _ in sides if side[0] in "?$"]
            unbound = [v for v in variables if v not in terms]
            if len(variables) == 2 and len(unbound) == 1:
                pairs.append((unbound[0], "?" + next(v for v in variables if v in terms)))
            elif len(variables) == 1 and unbound:
                pairs.append((unbound[0], next(s for s, _ in sides if s[0] not in "?$")))
    return list(dict.fromkeys(pairs))


def _read_as_code(side: str, at: int, code: str, opaque: set[int]) -> bool:
    """Whether a side read in the text is one the parser reads (not inside a string)."""
    return at in opaque if side[0] in "\"'<" else code[at] == side[0]


def _constant(kg: KnowledgeGraph, prologue: str, written: str,
              scopes: Sequence[str] | None) -> object:
    """The term a constant written in the filter stands for (None: one that fails)."""
    rows = select(kg, f"{prologue}\nSELECT ?t WHERE {{ BIND(({written}) AS ?t) }}",
                  scopes=scopes)
    return rows.raw[0].get("t")


def _probe(text: str, code: str, variable: str) -> str:
    """A query of ``?variable``'s first values: those of the predicates the filter's patterns
    give it as an object, read by index whatever the rest of the filter (a join there could
    cost what the filter did). Raises ValueError when no pattern names a predicate for it."""
    body = _SELECT.search(code)
    if body is None:
        raise ValueError("no SELECT")
    iris = iris_only(text)
    before = re.compile(rf"(?<![\w?$:.%-])(<[^<>\s]*>|[A-Za-z][\w.-]*:[\w%.-]*|:[\w%.-]+|a)"
                        rf"\s+[?$]{re.escape(variable)}\b")
    predicates = list(dict.fromkeys(m.group(1) for m in before.finditer(iris, body.start())))
    if not predicates:
        raise ValueError(f"no pattern gives ?{variable} a predicate")
    union = " UNION ".join(f"{{ ?s {p} ?{variable} }}" for p in predicates)
    return f"{text[:body.start()]}\nSELECT ?{variable} WHERE {{ {union} }} LIMIT {_VALUES_READ}"


def _kind(term: object) -> str | None:
    """What a term compares as: "number", a literal's datatype, "iri"; None for others."""
    if isinstance(term, ox.NamedNode):
        return "iri"
    if not isinstance(term, ox.Literal):
        return None
    datatype = term.datatype.value
    return "number" if datatype in _NUMBERS else _FAMILIES.get(datatype, datatype)


def _a(name: str) -> str:
    return f"{'an' if name[0] in 'aeiouxAEIOU' else 'a'} {name}"


def _name(kind: str) -> str:
    return _NAMES.get(kind, f"<{kind}>")


_DAY = re.compile(r"-?\d{4,}-\d{2}-\d{2}")
_TIME = re.compile(r"T\d{2}:\d{2}:\d{2}(?:\.\d+)?")
_ZONE = re.compile(r"(?:Z|[+-]\d{2}:\d{2})$")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _instead(term: object, kind: str, sample: object) -> str | None:
    """The constant of type ``kind`` that ``term`` was meant to be, as SPARQL text (like
    ``sample``, a value of that type); None when there is no sure one."""
    lexical = term.value if isinstance(term, (ox.Literal, ox.NamedNode)) else ""
    day = _DAY.match(lexical)
    if kind == XSD + "date" and day:
        return f'"{day.group()}"^^xsd:date'
    if kind == XSD + "dateTime" and day and isinstance(sample, ox.Literal):
        time = _TIME.match(lexical, day.end())
        zone = _ZONE.search(sample.value)
        return (f'"{day.group()}{time.group() if time else "T00:00:00"}'
                f'{zone.group() if zone else ""}"^^xsd:dateTime')
    if kind == "number" and _NUMBER.fullmatch(lexical):
        return lexical
    if not isinstance(term, ox.Literal) or not re.fullmatch(r"[^\"\\\n\r]*", lexical):
        return None
    if kind == XSD + "string":
        return f'"{lexical}"'
    if kind == _LANG and isinstance(sample, ox.Literal) and sample.language:
        return f'"{lexical}"@{sample.language}'
    if kind == "iri" and re.fullmatch(r"[A-Za-z][\w+.-]*:[^<>\s]+", lexical):
        return f"<{lexical}>"
    return None


def _written(term: object) -> str:
    """A value as SPARQL text, ``xsd:`` for XML Schema datatypes, numbers bare."""
    if isinstance(term, ox.Literal):
        datatype = term.datatype.value
        if _kind(term) == "number":
            return term.value
        if datatype.startswith(XSD) and datatype != XSD + "string":
            return f'"{term.value}"^^xsd:{datatype[len(XSD):]}'
    return str(term)
