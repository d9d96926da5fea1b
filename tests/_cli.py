"""The ``trails`` command run in this process, the way the console script runs it.

A new ``python -m trails.cli`` pays over a second of imports (and any model load again)
before the command starts; most tests want the command's exit code and what it prints, not
the process. :func:`run_trails` calls the console script's own entry point
(``trails.cli.launch.main``) here, with ``sys.argv``, stdin, stdout, stderr and the
environment swapped in as click's ``CliRunner`` does, and returns what ``subprocess.run``
would. An exception escaping the command is what a real process prints as a traceback: it
goes to stderr as one and the exit code is 1, so "no traceback" stays checkable.

Tests about the process itself (the console script, signals, a crash, a second process
holding a context, an import that must stay light) start a real one.
"""

from __future__ import annotations

import subprocess
import sys
import traceback
from collections.abc import Callable, Mapping
from unittest import mock

from click.testing import CliRunner

from trails.cli import main

__all__ = ["run_trails"]


def run_trails(*args: object, input: str | None = None,
               env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    """``trails ARGS`` with ``input`` on stdin and ``env`` over the environment (None unsets)."""
    argv = ["trails", *map(str, args)]
    with CliRunner().isolation(input=input, env=env) as (stdout, stderr, _mixed), \
            mock.patch.object(sys, "argv", argv):
        code = _exit_code(main)
        sys.stdout.flush()
        sys.stderr.flush()
    return subprocess.CompletedProcess(argv, code, stdout.getvalue().decode(),
                                       stderr.getvalue().decode("utf-8", "backslashreplace"))


def _exit_code(entry_point: Callable[[], object]) -> int:
    """The code a process running ``entry_point`` would exit with."""
    try:
        entry_point()
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        sys.stderr.write(f"{exit_.code}\n")
        return 1
    except Exception:  # noqa: BLE001 - what the interpreter prints for an uncaught one
        traceback.print_exc()
        return 1
    return 0
