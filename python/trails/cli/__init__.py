"""The ``trails`` command: create a context, ingest files, query, inspect and check it.

One module per command group (``setup``: init; ``ingest``; ``query``: query and sparql;
``maintenance``: stats and verify; ``eval``), what they share in ``_common``, and the typer
application with the exit-code mapping in ``app``. Each command is a few lines over the
public API. See ``docs/cli.md`` for every command's help.
"""

from __future__ import annotations

from trails.cli._common import make_embedder, parse_binding
from trails.cli.app import app, main

__all__ = ["app", "main", "make_embedder", "parse_binding"]
