"""The typer application: the root options, the commands, and how errors become exit codes.

Each command lives in the module of its group (``setup``, ``ingest``, ``query``,
``maintenance``, ``eval``, ``serve``) and is registered here. Errors become one line on stderr at the
edge (:meth:`_Group.main`), never a traceback; with ``--json`` on the command line, also one
``{"error": {"type", "message", "exit_code"}}`` object on stdout. Exit codes:

- ``0``: success.
- ``1``: a user error (bad option or argument, malformed SPARQL, missing context, the
  context is locked by another writer...). Click's usage errors exit 1 here too, not 2.
- ``2``: partial failure (``ingest`` with failed documents, ``verify`` finding problems).
- ``3``: the context's files cannot be read or written; ``4``: a bug in trails.
- ``130``: interrupted by Ctrl-C (``ingest`` first sums up what it committed).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from trails.cli import audit, graph, ingest, link, maintenance, mcp, query, serve, setup
from trails.cli import eval as evaluation
from trails.cli.arguments import SEARCH_OPTIONS
from trails.cli.exits import (
    EXIT_BROKEN_CONTEXT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USER_ERROR,
    fail,
    json_wanted,
    partial_of,
)
from trails.errors import ConfigurationError, StorageError, TrailsError
from trails.retrieval.arguments import KEYWORDS_MEANT

__all__ = ["app", "main"]


def _click_class(name: str) -> type[Exception]:
    """One of the click exceptions typer raises (typer >= 0.20 vendors click, older uses it)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


_UsageError: Any = _click_class("UsageError")
_ClickException: Any = _click_class("ClickException")


def _usage_message(exc: Any, where: str) -> str:
    """click's message, unless it is ``--db`` given after the command: then where it goes
    (click would list the command's own options, none of them it); ``-db`` for ``--db``;
    ``--filter`` for ``trails
    query``'s ``--sparql`` (click would suggest ``--caller``); or ``trails query``
    without its question: then what TEXT is, which --mode graph does not read."""
    name = str(getattr(exc, "option_name", "") or "")
    if type(exc).__name__ == "NoSuchOption" and name == "--db" and where != "trails":
        return f"--db goes before the command: trails --db DIR {where.removeprefix('trails ')} ..."
    if type(exc).__name__ == "NoSuchOption" and name == "-d":  # -db DIR, one dash short
        command = where.removeprefix("trails").strip()
        return (f"No such option: -d; the context directory is --db, with two dashes, before "
                f"the command: trails --db DIR {command or 'COMMAND'} ..."
                f"{_dash_hint(exc, where) if command else ''}")
    if type(exc).__name__ == "NoSuchOption" and name == "--filter" and where == "trails query":
        return ("No such option: --filter; the filter is --sparql QUERY_OR_FILE: a SPARQL "
                "SELECT of ?iri, a file holding it, or - for stdin (see 'trails query --help')")
    meant = _option_meant(name) if type(exc).__name__ == "NoSuchOption" else None
    if meant is not None and where == "trails query":
        return f"No such option: {name}; did you mean {meant}? (see 'trails query --help')"
    if (type(exc).__name__ == "MissingParameter" and where == "trails query"
            and getattr(getattr(exc, "param", None), "name", None) == "text"):
        return ("Missing argument 'TEXT': the question, in quotes (--mode graph, which ranks "
                "nothing, takes \"\"): trails --db DIR query \"how do we deploy?\" "
                "(see 'trails query --help')")
    unquoted = _unquoted(exc, where)
    if unquoted is not None:
        return unquoted
    return f"{exc.format_message()} (see '{where} --help'{_dash_hint(exc, where)})"


# The commands whose one argument is text a shell splits when it is not quoted.
_EXTRA = re.compile(r"Got unexpected extra arguments?(?:\(s\))? \((.*)\)", re.DOTALL)
_ONE_TEXT = {"trails query": ("text", "TEXT"), "trails sparql": ("query_or_file", "QUERY_OR_FILE")}


def _unquoted(exc: Any, where: str) -> str | None:
    """For ``trails query how do we deploy``: the question is one argument, to quote (click
    says "Got unexpected extra argument(s) (do we deploy)"); None for any other mistake."""
    extra, context = _EXTRA.fullmatch(exc.format_message()), exc.ctx
    if where not in _ONE_TEXT or context is None or extra is None:
        return None
    name, metavar = _ONE_TEXT[where]
    words = [str(context.params.get(name, "")), extra.group(1)]
    command = where.removeprefix("trails ")
    return (f"{where} takes one {metavar}, and got {len(' '.join(words).split())} words: "
            f"quote it, trails --db DIR {command} {shlex.quote(' '.join(words))} "
            f"(see '{where} --help')")


def _option_meant(option: str) -> str | None:
    """The `trails query` option for a name other libraries give a search's field (``--limit``,
    ``--top-k``, ``-n``: ``-k``), as retrieve() names the keyword meant (KEYWORDS_MEANT)."""
    meant = KEYWORDS_MEANT.get(option.lstrip("-").replace("-", "_").lower())
    field = {"sparql_filter": "filter", "scope": "scopes"}.get(str(meant), meant)
    flags = SEARCH_OPTIONS.get(str(field), ())
    return flags[-1] if flags else None


def _dash_hint(exc: Exception, where: str) -> str:
    """For an unknown short option: a value that starts with "-" (a label, a query) goes after
    "--"."""
    name = str(getattr(exc, "option_name", "") or "")
    if type(exc).__name__ != "NoSuchOption" or name.startswith("--"):
        return ""  # a mistyped --flag: click's own "Did you mean" says enough
    return f"; a value that starts with '-' goes after '--': {where} [OPTIONS] -- VALUE"


def _said(exc: BaseException) -> str:
    """The error's message, with its notes (what a command had done before it, say)."""
    return " ".join([str(exc) or type(exc).__name__, *getattr(exc, "__notes__", ())])


class _Group(TyperGroup):
    """Turns every expected error into one line on stderr and the documented exit code; with
    ``--json`` on the command line, into one JSON object on stdout too (:func:`fail`)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False,
                                windows_expand_args=windows_expand_args, **extra)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - said, never a traceback
            kind, message, failed = _failure(exc)
            code = fail(message, failed, kind=kind,
                        as_json=json_wanted(sys.argv[1:] if args is None else args),
                        partial=partial_of(exc))
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


def _failure(exc: BaseException) -> tuple[str, str, int]:
    """What a failed command says: the error's kind (its class, ``UsageError`` for any
    mistake in the command line), its message, and the exit code."""
    if isinstance(exc, _UsageError):
        where = exc.ctx.command_path if exc.ctx is not None else "trails"
        return "UsageError", _usage_message(exc, where), EXIT_USER_ERROR
    if isinstance(exc, _ClickException):
        return "UsageError", exc.format_message(), exc.exit_code
    if isinstance(exc, typer.Abort) and not isinstance(exc.__cause__, KeyboardInterrupt):
        return "Aborted", "aborted", EXIT_USER_ERROR
    if isinstance(exc, (typer.Abort, KeyboardInterrupt)):
        return "Interrupted", "interrupted (Ctrl-C)", EXIT_INTERRUPTED
    if isinstance(exc, StorageError):
        return type(exc).__name__, _said(exc), EXIT_BROKEN_CONTEXT
    if isinstance(exc, (TrailsError, ValueError, SyntaxError, OSError)):
        return type(exc).__name__, _said(exc), EXIT_USER_ERROR
    if os.environ.get("TRAILS_DEBUG"):  # a bug: still one line, never a traceback
        raise exc
    said = (f"internal error ({type(exc).__name__}: {exc}); this is a bug in trails, please "
            "report it. TRAILS_DEBUG=1 shows the traceback")
    return type(exc).__name__, said, EXIT_INTERNAL


app = typer.Typer(
    cls=_Group,
    name="trails",
    add_completion=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"trails {importlib.metadata.version('trails')}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    db: Optional[str] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--db", envvar="TRAILS_DB", metavar="DIR",
        help="The context directory (made by `trails init`)."),
    _version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version,
        help="Print the version of trails and exit."),
) -> None:
    """Knowledge-graph plus vector retrieval over a context directory.

    Read-only commands (query, sparql, stats, verify without --repair, prune --dry-run) open
    the context read-only: they run while another process writes to it (one writer, many
    readers), and see the data as it was when they opened it. init, ingest, prune and verify
    --repair need the single writer's place; if another process holds it they exit 1.

    Exit codes: 0 success, 1 user error (one line on stderr), 2 partial failure, 3 the
    context's files cannot be read or written (disk full, read-only, corrupt), 4 a bug in
    trails (TRAILS_DEBUG=1 shows the traceback), 130 interrupted by Ctrl-C. With --json, a
    failure also prints {"error": {"type", "message", "exit_code"}} on stdout.

    Example:

    ```
    trails --db ./kb init
    trails --db ./kb ingest notes/
    trails --db ./kb query "how do we deploy?"
    ```
    """
    if db is not None and not db.strip():  # a Path would read it as the working directory
        raise ConfigurationError("--db is empty (a variable that is not set?): name the "
                                 "context directory, e.g. --db ./kb")
    ctx.obj = None if db is None else Path(db)
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


# In the order `trails --help` lists them.
app.command("init")(setup.init)
app.command("ingest")(ingest.ingest)
app.command("query")(query.query)
app.command("sparql")(query.sparql)
app.command("stats")(maintenance.stats)
app.command("verify")(maintenance.verify)
app.command("link")(link.link)
app.command("delete")(maintenance.delete)
app.command("prune")(maintenance.prune)
app.command("load")(graph.load)
app.command("export")(graph.export)
app.command("eval")(evaluation.eval_)
app.add_typer(audit.app, name="audit")
app.command("replay")(audit.replay)
app.command("serve")(serve.serve)
app.add_typer(serve.keys_app, name="keys")
app.command("mcp")(mcp.mcp)


def main() -> None:
    """The console script: ``trails ...`` (exits with the command's code)."""
    typer.main.get_command(app).main(prog_name="trails")
