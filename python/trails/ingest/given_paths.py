"""The paths given to ``ingest()`` as its source, checked when it is called.

A path that names nothing is a mistake of the call, not of one file: most often text meant
to be ingested (``ingest_all("Rails is a web framework...")``, which a str source reads as
a path), a typo, or a glob pattern, which no path is. Each is refused, naming the path and
the way to say what was meant, before anything runs; as a failure among the run's events
it read like a file that went missing, and a text long enough was an ``OSError`` of the
file system ("File name too long").
"""

from __future__ import annotations

import os
from pathlib import Path

from trails.errors import InvalidArgumentError
from trails.ingest.checks import shown

__all__ = ["check_given_paths"]

_GLOB = frozenset("*?[")


def check_given_paths(source: object) -> None:
    """Refuse ``source``, when it is a path or a list of paths, if one names nothing.

    A link whose target is gone is left to the loader (a failure of that file, "a broken
    link?"): it names something. Any other source is not checked here.

    Raises:
        InvalidArgumentError: a path names no file or folder; the message names it and, when
            it looks like text or a glob pattern, says how to give that.
    """
    if isinstance(source, (str, os.PathLike)):
        given: list[object] = [source]
    elif (isinstance(source, (list, tuple)) and source
          and all(isinstance(p, (str, os.PathLike)) for p in source)):
        given = list(source)
    else:
        return
    for path in given:
        name = os.fspath(path)  # type: ignore[call-overload]
        if not _names_something(name):
            raise InvalidArgumentError(_missing(name))


def _names_something(name: str | bytes) -> bool:
    # lexists says False, not raises, for a name the file system refuses outright (too long,
    # a NUL byte): such a name names nothing either.
    return bool(name) and os.path.lexists(name)


def _missing(name: str | bytes) -> str:
    text = name if isinstance(name, str) else os.fsdecode(name)
    if not text:  # Path("") is ".": it would have read the whole working directory
        return 'cannot ingest "": an empty path names no file; for the working directory pass "."'
    where = "" if os.path.isabs(text) else f" (relative to the working directory, {Path.cwd()})"
    prose = any(ch.isspace() for ch in text) or (len(text) > 255 and os.sep not in text)
    # A path is named whole (its last part is the one mistyped); a paragraph by its start.
    message = (f"cannot ingest {shown(text, 80 if prose else 1000)}: no such file or folder"
               f"{where}; check the path")
    if prose:
        message += ('. If it is the text to ingest, not a path, pass it as a Document: '
                    'ingest_all(Document(id="note-1", source="notes", text=...), ctx=ctx)')
    elif _GLOB & set(text):
        message += (". A source path is no glob pattern: give the folder and the pattern as "
                    'include=, e.g. ingest_all("docs", include=["*.md"], ctx=ctx)')
    return message
