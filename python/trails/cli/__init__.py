"""The ``trails`` command: create a context, ingest files, query, inspect and check it.

One module per command group (``setup``: init; ``ingest``; ``query``: query and sparql;
``maintenance``: stats and verify; ``eval``...), what they share in ``_common``, the light
argument readers and printers in ``arguments`` and ``output``, and the typer application with
the exit-code mapping in ``commands``. The console script is ``launch.main``, which sends a plain
query to a running service (``trails serve``) before it loads anything else. Each command is a
few lines over the public API. See ``docs/cli.md`` for every command's help.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_attributes

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from trails.cli._common import make_embedder
    from trails.cli.arguments import parse_binding
    from trails.cli.commands import app
    from trails.cli.launch import main

__all__ = ["app", "main", "make_embedder", "parse_binding"]

# Lazy, so that the console script (launch.main) starts without the engine.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "app": "trails.cli.commands:app",
    "main": "trails.cli.launch:main",
    "make_embedder": "trails.cli._common:make_embedder",
    "parse_binding": "trails.cli.arguments:parse_binding",
}, __all__)
