"""``trails ingest``: load, chunk, embed and commit files and folders."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from trails.cli._common import EXIT_PARTIAL, open_context
from trails.context import Context
from trails.ingest import BatchEmbedded, IngestionStats
from trails.ingest import ingest as ingest_events
from trails.ingest.minting import check_base_iri

__all__ = ["ingest"]


def ingest(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., exists=True, metavar="PATH",
                                       help="Files or folders (.md .txt .html .jsonl .pdf)."),
    scope: Optional[str] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--scope", metavar="SCOPE", help="Scope to write to (default: default)."),
    base_iri: Optional[str] = typer.Option(  # noqa: UP045
        None, "--base-iri", metavar="IRI", help="Base of minted IRIs (default: the context's)."),
    include: list[str] = typer.Option([], "--include", metavar="GLOB",
                                      help="Only files matching (repeatable)."),
    exclude: list[str] = typer.Option([], "--exclude", metavar="GLOB",
                                      help="Skip files or folders matching (repeatable)."),
    prune: bool = typer.Option(False, "--prune",
                               help="Then delete the documents whose source files under these "
                                    "paths are gone."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Ingest files and folders: load, chunk, embed and commit each document.

    Unchanged documents are skipped; a document whose metadata alone changed is updated
    without embedding. With --prune, documents whose source files under PATH were deleted
    are removed too. Prints a summary, then each failure as SOURCE: REASON and each warning
    on stderr. Exits 2 if any document failed (the others are committed), else 0.

    Example:

    ```
    trails --db ./kb ingest notes/ README.md --scope team --exclude "drafts/*"
    trails --db ./kb ingest notes/ --prune
    ```
    """
    if base_iri is not None:
        check_base_iri(base_iri, "--base-iri")  # before the context is opened for writing
    with open_context(ctx, write=True) as opened:
        stats = _run_ingest(opened, paths, quiet, scope=scope, base_iri=base_iri,
                            include=include or None, exclude=exclude or None, prune=prune)
    typer.echo(stats.summary())
    for source, reason in stats.failures:
        typer.echo(f"{source}: {reason}", err=True)
    for source, message in stats.warnings:
        typer.echo(f"{source}: warning: {message}", err=True)
    if stats.failed:
        raise typer.Exit(EXIT_PARTIAL)


def _run_ingest(opened: Context, paths: list[Path], quiet: bool, **options: Any) -> IngestionStats:
    console = Console()
    stats = IngestionStats()
    started = time.perf_counter()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=quiet or not console.is_terminal) as bar:
        documents = bar.add_task("documents", total=None)
        chunks = bar.add_task("chunks embedded", total=None)
        for event in ingest_events([str(p) for p in paths], ctx=opened, **options):
            done = stats.ingested + stats.skipped + stats.failed
            stats.record(event)
            bar.advance(documents, stats.ingested + stats.skipped + stats.failed - done)
            if isinstance(event, BatchEmbedded):
                bar.advance(chunks, event.chunks)
    stats.seconds = time.perf_counter() - started
    return stats
