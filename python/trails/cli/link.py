"""``trails link``: link the current chunks to the graph's entities again (ADR 0031)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Optional

import typer

from trails.cli._common import open_context
from trails.cli.output import print_json, visible
from trails.ingest.linking import DEFAULT_LABEL_PREDICATES, LabelLinker

__all__ = ["link"]


def link(
    ctx: typer.Context,
    scope: Optional[list[str]] = typer.Option(  # noqa: UP045 - typer reads it at runtime
        None, "--scope", metavar="SCOPE", help="Only this scope (repeatable; default: all)."),
    predicate: Optional[list[str]] = typer.Option(  # noqa: UP045
        None, "--predicate", metavar="IRI",
        help="A label predicate: a full IRI, or a prefixed name such as rdfs:label or "
             "skos:prefLabel (repeatable; default: rdfs:label, skos:prefLabel, skos:altLabel, "
             "schema:name)."),
    language: Optional[list[str]] = typer.Option(  # noqa: UP045
        None, "--language", metavar="TAG",
        help="Only labels in this language (repeatable; '' for labels without one)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only JSON: {documents, chunks, added: [[chunk, entity]], "
        "removed, mentions_added, mentions_removed, warnings}."),
) -> None:
    """Link the current chunks to the entities whose labels they name, after the graph's
    entities or labels changed: prints what was added and removed.

    Each batch of documents changes in one graph update; running it again finishes an
    interrupted run and changes nothing more. A scope whose graph holds no labels (an
    ontology loaded into another scope) is named on stderr.

    Example:

    ```
    trails --db ./kb load ontology.ttl && trails --db ./kb link
    ```
    """
    linker = LabelLinker(predicate or DEFAULT_LABEL_PREDICATES, languages=language or None)
    with open_context(ctx, write=True) as opened:
        report = opened.link(linker, scopes=scope or None)
    for warning in report.warnings:
        typer.echo(visible(f"warning: {warning}"), err=True)
    if as_json:
        print_json(asdict(report))
        return
    typer.echo(visible(report.summary()))
    for chunk, entity in report.added:
        typer.echo(visible(f"+ {chunk} trails:mentions {entity}"))
    for chunk, entity in report.removed:
        typer.echo(visible(f"- {chunk} trails:mentions {entity}"))
