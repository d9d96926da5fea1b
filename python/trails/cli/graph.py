"""``trails load`` and ``trails export``: your own RDF into the graph and the graph out."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from trails.cli._common import open_context
from trails.kg.rdfio import FORMATS
from trails.scopes import check_known_scopes, normalize_scopes

__all__ = ["export", "load"]


def load(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(..., exists=True, dir_okay=False, metavar="FILE",
                                       help="RDF files (.ttl .trig .nt .nq .n3 .rdf .owl .jsonld)."),
    scope: Optional[str] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--scope", metavar="SCOPE",
        help="Put the triples in this scope's graph (default: the default scope)."),
    format: Optional[str] = typer.Option(  # noqa: UP045
        None, "--format", metavar="FORMAT",
        help=f"One of {', '.join(sorted(FORMATS))} (default: from the file suffix)."),
) -> None:
    """Load RDF files into the graph: an ontology, facts about documents, links.

    Each file loads in one transaction: a syntax error names the file, line and column, and
    loads nothing of that file (exit 1).

    Example:

    ```
    trails --db ./kb load ontology.ttl facts.nq
    trails --db ./kb load legal-facts.ttl --scope legal
    ```
    """
    with open_context(ctx, write=True) as opened:
        for file in files:
            count = opened.kg.load(file, format=format, scope=scope)
            typer.echo(f"{file}: {count} quads loaded")


def export(
    ctx: typer.Context,
    format: str = typer.Option("trig", "--format", metavar="FORMAT",
                               help=f"One of {', '.join(sorted(FORMATS))}."),
    scope: Optional[str] = typer.Option(  # noqa: UP045
        None, "--scope", metavar="SCOPE",
        help="Only this scope's triples (a triple format holds one scope: default `default`)."),
    output: Optional[Path] = typer.Option(  # noqa: UP045
        None, "--output", "-o", metavar="FILE", help="Write here instead of standard output."),
) -> None:
    """Export the graph as RDF (read-only): every graph as TriG or N-Quads, or one scope.

    Example:

    ```
    trails --db ./kb export --format nquads -o backup.nq
    trails --db ./kb export --format turtle --scope legal
    ```
    """
    with open_context(ctx) as opened:
        if scope is not None:
            check_known_scopes(normalize_scopes(scope), opened.kg.scopes())
        text = opened.kg.dump(output, format=format, scope=scope)
    if text is not None:
        typer.echo(text, nl=False)
