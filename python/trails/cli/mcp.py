"""``trails mcp``: serve a context to an MCP client (an agent) over stdin and stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from trails.cli._common import context, db_option, has_context, no_context
from trails.errors import ConfigurationError
from trails.service.keys import KeyRing
from trails.service.mcp import chosen_key, run_stdio

__all__ = ["mcp"]


def mcp(
    ctx: typer.Context,
    db: Optional[Path] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--db", metavar="DIR",
        help="The context directory (default: the one `trails --db` or TRAILS_DB names)."),
    keys: Optional[Path] = typer.Option(  # noqa: UP045
        None, "--keys", metavar="FILE",
        help="The API keys file (default: TRAILS_API_KEYS_FILE, else inline TRAILS_API_KEYS)."),
    key_label: Optional[str] = typer.Option(  # noqa: UP045
        None, "--key-label", metavar="LABEL",
        help="Run as this key of the keys file: only its scopes, its label in the audit trail."),
    scopes: Optional[str] = typer.Option(  # noqa: UP045
        None, "--scopes", metavar="A,B",
        help="Only these scopes (comma-separated); with a key, a subset of what it grants."),
) -> None:
    """Serve the context to an MCP client over stdio: tools `retrieve` and `sparql` (read-only).

    Meant to be started by the client (docs/mcp.md). Without a key the server reads every
    scope (or only --scopes); with --key-label it reads only what that key grants, and the
    audit trail names the key's label as the caller of every search. Updates and SERVICE are
    refused; the context is opened read-only, so an ingest may run meanwhile.

    Example (the client's configuration runs this):

    ```
    trails mcp --db ./kb --keys keys.toml --key-label analyst
    trails mcp --db ./kb --scopes public,handbook
    ```
    """
    directory = db if db is not None else db_option(ctx)
    if not has_context(directory):
        raise no_context(directory)
    wanted = None if scopes is None else [s.strip() for s in scopes.split(",") if s.strip()]
    if wanted == []:
        raise ConfigurationError("--scopes names no scope; give a comma-separated list, or "
                                 "leave it out for every scope the key grants")
    key = chosen_key(KeyRing.load(keys), key_label, wanted)
    with context(directory, read_only=True) as opened:
        run_stdio(opened, key)
