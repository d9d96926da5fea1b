"""Who an audit record names: a caller given (checked), or the one the environment names."""

from __future__ import annotations

import getpass
import os

from trails.errors import InvalidArgumentError
from trails.kg.terms import check_text

__all__ = ["checked_caller", "default_caller"]


def checked_caller(caller: object) -> str:
    """``caller`` itself, when it names someone: a string that is not blank, and that the
    audit log can hold (UTF-8: no lone surrogate, else the record would be lost).

    Raises:
        InvalidArgumentError: anything else.
    """
    if not isinstance(caller, str) or not caller.strip():
        raise InvalidArgumentError(f"caller must be a non-empty string naming who acts; got "
                                   f"{caller!r}")
    return check_text(caller, "caller")


def default_caller() -> str:
    """Who is searching when nobody says: ``TRAILS_CALLER``, else the login name."""
    named = os.environ.get("TRAILS_CALLER", "").strip()
    if named:
        return _readable(named)
    try:
        return _readable(getpass.getuser())
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        return "unknown"


def _readable(name: str) -> str:
    """``name`` as UTF-8 can hold it: bytes of the environment that are no UTF-8 (a Latin-1
    ``caf\xe9``) reach Python as lone surrogates, which no record can be written with (every
    search's record was lost); they are kept as ``\xe9``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
