"""The command line's exit codes, and the one line on stderr that says why a command failed."""

from __future__ import annotations

import sys

from trails.cli.output import visible

__all__ = ["EXIT_BROKEN_CONTEXT", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_PARTIAL",
           "EXIT_USER_ERROR", "fail"]

EXIT_USER_ERROR = 1      # a mistake in the command, its arguments or its input
EXIT_PARTIAL = 2         # some documents or checks failed, the rest succeeded
EXIT_BROKEN_CONTEXT = 3  # the context's files cannot be read or written (StorageError)
EXIT_INTERNAL = 4        # a bug in trails: one line on stderr, TRAILS_DEBUG=1 for the traceback
EXIT_INTERRUPTED = 130   # Ctrl-C (SIGINT), as shells report 128 + the signal's number


def fail(message: str, code: int = EXIT_USER_ERROR) -> int:
    """Say on one line of stderr why the command failed; ``code`` back, to exit with."""
    # A message quotes what it refuses (a path, a binding, a recorded name): written out.
    sys.stderr.write("Error: " + visible(" ".join(message.split())) + "\n")
    sys.stderr.flush()
    return code
