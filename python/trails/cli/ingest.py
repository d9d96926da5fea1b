"""``trails ingest``: load, chunk, embed and commit files and folders.

The progress bar counts the documents first (a walk of the files, no parsing), so it shows a
true total, chunks per second and the time left; it is drawn on stderr, and only on a
terminal. Ctrl-C stops the run after the step under way: what was committed stays committed
and is summed up, and the command exits 130 (a second Ctrl-C stops at once).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

from trails.cli._common import EXIT_INTERRUPTED, EXIT_PARTIAL, open_context
from trails.cli.output import print_json, visible
from trails.context import Context
from trails.ingest import BatchEmbedded, DocumentStarted, IngestionStats
from trails.ingest import ingest as ingest_events
from trails.ingest.linker_settings import remembered_linker
from trails.ingest.loaders import FileLoader
from trails.ingest.minting import check_base_iri
from trails.ingest.progress import ProgressTracker
from trails.ingest.unread import unread_note

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
    jsonl_text_field: str = typer.Option(
        "text", "--jsonl-text-field", metavar="FIELD",
        help="The field of a JSONL record that holds its text."),
    jsonl_id_field: str = typer.Option(
        "id", "--jsonl-id-field", metavar="FIELD",
        help="The field of a JSONL record that holds its id (a record without one is "
             "identified by its line number, which changes when lines move)."),
    prune: bool = typer.Option(False, "--prune",
                               help="Then delete the documents read from files under these "
                                    "paths that are gone, and records taken out of a JSONL "
                                    "file read whole (each recorded in the audit trail "
                                    "first)."),
    link: bool = typer.Option(False, "--link",
                              help="Link each chunk written to the entities of the scope's "
                                   "graph whose labels it names, with the linker settings last "
                                   "given to trails link (trails link re-links later)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only the run's totals as JSON: {ingested, skipped, failed, "
        "chunks, tokens, seconds, embed_seconds, metadata_updated, pruned, failures: [{source, "
        "reason}], warnings: [{source, message}], interrupted, left_out: {SUFFIX: files of a "
        "type ingest does not read}}."),
) -> None:
    """Ingest files and folders: load, chunk, embed and commit each document.

    Unchanged documents are skipped; a document whose metadata alone changed is updated
    without embedding. With --prune, documents read from files under PATH that were deleted
    since are removed too, and records taken out of a JSONL file this run read whole (no line
    failing): only those (trails records each document's file when it ingests it), never a
    document given from Python or the service, whatever its source label. Prints a summary,
    then each failure as SOURCE: REASON and each warning on stderr, and a note of how many
    files of a folder were left out for their type (.csv, .docx: --include reads text files
    of other types). Exits 2 if any document failed (the others are committed), else 0.

    The progress bar (stderr, on a terminal) shows documents done of the total counted
    before the run, chunks per second and the time left. Ctrl-C stops after the step under
    way, prints what was committed (run the command again for the rest: committed documents
    are skipped) and exits 130.

    Example:

    ```
    trails --db ./kb ingest notes/ README.md --scope team --exclude "drafts/*"
    trails --db ./kb ingest notes/ --prune
    trails --db ./kb ingest notes/ --link
    trails --db ./kb ingest notes/ --json
    ```
    """
    if base_iri is not None:
        check_base_iri(base_iri, "--base-iri", given=True)  # before the context opens to write
    options: dict[str, Any] = {"include": include or None, "exclude": exclude or None,
                               "jsonl_text_field": jsonl_text_field,
                               "jsonl_id_field": jsonl_id_field}
    walk = FileLoader([str(p) for p in paths], **options)
    total = walk.count()  # and the files it leaves out for their type: walk.unread
    with open_context(ctx, write=True) as opened:
        stats, interrupted = _run_ingest(opened, paths, total, quiet, scope=scope,
                                         base_iri=base_iri, prune=prune,
                                         linker=remembered_linker(opened.directory) if link else None, **options)
    if as_json:
        print_json({**asdict(stats),
                    "failures": [{"source": s, "reason": r} for s, r in stats.failures],
                    "warnings": [{"source": s, "message": m} for s, m in stats.warnings],
                    "interrupted": interrupted, "left_out": dict(sorted(walk.unread.items()))})
    else:
        typer.echo(visible(stats.summary()))
    for problem in stats.problems():  # a document's source and error quote what it holds
        typer.echo(visible(problem), err=True)
    if note := unread_note(walk.unread):  # a folder of .docx is not "3 documents" unsaid
        typer.echo(visible(note), err=True)
    if interrupted:
        typer.echo(stats.interrupted("the same command"), err=True)
        raise typer.Exit(EXIT_INTERRUPTED)
    if stats.failed:
        raise typer.Exit(EXIT_PARTIAL)


def _run_ingest(opened: Context, paths: list[Path], total: int | None, quiet: bool,
                **options: Any) -> tuple[IngestionStats, bool]:
    """Run the ingest; its totals, and whether Ctrl-C stopped it."""
    console = Console(stderr=True)
    stats = IngestionStats()
    tracker = ProgressTracker(total)
    columns = (SpinnerColumn(), BarColumn(), TextColumn("{task.description}"))
    with _first_interrupt_stops() as stop, Progress(
            *columns, console=console, disable=quiet or not console.is_terminal) as bar:
        task = bar.add_task(tracker.snapshot().text(), total=total)
        events = ingest_events([str(p) for p in paths], ctx=opened, **options)
        try:
            for event in events:
                # A commit reports its documents one event each: stop only where new work
                # begins, so every document committed is counted in the summary.
                if stop() and isinstance(event, (DocumentStarted, BatchEmbedded)):
                    break
                stats.record(event)
                tracker.record(event)
                bar.update(task, completed=tracker.done, total=tracker.total,
                           description=tracker.snapshot().text())
        finally:
            close = getattr(events, "close", None)  # a generator: its run ends here
            if close is not None:
                close()
        interrupted = stop()
    stats.seconds = tracker.snapshot().elapsed
    return stats, interrupted


@contextmanager
def _first_interrupt_stops() -> Iterator[Any]:
    """While inside, the first SIGINT only asks to stop (the returned callable says whether
    it was asked); the second raises KeyboardInterrupt as usual."""
    asked: list[bool] = []

    def ask(signum: int, frame: Any) -> None:
        asked.append(True)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        previous = signal.signal(signal.SIGINT, ask)
    except ValueError:  # not the main thread: Ctrl-C cannot reach this run anyway
        yield lambda: False
        return
    try:
        yield lambda: bool(asked)
    finally:
        signal.signal(signal.SIGINT, previous)
