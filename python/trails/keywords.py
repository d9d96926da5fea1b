"""Keyword arguments a function does not take, refused with the name that was meant.

Python's own ``TypeError`` ("got an unexpected keyword argument 'filter'") leaves a newcomer
to find ``sparql_filter`` in the docs; names carried over from other libraries (``top_k``,
``filter``, ``where``) are the usual cause. :func:`named_keywords` refuses them before the
call with an :class:`~trails.errors.InvalidArgumentTypeError` (still a ``TypeError``)::

    >>> @named_keywords({"top_k": "k"})
    ... def search(query: str, *, k: int = 10) -> int:
    ...     return k
    >>> search("q", top_k=3)
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentTypeError: search() takes no argument top_k: did you mean k=...?
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import ParamSpec, TypeVar

from trails.errors import InvalidArgumentTypeError

__all__ = ["named_fields", "named_keywords", "unknown_keywords"]

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)

_BY_NAME = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
# A method's first parameter, which the call binds.
_BOUND = ("self", "cls")


def named_keywords(meant: Mapping[str, str] | None = None,
                   ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Refuse a keyword the decorated function does not take, naming the one meant.

    ``meant`` maps names used elsewhere to this function's (``{"top_k": "k"}``); any other
    unknown name gets the closest accepted names, if one is close. A function that takes
    ``**kwargs`` is returned as it is: every name is its to judge. A constructor's refusal
    is in its class's name (``Retriever()``, not ``Retriever.__init__()``). More arguments
    by position than it takes are refused naming the ones it takes by name.
    """
    aliases = dict(meant or {})

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        parameters = inspect.signature(function).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return function
        accepted = frozenset(name for name, p in parameters.items()  # what a caller names:
                             if p.kind in _BY_NAME and name not in _BOUND)  # never self
        called = function.__qualname__.removesuffix(".__init__")
        by_position = [name for name, p in parameters.items() if p.kind in _POSITIONAL]
        by_name = [name for name, p in parameters.items()
                   if p.kind is inspect.Parameter.KEYWORD_ONLY]
        if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters.values()):
            by_name = []  # *args: any number is its to judge
        unknown_target = set(aliases.values()) - accepted
        if unknown_target:
            raise ValueError(f"{function.__qualname__} takes no {sorted(unknown_target)}")

        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if by_name and len(args) > len(by_position):
                raise _too_many(called, by_position, by_name, len(args))
            if not accepted.issuperset(kwargs):
                raise unknown_keywords(called, kwargs.keys() - accepted, accepted, aliases)
            return function(*args, **kwargs)

        return wrapper

    return decorate


def _too_many(function: str, by_position: list[str], by_name: list[str],
              given: int) -> InvalidArgumentTypeError:
    """The error for ``given`` arguments by position to a function taking ``by_position``
    (``self`` or ``cls`` first for a method, not shown) and the rest ``by_name``."""
    shown = [name for name in by_position if name not in _BOUND]
    names = ", ".join(f"{name}=..." for name in by_name)
    if not shown:
        return InvalidArgumentTypeError(f"{function}() takes no argument by position: name "
                                        f"each ({names})")
    return InvalidArgumentTypeError(
        f"{function}() takes {' and '.join(shown)} by position, the rest by name ({names}); "
        f"got {given - (len(by_position) - len(shown))} arguments by position")


def named_fields(meant: Mapping[str, str] | None = None) -> Callable[[C], C]:
    """:func:`named_keywords` for a class's constructor (a dataclass's fields), refused in
    the class's name; of ``meant``, only the names the class takes are offered."""
    def decorate(cls: C) -> C:
        init: Callable[..., None] = vars(cls)["__init__"]  # its own (a dataclass makes one)
        taken = set(inspect.signature(init).parameters)
        aliases = {name: to for name, to in (meant or {}).items()
                   if to in taken and name not in taken}
        setattr(cls, "__init__", named_keywords(aliases)(init))  # noqa: B010 (on a class)
        return cls

    return decorate


def unknown_keywords(function: str, names: Iterable[str], accepted: Iterable[str],
                     aliases: Mapping[str, str]) -> InvalidArgumentTypeError:
    """The error for keywords ``names`` that ``function`` does not take: each with the name in
    ``aliases`` it stands for, or the closest of ``accepted``, or else all of ``accepted``."""
    accepted = sorted(accepted)
    parts = []
    for name in sorted(names):
        close = ([aliases[name]] if name in aliases
                 else difflib.get_close_matches(name, accepted, n=2, cutoff=0.6))
        hint = " or ".join(f"{c}=..." for c in close)
        parts.append(f"{name}: did you mean {hint}?" if hint else
                     f"{name} (it takes {', '.join(accepted)})")
    noun = "argument" if len(parts) == 1 else "arguments"
    return InvalidArgumentTypeError(f"{function}() takes no {noun} {'; '.join(parts)}")
