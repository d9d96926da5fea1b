"""``trails stats``, ``trails verify``, ``trails delete`` and ``trails prune``: look at a context,
check it, remove documents."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import typer

from trails.cli._common import EXIT_PARTIAL, db_option, open_context
from trails.cli.exits import with_partial
from trails.cli.output import cell, console, print_json, table, visible
from trails.context import Context
from trails.errors import ConfigurationError, ContextLockedError
from trails.ingest.expiry import ExpiredDocument
from trails.ingest.retention import prune_expired, stopped_note
from trails.vector.stores.base import VersionedStore
from trails.writer_lock import hold_for_writing

__all__ = ["delete", "prune", "stats", "verify"]


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
    console().print(rows)


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
    busy = not repair and not report.ok and _being_written(db_option(ctx))
    if as_json:
        print_json({"ok": report.ok, **asdict(report), "being_written": busy})
    else:
        typer.echo(visible(report.summary()))
    if busy:
        typer.echo("note: another process is writing this context: what it has not finished "
                   "yet reads as the parts an interrupted ingest leaves. Run verify again when "
                   "it is done before repairing.", err=True)
    if not report.ok:
        raise typer.Exit(EXIT_PARTIAL)


def _being_written(db: Path) -> bool:
    """Whether another process holds the context's writer lock (taken and let go at once:
    only after a read that found damage, so a writer starting just then rarely meets it)."""
    try:
        held = hold_for_writing(db)
    except ContextLockedError:
        return True
    if held is not None:
        held.close()
    return False


def delete(
    ctx: typer.Context,
    iris: list[str] = typer.Argument(..., metavar="IRI", help="Document IRIs."),
    all_triples: bool = typer.Option(
        False, "--all-triples",
        help="Also remove the triples you added about the documents and their chunks."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only JSON: {deleted: [IRI...], all_triples}."),
) -> None:
    """Delete documents: their vectors and the triples trails wrote about them.

    Triples you added about a document survive unless --all-triples. Exits 1, deleting
    nothing, when an IRI is not a document of this context. An error part way (a full disk)
    stops it with the error's exit code, naming the documents deleted before it and those
    not deleted (--json: {deleted, not_deleted, all_triples, error: {type, message,
    exit_code}}).

    Example:

    ```
    trails --db ./kb delete trails://local/doc/old.md
    ```
    """
    with open_context(ctx, write=True) as opened:
        # A document is what trails wrote one as (its trails:scope, or its recorded version
        # when its triples were lost); a node merely typed trails:Document by hand is none,
        # and deleting it would delete nothing.
        known = set(opened.kg.select_iris(
            "SELECT ?doc WHERE { ?doc trails:scope ?s }", scopes=opened.kg.scopes()))
        if isinstance(opened.vectors, VersionedStore):
            known |= set(opened.vectors.current_versions(iris))
        missing = [iri for iri in iris if iri not in known]
        if missing:
            raise ConfigurationError(_not_documents(opened, db_option(ctx), missing))
        wanted, deleted = list(dict.fromkeys(iris)), list[str]()
        for iri in wanted:
            try:
                opened.delete_document(iri, include_user_triples=all_triples)
            except Exception as exc:
                _stopped(exc, deleted, [i for i in wanted if i not in deleted],
                         {"all_triples": all_triples})
                raise
            deleted.append(iri)
            if not as_json:
                typer.echo(visible(f"deleted {iri}"))
    if as_json:
        print_json({"deleted": deleted, "all_triples": all_triples})


def _stopped(exc: Exception, deleted: list[str], left: list[str],
             fields: dict[str, object]) -> None:
    """Say, on an error that stopped a deletion of several documents, which were deleted
    before it: in the error's message (a note) and, with --json, in the JSON printed with
    the error."""
    if deleted:
        exc.add_note(stopped_note(deleted, left))
    with_partial(exc, {"deleted": deleted, "not_deleted": left, **fields})


def _not_documents(opened: Context, db: Path, missing: list[str]) -> str:
    """Why ``missing`` are no documents: a file a document was read from is named with the
    document's IRI (which delete takes), anything else with how to list the documents."""
    for given in missing:
        found = opened.kg.select_iris(
            "SELECT DISTINCT ?doc WHERE { ?doc trails:scope ?scope "
            "{ ?doc trails:source ?given } UNION { ?doc trails:sourceFile ?file } }",
            {"given": given, "file": os.path.abspath(given)}, scopes=opened.kg.scopes())
        if found:
            return (f"{given} is the file of {', '.join(sorted(found))}, and delete takes the "
                    f"document's IRI: trails --db {db} delete {' '.join(sorted(found))}")
    return (f"not a document of this context: {', '.join(missing)} (list documents with "
            "`trails sparql 'SELECT ?d WHERE { ?d a trails:Document }'`)")


def prune(
    ctx: typer.Context,
    expired: bool = typer.Option(
        False, "--expired", help="Delete the documents whose expiry has passed (any scope)."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Only list what would be deleted (opens read-only)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON only."),
) -> None:
    """Delete expired documents: their vectors and the triples trails wrote about them.

    A document expires at its `expires` field (front matter or metadata) or by its scope's
    retention rule; expired documents are already never retrieved, and this removes them
    from the graph and the vector store. Prints each document with its expiry (--json: a
    list of {"iri", "expires"}). An error part way stops it with the error's exit code,
    naming the documents deleted before it (--json: {dry_run, documents, error: {type,
    message, exit_code}}, documents being those deleted). Documents whose source files are gone are pruned by
    `trails ingest PATH --prune` instead.

    Example:

    ```
    trails --db ./kb prune --expired --dry-run
    trails --db ./kb prune --expired --json
    ```
    """
    if not expired:
        raise ConfigurationError(
            "say what to prune: --expired deletes expired documents (documents whose source "
            "files are gone are pruned by `trails ingest PATH --prune`)")
    done: list[ExpiredDocument] = []
    with open_context(ctx, write=not dry_run) as opened:
        try:  # what was deleted is known even when a later document fails
            removed = opened.prune_expired(dry_run=True) if dry_run else prune_expired(
                opened, on_deleted=done.append)
        except Exception as exc:  # the note of what was deleted is prune_expired's own
            with_partial(exc, {"dry_run": dry_run, "documents": [
                {"iri": d.iri, "expires": d.expires.isoformat()} for d in done]})
            raise
    if as_json:
        print_json({"dry_run": dry_run, "documents": [
            {"iri": document.iri, "expires": document.expires.isoformat()}
            for document in removed]})
        return
    verb = "would delete" if dry_run else "deleted"
    for document in removed:
        typer.echo(visible(f"{verb} {document.iri} (expired {document.expires.isoformat()})"))
    typer.echo(f"{len(removed)} expired document{'s' if len(removed) != 1 else ''} "
               f"{'would be deleted' if dry_run else 'deleted'}")
