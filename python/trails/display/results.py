"""Hits and results as HTML (a notebook's rich display) and as text (a terminal's).

Works on anything shaped like :class:`trails.records.RetrievalHit` (the :class:`Hit` protocol),
so the records can use it without this module importing them back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Protocol

from trails.display.markup import (
    MAX_ROWS,
    escape,
    iri_link,
    more,
    score_bar,
    short_iri,
    table,
    wrap,
)
from trails.display.snippets import SNIPPET_CHARS, marked, plain_snippet, query_terms

__all__ = ["TEXT_HITS", "Hit", "component_value", "components_text", "hit_html", "hit_passage",
           "hit_text", "hits_html", "hits_text", "label", "mentions"]

# Hits a terminal shows before "… N more hits" (a notebook shows markup.MAX_ROWS).
TEXT_HITS = 20
# A title or source shown longer than this is cut: a title holding a page's text (a record's
# first field, a PDF's first lines) made every display of its hits, a repr too, that long.
LABEL_CHARS = 120


class Hit(Protocol):
    """What the display reads of a hit (``trails.records.RetrievalHit`` has all of it)."""

    @property
    def iri(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def snippet(self) -> str: ...
    @property
    def components(self) -> dict[str, float]: ...
    @property
    def admitted_by(self) -> dict[str, str] | None: ...
    @property
    def title(self) -> str | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def document(self) -> str | None: ...
    @property
    def date(self) -> dt.date | dt.datetime | None: ...


def label(hit: Hit) -> str:
    """What a person calls the hit: its title (its first :data:`LABEL_CHARS` characters, on
    one line), else its document's or its own short IRI."""
    if not hit.title:
        return short_iri(hit.document or hit.iri)
    title = " ".join(hit.title.split())
    return title if len(title) <= LABEL_CHARS else title[:LABEL_CHARS - 1] + "…"


def _source(hit: Hit) -> str:
    """The hit's source, on one line; a longer one than :data:`LABEL_CHARS` keeps its end
    (the file's name), after an ellipsis."""
    source = " ".join((hit.source or "").split())
    return source if len(source) <= LABEL_CHARS else "…" + source[1 - LABEL_CHARS:]


def hit_passage(hit: Hit, limit: int = SNIPPET_CHARS) -> str:
    """What every display shows of a hit's text: its chunk's whole text when the hit carries
    it (``metadata["text"]``), else its snippet, as plain words (Markdown rendered) cut on a
    word within ``limit`` characters. A stored snippet is the chunk's first
    ``SNIPPET_CHARS`` characters: one that long was cut from more, so it ends before its
    last partial word or open Markdown construct, with an ellipsis."""
    text = getattr(hit, "metadata", {}).get("text")
    if isinstance(text, str) and text:
        return plain_snippet(text, limit)
    snippet = hit.snippet or ""
    return plain_snippet(snippet, limit, whole=len(snippet) < SNIPPET_CHARS)


def component_value(name: str, value: object, digits: int = 4) -> str:
    """A score component as text: ranks (``*_rank``) as integers, scores to ``digits``
    places, and anything else a step put there as it is (a display never raises on it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:g}" if name.endswith("_rank") else f"{value:.{digits}f}"


def components_text(components: Mapping[str, float]) -> str:
    """``vector 0.8123, keyword 3.1000`` (ranks as integers)."""
    return ", ".join(f"{name} {component_value(name, value)}"
                     for name, value in components.items())


def _when(hit: Hit) -> str:
    date = hit.date
    return "" if date is None else date.isoformat()


def _meta_text(hit: Hit) -> str:
    return " · ".join(part for part in (_when(hit), _source(hit)) if part)


def _detail(hit: Hit) -> str:
    """The detail row: every score component and the filter solution that admitted the hit."""
    rows = [(escape(name), escape(component_value(name, value, 6)))
            for name, value in hit.components.items()]
    rows += [(escape(f"?{name}"), iri_link(term[1:-1]) if term.startswith("<") and
              term.endswith(">") else escape(term))
             for name, term in (hit.admitted_by or {}).items()]
    if not rows:
        return ""
    return (f'<details class="trails-detail"><summary>score components'
            f'{" and admitting solution" if hit.admitted_by else ""}</summary>'
            f'{table(("part", "value"), rows, "trails-components")}</details>')


def mentions(hit: object) -> list[str]:
    """The entity IRIs a step found the hit mentioning (``metadata["mentions"]``), if any."""
    found = (getattr(hit, "metadata", None) or {}).get("mentions")
    return [str(e) for e in found] if isinstance(found, (list, tuple)) else []


def _mentions_html(hit: Hit) -> str:
    found = mentions(hit)
    return (f'<div class="trails-meta">mentions {", ".join(iri_link(e) for e in found)}</div>'
            if found else "")


def _hit_cells(rank: int, hit: Hit, terms: frozenset[str], best: float | None) -> list[str]:
    meta = escape(_meta_text(hit))
    shown = marked(hit_passage(hit), terms)
    document = (f'<div class="trails-title"><b>{escape(label(hit))}</b></div>'
                + (f'<div class="trails-meta">{meta}</div>' if meta else "")
                + f'<div class="trails-passage">{shown}</div>'
                + f'<div class="trails-meta">{iri_link(hit.iri)}</div>' + _mentions_html(hit)
                + _detail(hit))
    bar = score_bar(hit.score, best, components_text(hit.components))
    return [f'<span class="trails-rank">{rank}</span>', bar, document]


def _best(hits: Sequence[Hit]) -> float | None:
    scores = [h.score for h in hits if h.score is not None]
    return max(scores) if scores else None


def hit_html(hit: Hit, query: str | None = None) -> str:
    """One hit as a one-row table (its score bar full: it is its own best)."""
    rows = [_hit_cells(1, hit, query_terms(query), hit.score)]
    return wrap("hit", table(("#", "score", "document"), rows, "trails-hits"))


def hits_html(hits: Sequence[Hit], explanation: str, query: str | None,
              run_id: str | None) -> str:
    """A result: the explanation line (with the query and run id), then one row per hit (at
    most :data:`~trails.display.markup.MAX_ROWS`, then how many more), each score bar as
    long as the hit's share of the best score."""
    terms, best = query_terms(query), _best(hits)
    head = (f'<span class="trails-query">{escape(query)}</span> — ' if query else "")
    run = (f' <span class="trails-run" title="trails audit show {escape(run_id)}">run '
           f'{escape(run_id)}</span>' if run_id else "")
    line = f'<p class="trails-explain">{head}{escape(explanation)}{run}</p>'
    if not hits:
        return wrap("result", line + '<p class="trails-empty">No hits.</p>')
    rows = [_hit_cells(rank, hit, terms, best)
            for rank, hit in enumerate(hits[:MAX_ROWS], start=1)]
    return wrap("result", line + table(("#", "score", "document"), rows, "trails-hits")
                + more(len(hits) - MAX_ROWS, "hits"))


def hit_text(hit: Hit, rank: int | None = None, width: int = 100) -> str:
    """``1. 0.5321  Title  (2024-05-01 · docs/x.md)`` then the passage, indented."""
    score = "   -  " if hit.score is None else f"{hit.score:.4f}"
    # A title or source spanning lines would break the layout: their whitespace is one space.
    meta = " ".join(_meta_text(hit).split())
    first = f"{'' if rank is None else f'{rank:>2}. '}{score}  {' '.join(label(hit).split())}"
    lines = [first + (f"  ({meta})" if meta else "")]
    shown = hit_passage(hit, limit=width)
    if shown:
        lines.append("      " + shown)
    lines.append("      " + hit.iri)
    if mentions(hit):
        lines.append("      mentions " + ", ".join(short_iri(e) for e in mentions(hit)))
    return "\n".join(lines)


def hits_text(hits: Sequence[Hit], explanation: str, query: str | None,
              run_id: str | None, limit: int = TEXT_HITS) -> str:
    """A result for a terminal: the query and explanation, then the first ``limit`` hits
    and how many more there are."""
    head = f"{query!r}: " if query else ""
    run = f" (run {run_id})" if run_id else ""
    body = [hit_text(hit, rank) for rank, hit in enumerate(hits[:limit], start=1)]
    rest = [f"… {len(hits) - limit} more hits"] if len(hits) > limit else []
    return "\n".join([f"{head}{explanation}{run}", *body, *rest])
