"""Why a filter selected nothing, when a binding's type can never compare with the values.

``FILTER(?signed >= ?since)`` with ``since`` bound to a ``datetime.date`` selects nothing when
the graph's ``?signed`` values are ``xsd:dateTime``: SPARQL compares a date with a date and a
dateTime with a dateTime, and any other pair is an error, which a FILTER reads as false. So
does a number against strings (``"4983"`` > 5000), or a string against numbers. ``NOW()`` is
an ``xsd:dateTime``: ``?d < NOW()`` over dates selects nothing. The caller
sees "0 hits" and would read it as an answer.

Only for a filter that selected nothing, :func:`mismatch_notes` asks the graph what the
compared variable holds: the first values of the predicates the filter's patterns give it
(``?doc schema:dateCreated ?d``: ``schema:dateCreated``'s), read by index in the searched
scopes, so the probe costs a lookup whatever the filter's joins cost. When none of them is of
a type the binding compares with, the answer gets a note naming both types. An ``?x IN (...)``
list none of whose items the values could equal (an ``=`` or ``IN`` of a language-tagged
string whose tag none of the values has: ``"EU"@de`` is never equal to ``"EU"@en``), and a
term a required triple pattern gives a
predicate whose first values are never that term's kind (``?doc meta:code 4983`` over
``"4983"``, ``12.0`` over integers, ``ex:EU`` over ``"EU"``; each object of an object list),
get one too, with the term to write. The probe errs toward silence: a
query it cannot rewrite, a comparison a FILTER negates, chooses on or weighs against another
test (``!``, ``IF``, ``||``), or a value of a comparable type among those it reads, gives no
note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyoxigraph as ox

from trails.errors import SparqlError
from trails.kg.base import KnowledgeGraph, select
from trails.kg.bindings import check_bindings
from trails.kg.sparql import code_only
from trails.kg.sparql_text import _OPAQUE, STRING, iris_only
from trails.kg.terms import XSD
from trails.kg.variables import _closing, _expression_spans
from trails.retrieval.graph_clauses import required

__all__ = ["mismatch_notes"]

# ?a <op> b, either way round, a whole test of its FILTER (no arithmetic on either side):
# b a variable (a binding) or a constant written out, a literal, an IRI or a cast of a string.
_PNAME = r"(?:[A-Za-z][\w.-]*:[\w%.-]*|:[\w%.-]+)"
_CONSTANT = (rf"(?:{STRING})(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^\s*(?:<[^<>\s]*>|{_PNAME}))?"
             r"|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|\b(?:true|false)\b"
             rf"|(?:<[^<>\s]*>|{_PNAME})(?:\s*\(\s*(?:{STRING})\s*\))?|(?i:\bNOW)\s*\(\s*\)")
_COMPARISON = re.compile(rf"([?$]\w+|{_CONSTANT})\s*(<=|>=|!=|=|<|>)\s*([?$]\w+|{_CONSTANT})"
                         r"(?=\s*(?:\)|&&|$))")
# ?a IN (b, c, ...), a whole test of its FILTER: each of b, c a constant or a binding.
_ITEM = re.compile(rf"\s*([?$]\w+|{_CONSTANT})\s*(?:,|$)")
_IN = re.compile(rf"([?$]\w+)\s+IN\s*\(((?:\s*(?:[?$]\w+|{_CONSTANT})\s*,)*"
                 rf"\s*(?:[?$]\w+|{_CONSTANT})\s*)\)(?=\s*(?:\)|&&|$))", re.IGNORECASE)
# A predicate (not a step of an alternative or inverse path), then its object: a constant (a
# string, typed or tagged, a number, a boolean, an IRI) or a variable, the end of the pattern.
_OBJECT = (
    rf"((?:{STRING})(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*"
    rf"|\^\^\s*(?:<[^<>\s]*>|{_PNAME}))?|[+-]?(?:\d*\.\d+(?:[eE][+-]?\d+)?|\d+\.\d*[eE][+-]?\d+"
    r"|\d+(?:[eE][+-]?\d+)?)|\b(?:true|false)\b|<[^<>\s]*>|[A-Za-z][\w.-]*:(?:[\w%-]|\.(?=[\w%-]))*"
    r"|[?$]\w+)(?=\s*[.;,}])")
_PATTERN_OBJECT = re.compile(rf"(?<![\w?$:.%|^!-])(<[^<>\s]*>|{_PNAME})\s+{_OBJECT}")
# Each further object of an object list (``?doc meta:j "EU"@de, "UK"@de``).
_NEXT_OBJECT = re.compile(rf"\s*,\s*{_OBJECT}")
_VALUES = re.compile(r"\bVALUES\b[^{}]*\{", re.IGNORECASE)
_WHOLE_TEST = re.compile(r"(?:\(|&&)\s*$")
_FILTER = re.compile(r"\bFILTER\s*\(", re.IGNORECASE)
_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)
# What makes a FILTER hold though a comparison in it fails.
_NOT_SURE = re.compile(r"!(?!=)|\|\||\b(?:NOT|IF|COALESCE)\b", re.IGNORECASE)
_NOW = re.compile(r"NOW\s*\(\s*\)", re.IGNORECASE)
_VALUES_READ = 50  # the probe's values: enough to see a column's type, cheap on any graph

_NOT_INTEGERS = frozenset(XSD + t for t in ("decimal", "float", "double"))
_NUMBERS = frozenset(XSD + t for t in (
    "integer", "decimal", "float", "double", "long", "int", "short", "byte",
    "nonNegativeInteger", "nonPositiveInteger", "positiveInteger", "negativeInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte"))
_LANG = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
# Types SPARQL compares with one another (Oxigraph): each under the one it derives from.
_FAMILIES = {XSD + "dayTimeDuration": XSD + "duration",
             XSD + "yearMonthDuration": XSD + "duration",
             XSD + "dateTimeStamp": XSD + "dateTime"}
_NAMES = {**{t: "xsd:" + t[len(XSD):] for t in _NOT_INTEGERS | {XSD + "integer"}},
          XSD + "string": "string", XSD + "date": "xsd:date", XSD + "dateTime": "xsd:dateTime",
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
    for variable, others, equal in _compared(sparql_filter, code, terms):
        try:
            probe = _probe(sparql_filter, code, variable)
            values = [row.get(variable) for row in select(kg, probe, scopes=scopes).raw]
            written = [terms[o[1:]] if o[0] in "?$" else
                       _constant(kg, probe[:probe.rindex("\nSELECT")], o, scopes) for o in others]
        except Exception:  # noqa: BLE001, S112 - a probe that cannot run says nothing
            continue
        # `=` and IN hold of a language-tagged string only with the same tag: told apart by it.
        tagged = equal and any(_tagged(term) for term in written)
        kind_of = _term_kind_tagged if tagged else _kind
        found = {kind_of(v) for v in values if v is not None}
        bounds = [kind_of(term) for term in written]
        kinds = {k for k in found if k is not None}
        if not kinds or None in bounds or kinds & set(bounds) or len(kinds) < len(found):
            continue
        shown = " and ".join(sorted(_name(k) for k in kinds))
        kind = min(kinds) if len(kinds) == 1 else ""
        said = (f"nothing matched, and nothing could: ?{variable} holds {shown} values (the "
                f"first {len(values)} read")
        sample = next(v for v in values if v is not None)
        # NOW() is a dateTime: today's date, as the filter runs, is xsd:date(NOW()).
        insteads = [_instead(term, kind, sample) if not _NOW.fullmatch(o.strip()) else
                    "xsd:date(NOW())" if kind == XSD + "date" else None
                    for o, term in zip(others, written, strict=True)]
        other, term, bound = others[0], written[0], str(bounds[0])
        if len(others) > 1:
            notes.append(f"{said}, such as {_written(sample)}), and the filter asks whether it "
                         f"is IN ({', '.join(o.strip() for o in others)}), of which SPARQL finds "
                         f"none equal to {shown} values; write "
                         + (f"({', '.join(map(str, insteads))}) in its place"
                            if None not in insteads else f"constants of the type ?{variable} holds"))
        elif other[0] in "?$":
            hint = _HINTS.get(kind, "bind a value of the type the graph holds")
            if kind.startswith("@") and isinstance(term, ox.Literal):
                hint = f"bind pyoxigraph.Literal({term.value!r}, language={kind[1:]!r})"
            if kind == "iri" and isinstance(term, ox.Literal):
                hint = f"bind trails.kg.IRI({term.value!r}) (--bind NAME=<{term.value}>)"
            notes.append(f"{said}), and {other} is bound to {_a(_name(bound))}, which SPARQL "
                         f"never compares with {shown} values; {hint.replace('NAME', other[1:])}")
        else:
            hint = (f"; or write a variable there and {_HINTS[kind].replace('NAME', 'x')}"
                    if kind in _HINTS else "")
            notes.append(f"{said}, such as {_written(sample)}), and the filter compares it "
                         f"with {other.strip()}, {_a(_name(bound))}, which SPARQL never compares "
                         f"with {shown} values; write "
                         + (f"{insteads[0]} in its place" if insteads[0] else
                            f"a constant of the type ?{variable} holds") + hint)
    try:
        return notes + _pattern_notes(kg, sparql_filter, code, terms, scopes)
    except Exception:  # noqa: BLE001 - a probe that cannot run says nothing
        return notes


def _pattern_notes(kg: KnowledgeGraph, text: str, code: str, terms: Mapping[str, object],
                   scopes: Sequence[str] | None) -> list[str]:
    """A note for each term a required triple pattern gives a predicate (``?doc meta:pages
    "12"``, ``?doc meta:code 4983``, ``?doc meta:topic ?t`` with ``t`` bound) that none of the
    predicate's first values could be: a pattern matches the very term, so ``"12"`` never
    matches ``12``, ``12.0`` never ``12``, ``"EU"@de`` never ``"EU"@en``, ``ex:EU`` never
    ``"EU"`` (Oxigraph stores an integer of any xsd type as one: ``"12"^^xsd:int`` matches)."""
    body = _SELECT.search(code)
    if body is None:
        return []
    opaque = {m.start() for m in _OPAQUE.finditer(text)}
    spans = [*_expression_spans(code), *((m.start(), _closing(code, m.end() - 1, "{", "}"))
                                         for m in _VALUES.finditer(code, body.start()))]
    prologue, notes = text[:body.start()], []
    for match, written, at in _objects(text, body.start()):
        predicate = match.group(1)
        if (not _read_as_code(predicate, match.start(1), code, opaque)
                or not _read_as_code(written, at, code, opaque)
                or any(b <= match.start() < e for b, e in spans)
                or (written[0] in "?$" and written[1:] not in terms)
                or not required(code, body.start(), match.start())):
            continue
        try:
            values = [row.get("v") for row in select(
                kg, f"{prologue}\nSELECT ?v WHERE {{ ?s {predicate} ?v }} LIMIT {_VALUES_READ}",
                scopes=scopes).raw]
            term = (terms[written[1:]] if written[0] in "?$" else
                    _constant(kg, prologue, written, scopes))
        except Exception:  # noqa: BLE001, S112 - a probe that cannot run says nothing
            continue
        found = {_term_kind(v) for v in values if v is not None}
        kinds, bound = {k for k in found if k is not None}, _term_kind(term)
        if not kinds or bound is None or bound in kinds or len(kinds) < len(found):
            continue
        shown = " and ".join(sorted(_name(k) for k in kinds))
        sample = next(v for v in values if v is not None)
        instead = _spelled_alike(kg, prologue, predicate, term, values, scopes) or _instead(
            term, min(kinds) if len(kinds) == 1 else "", sample)
        asked = (f"{written} bound to {_a(_name(bound))}" if written[0] in "?$" else
                 f"{written}, {_a(_name(bound))}")
        notes.append(
            f"nothing matched, and nothing could: {predicate} holds {shown} values (the first "
            f"{len(values)} read, such as {_written(sample)}), and the pattern asks for "
            f"{asked}, which is never one of them; "
            + (f"bind {_bound(instead)} to {written[1:]}" if written[0] in "?$" and instead
               else "write " + (instead or _a(f"{shown} value")) + " in its place"))
    return list(dict.fromkeys(notes))


def _objects(text: str, start: int) -> list[tuple[re.Match[str], str, int]]:
    """Each object a predicate is given after ``start``: (the predicate's match, the object
    as written, where it is), every object of an object list (``meta:j "EU"@de, "UK"@de``)."""
    found = []
    for match in _PATTERN_OBJECT.finditer(text, start):
        found.append((match, match.group(2), match.start(2)))
        more = _NEXT_OBJECT.match(text, match.end())
        while more is not None:
            found.append((match, more.group(1), more.start(1)))
            more = _NEXT_OBJECT.match(text, more.end())
    return found


def _tagged(term: object) -> bool:
    return isinstance(term, ox.Literal) and bool(term.language)


def _term_kind_tagged(term: object) -> str | None:
    """What ``=`` finds a term equal to: its kind, a language-tagged string by its tag."""
    return "@" + term.language.lower() if _tagged(term) else _kind(term)  # type: ignore[attr-defined]


def _term_kind(term: object) -> str | None:
    """What a pattern matches a term as: its kind, integers apart from other numbers (as
    Oxigraph stores them: one for every integer type), and a language-tagged string by tag."""
    if isinstance(term, ox.Literal) and term.language:
        return "@" + term.language.lower()
    kind = _kind(term)
    if kind == "number" and isinstance(term, ox.Literal):
        datatype = term.datatype.value
        return datatype if datatype in _NOT_INTEGERS else XSD + "integer"
    return kind


def _spelled_alike(kg: KnowledgeGraph, prologue: str, predicate: str, term: object,
                   values: Sequence[object], scopes: Sequence[str] | None) -> str | None:
    """The term the predicate holds that ``term`` spells (an IRI whose local name is the
    string, the string an IRI's local name is, a number of equal value), by the values read or
    by an index lookup; None when there is none."""
    spelled = _local(term)
    for value in values:
        if (spelled is not None and _local(value) == spelled) or (_kind(value) == _kind(term) == "number" and _equal(
                value, term)):
            return _written(value)
    sample = next((v for v in values if isinstance(v, ox.NamedNode)), None)
    try:  # terms made by pyoxigraph are valid SPARQL: a string no IRI can hold is no guess
        guesses = ([str(ox.Literal(spelled or ""))] if isinstance(term, ox.NamedNode) else
                   [str(ox.NamedNode(_split(sample.value)[0] + (spelled or "")))]
                   if sample is not None and spelled else [])
    except ValueError:
        return None
    for guess in guesses:
        try:
            if kg.query(f"{prologue}\nASK {{ ?s {predicate} {guess} }}", scopes=scopes) is True:
                return guess
        except SparqlError:  # a note is never worth the answer it explains
            return None
    return None


def _local(term: object) -> str | None:
    if isinstance(term, ox.NamedNode):
        return _split(term.value)[1] or None
    return term.value if isinstance(term, ox.Literal) and _kind(term) != "number" else None


def _split(iri: str) -> tuple[str, str]:
    cut = max(iri.rfind("#"), iri.rfind("/"), iri.rfind(":")) + 1
    return iri[:cut], iri[cut:]


def _equal(a: object, b: object) -> bool:
    try:
        return Decimal(str(getattr(a, "value", ""))) == Decimal(str(getattr(b, "value", "")))
    except ArithmeticError:
        return False


def _bound(written: str) -> str:
    """A term as SPARQL text, as the Python value to bind."""
    if written.startswith("<"):
        return f"trails.kg.IRI({written[1:-1]!r})"
    if written.startswith('"') and written.endswith('"'):
        return f"the string {written}"
    return written


def _compared(text: str, code: str,
              terms: Mapping[str, object]) -> list[tuple[str, tuple[str, ...], bool]]:
    """(variable, others) pairs the filter compares, ``others`` a binding (``?name``) or a
    constant as written, or those of an ``?x IN (...)`` list, in a FILTER that holds only when the comparison does, with an
    operator that fails on different types (``!=`` is true of an IRI and a literal: not
    one). A FILTER that negates, chooses (``IF``, ``COALESCE``) or weighs the comparison
    against another test (``||``) could hold while the comparison fails, and one in an
    OPTIONAL, MINUS, EXISTS or UNION group need not hold for the query to match: their
    comparisons are not read."""
    select_at = _SELECT.search(code)
    start = 0 if select_at is None else select_at.start()
    opaque = {m.start() for m in _OPAQUE.finditer(text)}  # where strings and IRIs begin
    pairs: list[tuple[str, tuple[str, ...], bool]] = []
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
                pairs.append((unbound[0], ("?" + next(v for v in variables if v in terms),),
                              operator == "="))
            elif len(variables) == 1 and unbound:
                pairs.append((unbound[0], (next(s for s, _ in sides if s[0] not in "?$"),),
                              operator == "="))
        for match in _IN.finditer(text, found.end(), close):
            items = list(_ITEM.finditer(text, match.start(2), match.end(2)))
            if (match.group(1)[1:] not in terms and _WHOLE_TEST.search(code, found.end() - 1,
                                                                         match.start())
                    and code[match.start():match.start(2)] == text[match.start():match.start(2)]
                    and all(
                        _read_as_code(i.group(1), i.start(1), code, opaque)
                        and (i.group(1)[0] not in "?$" or i.group(1)[1:] in terms)
                        for i in items)):
                pairs.append((match.group(1)[1:], tuple(i.group(1) for i in items), True))
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
    if kind.startswith("@"):
        return f"language-tagged string ({kind})"
    return _NAMES.get(kind, f"<{kind}>")


_DAY = re.compile(r"-?\d{4,}-\d{2}-\d{2}")
_TIME = re.compile(r"T\d{2}:\d{2}:\d{2}(?:\.\d+)?")
_ZONE = re.compile(r"(?:Z|[+-]\d{2}:\d{2})$")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _instead(term: object, kind: str, sample: object) -> str | None:
    """The constant of type ``kind`` that ``term`` was meant to be, as SPARQL text (like
    ``sample``, a value of that type); None when there is no sure one."""
    lexical = term.value if isinstance(term, (ox.Literal, ox.NamedNode)) else ""
    if kind in _NOT_INTEGERS | {XSD + "integer"} and _NUMBER.fullmatch(lexical):
        number = Decimal(lexical)
        if kind == XSD + "integer":
            return str(int(number)) if number == number.to_integral_value() else None
        return {XSD + "decimal": f"{number:f}" + ("" if "." in f"{number:f}" else ".0"),
                XSD + "double": f"{number:f}e0"}.get(kind, f'"{lexical}"^^xsd:float')
    if kind == XSD + "boolean" and lexical in ("true", "false", "1", "0"):
        return "true" if lexical in ("true", "1") else "false"
    kind = _LANG if kind.startswith("@") else kind
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
        if _kind(term) == "number" or datatype == XSD + "boolean":
            return {XSD + "double": term.value if "e" in term.value.lower() else term.value + "e0",
                    XSD + "float": f'"{term.value}"^^xsd:float',
                    XSD + "decimal": term.value if "." in term.value else term.value + ".0",
                    }.get(datatype, term.value)
        if datatype.startswith(XSD) and datatype != XSD + "string":
            return f'"{term.value}"^^xsd:{datatype[len(XSD):]}'
    return str(term)
