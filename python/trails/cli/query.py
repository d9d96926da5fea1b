"""``trails query`` and ``trails sparql``: retrieve chunks, and query the graph (read-only)."""

from __future__ import annotations

import json
from typing import Any, Optional

import pyoxigraph as ox
import typer

from trails.cli._common import db_option, open_context
from trails.cli.arguments import REPEATED, SEARCH_OPTIONS, bindings, read_query, search_fields
from trails.cli.output import (
    cell,
    console,
    empty_context_note,
    escaped,
    print_json,
    print_result,
    table,
)
from trails.context import Context
from trails.kg.result import results_json
from trails.kg.sparql import parses
from trails.kg.terms import check_text
from trails.kg.variables import check_bound
from trails.retrieval.binding_notes import string_notes
from trails.retrieval.mismatched import mismatch_notes
from trails.retrieval.request import SearchRequest
from trails.retrieval.retrieve import known_scopes, retrieve
from trails.scopes import check_known_scopes, normalize_scopes

__all__ = ["query", "search_option", "sparql"]

# What each field of a search is, as the request states it (its description, choices, limits
# and default): the options' help cannot drift from what the request accepts.
_FIELDS: dict[str, dict[str, Any]] = SearchRequest.model_json_schema()["properties"]


def search_option(field: str, more: str = "", *, metavar: str | None = None) -> Any:
    """The ``trails query`` option for a field of :class:`~trails.SearchRequest`: its help
    is the field's description (then ``more``), its choices and limits the request's. The
    value is taken as text and checked by the request, never by the option."""
    schema = _FIELDS[field]
    choices = [c for part in schema.get("anyOf", [schema]) for c in part.get("enum", [])]
    described = str(schema.get("description", ""))
    limits = (f"From {schema['minimum']:,} to {schema['maximum']:,}." if "maximum" in schema
              else "")
    default = schema.get("default")  # as text, the request reads it as it reads the option
    return typer.Option(
        False if field == "why" else [] if field in REPEATED else
        None if default is None else str(default), *SEARCH_OPTIONS[field],
        metavar=metavar or (f"<{'|'.join(choices)}>" if choices else None),
        show_default=default not in (None, False),
        help=" ".join(t for t in (described[:1].upper() + described[1:], limits, more) if t))


def query(
    ctx: typer.Context,
    text: str = typer.Argument(..., metavar="TEXT", help="The question, in natural language."),
    mode: Optional[str] = search_option("mode"),  # noqa: UP045 - typer reads it at runtime
    k: Optional[str] = search_option("k", metavar="INTEGER"),  # noqa: UP045
    sparql: Optional[str] = search_option(  # noqa: UP045
        "filter", "Given inline, as a file holding it, or - for stdin.",
        metavar="QUERY_OR_FILE"),
    bind: list[str] = search_option(  # noqa: B008 - a typer option, read at runtime
        "bindings", "Repeatable: NAME=VALUE binds ?NAME. VALUE is typed: 2024-01-01 date, "
        "ISO datetime, 42 int, 1.5 float, true/false bool, `<http://...>` IRI, else string; "
        "force a type with NAME:TYPE=VALUE (str int float bool date datetime iri).",
        metavar="NAME=VALUE"),
    scope: list[str] = search_option(  # noqa: B008 - a typer option, read at runtime
        "scopes", "Repeatable.", metavar="SCOPE"),
    fusion: Optional[str] = search_option("fusion"),  # noqa: UP045
    min_score: Optional[str] = search_option("min_score", metavar="SCORE"),  # noqa: UP045
    fallback: Optional[str] = search_option("fallback"),  # noqa: UP045
    now: Optional[str] = search_option("now", metavar="DATETIME"),  # noqa: UP045
    why: bool = search_option("why"),
    caller: Optional[str] = typer.Option(  # noqa: UP045 - typer reads it at runtime
        None, "--caller", metavar="NAME",
        help="Who searches, for the audit trail (default: TRAILS_CALLER, else the login)."),
    local: bool = typer.Option(
        False, "--local",
        help="Answer in this process even when a service (`trails serve`) serves the "
             "directory; without it, a running service answers (its warm model makes that "
             "fast) and records the search under its local key's label."),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print only the whole result as JSON: {hits: [{iri, score, components, document, "
             "title, date, source, snippet, admitted_by, metadata}], mode, plan, candidates, "
             "exhaustive, rankings, fusion_weights, notes, degraded, filter_path, run_id}; "
             "each note is also a line on stderr."),
) -> None:
    """Retrieve the chunks that best answer TEXT (read-only).

    The filter may select chunk IRIs or document IRIs (a document admits all its chunks);
    without one, hybrid ranks every chunk of the scope.

    Example:

    ```
    cat > since.rq <<'EOF'
    SELECT ?iri WHERE {
      ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?created .
      FILTER(?created >= ?since)
    }
    EOF
    trails --db ./kb query "release notes" --sparql since.rq --bind since=2024-01-01
    trails --db ./kb query "release notes" \\
        --sparql 'SELECT ?iri WHERE { ?iri schema:isPartOf <trails://local/doc/README.md> }'
    trails --db ./kb query "release notes" --mode vector -k 3 --json
    trails --db ./kb query "release notes" --mode vector --min-score 0.4
    ```
    """
    del local  # read by trails.cli.launch: with it, a service never answers this command
    # One check for every option of the search: the request's, worded as everywhere else.
    request = SearchRequest(**search_fields(text, {
        "mode": mode, "k": k, "filter": sparql, "bindings": bind, "scopes": scope,
        "fusion": fusion, "min_score": min_score, "fallback": fallback, "now": now,
        "why": why}))
    with open_context(ctx) as opened:
        hits = retrieve(request.query, opened, **request.options(), caller=caller)
        empty = not hits and opened.vectors.count() == 0
    if empty:  # on stderr, exit 0: an empty answer is an answer, but this one has a cause
        typer.echo(empty_context_note(str(db_option(ctx))), err=True)
    print_result(hits, why, as_json)


def sparql(
    ctx: typer.Context,
    query_or_file: str = typer.Argument(
        ..., metavar="QUERY_OR_FILE", help="A SPARQL query, a file holding one, or - for stdin."),
    bind: list[str] = typer.Option([], "--bind", metavar="NAME=VALUE",
                                   help="Bind ?NAME (repeatable; typed as in `trails query`)."),
    scope: list[str] = typer.Option(
        [], "--scope", metavar="SCOPE",
        help="Query only these scopes (repeatable; default: all, as one graph)."),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print only the answer in the SPARQL 1.1 Query Results JSON Format, each term "
             "typed: {head: {vars}, results: {bindings: [{VAR: {type: uri|literal|bnode, "
             "value, datatype, xml:lang}}]}}; ASK {head: {}, boolean}; CONSTRUCT and DESCRIBE "
             "as bindings of subject, predicate, object."),
) -> None:
    """Run a read-only SPARQL query: SELECT prints rows, ASK true/false, CONSTRUCT N-Triples.

    The prefixes trails:, schema:, rdf:, rdfs:, xsd: are predefined. A variable used in a
    FILTER that nothing binds is an error; an empty answer whose --bind value could never
    match (an IRI given without <...>, a date compared with dateTimes) gets a note on stderr.

    Example:

    ```
    trails --db ./kb sparql "SELECT ?doc ?date WHERE { ?doc schema:dateCreated ?date }"
    trails --db ./kb sparql "ASK { ?d schema:dateCreated ?c FILTER(?c >= ?since) }" \\
        --bind since=2024-01-01
    ```
    """
    text = check_text(read_query(query_or_file), "QUERY_OR_FILE")  # as a search's filter
    with open_context(ctx) as opened:
        if scope:
            check_known_scopes(normalize_scopes(scope), known_scopes(opened))
        given = bindings(bind)
        if parses(text, opened.kg.prefixes):  # else the query says where it does not parse
            check_bound(text, given or ())  # a forgotten --bind is no "0 rows"
        result = opened.kg.query(text, given, scopes=scope or None)
        if result is False or (not isinstance(result, (bool, list)) and len(result) == 0):
            for note in _why_nothing(opened, text, given, scope or None):
                typer.echo(f"note: {note}", err=True)  # exit 0: an empty answer is an answer
    if as_json:
        print_json(results_json(result))
    elif isinstance(result, bool):
        typer.echo(json.dumps(result))
    elif isinstance(result, list):
        # pyoxigraph's writer, not str(): a triple term object needs its <<( )>> to load back
        written = ox.serialize(result, format=ox.RdfFormat.N_TRIPLES) or b""
        typer.echo(escaped(written.decode("utf-8")), nl=False)
    else:
        rows = table(*result.variables)
        for row in result:
            rows.add_row(*(cell(row[v]) for v in result.variables))
        console().print(rows)
        typer.echo(f"{len(result)} rows")


def _why_nothing(opened: Context, text: str, given: dict[str, Any] | None,
                 scopes: list[str] | None) -> list[str]:
    """What a search would say of an empty answer: a string binding that reads as an IRI or
    a date, a compared variable whose values no binding of its type can meet."""
    try:
        found = mismatch_notes(opened.kg, text, given, scopes)
    except Exception:  # noqa: BLE001 - a note is never worth the answer it explains
        found = []
    return string_notes(given) + found
