"""``trails serve`` (the context behind HTTP) and ``trails keys add`` (a key for it).

The HTTP service needs the ``service`` extra; it is loaded when ``serve`` runs, so the rest
of the command line works without it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer

from trails._lazy import import_target, require
from trails.cli._common import db_option, has_context, locked, no_context
from trails.cli.output import print_json, visible
from trails.errors import ConfigurationError, ContextLockedError, StorageError
from trails.scopes import check_scope
from trails.service.keys import ALL_SCOPES, KeyRing, checked_keys_path, digest, new_secret
from trails.service.limits import DEFAULT_MAX_REQUEST_BYTES

__all__ = ["keys_app", "serve"]

keys_app = typer.Typer(no_args_is_help=True, add_completion=False,
                       help="Manage the API keys of `trails serve`.")


def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="The address to bind; one other "
                             "than loopback needs --keys."),
    port: int = typer.Option(8000, "--port", min=0, max=65535,
                             help="The port; 0 picks a free one (the URL is printed)."),
    keys: Optional[Path] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--keys", metavar="FILE", help="The API keys file (else TRAILS_API_KEYS_FILE "
        "or TRAILS_API_KEYS); without keys, only loopback, every request anonymous."),
    read_only: bool = typer.Option(False, "--read-only", help="Open the context read-only: "
                                   "ingest and delete are refused (409)."),
    reranker: Optional[str] = typer.Option(  # noqa: UP045
        None, "--reranker", metavar="MODEL", help="A cross-encoder directory or package, for "
        "the 'rerank' step (warmed at start-up)."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn's log level."),
    allowed_host: list[str] = typer.Option(
        [], "--allowed-host", metavar="NAME[:PORT]", help="Another Host name the service "
        "answers (repeat it), e.g. behind a proxy; '*' for any. Without keys only its own "
        "addresses are answered (DNS rebinding); with keys any, unless this is given."),
    max_request_bytes: int = typer.Option(
        DEFAULT_MAX_REQUEST_BYTES, "--max-request-bytes", min=1, metavar="BYTES", help="The longest "
        "request body read (a SPARQL query, a search, documents to ingest); a longer one is "
        "answered 413."),
) -> None:
    """Serve the context over HTTP: retrieve, SPARQL 1.1 Protocol, ingest (docs/service.md).

    One process holds the context (and its warm model). Once listening, it prints its URL
    and writes DIR/service.json (mode 0600: the URL and a token for this run), which
    `trails query` reads; Ctrl-C or SIGTERM stops it cleanly and removes the file.

    Example:

    ```
    trails keys add analyst --keys keys.toml --scope public
    trails --db ./kb serve --port 8000 --keys keys.toml
    ```
    """
    db = db_option(ctx)
    if not has_context(db):
        raise no_context(db)
    ring = KeyRing.load(keys)
    ranker = None
    if reranker is not None:
        ranker = import_target("trails.rank.rerank:CrossEncoderReranker")(reranker)  # type: ignore[operator]
    run: Any = import_target("trails.service.runner:serve")

    def announce(url: str) -> None:
        typer.echo(visible(f"trails serve: listening on {url} (service.json in {db})"))

    try:
        run(db, host=host, port=port, keys=ring, read_only=read_only, reranker=ranker,
            announce=announce, log_level=log_level, allowed_hosts=allowed_host or None,
            max_request_bytes=max_request_bytes)
    except ContextLockedError as exc:  # said as every other command says it
        reworded = locked(db, exc)
        if reworded is exc:
            raise
        raise reworded from exc


@keys_app.command("add")
def add_key(
    label: str = typer.Argument(..., help="The key's label: the caller the audit trail names."),
    keys: Path = typer.Option(..., "--keys", metavar="FILE", help="The keys file to append "
                              "to (created, mode 0600, if missing)."),
    scope: list[str] = typer.Option(
        ..., "--scope", metavar="SCOPE", help="A scope the key may read (repeat it); '*' for "
        "every scope."),
    write: bool = typer.Option(False, "--write", help="Also allow ingest and delete."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only {label, secret, sha256, scopes, rights, keys_file} "
        "as JSON."),
) -> None:
    """Add an API key to a keys file and print its secret, once (the file keeps its SHA-256).

    Example:

    ```
    trails keys add analyst --keys keys.toml --scope public --scope finance
    ```
    """
    if not label.strip():
        raise ConfigurationError("the label names the key in the audit trail: give one")
    scopes = [s if s == ALL_SCOPES else check_scope(s) for s in scope]
    checked_keys_path(keys)
    secret = new_secret()
    tomli_w = require("tomli_w", "trails keys add")
    entry = "\n" + tomli_w.dumps({"key": [{
        "label": label.strip(), "sha256": digest(secret), "scopes": scopes,
        "rights": ["read", "write"] if write else ["read"]}]})
    existing = ""
    if keys.exists():
        try:
            existing = keys.read_text(encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"cannot read {keys}: {exc.strerror or exc}") from exc
    KeyRing.parse(existing + entry, source=str(keys))  # a doubled label is refused here
    try:
        descriptor = os.open(keys, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as file:
            file.write(entry)
    except OSError as exc:
        raise StorageError(f"cannot write {keys}: {exc.strerror or exc}") from exc
    if as_json:
        print_json({"label": label.strip(), "secret": secret, "sha256": digest(secret),
                    "scopes": scopes, "rights": ["read", "write"] if write else ["read"],
                    "keys_file": str(keys)})
        return
    typer.echo(secret)
    typer.echo(visible(f"(the secret of {label.strip()!r}, shown once; {keys} keeps its "
                       "SHA-256)"), err=True)
