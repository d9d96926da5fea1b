"""Conversion between Python values and RDF terms (pyoxigraph), at the boundary only."""

from __future__ import annotations

import datetime as dt
import math
import numbers
from decimal import Decimal
from typing import Any

import pyoxigraph as ox

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["IRI", "check_json_text", "check_text", "sparql_json", "term_of", "to_python", "to_term"]

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple


class IRI(str):
    """A string that is an IRI: ``IRI("https://x/doc/1")`` binds as a NamedNode, not a literal.

    >>> to_term(IRI("https://example.org/a"))
    <NamedNode value=https://example.org/a>
    """

    __slots__ = ()


def to_term(value: Any) -> Term:
    """The RDF term for a Python value.

    ``IRI`` and pyoxigraph ``NamedNode`` -> IRI; ``str`` -> xsd:string; ``bool``, ``int``
    (of any size, exactly, and numpy's integers), ``float`` (NaN and infinities as xsd:double's
    ``NaN``/``INF``/``-INF``), ``Decimal``, ``date``, ``datetime`` (with its offset, if any;
    in UTC when XSD cannot write the offset) and ``time`` -> their XSD literals. pyoxigraph
    terms pass through unchanged.

    Raises:
        InvalidArgumentTypeError: a value of another type.
        InvalidArgumentError: an ``IRI`` that is not an absolute IRI, a string with a lone
            surrogate (UTF-8 cannot hold it), a NaN/infinite ``Decimal``, or a datetime
            whose offset XSD cannot write and whose instant lies outside UTC's years 1-9999.
    """
    if isinstance(value, (ox.NamedNode, ox.BlankNode, ox.Literal, ox.Triple)):
        return value
    if isinstance(value, str):
        check_text(value, "the value")
        return _named_node(value) if isinstance(value, IRI) else ox.Literal(value)
    if isinstance(value, bool):
        return ox.Literal("true" if value else "false", datatype=ox.NamedNode(XSD + "boolean"))
    if isinstance(value, numbers.Integral):  # int, and numpy's integers (exact at any size)
        return ox.Literal(_integer_lexical(int(value)), datatype=ox.NamedNode(XSD + "integer"))
    if isinstance(value, float) or (isinstance(value, numbers.Real)
                                    and not isinstance(value, numbers.Rational)):
        return ox.Literal(_double_lexical(float(value)), datatype=ox.NamedNode(XSD + "double"))
    if isinstance(value, Decimal):
        return ox.Literal(_decimal_lexical(value), datatype=ox.NamedNode(XSD + "decimal"))
    if isinstance(value, dt.datetime):
        return ox.Literal(_datetime_lexical(value), datatype=ox.NamedNode(XSD + "dateTime"))
    if isinstance(value, dt.date):
        return ox.Literal(value.isoformat(), datatype=ox.NamedNode(XSD + "date"))
    if isinstance(value, dt.time):
        return ox.Literal(value.isoformat(), datatype=ox.NamedNode(XSD + "time"))
    raise InvalidArgumentTypeError(
        f"cannot write a {type(value).__name__} as an RDF term; use str, int, float, bool, "
        "Decimal, date, datetime, time, trails.kg.IRI or a pyoxigraph term"
    )


def check_text(text: str, what: str) -> str:
    """``text`` itself, if UTF-8 can encode it (no lone surrogate such as ``"\\ud800"``,
    which a bad decode or a JSON ``\\ud800`` escape leaves behind).

    Raises:
        InvalidArgumentError: naming ``what`` and where the surrogate is.

    >>> check_text("caf\\u00e9", "the title")
    'café'
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} holds a lone surrogate {text[exc.start]!r} at offset {exc.start}, which "
            "UTF-8 cannot encode (a bad decode or a JSON \\ud800 escape?); remove it or "
            "decode the source properly") from None
    return text


def check_json_text(value: object, what: str) -> None:
    """Refuse a lone surrogate in any string of a parsed JSON value (its keys too): JSON
    can spell one (``"\\ud800"`` without its pair) and Python's reader keeps it, but UTF-8,
    and so every store and every answer, cannot hold it.

    Raises:
        InvalidArgumentError: naming where in ``what`` the surrogate is.

    >>> check_json_text({"query": "x", "scopes": ["a\\ud800"]}, "the request")
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentError: the request.scopes[0] holds a lone surrogate '\\ud800' at offset 1, which UTF-8 cannot encode (a bad decode or a JSON \\ud800 escape?); remove it or decode the source properly
    """
    pending: list[tuple[object, str]] = [(value, what)]
    while pending:  # a loop, not recursion: a deeply nested value cannot exhaust the stack
        item, where = pending.pop()
        if isinstance(item, str):
            check_text(item, where)
        elif isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str):
                    check_text(key, f"a key of {where}")
                pending.append((inner, f"{where}.{key}"))
        elif isinstance(item, (list, tuple)):
            pending.extend((inner, f"{where}[{n}]") for n, inner in enumerate(item))


def _named_node(iri: str) -> ox.NamedNode:
    try:
        return ox.NamedNode(iri)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"IRI({iri!r}) is not an absolute IRI ({exc}); write it as scheme:... with no "
            "spaces, quotes or <>{}|^` (percent-encode them)") from None


_MAX_OFFSET = dt.timedelta(hours=14)


def _datetime_lexical(value: dt.datetime) -> str:
    """XSD writes an offset in whole minutes within ±14:00: a datetime with another (a
    historical zone's local mean time, +00:19:32) is written as the same instant in UTC.

    Raises:
        InvalidArgumentError: that instant lies outside the years 1 to 9999 in UTC.
    """
    offset = value.utcoffset()
    if offset is not None and (offset % dt.timedelta(minutes=1) or abs(offset) > _MAX_OFFSET):
        try:
            value = value.astimezone(dt.UTC)
        except OverflowError:
            raise InvalidArgumentError(f"{value.isoformat()} has an offset XSD cannot write, "
                                       "and lies outside the years 1 to 9999 in UTC") from None
    return value.isoformat()


def _double_lexical(value: float) -> str:
    """xsd:double spells the specials ``INF``, ``-INF`` and ``NaN`` (Python: inf, nan)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    return repr(value)


def _integer_lexical(value: int) -> str:
    try:
        return str(value)
    except ValueError as exc:  # more digits than Python will print (sys.set_int_max_str_digits)
        raise InvalidArgumentError(f"an int of {value.bit_length()} bits is too long to write "
                                   f"({exc})") from None


# An xsd:decimal is written without an exponent: past this many digits either side of the
# point ("1E+999999999" is a billion), it is refused rather than spelled out.
_MAX_DECIMAL_DIGITS = 4300


def _decimal_lexical(value: Decimal) -> str:
    """xsd:decimal has no exponent: ``Decimal("1E+2")`` must be written ``100``."""
    if not value.is_finite():
        raise InvalidArgumentError(f"xsd:decimal has no NaN or infinity, got {value!r}; bind a float")
    digits = len(value.as_tuple().digits)
    if abs(value.adjusted()) + digits > _MAX_DECIMAL_DIGITS:
        raise InvalidArgumentError(f"{value!r} would take more than {_MAX_DECIMAL_DIGITS} digits "
                                   "as an xsd:decimal, which has no exponent; bind a float")
    return format(value, "f")


_PARSERS: dict[str, Any] = {
    "integer": int, "int": int, "long": int, "short": int, "byte": int,
    "nonNegativeInteger": int, "positiveInteger": int, "negativeInteger": int,
    "nonPositiveInteger": int, "unsignedInt": int, "unsignedLong": int,
    "double": float, "float": float, "decimal": Decimal,
    "boolean": lambda s: s in ("true", "1"),
    "date": dt.date.fromisoformat,
    "dateTime": lambda s: dt.datetime.fromisoformat(s),
}


def to_python(term: Any) -> Any:
    """A Python value for an RDF term: IRIs become ``str``, typed literals native values.

    Literals of unknown datatypes (or malformed lexical forms) stay strings.
    """
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    if isinstance(term, ox.Literal):
        datatype = term.datatype.value
        if datatype.startswith(XSD):
            parser = _PARSERS.get(datatype[len(XSD):])
            if parser is not None:
                try:
                    return parser(term.value)
                except ValueError:
                    return term.value
        return term.value
    return term


def term_of(ntriples: str) -> ox.NamedNode | ox.Literal | ox.BlankNode:
    """The RDF term an N-Triples string writes (a literal holding the string when it is
    none: a record must never fail to fold)."""
    try:
        triple = next(iter(ox.parse(f"<urn:x:s> <urn:x:p> {ntriples} .".encode(),
                                    format=ox.RdfFormat.N_TRIPLES)))
        obj = triple.object
        if isinstance(obj, (ox.NamedNode, ox.Literal, ox.BlankNode)):
            return obj
    except (SyntaxError, ValueError, StopIteration):
        pass
    return ox.Literal(ntriples)


def sparql_json(term: Any) -> dict[str, Any]:
    """An RDF term as the SPARQL Query Results JSON Format writes it (1.1; a literal's base
    direction and a triple term as 1.2 does).

    >>> sparql_json(ox.Literal("3", datatype=ox.NamedNode(XSD + "integer")))
    {'type': 'literal', 'value': '3', 'datatype': 'http://www.w3.org/2001/XMLSchema#integer'}
    >>> sparql_json(ox.Literal("x", language="ar", direction=ox.BaseDirection.RTL))
    {'type': 'literal', 'value': 'x', 'xml:lang': 'ar', 'its:dir': 'rtl'}

    Raises:
        InvalidArgumentError: a value that is no RDF term.
    """
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        written: dict[str, Any] = {"type": "literal", "value": term.value}
        if term.language:
            written["xml:lang"] = term.language
            if term.direction is not None:  # "x"@ar--rtl: SPARQL 1.2 writes its direction
                written["its:dir"] = str(term.direction)
        elif term.datatype.value != XSD + "string":
            written["datatype"] = term.datatype.value
        return written
    if isinstance(term, ox.Triple):
        return {"type": "triple", "value": {"subject": sparql_json(term.subject),
                                            "predicate": sparql_json(term.predicate),
                                            "object": sparql_json(term.object)}}
    raise InvalidArgumentError(f"no SPARQL JSON form for {term!r}: it is no RDF term")
