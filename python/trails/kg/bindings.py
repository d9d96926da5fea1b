"""Binding Python values into SPARQL as RDF terms, without pasting user text into queries.

pyoxigraph's own ``substitutions`` only reach projected variables, and a remote endpoint has
none at all, so bindings travel as a ``VALUES`` block placed at the start of the query's
outermost group: every pattern and FILTER of that group sees them. Each value is serialised by
pyoxigraph as an N-Triples term, so quotes or braces in a value can never change the query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trails.errors import InvalidArgumentError
from trails.kg.sparql import code_only
from trails.kg.terms import to_term

__all__ = ["apply_bindings"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def apply_bindings(query: str, bindings: Mapping[str, Any] | None) -> str:
    """Return ``query`` with ``bindings`` ({variable name: value}) bound by a VALUES block.

    The block goes into the WHERE group: the first group of a SELECT, ASK or DESCRIBE, the
    group after the template of a CONSTRUCT, the WHERE group of a ``DELETE {...} INSERT {...}
    WHERE {...}`` update (a template cannot hold VALUES).

    Raises:
        ValueError: a name is not a SPARQL variable name or does not occur in the query, or
            the query has no WHERE group (``INSERT DATA``, the ``DELETE WHERE {...}`` and
            ``CONSTRUCT WHERE {...}`` short forms: write them out as ``DELETE {...} WHERE
            {...}``).

    >>> apply_bindings("SELECT ?s WHERE { ?s ?p ?o }", {"o": 3})
    'SELECT ?s WHERE { VALUES (?o) { ("3"^^<http://www.w3.org/2001/XMLSchema#integer>) } ?s ?p ?o }'
    """
    if not bindings:
        return query
    code = code_only(query)
    for name in bindings:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidArgumentError(f"binding name {name!r} is not a SPARQL variable name "
                                       "(letters, digits and _, without the ?)")
        if not re.search(rf"[?$]{name}\b", code):
            raise InvalidArgumentError(
                f"binding {name!r} names no variable of the query; use a variable written "
                f"?{name} in the query text"
            )
    brace = _binding_group(code)
    variables = " ".join(f"?{name}" for name in bindings)
    values = " ".join(_term_text(name, value) for name, value in bindings.items())
    block = f" VALUES ({variables}) {{ ({values}) }}"
    return query[: brace + 1] + block + query[brace + 1 :]


def _term_text(name: str, value: Any) -> str:
    """The value as SPARQL term text; a value that is no valid term names its binding."""
    try:
        text = str(to_term(value))
        text.encode("utf-8")  # a lone surrogate is no Unicode, so no SPARQL either
    except (ValueError, TypeError, UnicodeError) as exc:
        shown = repr(value)[:100]
        raise InvalidArgumentError(f"binding {name!r} = {shown} is not a valid RDF term: "
                                   f"{exc}") from exc
    return text


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
