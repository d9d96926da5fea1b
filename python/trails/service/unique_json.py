"""A request's JSON read with each key once: ``{"query": "a", "query": "b"}`` is refused
naming the key, at any depth, rather than read as its last value (Python's way; other
readers keep the first). A request that is kept as evidence must mean one thing to every
reader of it. The HTTP routes and the MCP server read their JSON through :func:`loads`."""

from __future__ import annotations

import json
import sys
from typing import Any

from trails.errors import InvalidArgumentError

__all__ = ["loads"]


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, refusing an object that gives a key twice.

    Raises:
        InvalidArgumentError: an object gives a key twice (the message names it), or an
            integer has more digits than Python reads (``sys.get_int_max_str_digits()``).
        json.JSONDecodeError, UnicodeDecodeError, RecursionError: as ``json.loads``.
    """
    try:
        return json.loads(text, object_pairs_hook=_once_each)
    except ValueError as exc:
        if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError, InvalidArgumentError)):
            raise
        # The only other ValueError json raises: int() refusing a literal of too many digits
        # (a denial-of-service guard), which said no more than "ValueError" to the caller.
        raise InvalidArgumentError(
            f"the JSON holds an integer of more than {sys.get_int_max_str_digits():,} digits, "
            "more than it is read with; send a shorter number") from None


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise InvalidArgumentError(
                f"the JSON gives the key {json.dumps(key)} more than once in one object; "
                "readers disagree on which value counts (the first or the last), so it is "
                "refused: give each key once")
        found[key] = value
    return found
