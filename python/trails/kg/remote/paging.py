"""A SELECT result past the server's row limit, read in pages (Virtuoso's ``ResultSetMaxRows``).

Virtuoso cuts a result at ``ResultSetMaxRows`` rows (Debian's default: 10,000) and says so in
an ``X-SPARQL-MaxRows`` header; it sends that header with a result of exactly that many rows
too. Every query is sent as it is first; only a SELECT whose answer carries the header is sent
again, in pages, so a server that never cuts (``oxigraph serve``) sees the same one request.

A page is the query as a subquery, ordered by all its projected variables in a second
subquery, cut by ``LIMIT``/``OFFSET`` outside both::

    SELECT ?a ?b WHERE { { SELECT ?a ?b WHERE { { <the query> } } ORDER BY ?a ?b } }
    LIMIT 9999 OFFSET 19998

The order makes the pages slices of one sequence, so together they are the result, each
solution once (a solution that occurs twice is two equal rows: which of them falls where does
not matter). The ordering stays inside a subquery because Virtuoso refuses an ``ORDER BY``
whose ``LIMIT`` and ``OFFSET`` reach past ``MaxSortedTopRows`` (SR353, an HTTP 500; 10,000
unless set) and sorts a subquery's result whole instead (seen on 7.2.5). Each page asks for one
row less than the limit, so that a full page is not flagged.

A query is paged only when paging cannot change its answer: not one with its own ``LIMIT``,
``OFFSET`` or ``ORDER BY`` (its slice or its order would be lost), nor one with ``FROM``
clauses (a subquery cannot hold them). Those are refused as before, saying why; one whose own
``LIMIT`` is no more than the server's has lost nothing and is returned as it came. The pages are
separate requests: a write between two of them can make the result mix two states.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from trails.errors import SparqlError
from trails.kg.remote.results import QueryAnswer, Response, cut_error, parse_response
from trails.kg.remote.rewrite import QUERY_FORM
from trails.kg.result import QueryResult
from trails.kg.sparql_text import code_only

__all__ = ["own_limit", "page_text", "pageable", "read_all"]

# What a query outside every group may hold that a page cannot keep.
_UNPAGEABLE = re.compile(r"(?<![?$:@\w-])(LIMIT|OFFSET|ORDER|FROM)(?![\w:-])|[{}]",
                         re.IGNORECASE)
_NAME = re.compile(r"\w+")
_NUMBER = re.compile(r"\s*(\d+)")
_NAMES = {"LIMIT": "its own LIMIT", "OFFSET": "its own OFFSET", "ORDER": "its own ORDER BY",
          "FROM": "FROM clauses"}


def pageable(text: str) -> tuple[str, str] | str:
    """``(prologue, query)`` of a SELECT that can be read in pages (the prologue is every
    ``PREFIX``, ``BASE`` and ``DEFINE`` before it), or why it cannot.

    >>> pageable("PREFIX a: <x:> SELECT ?s WHERE { ?s a:p ?o } VALUES ?o { 1 }")
    ('PREFIX a: <x:> ', 'SELECT ?s WHERE { ?s a:p ?o } VALUES ?o { 1 }')
    >>> pageable("SELECT ?s WHERE { { SELECT ?s { ?s ?p ?o } LIMIT 5 } } ORDER BY ?s")
    'it has its own ORDER BY'
    """
    code = code_only(text)
    form = QUERY_FORM.search(code)
    if form is None or form.group(1).upper() != "SELECT":
        return "it is no SELECT query"
    found = _outermost(code, form.end())
    if found is not None:
        return f"it has {_NAMES[found.group(1).upper()]}"
    return text[:form.start()], text[form.start():]


def own_limit(text: str) -> int | None:
    """The ``LIMIT`` of the SELECT ``text`` itself (not of a subquery), if it has one.

    >>> own_limit("SELECT * { { SELECT * { ?s ?p ?o } LIMIT 5 } } OFFSET 2 LIMIT 10")
    10
    """
    code = code_only(text)
    form = QUERY_FORM.search(code)
    found = None if form is None else _outermost(code, form.end(), "LIMIT")
    number = None if found is None else _NUMBER.match(code, found.end())
    return None if number is None else int(number.group(1))


def _outermost(code: str, start: int, word: str | None = None) -> re.Match[str] | None:
    """The first of LIMIT, OFFSET, ORDER and FROM (or ``word``) outside every group."""
    depth = 0
    for found in _UNPAGEABLE.finditer(code, start):
        if found.group() in ("{", "}"):
            depth += 1 if found.group() == "{" else -1
        elif depth == 0 and (word is None or found.group(1).upper() == word):
            return found
    return None


def page_text(prologue: str, query: str, variables: list[str], size: int, offset: int) -> str:
    """The query's solutions ``offset`` to ``offset + size`` in the order of ``variables``."""
    projected = " ".join(f"?{name}" for name in variables)
    # The line break ends a comment the query may end with.
    return (f"{prologue}SELECT {projected} WHERE {{ {{ SELECT {projected} WHERE {{ {{ {query}\n"
            f"}} }} ORDER BY {projected} }} }} LIMIT {size} OFFSET {offset}")


def read_all(post: Callable[[str], Response], text: str, url: str,
             form: str = "SELECT") -> QueryAnswer:
    """The answer to the query ``text`` (``post`` sends a text, the server's response back);
    a SELECT's result cut at the server's row limit is read again in pages.

    Raises:
        SparqlError: the result was cut and cannot be paged (the reason is said), or a page
            was cut too (the server's limit went down meanwhile).
        as ``post`` and :func:`~trails.kg.remote.results.parse_response`.
    """
    response = post(text)
    limit = response.headers.get("x-sparql-maxrows")
    if limit is None or form != "SELECT":
        return parse_response(response, url, form)
    first = parse_response(response, url, form, partial=True)
    cap = int(limit) if limit.strip().isdigit() else 0
    asked = own_limit(text)
    if asked is not None and asked <= cap:  # flagged, yet no row was left out
        return first
    parts = pageable(text)
    variables = first.variables if isinstance(first, QueryResult) else []
    size = cap - 1  # a page of the limit's size would be flagged
    if size < 1:
        parts = "the limit leaves no room for a page"
    elif not variables or not all(map(_NAME.fullmatch, variables)):
        parts = "it has no variables (named in SPARQL) to order its pages by"
    if isinstance(parts, str):
        raise cut_error(url, limit, f", and trails cannot read it in pages: {parts}")
    rows: list[dict[str, Any]] = []
    while True:
        page = post(page_text(*parts, variables, size, len(rows)))
        if page.headers.get("x-sparql-maxrows") is not None:
            raise cut_error(url, page.headers["x-sparql-maxrows"],
                            f" on a page of {size} rows (the limit changed while paging)")
        solutions = parse_response(page, url)
        if not isinstance(solutions, QueryResult):  # pragma: no cover - a SELECT's answer
            raise SparqlError(f"the endpoint {url} answered a SELECT with no rows")
        rows += solutions.raw
        if len(solutions.raw) < size:
            return QueryResult(variables, rows)
