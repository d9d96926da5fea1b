"""Query results: SELECT rows of Python values (the raw RDF terms one attribute away) and
CONSTRUCT/DESCRIBE triples, each shown as a table in a notebook."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyoxigraph as ox

from trails.display.tables import Cell, rows_html, rows_text
from trails.kg.terms import sparql_json, to_python

__all__ = ["TRIPLE_VARIABLES", "QueryResult", "Triples", "query_output", "results_json", "term_cell"]


_XSD = "http://www.w3.org/2001/XMLSchema#"
_SELF_EVIDENT = frozenset(_XSD + name for name in (
    "string", "integer", "decimal", "double", "boolean", "date", "dateTime")) | {
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"}


def term_cell(term: Any) -> Cell:
    """A term as the display draws it: IRIs as links, literals as their text (with a
    language tag or a non-string datatype after it), blank nodes as ``_:id``."""
    if term is None:
        return ("none", "")
    if isinstance(term, ox.NamedNode):
        return ("iri", term.value)
    if isinstance(term, ox.BlankNode):
        return ("blank", term.value)
    if isinstance(term, ox.Literal):
        if term.language:
            return ("literal", f"{term.value} @{term.language}")
        datatype = term.datatype.value
        if datatype in _SELF_EVIDENT:  # the value says what it is: 12, 2024-05-01, true
            return ("literal", term.value)
        return ("literal", f"{term.value} ^^{datatype.rpartition('#')[2] or datatype}")
    return ("literal", str(term))


class QueryResult:
    """Rows of a SELECT: ``dict``s of Python values (IRIs as ``str``), in solution order.

    ``result.raw`` holds the same rows as pyoxigraph terms; ``result.variables`` the projection.

    >>> r = QueryResult(["x"], [{"x": None}])
    >>> len(r), r.variables, list(r)
    (1, ['x'], [{'x': None}])
    """

    def __init__(self, variables: list[str], raw: list[dict[str, Any]]) -> None:
        self.variables = variables
        self.raw = raw
        self.rows = [{name: to_python(row.get(name)) for name in variables} for row in raw]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]

    def column(self, name: str) -> list[Any]:
        return [row[name] for row in self.rows]

    def __repr__(self) -> str:
        return f"<QueryResult variables={self.variables} rows={len(self.rows)}>"

    def _cells(self) -> list[list[Cell]]:
        return [[term_cell(row.get(name)) for name in self.variables] for row in self.raw]

    def _caption(self) -> str:
        return f"{len(self.rows)} row{'' if len(self.rows) == 1 else 's'}"

    def __str__(self) -> str:
        return rows_text([f"?{v}" for v in self.variables], self._cells(), self._caption())

    def _repr_html_(self) -> str:
        """A table: one column per variable, IRIs as short links, unbound cells marked."""
        return rows_html("select", [f"?{v}" for v in self.variables], self._cells(),
                         self._caption())


class Triples(list[ox.Triple]):
    """What a CONSTRUCT or DESCRIBE returns: a list of pyoxigraph triples, shown as a
    subject / predicate / object table in a notebook."""

    def _cells(self) -> list[list[Cell]]:
        return [[term_cell(t.subject), term_cell(t.predicate), term_cell(t.object)]
                for t in self]

    def _caption(self) -> str:
        return f"{len(self)} triple{'' if len(self) == 1 else 's'}"

    def __str__(self) -> str:
        return rows_text(("subject", "predicate", "object"), self._cells(), self._caption())

    def _repr_html_(self) -> str:
        return rows_html("triples", ("subject", "predicate", "object"), self._cells(),
                         self._caption())


def query_output(result: Any) -> QueryResult | bool | Triples:
    """pyoxigraph's answer to a query as the graph returns it: SELECT -> QueryResult, ASK ->
    bool, CONSTRUCT/DESCRIBE -> Triples."""
    if isinstance(result, ox.QuerySolutions):
        variables = [v.value for v in result.variables]
        return QueryResult(variables, [{name: solution[name] for name in variables}
                                       for solution in result])
    if isinstance(result, ox.QueryBoolean):
        return bool(result)
    return Triples(result)


# The columns a CONSTRUCT or DESCRIBE answer's triples take in :func:`results_json`.
TRIPLE_VARIABLES = ("subject", "predicate", "object")


def results_json(output: QueryResult | bool | Sequence[ox.Triple]) -> dict[str, Any]:
    """An answer in the SPARQL 1.1 Query Results JSON Format, each term typed (``uri``,
    ``literal`` with its ``datatype`` or ``xml:lang``, ``bnode``, 1.2's ``triple``): a
    SELECT's ``{"head": {"vars"}, "results": {"bindings"}}``, an unbound variable left out of
    its row; an ASK's ``{"head": {}, "boolean"}``. The triples of a CONSTRUCT or DESCRIBE,
    which the format has no form for, come as the rows of the variables ``subject``,
    ``predicate`` and ``object``: the same shape, read by the same code.

    >>> results_json(QueryResult(["x", "y"], [{"x": ox.NamedNode("urn:a"), "y": None}]))
    {'head': {'vars': ['x', 'y']}, 'results': {'bindings': [{'x': {'type': 'uri', 'value': 'urn:a'}}]}}
    >>> results_json(False)
    {'head': {}, 'boolean': False}
    """
    if isinstance(output, bool):
        return {"head": {}, "boolean": output}
    if isinstance(output, QueryResult):
        rows = [{name: sparql_json(term) for name, term in row.items() if term is not None}
                for row in output.raw]
        return {"head": {"vars": list(output.variables)}, "results": {"bindings": rows}}
    triples = [dict(zip(TRIPLE_VARIABLES, map(sparql_json, (t.subject, t.predicate, t.object)),
                        strict=True)) for t in output]
    return {"head": {"vars": list(TRIPLE_VARIABLES)}, "results": {"bindings": triples}}
