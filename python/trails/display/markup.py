"""HTML building blocks: escaping, short IRI links, score bars and tables.

Every value is escaped here, once, so the other display modules never write raw text into
markup. The style is inline in a ``<style>`` scoped by a ``trails-`` class prefix: a notebook
shows it without any extension, and it leaves the page's own styles alone.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

__all__ = ["MAX_ROWS", "STYLE", "escape", "iri_link", "more", "score_bar", "short_iri", "table",
           "wrap"]

# Rows drawn before "… N more": a notebook cell stays readable, the object keeps them all.
MAX_ROWS = 200

# Tables are styled through ``div.trails-box table.trails-table``: a notebook's own rules for
# output tables (JupyterLab's ``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td``, the
# classic Notebook's ``.rendered_html td``) right-align, centre and unborder every cell, and
# they must not outrank these. Every cell is left-aligned, numbers too (in tabular figures, so
# a column of them still lines up): a cell reads like the text around it.
_TABLE = "div.trails-box table.trails-table"
STYLE = f"""<style>
.trails-box{{font-family:system-ui,sans-serif;font-size:13px;line-height:1.4;max-width:60em;
overflow-wrap:anywhere}}
{_TABLE}{{border-collapse:collapse;margin:4px 0;table-layout:auto;font-size:13px}}
{_TABLE} th,{_TABLE} td{{border:none;border-bottom:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top;white-space:normal;overflow-wrap:anywhere;line-height:1.4;
font-variant-numeric:tabular-nums;background:none}}
{_TABLE} th{{background:#f4f4f4}}
.trails-explain{{color:#555;margin:2px 0 6px;text-align:left}}
.trails-meta{{color:#666;font-size:12px}}
.trails-scorecell{{white-space:nowrap}}
.trails-bar{{display:inline-block;width:100px;height:8px;background:#eee;vertical-align:middle}}
.trails-bar-fill{{display:block;height:8px;background:#3b7dd8}}
.trails-box mark{{background:#fff1a8;padding:0}}
.trails-box details summary{{cursor:pointer;color:#666;font-size:12px}}
</style>"""

# The last separator before a position: an IRI is shortened at one, keeping the tail.
_SEPARATOR = re.compile(r"[/#:](?=[^/#:]*$)")
_SAFE_SCHEMES = ("http://", "https://")


# Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): invisible,
# and one in a title, a query or a note would reorder the text after it on its line (the
# explanation, a run id) until the paragraph ends. Marks (U+200E, U+200F) reorder nothing.
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def escape(value: object) -> str:
    r"""``value`` as text safe in HTML content and in a double- or single-quoted attribute;
    a bidirectional control character written out (``\u202e``), shown rather than obeyed.

    >>> escape('<script>"x"</script>')
    '&lt;script&gt;&quot;x&quot;&lt;/script&gt;'
    >>> escape("evil\u202etxt.exe")
    'evil\\u202etxt.exe'
    """
    text = html.escape("" if value is None else str(value), quote=True)
    return _BIDI_CONTROLS.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def short_iri(iri: str, keep: int = 48) -> str:
    """The end of ``iri`` that tells it apart: whole segments (split at ``/``, ``#`` or
    ``:``) from the end until there are at least 16 characters, with an ellipsis in front
    when something was left out; at most ``keep`` characters.

    >>> short_iri("https://trails.dev/id/doc/abc123/v/05b443424e5938a2/c/4")
    '…/05b443424e5938a2/c/4'
    >>> short_iri("https://schema.org/name")
    'https://schema.org/name'
    """
    if len(iri) <= 24:
        return iri
    cut = len(iri)
    while len(iri) - cut < 16:
        found = _SEPARATOR.search(iri, 0, max(cut - 1, 0))
        if found is None:
            return iri if len(iri) <= keep else "…" + iri[-keep:]
        cut = found.start()
    tail = iri[cut:][-keep:]
    return "…" + tail


def iri_link(iri: str) -> str:
    """A short, escaped rendering of ``iri`` whose tooltip holds it whole; a link only for
    http(s) IRIs (never ``javascript:`` or ``data:``)."""
    shown, title = escape(short_iri(iri)), escape(iri)
    if iri.lower().startswith(_SAFE_SCHEMES):
        return (f'<a class="trails-iri" href="{title}" title="{title}" target="_blank" '
                f'rel="noopener noreferrer">{shown}</a>')
    return f'<code class="trails-iri" title="{title}">{shown}</code>'


def score_bar(score: float | None, best: float | None, detail: str = "") -> str:
    """A bar whose filled width is ``score / best`` of its length, with ``detail`` (the score
    components) as its tooltip; empty for a hit without a score (graph mode)."""
    if score is None:
        return '<span class="trails-meta">no score</span>'
    fraction = 0.0 if not best or best <= 0 or score <= 0 else min(1.0, score / best)
    percent = f"{100 * fraction:.1f}"
    return (f'<span class="trails-scorecell"><span class="trails-bar" title="{escape(detail)}" '
            f'data-fraction="{fraction:.4f}"><span class="trails-bar-fill" '
            f'style="width:{percent}%"></span></span> '
            f'<span class="trails-score">{score:.4f}</span></span>')


def table(head: Sequence[str], rows: Iterable[Sequence[str]], css_class: str = "") -> str:
    """A table; ``head`` is text (escaped here), each row's cells are HTML already made safe
    by the caller (through :func:`escape` or the helpers above)."""
    cells = "".join(f"<th>{escape(name)}</th>" for name in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    klass = escape(f"trails-table {css_class}".strip())
    return f'<table class="{klass}"><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>'



def more(left_out: int, noun: str) -> str:
    """The line under a table cut at :data:`MAX_ROWS`: ``… 50 more rows`` (empty for none)."""
    if left_out <= 0:
        return ""
    return f'<p class="trails-meta trails-more">… {left_out} more {escape(noun)}</p>'


def wrap(kind: str, inner: str) -> str:
    """The outer box every object renders in, marked with its kind (``data-trails``)."""
    return f'{STYLE}<div class="trails-box" data-trails="{escape(kind)}">{inner}</div>'
