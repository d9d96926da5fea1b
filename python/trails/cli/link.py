"""``trails link``: link the current chunks to the graph's entities again (ADR 0031)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Optional

import typer

from trails.cli._common import open_context
from trails.cli.output import print_json, visible
from trails.ingest.linker_settings import remembered_linker
from trails.ingest.linking import LabelLinker

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
    case: Optional[bool] = typer.Option(  # noqa: UP045
        None, "--fold-case/--match-case", help="Fold case before matching (the default)."),
    accents: Optional[bool] = typer.Option(  # noqa: UP045
        None, "--fold-accents/--match-accents", help="Remove accents before matching (the "
        "default)."),
    nested: Optional[bool] = typer.Option(  # noqa: UP045
        None, "--nested/--longest", help="Also link a label found inside a longer one found "
        "at the same place (default: only the leftmost longest)."),
    min_length: Optional[int] = typer.Option(  # noqa: UP045
        None, "--min-length", metavar="N", help="Ignore labels shorter than N characters "
        "(default: 2)."),
    defaults: bool = typer.Option(
        False, "--defaults", help="Forget the settings given before: link with the defaults "
        "(and the options given with this one)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only JSON: {documents, chunks, added: [[chunk, entity]], "
        "removed, mentions_added, mentions_removed, warnings}."),
) -> None:
    """Link the current chunks to the entities whose labels they name, after the graph's
    entities or labels changed: prints what was added and removed.

    The settings given (--predicate, --language, ...) are remembered in trails.json: a later
    trails link or trails ingest --link links the same way until others are given (each
    option given replaces that setting alone; --defaults forgets them all).

    Each batch of documents changes in one graph update; running it again finishes an
    interrupted run and changes nothing more. A scope whose graph holds no labels (an
    ontology loaded into another scope) is named on stderr.

    Example:

    ```
    trails --db ./kb load ontology.ttl && trails --db ./kb link
    ```
    """
    given: dict[str, Any] = {key: value for key, value in {
        "predicates": predicate or None, "languages": language or None, "case": case,
        "accents": accents, "nested": nested, "min_length": min_length}.items()
        if value is not None}
    LabelLinker(**given)  # a bad setting is refused before the context opens
    with open_context(ctx, write=True) as opened:
        linker = (LabelLinker(**given) if defaults
                  else remembered_linker(opened.directory, **given))
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
