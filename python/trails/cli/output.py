"""How the command line prints: JSON for scripts, tables for people, hits with where each
comes from. Light on purpose, like :mod:`trails.cli.arguments`: a query a service answers
prints with these and loads no engine."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import pyoxigraph as ox
from rich.console import Console
from rich.table import Table
from rich.text import Text

from trails.display.results import hit_passage
from trails.kg.terms import term_of
from trails.records import RetrievalResult

__all__ = ["PIPE_WIDTH", "cell", "console", "escaped", "print_hits", "print_json", "print_result", "solution_text",
           "table", "visible"]

# The width of what is printed to a pipe or a file when COLUMNS does not say: wide enough for
# a table of hits to give its passages whole lines, narrow enough to read in a pager.
PIPE_WIDTH = 140


def _jsonable(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout (dates in ISO form, anything else as text), its
    control characters escaped (:func:`escaped`)."""
    sys.stdout.write(escaped(json.dumps(data, indent=2, ensure_ascii=False,
                                        default=_jsonable)) + "\n")
    sys.stdout.flush()


def escaped(text: str) -> str:
    r"""JSON or N-Triples ``text`` with DEL and the C1 control characters as ``\u`` escapes,
    which both read back as the same characters: the output stays exact, and a recorded
    ``\x9b`` (a terminal's one-byte escape sequence) never drives the terminal. (Their
    writers already escape the C0 controls, and neither has them outside its strings.)

    >>> escaped('["a\x9b[2J"]')
    '["a\\u009b[2J"]'
    """
    return _C1.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


# C0 and C1 control characters but tab and newline.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_C1 = re.compile(r"[\x7f-\x9f]")  # and DEL


def empty_context_note(db: str) -> str:
    """What ``trails query`` says (on stderr) of an answer without hits from a context that
    holds no documents, in its own process or through a service."""
    return (f"note: this context holds no documents yet; add some with `trails --db "
            f"{visible(db)} ingest PATH...` (files or folders: .md .txt .html .jsonl .pdf)")


def visible(text: str) -> str:
    r"""``text`` with its control characters written out (``\x1b``): an escape sequence in a
    recorded query, a caller or a title would otherwise drive the terminal (clear the screen,
    move the cursor back over the rows of ``trails audit``) instead of being read.

    >>> visible("seal\x1b[2J failed\n")
    'seal\\x1b[2J failed\n'
    """
    return _CONTROLS.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


class _TextTable(Table):
    """A rich table whose text cells are shown as they are: a title, a snippet or a SPARQL
    literal holding ``[red]`` or ``[/x]`` is data, not rich markup (which would restyle the
    output, or fail to render at all), and its control characters are written out."""

    def add_row(self, *renderables: Any, **options: Any) -> None:
        super().add_row(*(Text(visible(r)) if isinstance(r, str) else r for r in renderables),
                        **options)


def console(stderr: bool = False) -> Console:
    """Where tables are printed: as wide as the terminal, or as ``COLUMNS`` says, or
    :data:`PIPE_WIDTH` columns when the output is a pipe or a file (not 80: a table of seven
    columns would fold its passages one word a line)."""
    made = Console(stderr=stderr)
    if made.is_terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return made
    return Console(stderr=stderr, width=PIPE_WIDTH)


def table(*columns: str, ids: Iterable[str] = (), shares: Mapping[str, float] | None = None,
          width: int = PIPE_WIDTH) -> Table:
    """A table whose cells fold instead of being cut with an ellipsis (IRIs stay whole) and
    whose text, headers included, is never read as rich markup.

    ``ids`` name columns of identifiers (run ids) that never wrap: an id cut in two cannot be
    copied. ``shares`` caps columns at a share of the ``width`` printed to, so that the one
    column left free (a passage) gets the rest of the line instead of being folded down to
    the width of the others.
    """
    made = _TextTable()
    no_wrap, capped = set(ids), dict(shares or {})
    for column in columns:
        share = capped.get(column)
        made.add_column(Text(column), overflow="fold", no_wrap=column in no_wrap,
                        width=None if share is None else max(8, int(share * width)))
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
    out = console()
    # The passage takes what the other columns leave: they are capped at a share each.
    shares = {"title": 0.1, "source": 0.1, "iri": 0.15, "admitted by": 0.1}
    rows = table("#", "score", "title", "date", "source", "iri", "snippet",
                 *(("admitted by",) if why else ()), shares=shares, width=out.width)
    for rank, hit in enumerate(hits, start=1):
        score = "" if hit.score is None else f"{hit.score:.4f}"
        admitted = [solution_text(hit.admitted_by)] if why else []
        rows.add_row(str(rank), score, cell(hit.title), cell(hit.date), cell(hit.source),
                     hit.iri, hit_passage(hit, 200), *admitted)
    out.print(rows)
    out.print(visible(hits.explain()), highlight=False, markup=False)  # notes quote input
    if hits.run_id is not None:
        Console(stderr=True).print(f"recorded as run {hits.run_id} "
                                   f"(trails audit show {hits.run_id})", highlight=False,
                                   markup=False)


def print_result(hits: RetrievalResult, why: bool, as_json: bool) -> None:
    """The answer of ``trails query``, whether this process or a running service searched:
    with ``as_json`` the whole result as JSON on stdout and each note on stderr (the notes
    say why a list is short or empty: a threshold, a filter that could select nothing, a
    failed backend), else the table (:func:`print_hits`) whose last line holds them."""
    if not as_json:
        print_hits(hits, why)
        return
    for note in hits.notes:
        sys.stderr.write(f"note: {visible(note)}\n")
    sys.stderr.flush()
    print_json(hits.to_dict())
