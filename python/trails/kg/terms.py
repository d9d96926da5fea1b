"""Conversion between Python values and RDF terms (pyoxigraph), at the boundary only."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyoxigraph as ox

__all__ = ["IRI", "to_python", "to_term"]

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

    ``IRI`` and pyoxigraph ``NamedNode`` -> IRI; ``str`` -> xsd:string; ``bool``, ``int``,
    ``float``, ``Decimal``, ``date`` and ``datetime`` -> their XSD literals. pyoxigraph terms
    pass through unchanged.
    """
    if isinstance(value, (ox.NamedNode, ox.BlankNode, ox.Literal, ox.Triple)):
        return value
    if isinstance(value, IRI):
        return ox.NamedNode(value)
    if isinstance(value, bool):
        return ox.Literal("true" if value else "false", datatype=ox.NamedNode(XSD + "boolean"))
    if isinstance(value, int):
        return ox.Literal(str(value), datatype=ox.NamedNode(XSD + "integer"))
    if isinstance(value, float):
        return ox.Literal(_double_lexical(value), datatype=ox.NamedNode(XSD + "double"))
    if isinstance(value, Decimal):
        return ox.Literal(_decimal_lexical(value), datatype=ox.NamedNode(XSD + "decimal"))
    if isinstance(value, dt.datetime):
        return ox.Literal(value.isoformat(), datatype=ox.NamedNode(XSD + "dateTime"))
    if isinstance(value, dt.date):
        return ox.Literal(value.isoformat(), datatype=ox.NamedNode(XSD + "date"))
    if isinstance(value, str):
        return ox.Literal(value)
    raise TypeError(
        f"cannot bind a {type(value).__name__} as an RDF term; use str, int, float, bool, "
        "Decimal, date, datetime, trails.kg.IRI or a pyoxigraph term"
    )


def _double_lexical(value: float) -> str:
    """xsd:double spells the specials ``INF``, ``-INF`` and ``NaN`` (Python: inf, nan)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    return repr(value)


def _decimal_lexical(value: Decimal) -> str:
    """xsd:decimal has no exponent: ``Decimal("1E+2")`` must be written ``100``."""
    if not value.is_finite():
        raise ValueError(f"xsd:decimal has no NaN or infinity, got {value!r}; bind a float")
    return format(value, "f")


_PARSERS: dict[str, Any] = {
    "integer": int, "int": int, "long": int, "short": int, "byte": int,
    "nonNegativeInteger": int, "positiveInteger": int, "negativeInteger": int,
    "nonPositiveInteger": int, "unsignedInt": int, "unsignedLong": int,
    "double": float, "float": float, "decimal": Decimal,
    "boolean": lambda s: s in ("true", "1"),
    "date": dt.date.fromisoformat,
    "dateTime": lambda s: dt.datetime.fromisoformat(s.replace("Z", "+00:00")),
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
