"""Summaries and rows: a context, ingest totals, SELECT solutions and CONSTRUCT triples.

Cells arrive as :data:`Cell` pairs ``(kind, text)`` so an IRI is told from a string that only
looks like one: the graph layer converts its terms, this module only draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trails.display.markup import MAX_ROWS, escape, iri_link, more, table, wrap

__all__ = ["MAX_ITEMS", "MAX_ROWS", "Cell", "cell_html", "cell_text", "rows_html", "rows_text",
           "summary_html", "summary_text"]

# "iri", "blank", "literal" or "none" (an unbound variable), and the term's text.
Cell = tuple[str, str]


def cell_html(cell: Cell) -> str:
    """A term as safe HTML: an IRI as a short link, a blank node as ``_:id``, an unbound
    variable marked as such, a literal as its escaped text."""
    kind, text = cell
    if kind == "iri":
        return iri_link(text)
    if kind == "none":
        return '<span class="trails-meta">unbound</span>'
    if kind == "blank":
        return f"<code>_:{escape(text)}</code>"
    return escape(text)


def cell_text(cell: Cell) -> str:
    """A term as a terminal shows it: ``<iri>``, ``_:id``, the literal's text, empty when
    unbound."""
    kind, text = cell
    return {"iri": f"<{text}>", "none": "", "blank": f"_:{text}"}.get(kind, text)


def rows_html(kind: str, head: Sequence[str], rows: Sequence[Sequence[Cell]],
              caption: str) -> str:
    """A table of terms, at most :data:`MAX_ROWS` rows, under a caption that counts them."""
    shown = [[cell_html(c) for c in row] for row in rows[:MAX_ROWS]]
    return wrap(kind, f'<p class="trails-explain">{escape(caption)}</p>'
                + table(head, shown, "trails-rows") + more(len(rows) - MAX_ROWS, "rows"))


def rows_text(head: Sequence[str], rows: Sequence[Sequence[Cell]], caption: str,
              limit: int = 20) -> str:
    """The caption and up to ``limit`` rows, columns separated by two spaces."""
    lines = [caption, "  ".join(head)]
    lines += ["  ".join(cell_text(c) for c in row) for row in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"… {len(rows) - limit} more rows")
    return "\n".join(lines)


def summary_html(kind: str, title: str, fields: Mapping[str, object]) -> str:
    """A heading and a two-column table of what an object is made of; lists are joined."""
    rows = [(f"<b>{escape(name)}</b>", escape(_plain(value))) for name, value in fields.items()]
    return wrap(kind, f'<p class="trails-explain"><b>{escape(title)}</b></p>'
                + table(("", ""), rows, "trails-summary"))


def summary_text(title: str, fields: Mapping[str, object]) -> str:
    """The title, then one aligned ``name  value`` line per field (lists joined)."""
    width = max((len(name) for name in fields), default=0)
    return "\n".join([title, *(f"  {name.ljust(width)}  {_plain(value)}"
                               for name, value in fields.items())])


# Items of a list field (a context's scopes) shown before "… and N more".
MAX_ITEMS = 20


def _plain(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [str(v) for v in value]
        rest = f", … and {len(items) - MAX_ITEMS} more" if len(items) > MAX_ITEMS else ""
        return ", ".join(items[:MAX_ITEMS]) + rest or "none"
    return str(value)
