"""The checks ``retrieve`` runs on its arguments before it reads anything.

A wrong type or an out-of-range value raises :class:`~trails.errors.InvalidArgumentError`
(a ``ValueError``) naming the argument, what it got and what it takes, instead of a Python
error from deep inside a store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from trails.errors import InvalidArgumentError

__all__ = ["MAX_K", "check_retrieve_arguments"]

MAX_K = 2**31 - 1  # more hits than any store holds; beyond it SQLite and numpy overflow
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _got(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:120]


def check_retrieve_arguments(query: Any, k: Any, scope: Any, sparql_filter: Any,
                             bindings: Any, modes: Sequence[str], mode: Any) -> None:
    """Raise InvalidArgumentError for the first argument of ``retrieve`` that cannot work.

    >>> check_retrieve_arguments("q", 10, None, None, None, ("vector",), "vector")
    >>> check_retrieve_arguments(None, 10, None, None, None, ("vector",), "vector")
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentError: query must be a string, got NoneType None
    """
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a string, got {_got(query)}")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_K:
        raise InvalidArgumentError(f"k must be an integer from 0 to {MAX_K:,}, got {_got(k)}")
    if not isinstance(mode, str) or mode not in modes:
        raise InvalidArgumentError(
            f"mode must be one of {', '.join(map(repr, modes))}; got {_got(mode)}")
    names = [] if scope is None else [scope] if isinstance(scope, str) else scope
    if not isinstance(names, (list, tuple)) or not all(isinstance(s, str) for s in names):
        raise InvalidArgumentError(
            f"scope must be a scope name or a list of them, got {_got(scope)}")
    if sparql_filter is not None and not isinstance(sparql_filter, str):
        raise InvalidArgumentError(
            f"sparql_filter must be SPARQL text (a str), got {_got(sparql_filter)}")
    if bindings is not None:
        if not isinstance(bindings, Mapping):
            raise InvalidArgumentError(
                f"bindings must be a mapping of variable names to values, got {_got(bindings)}")
        for name in bindings:
            if not isinstance(name, str) or not _VARIABLE.match(name):
                raise InvalidArgumentError(
                    f"bindings key {name!r} is not a SPARQL variable name (letters, digits "
                    "and _, optionally after ? or $)")
