"""``trails query`` and ``trails sparql``: retrieve chunks, and query the graph (read-only)."""

from __future__ import annotations

import enum
import json
from typing import Optional

import pyoxigraph as ox
import typer

from trails.cli._common import db_option, open_context
from trails.cli.arguments import bindings, read_query
from trails.cli.output import cell, console, print_hits, print_json, table
from trails.errors import InvalidArgumentError
from trails.retrieval.arguments import MAX_K
from trails.retrieval.retrieve import FUSIONS, MODES, known_scopes, retrieve
from trails.scopes import check_known_scopes, normalize_scopes

__all__ = ["Fusion", "Mode", "query", "sparql"]

# The library's lists, so the choices cannot drift from what retrieve() accepts.
Mode = enum.Enum(  # type: ignore[misc]  # mypy reads only literal members
    "Mode", {m: m for m in MODES}, type=str)
Fusion = enum.Enum(  # type: ignore[misc]  # mypy reads only literal members
    "Fusion", {f: f for f in (*FUSIONS, "none")}, type=str)


def query(
    ctx: typer.Context,
    text: str = typer.Argument(..., metavar="TEXT", help="The question, in natural language."),
    mode: Mode = typer.Option(Mode["hybrid"], "--mode", help="vector: nearest chunks; hybrid: rank "
                              "the --sparql filter's candidates; graph: the filter's IRIs."),
    k: int = typer.Option(10, "--k", "-k", min=1, max=MAX_K,
                          help=f"At most this many hits (1 to {MAX_K:,})."),
    sparql: Optional[str] = typer.Option(  # noqa: UP045 - typer reads it at runtime
        None, "--sparql", metavar="QUERY_OR_FILE",
        help="Filter: a SELECT of one variable (chunk or document IRIs), given inline, as a "
             "file holding it, or - for stdin."),
    bind: list[str] = typer.Option(
        [], "--bind", metavar="NAME=VALUE",
        help="Bind ?NAME in the filter (repeatable). VALUE is typed: 2024-01-01 date, "
             "ISO datetime, 42 int, 1.5 float, true/false bool, `<http://...>` IRI, else "
             "string; force a type with NAME:TYPE=VALUE (str int float bool date datetime iri)."),
    scope: list[str] = typer.Option([], "--scope", metavar="SCOPE",
                                    help="Scope to search (repeatable; default: default)."),
    fusion: Fusion = typer.Option(
        Fusion["auto"], "--fusion",
        help="How hybrid ranks: auto fuses the vector and keyword rankings, each weighed by "
             "its own evidence of quality; rrf and weighted fuse them plainly; none ranks by "
             "vector score alone."),
    why: bool = typer.Option(
        False, "--why", help="Show for each hit the filter's solution that admitted it."),
    caller: Optional[str] = typer.Option(  # noqa: UP045 - typer reads it at runtime
        None, "--caller", metavar="NAME",
        help="Who searches, for the audit trail (default: TRAILS_CALLER, else the login)."),
    min_score: Optional[float] = typer.Option(  # noqa: UP045
        None, "--min-score", metavar="SCORE",
        help="Drop hits whose final score is below SCORE; its scale is the fusion's: cosine "
             "in [-1, 1] for --mode vector or --fusion none, 0 to 1 for auto, tiny rank sums "
             "for rrf (see docs/retrieval.md). Not with --mode graph (no scores)."),
    local: bool = typer.Option(
        False, "--local",
        help="Answer in this process even when a service (`trails serve`) serves the "
             "directory; without it, a running service answers (its warm model makes that "
             "fast) and records the search under its local key's label."),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print only the whole result as JSON: {hits: [{iri, score, components, document, "
             "title, date, source, snippet, admitted_by, metadata}], mode, plan, candidates, "
             "exhaustive, rankings, fusion_weights, notes, run_id}."),
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
        --sparql 'SELECT ?iri WHERE { ?iri schema:isPartOf <trails://local/doc/notes.md> }'
    trails --db ./kb query "release notes" --mode vector -k 3 --json
    trails --db ./kb query "release notes" --mode vector --min-score 0.4
    ```
    """
    del local  # read by trails.cli.launch: with it, a service never answers this command
    if mode.value == "graph" and sparql is None:
        raise InvalidArgumentError(
            "--mode graph needs --sparql QUERY_OR_FILE, a filter selecting the IRIs")
    sparql_filter = None if sparql is None else read_query(sparql, "--sparql")
    with open_context(ctx) as opened:
        hits = retrieve(text, opened, mode=mode.value, k=k, sparql_filter=sparql_filter,
                        bindings=bindings(bind), scope=scope or None,
                        fusion=None if fusion.value == "none" else fusion.value,
                        caller=caller, why=why or None, min_score=min_score)
        empty = not hits and opened.vectors.count() == 0
    if empty:  # on stderr, exit 0: an empty answer is an answer, but this one has a cause
        typer.echo(f"note: this context holds no documents yet; add some with `trails --db "
                   f"{db_option(ctx)} ingest PATH...` (files or folders: .md .txt .html "
                   ".jsonl .pdf)", err=True)
    if as_json:
        for note in hits.notes:  # stdout holds only the JSON; a short list says why on stderr
            if note.startswith("min_score"):
                typer.echo(note, err=True)
        print_json(hits.to_dict())
        return
    print_hits(hits, why)





def sparql(
    ctx: typer.Context,
    query_or_file: str = typer.Argument(
        ..., metavar="QUERY_OR_FILE", help="A SPARQL query, a file holding one, or - for stdin."),
    bind: list[str] = typer.Option([], "--bind", metavar="NAME=VALUE",
                                   help="Bind ?NAME (repeatable; typed as in `trails query`)."),
    scope: list[str] = typer.Option(
        [], "--scope", metavar="SCOPE",
        help="Query only these scopes (repeatable; default: all, as one graph)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON only."),
) -> None:
    """Run a read-only SPARQL query: SELECT prints rows, ASK true/false, CONSTRUCT N-Triples.

    The prefixes trails:, schema:, rdf:, rdfs:, xsd: are predefined.

    Example:

    ```
    trails --db ./kb sparql "SELECT ?doc ?date WHERE { ?doc schema:dateCreated ?date }"
    trails --db ./kb sparql "ASK { ?d schema:dateCreated ?c FILTER(?c >= ?since) }" \\
        --bind since=2024-01-01
    ```
    """
    text = read_query(query_or_file)
    with open_context(ctx) as opened:
        if scope:
            check_known_scopes(normalize_scopes(scope), known_scopes(opened))
        result = opened.kg.query(text, bindings(bind), scopes=scope or None)
    if isinstance(result, bool):
        typer.echo(json.dumps(result))
    elif isinstance(result, list):
        _print_triples(result, as_json)
    elif as_json:
        print_json(list(result))
    else:
        rows = table(*result.variables)
        for row in result:
            rows.add_row(*(cell(row[v]) for v in result.variables))
        console().print(rows)
        typer.echo(f"{len(result)} rows")





def _print_triples(triples: list[ox.Triple], as_json: bool) -> None:
    if as_json:
        print_json([[str(t.subject), str(t.predicate), str(t.object)] for t in triples])
    else:
        for t in triples:
            typer.echo(f"{t.subject} {t.predicate} {t.object} .")
