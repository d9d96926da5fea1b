"""``trails audit`` (list and show recorded runs, give feedback on one) and ``trails replay``
(run one again)."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from typing import Optional

import typer
from rich.text import Text

from trails.audit import (
    ActivityRecord,
    DeletionRecord,
    FeedbackRecord,
    SearchRecord,
    SparqlQueryRecord,
)
from trails.cli._common import context, db_option, has_context, no_context
from trails.cli.output import console, print_json, solution_text, table, visible
from trails.context import Context
from trails.errors import ContextLockedError, InvalidArgumentError, StorageError
from trails.retrieval.replay import replay as replay_run
from trails.retrieval.retrieve import known_scopes

__all__ = ["app", "replay"]

app = typer.Typer(no_args_is_help=False, add_completion=False)
_RUN = typer.Argument(..., metavar="RUN", help="A run id (32 hexadecimal digits, as `trails "
                      "audit` lists them), a unique prefix of 4 or more of them, or "
                      "urn:trails:run:ID.")


@app.callback(invoke_without_command=True)
def audit(
    ctx: typer.Context,
    since: Optional[str] = typer.Option(  # noqa: UP045 - typer reads it at runtime
        None, "--since", metavar="DATE", help="Only runs started at or after DATE (ISO 8601; UTC unless it carries an offset, "
        "e.g. 2024-05-01T09:00+02:00)."),
    until: Optional[str] = typer.Option(  # noqa: UP045
        None, "--until", metavar="DATE", help="Only runs started before DATE (ISO 8601, as "
        "--since; --since 2024-05-01 --until 2024-05-02 is that day in UTC)."),
    caller: Optional[str] = typer.Option(  # noqa: UP045
        None, "--caller", metavar="NAME", help="Only runs by this caller."),
    level: Optional[str] = typer.Option(  # noqa: UP045
        None, "--level", metavar="LEVEL", help="Only runs that read a scope of this security "
        "level (`trails init --security-level SCOPE=LEVEL`)."),
    scope: Optional[str] = typer.Option(  # noqa: UP045
        None, "--scope", metavar="SCOPE", help="Only runs that read this scope (searches in "
        "it, SPARQL queries confined to it or to no scope)."),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many runs, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print the records as JSON."),
) -> None:
    """List recorded searches, deletions and feedback, newest first (see `trails audit show RUN`).

    Every search on a context that audits is recorded as a PROV-O activity in its audit
    graph (urn:trails:audit), which `trails sparql` can query. Listing folds what other
    processes recorded into the graph when no other process is writing.

    Example:

    ```
    trails --db ./kb audit --since 2024-05-01 --caller alice
    trails --db ./kb audit --since 2024-05-01 --until 2024-06-01 --scope legal
    trails --db ./kb audit --level protected
    trails --db ./kb audit show 5a72...
    trails --db ./kb audit feedback 5a72... --down --note "cites a withdrawn claim"
    ```
    """
    if ctx.invoked_subcommand is not None:
        return
    start, end = _date(since, "--since"), _date(until, "--until")
    with _auditing(ctx) as opened:
        runs = opened.audit.activities(since=start, until=end, caller=caller, level=level,
                                       scope=scope, limit=limit)
        known = known_scopes(opened) if scope is not None else []
        aside = opened.audit.set_aside()
    if aside:  # not listed: a listing must not pass for the whole trail
        typer.echo(f"note: {aside} line(s) of the audit log could not be read as records and "
                   f"are kept aside, not listed (a line a crash cut short, or one edited by "
                   f"hand): read them in audit/rejected.txt of the context {opened.directory}", err=True)
    if scope is not None and scope not in known and not any(
            scope in (getattr(run, "scopes", None) or ()) for run in runs):
        # A scope gone since is still worth asking about; a typo is worth saying, since the
        # queries confined to no scope match any name.
        typer.echo(f"note: no scope {scope!r} holds anything now, and no run listed names it "
                   f"(the scopes now: {', '.join(known) or 'none'}); check the name", err=True)
    if as_json:
        print_json([r.to_json() for r in runs])
        return
    if not runs:
        filtered = any(option is not None for option in (since, until, caller, level, scope))
        typer.echo("no recorded runs" + (" matching these options" if filtered else
                                         "; searches are recorded while auditing is on"))
        return
    rows = table("run", "started", "caller", "kind", "what", "hits", ids=("run",))
    for run in runs:
        rows.add_row(run.run_id, run.started[:19].replace("T", " "), run.caller, run.kind,
                     *_summary(run))
    console().print(rows)


@app.command("show")
def show(
    ctx: typer.Context,
    run: str = _RUN,
    as_json: bool = typer.Option(False, "--json", help="Print the record as JSON."),
) -> None:
    """Print one recorded run whole: what was asked, against which state, what came back and
    why each hit was allowed."""
    with _auditing(ctx) as opened:
        record = opened.audit.get(run)
        feedback = opened.audit.feedback_on(record.run_id)
    if as_json:
        print_json({**record.to_json(), "feedback": [f.to_json() for f in feedback]})
        return
    out = console()
    for name, value in record.to_json().items():
        if name not in ("hits", "documents") and value not in (None, [], {}, ""):
            out.print(Text.assemble((name, "bold"), f": {visible(str(value))}"),
                      highlight=False)
    if isinstance(record, SearchRecord):
        rows = table("#", "score", "iri", "admitted by")
        for hit in record.hits:
            rows.add_row(str(hit.rank), "" if hit.score is None else f"{hit.score:.4f}", hit.iri,
                         solution_text(hit.admitted_by))
        out.print(rows)
    elif isinstance(record, DeletionRecord):
        for doc in record.documents:
            out.print(f"deleted {visible(doc)}", highlight=False, markup=False)
    for given in feedback:
        out.print(visible(f"feedback {given.rating} by {given.caller} at {given.started[:19]}"
                          + ("" if given.note is None else f": {given.note}")),
                  highlight=False, markup=False)


@app.command("feedback")
def feedback(
    ctx: typer.Context,
    run: str = _RUN,
    down: bool = typer.Option(False, "--down", help="The answer was bad."),
    up: bool = typer.Option(False, "--up", help="The answer was good."),
    note: Optional[str] = typer.Option(  # noqa: UP045
        None, "--note", metavar="TEXT", help="What was right or wrong with it."),
    caller: Optional[str] = typer.Option(  # noqa: UP045
        None, "--caller", metavar="NAME", help="Who says so (default: TRAILS_CALLER, login)."),
    as_json: bool = typer.Option(False, "--json", help="Print the feedback record as JSON."),
) -> None:
    """Record feedback on a recorded run: --up or --down, with an optional --note. It is kept
    as its own activity beside the run, and `trails audit show RUN` lists it.

    An unknown run is refused and nothing is recorded.
    """
    if up == down:
        raise InvalidArgumentError("give exactly one of --up and --down")
    with _auditing(ctx) as opened:
        record = opened.audit.feedback(run, "up" if up else "down", note=note, caller=caller)
    if as_json:
        print_json(record.to_json())
        return
    typer.echo(f"recorded {record.rating} on {record.run} as {record.run_id}")


def replay(
    ctx: typer.Context,
    run: str = typer.Argument(..., metavar="RUN", help="The id of the recorded search (32 "
                              "hexadecimal digits, as `trails audit` lists them, or a unique "
                              "prefix of 4 or more)."),
    query: Optional[str] = typer.Option(  # noqa: UP045
        None, "--query", metavar="TEXT",
        help="The query text, when the context kept only its SHA-256."),
    caller: Optional[str] = typer.Option(  # noqa: UP045
        None, "--caller", metavar="NAME", help="Who replays (default: TRAILS_CALLER, login)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Run a recorded search again with the same filter, bindings, scopes, mode and fusion,
    and print what changed: hits the same, moved, new or gone, and whether the graph, the
    store or the embedder changed since.

    Exit code 0 whether or not the answer changed; read the output (or --json) for that.
    """
    with _auditing(ctx) as opened:
        report = replay_run(opened, run, query=query, caller=caller)
    if as_json:
        print_json(report.to_dict())
        return
    out = console()
    changed = ", ".join(f"{part} {_changed(flag)}" for part, flag in report.changed.items())
    out.print(f"replay of {report.original.run_id}"
                  f"{'' if report.result.run_id is None else ' as ' + report.result.run_id}: "
                  f"{'the same answer' if report.identical else 'the answer changed'} "
                  f"({changed})", highlight=False)
    rows = table("change", "iri", "was", "now")
    for iri in report.same:
        rank = str(_rank(report.original, iri))
        rows.add_row("same", iri, rank, rank)
    for iri, before, after in report.moved:
        rows.add_row("moved", iri, str(before), str(after))
    for iri, after in report.new:
        rows.add_row("new", iri, "", str(after))
    for iri, before in report.gone:
        rows.add_row("gone", iri, str(before), "")
    out.print(rows)
    for note in report.notes:
        out.print(f"note: {visible(note)}", highlight=False, markup=False)


@contextlib.contextmanager
def _auditing(ctx: typer.Context) -> Iterator[Context]:
    """The context, writable when possible (then pending records are folded), else
    read-only (they are read from the log): another process writes it, or it cannot be
    written here (a read-only mount, such as a snapshot kept for an audit)."""
    db = db_option(ctx)
    if not has_context(db):
        raise no_context(db)
    try:
        opened = context(db)
    except (ContextLockedError, StorageError):
        opened = context(db, read_only=True)
    with opened:
        yield opened


def _date(text: str | None, option: str) -> dt.datetime | None:
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(f"{option} {text!r} is no date; use ISO 8601, e.g. "
                                   "2024-05-01 or 2024-05-01T09:00:00+00:00") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _summary(run: ActivityRecord) -> tuple[str, str]:
    if isinstance(run, SearchRecord):
        asked = run.query if run.query is not None else f"sha256:{run.query_sha256[:12]}"
        scoped = f" in {','.join(run.scopes)}" if run.scopes else ""
        filtered = " filtered" if run.filter else ""
        return f"{run.mode}{filtered}{scoped}: {' '.join(asked.split())}"[:120], str(len(run.hits))
    if isinstance(run, DeletionRecord):
        return f"deleted ({run.reason})", str(len(run.documents))
    if isinstance(run, SparqlQueryRecord):
        asked = run.query if run.query is not None else f"sha256:{run.query_sha256[:12]}"
        scoped = f" in {','.join(run.scopes)}" if run.scopes else ""
        return f"sparql {run.form}{scoped}: {' '.join(asked.split())}"[:120], str(run.answers)
    if isinstance(run, FeedbackRecord):
        said = "" if run.note is None else f": {' '.join(run.note.split())}"
        return f"{run.rating} on {run.run}{said}"[:120], ""
    return "", ""





def _changed(flag: bool | None) -> str:
    return "unknown" if flag is None else "changed" if flag else "unchanged"


def _rank(record: SearchRecord, iri: str) -> int | None:
    return next((h.rank for h in record.hits if h.iri == iri), None)

