"""The command line's exit codes, and how a failed command says why: one line on stderr and,
when ``--json`` is on the command line, one JSON object on stdout too."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from trails.cli.output import print_json, visible

__all__ = ["EXIT_BROKEN_CONTEXT", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_PARTIAL",
           "EXIT_USER_ERROR", "fail", "json_wanted", "partial_of", "with_partial"]

EXIT_USER_ERROR = 1      # a mistake in the command, its arguments or its input
EXIT_PARTIAL = 2         # some documents or checks failed, the rest succeeded
EXIT_BROKEN_CONTEXT = 3  # the context's files cannot be read or written (StorageError)
EXIT_INTERNAL = 4        # a bug in trails: one line on stderr, TRAILS_DEBUG=1 for the traceback
EXIT_INTERRUPTED = 130   # Ctrl-C (SIGINT), as shells report 128 + the signal's number

_PARTIAL = "_trails_partial"  # the attribute holding what a command did before it failed


def fail(message: str, code: int = EXIT_USER_ERROR, *, kind: str = "Error",
         as_json: bool = False, partial: Mapping[str, Any] | None = None) -> int:
    """Say on one line of stderr why the command failed; ``code`` back, to exit with.

    With ``as_json`` (``--json`` was given), also print on stdout the one JSON object a
    script reads instead: ``{**partial, "error": {"type": kind, "message", "exit_code"}}``,
    ``partial`` being what the command did before it failed (``delete``, ``prune``)."""
    said = " ".join(message.split())
    # A message quotes what it refuses (a path, a binding, a recorded name): written out.
    sys.stderr.write("Error: " + visible(said) + "\n")
    sys.stderr.flush()
    if as_json:
        try:
            print_json({**(partial or {}),
                        "error": {"type": kind, "message": said, "exit_code": code}})
        except OSError:  # stdout is gone (a closed pipe): the line on stderr says it
            pass
    return code


def json_wanted(args: Sequence[str]) -> bool:
    """Whether ``--json`` is on the command line ``args`` (before a ``--``, after which
    every word is a value)."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def with_partial(exc: BaseException, fields: Mapping[str, Any]) -> BaseException:
    """``exc``, carrying ``fields``: what the command did before it (the documents deleted),
    printed with the error under ``--json``."""
    setattr(exc, _PARTIAL, dict(fields))
    return exc


def partial_of(exc: BaseException) -> dict[str, Any] | None:
    """The fields :func:`with_partial` gave ``exc``, if any."""
    found = getattr(exc, _PARTIAL, None)
    return found if isinstance(found, dict) else None
