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
from trails.kg.sparql_text import iris_only
from trails.kg.terms import XSD
from trails.kg.variables import _closing

__all__ = ["mismatch_notes"]

# ?a <op> ?b, either way round: one side a filter variable, the other a binding.
_COMPARISON = re.compile(r"[?$](\w+)\s*(<=|>=|!=|=|<|>)\s*[?$](\w+)")
_FILTER = re.compile(r"\bFILTER\s*\(", re.IGNORECASE)
_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)
# What makes a FILTER hold though a comparison in it fails.
_NOT_SURE = re.compile(r"!(?!=)|\|\||\b(?:NOT|IF|COALESCE)\b", re.IGNORECASE)
_VALUES_READ = 50  # the probe's values: enough to see a column's type, cheap on any graph

_NUMBERS = frozenset(XSD + t for t in (
    "integer", "decimal", "float", "double", "long", "int", "short", "byte",
    "nonNegativeInteger", "nonPositiveInteger", "positiveInteger", "negativeInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte"))
# Types SPARQL compares with one another (Oxigraph): each under the one it derives from.
_FAMILIES = {XSD + "dayTimeDuration": XSD + "duration",
             XSD + "yearMonthDuration": XSD + "duration",
             XSD + "dateTimeStamp": XSD + "dateTime"}
_NAMES = {XSD + "string": "string", XSD + "date": "xsd:date", XSD + "dateTime": "xsd:dateTime",
          XSD + "duration": "xsd:duration",
          XSD + "boolean": "boolean", XSD + "time": "xsd:time", "number": "number", "iri": "IRI",
          "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString": "language-tagged string"}
_HINTS = {XSD + "dateTime": "bind a datetime.datetime (--bind NAME=2024-01-01T00:00:00Z)",
          XSD + "date": "bind a datetime.date (--bind NAME=2024-01-01)",
          XSD + "string": "bind a string (--bind 'NAME=\"...\"')",
          "number": "bind a number (--bind NAME=42)"}


def mismatch_notes(kg: KnowledgeGraph, sparql_filter: str, bindings: Mapping[str, Any] | None,
                   scopes: Sequence[str] | None) -> list[str]:
    """A note for each comparison of a filter variable with a binding that no value the
    variable takes (of its first few) can satisfy, by type; [] when there is none."""
    if not bindings:
        return []
    terms = check_bindings(bindings)
    code = code_only(sparql_filter)
    notes = []
    for variable, name in _compared(code, terms):
        try:
            probe = _probe(sparql_filter, code, variable)
            values = [row.get(variable) for row in select(kg, probe, scopes=scopes).raw]
        except Exception:  # noqa: BLE001, S112 - a probe that cannot run says nothing
            continue
        found = {_kind(v) for v in values if v is not None}
        bound = _kind(terms[name])
        kinds = {k for k in found if k is not None}
        if not kinds or bound is None or bound in kinds or len(kinds) < len(found):
            continue
        shown = " and ".join(sorted(_name(k) for k in kinds))
        hint = _HINTS.get(min(kinds) if len(kinds) == 1 else "",
                          "bind a value of the type the graph holds")
        notes.append(
            f"nothing matched, and nothing could: ?{variable} holds {shown} values (the first "
            f"{len(values)} read), and ?{name} is bound to {_a(_name(bound))}, which SPARQL never "
            f"compares with {shown} values; {hint.replace('NAME', name)}")
    return notes


def _compared(code: str, terms: Mapping[str, object]) -> list[tuple[str, str]]:
    """(variable, binding) pairs the filter compares in a FILTER that holds only when the
    comparison does, with an operator that fails on different types (``!=`` is true of an IRI
    and a literal: not one). A FILTER that negates, chooses (``IF``, ``COALESCE``) or weighs
    the comparison against another test (``||``) could hold while the comparison fails: its
    comparisons are not read."""
    pairs = []
    for found in _FILTER.finditer(code):
        body = code[found.end():_closing(code, found.end() - 1)]
        if _NOT_SURE.search(body):
            continue
        for match in _COMPARISON.finditer(body):
            left, operator, right = match.groups()
            if operator == "!=":
                continue
            if right in terms and left not in terms:
                pairs.append((left, right))
            elif left in terms and right not in terms:
                pairs.append((right, left))
    return list(dict.fromkeys(pairs))


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
