"""How the command line prints: JSON for scripts, tables for people, hits with where each
comes from. Light on purpose, like :mod:`trails.cli.arguments`: a query a service answers
prints with these and loads no engine."""

from __future__ import annotations

import json
import sys
from typing import Any

import pyoxigraph as ox
from rich.console import Console
from rich.table import Table

from trails.kg.terms import term_of
from trails.records import RetrievalResult

__all__ = ["cell", "print_hits", "print_json", "solution_text", "table"]


def _jsonable(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable) + "\n")
    sys.stdout.flush()


def table(*columns: str) -> Table:
    """A table whose cells fold instead of being cut with an ellipsis (IRIs stay whole)."""
    made = Table()
    for column in columns:
        made.add_column(column, overflow="fold")
    return made


def cell(value: Any) -> str:
    """A value as a table cell: None empty, dates in ISO form."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(_jsonable(value))


def solution_text(solution: dict[str, str] | None) -> str:
    """A filter solution for people: ``?name=value``, literals by their lexical form."""
    if not solution:
        return ""
    shown = []
    for name, value in solution.items():
        term = term_of(value)
        shown.append(f"?{name}={term.value if isinstance(term, ox.Literal) else value}")
    return " ".join(shown)


def print_hits(hits: RetrievalResult, why: bool) -> None:
    """The hits as a table (where each comes from, then the IRI and the passage), how they
    were found, and the audit run that recorded them (on stderr: stdout stays the answer)."""
    rows = table("#", "score", "title", "date", "source", "iri", "snippet",
                 *(("admitted by",) if why else ()))
    for rank, hit in enumerate(hits, start=1):
        score = "" if hit.score is None else f"{hit.score:.4f}"
        admitted = [solution_text(hit.admitted_by)] if why else []
        rows.add_row(str(rank), score, cell(hit.title), cell(hit.date), cell(hit.source),
                     hit.iri, " ".join(hit.snippet.split())[:200], *admitted)
    console = Console()
    console.print(rows)
    console.print(hits.explain(), highlight=False)
    if hits.run_id is not None:
        Console(stderr=True).print(f"recorded as run {hits.run_id} "
                                   f"(trails audit show {hits.run_id})", highlight=False)
