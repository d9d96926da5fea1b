"""Query results as rows of Python values, with the raw RDF terms one attribute away."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

from trails.kg.terms import to_python

__all__ = ["QueryResult"]


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

    def _repr_html_(self) -> str:
        head = "".join(f"<th>?{html.escape(v)}</th>" for v in self.variables)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(row[v]))}</td>" for v in self.variables) + "</tr>"
            for row in self.rows[:200]
        )
        more = f"<p>… {len(self.rows) - 200} more rows</p>" if len(self.rows) > 200 else ""
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"
