"""``trails stats`` and ``trails verify``: look at a context and check it."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.console import Console

from trails.cli._common import EXIT_PARTIAL, cell, open_context, print_json, table

__all__ = ["stats", "verify"]


def stats(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON only."),
) -> None:
    """Count documents, vectors, quads and scopes, and name the embedder (read-only).

    Example:

    ```
    trails --db ./kb stats --json
    ```
    """
    with open_context(ctx) as opened:
        counts = opened.stats()
    if as_json:
        print_json(counts)
        return
    rows = table("", "")
    rows.show_header = False
    for key, value in counts.items():
        rows.add_row(key, ", ".join(value) if isinstance(value, list) else cell(value))
    Console().print(rows)


def verify(
    ctx: typer.Context,
    repair: bool = typer.Option(
        False, "--repair", help="Remove what an interrupted ingest left (opens for writing)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON only."),
) -> None:
    """Check that the graph and the vectors agree (read-only unless --repair).

    Exits 0 when consistent and 2 when inconsistencies were found, whether or not --repair
    removed them (run it again to confirm). Repair deletes stale parts and documents that
    cannot be made whole; ingesting their sources again restores them.

    Example:

    ```
    trails --db ./kb verify || trails --db ./kb verify --repair
    ```
    """
    with open_context(ctx, write=repair) as opened:
        report = opened.verify(repair=repair)
    if as_json:
        print_json({"ok": report.ok, **asdict(report)})
    else:
        typer.echo(report.summary())
    if not report.ok:
        raise typer.Exit(EXIT_PARTIAL)
