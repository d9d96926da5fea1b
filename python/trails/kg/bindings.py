"""Binding Python values into SPARQL as RDF terms, without pasting user text into queries.

pyoxigraph's own ``substitutions`` only reach projected variables, and a remote endpoint has
none at all, so bindings travel as a ``VALUES`` block placed at the start of the query's
outermost group: every pattern and FILTER of that group sees them. Each value is serialised by
pyoxigraph as an N-Triples term, so quotes or braces in a value can never change the query.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import pyoxigraph as ox

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.kg.sparql import code_only
from trails.kg.terms import Term, to_term
from trails.kg.variables import written_variables

__all__ = ["apply_bindings", "check_bindings", "check_bindings_used", "ill_typed"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What Oxigraph can compare: an xsd:integer of 64 bits, an xsd:decimal of 128 bits with 18
# digits after the point. A literal outside them is kept as text, and every comparison with it
# is an error, so ``FILTER(?n > 5)`` with n = 10**40 would answer nothing (ADR 0025).
_INT64 = range(-(2**63), 2**63)
_DECIMAL_PLACES = 18
_DECIMAL_MAX = Decimal(2**127 - 1).scaleb(-_DECIMAL_PLACES)
_QUANTUM = Decimal(1).scaleb(-_DECIMAL_PLACES)


def apply_bindings(query: str, bindings: Mapping[str, Any] | None) -> str:
    """Return ``query`` with ``bindings`` ({variable name: value}) bound by a VALUES block.

    The block goes into the WHERE group: the first group of a SELECT, ASK or DESCRIBE, the
    group after the template of a CONSTRUCT, the WHERE group of a ``DELETE {...} INSERT {...}
    WHERE {...}`` update (a template cannot hold VALUES).

    Raises:
        InvalidArgumentTypeError: ``bindings`` is not a mapping, or a value has a type that is
            no RDF term (the message names the binding).
        InvalidArgumentError: a name is not a SPARQL variable name or does not occur in the
            query, or a value cannot be written (an ``IRI`` that is not one, a lone surrogate).
        ValueError: the query has no WHERE group (``INSERT DATA``, the ``DELETE WHERE {...}`` and
            ``CONSTRUCT WHERE {...}`` short forms: write them out as ``DELETE {...} WHERE
            {...}``).

    >>> apply_bindings("SELECT ?s WHERE { ?s ?p ?o }", {"o": 3})
    'SELECT ?s WHERE { VALUES (?o) { ("3"^^<http://www.w3.org/2001/XMLSchema#integer>) } ?s ?p ?o }'
    """
    code = code_only(query)
    terms = check_bindings(bindings, exact=_is_update(code))
    if not terms:
        return query
    check_bindings_used(code, terms)
    brace = _binding_group(code)
    variables = " ".join(f"?{name}" for name in terms)
    values = " ".join(str(term) for term in terms.values())
    block = f" VALUES ({variables}) {{ ({values}) }}"
    return query[: brace + 1] + block + query[brace + 1 :]


def check_bindings_used(query: str, names: Iterable[str]) -> None:
    """Refuse a binding whose variable ``query`` never mentions (a typo would otherwise bind
    nothing and answer as if the binding had not been given).

    Raises:
        InvalidArgumentError: naming the first binding the query does not use.
    """
    written = written_variables(code_only(query))
    for name in names:
        if name not in written:
            cut = name if len(name) <= 80 else name[:80] + "..."  # a name pasted by mistake
            raise InvalidArgumentError(
                f"binding {cut!r} names no variable of the query; use a variable written "
                f"?{cut} in the query text"
            )


def check_bindings(bindings: object, *, exact: bool = False) -> dict[str, Term]:
    """Each binding's RDF term, by variable name; an error names the binding that has none.

    A number the embedded graph cannot compare as written (an int beyond 64 bits, a
    ``Decimal`` beyond 128 bits or with over 18 digits after the point) binds as the nearest
    number it can: an exact ``xsd:decimal`` while one holds it, else an ``xsd:double`` (the
    type XPath compares mixed numbers in), so comparisons answer as they should. ``exact``
    (an update, which stores what it binds) writes every number exactly instead.

    Raises:
        InvalidArgumentTypeError: ``bindings`` is not a mapping (or None), or a value has a
            type that is no RDF term.
        InvalidArgumentError: a name is not a SPARQL variable name, or a value cannot be
            written (an ``IRI`` that is not one, a lone surrogate).

    >>> check_bindings({"n": 3})
    {'n': <Literal value=3 datatype=<NamedNode value=http://www.w3.org/2001/XMLSchema#integer>>}
    """
    if bindings is None:
        return {}
    if not isinstance(bindings, Mapping):
        raise InvalidArgumentTypeError(
            f"bindings must be a mapping of variable names to values ({{'since': date(2024, 1, "
            f"1)}}), got {type(bindings).__name__}")
    terms = {}
    for name, value in bindings.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidArgumentError(f"binding name {name!r} is not a SPARQL variable name "
                                       "(letters, digits and _, without the ?)")
        terms[name] = _term(name, value, exact)
    return terms


def _term(name: str, value: Any, exact: bool) -> Term:
    """``value`` as an RDF term; a failure names the binding and the value."""
    if isinstance(value, (ox.BlankNode, ox.Triple)):
        raise InvalidArgumentError(
            f"binding {name!r} is a {'blank node' if isinstance(value, ox.BlankNode) else 'triple'}"
            ", which a query cannot be given (SPARQL binds IRIs and literals); bind the IRI or "
            "literal it stands for")
    try:
        term = to_term(value)  # refuses what has no term at all, whatever ``exact`` says
        if exact:
            return term
        comparable = to_term(_comparable(value))
        if isinstance(value, ox.Literal):  # text typed by the caller; a Python value's own
            _check_well_typed(comparable)  # form is always one (a query each: 200,000 took 11 s)
        return comparable
    except InvalidArgumentError as exc:
        try:  # an RDF term as SPARQL writes it, any other value as Python does
            shown = str(value) if isinstance(value, (ox.Literal, ox.NamedNode)) else repr(value)
        except ValueError:  # an int too long to print
            shown = f"<{type(value).__name__}>"
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        raise type(exc)(f"binding {name!r} = {shown}: {exc}") from None


# The XML Schema types Oxigraph reads a value of (its cast functions): a literal of one of them
# that is no such value is ill-typed, and every comparison with it is an error, so a filter
# bound to "2024-13-01"^^xsd:date would select nothing, silently.
_XSD = "http://www.w3.org/2001/XMLSchema#"
_READ_TYPES = frozenset(_XSD + t for t in (
    "boolean", "integer", "decimal", "double", "float", "date", "dateTime", "time", "duration",
    "dayTimeDuration", "yearMonthDuration", "gYear", "gYearMonth", "gMonth", "gDay", "gMonthDay"))
_CASTS = ox.Store()  # empty, in memory: only its query engine's casts are used


def _check_well_typed(term: Term) -> None:
    """Refuse a literal of a type Oxigraph reads whose text is no value of that type.

    Raises:
        InvalidArgumentError: naming the type and how such a value is written.
    """
    if not isinstance(term, ox.Literal) or term.datatype.value not in _READ_TYPES:
        return
    cast = f"SELECT ?x WHERE {{ BIND(<{term.datatype.value}>({ox.Literal(term.value)}) AS ?x) }}"
    solutions = _CASTS.query(cast)
    assert isinstance(solutions, ox.QuerySolutions)  # a SELECT
    read = next(solutions)["x"]
    # Not left to the traceback: a service raises this in a worker thread, and the solutions
    # cannot be dropped in another one.
    del solutions
    if read is None:
        raise InvalidArgumentError(ill_typed(term.value, term.datatype.value.removeprefix(_XSD)))


def ill_typed(text: str, kind: str) -> str:
    """Why ``text`` cannot be bound as a value of ``xsd:kind``, and how to write one: the
    same words whichever way the binding came (a typed literal, ``--bind``, an MCP string),
    after the words naming the binding as that way names it.

    >>> ill_typed("2024-13-01", "date")[:43]
    "'2024-13-01' is no xsd:date value the graph"
    """
    return (f"{text!r} is no xsd:{kind} value the graph can read, so every comparison with "
            "it would fail and the filter would select nothing; write it as XML Schema does "
            "(a date 2024-01-31, a dateTime 2024-01-31T09:00:00Z, a number 42 or 4.2; an "
            "integer within 64 bits)")


def _comparable(value: Any) -> Any:
    """``value``, or the nearest number Oxigraph compares when it cannot hold ``value``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, Decimal)):
        return value
    if isinstance(value, numbers.Integral) and int(value) in _INT64:
        return value
    number = Decimal(int(value)) if isinstance(value, numbers.Integral) else value
    if abs(number) > _DECIMAL_MAX:
        return float(number)  # past a double's range: an infinity, still in order
    if number.as_tuple().exponent < -_DECIMAL_PLACES:  # type: ignore[operator]
        return number.quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)
    return number


def _is_update(code: str) -> bool:
    form = _FORM.search(code)
    return form is not None and form.group().upper() in ("INSERT", "DELETE", "WITH")


def _keyword(words: str) -> re.Pattern[str]:
    # A keyword, not part of ?var, $var, prefix:name or a prefix name.
    return re.compile(rf"(?<![?$:\w-])(?:{words})(?![\w:-])", re.IGNORECASE)


_FORM = _keyword("SELECT|ASK|DESCRIBE|CONSTRUCT|INSERT|DELETE|WITH")
_WHERE_GROUP = re.compile(_keyword("WHERE").pattern + r"\s*\{", re.IGNORECASE)
_SHORT_FORM = re.compile(r"\s*WHERE\s*\{", re.IGNORECASE)


def _top_level_braces(code: str) -> list[int]:
    depth, found = 0, []
    for i, char in enumerate(code):
        if char == "{":
            if depth == 0:
                found.append(i)
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
    return found


def _binding_group(code: str) -> int:
    """Position of the ``{`` that opens the group the VALUES block belongs in."""
    tops = _top_level_braces(code)
    form = _FORM.search(code)
    kind = form.group().upper() if form else "SELECT"
    if form is None or kind in ("SELECT", "ASK", "DESCRIBE"):
        if tops:
            return tops[0]
        raise ValueError("the query has no WHERE group to bind variables in")
    if _SHORT_FORM.match(code, form.end()):
        raise ValueError(
            f"bindings cannot go into the {kind} WHERE {{...}} short form, whose group is a "
            f"template; write it out as {kind} {{...}} WHERE {{...}}"
        )
    wheres = [m.end() - 1 for m in _WHERE_GROUP.finditer(code)]
    top_wheres = [w for w in wheres if w in tops]
    if top_wheres:
        return top_wheres[0]
    if kind == "CONSTRUCT" and len(tops) >= 2:
        return tops[1]  # CONSTRUCT {template} {pattern}: WHERE is optional
    raise ValueError(f"the {kind} has no WHERE group to bind variables in")
