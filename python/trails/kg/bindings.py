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

from trails.kg.sparql import code_only
from trails.kg.terms import to_term

__all__ = ["apply_bindings"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def apply_bindings(query: str, bindings: Mapping[str, Any] | None) -> str:
    """Return ``query`` with ``bindings`` ({variable name: value}) bound by a VALUES block.

    Raises:
        ValueError: a name is not a SPARQL variable name or does not occur in the query.

    >>> apply_bindings("SELECT ?s WHERE { ?s ?p ?o }", {"o": 3})
    'SELECT ?s WHERE { VALUES (?o) { ("3"^^<http://www.w3.org/2001/XMLSchema#integer>) } ?s ?p ?o }'
    """
    if not bindings:
        return query
    code = code_only(query)
    for name in bindings:
        if not _NAME.match(name):
            raise ValueError(f"binding name {name!r} is not a SPARQL variable name")
        if not re.search(rf"[?$]{name}\b", code):
            raise ValueError(
                f"binding {name!r} names no variable of the query; use a variable written "
                f"?{name} in the query text"
            )
    brace = code.find("{")
    if brace < 0:
        raise ValueError("the query has no WHERE group to bind variables in")
    variables = " ".join(f"?{name}" for name in bindings)
    values = " ".join(str(to_term(value)) for value in bindings.values())
    block = f" VALUES ({variables}) {{ ({values}) }}"
    return query[: brace + 1] + block + query[brace + 1 :]
