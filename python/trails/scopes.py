"""Scopes: a tenant, security tier or namespace. Each is a named graph and a field on vectors.

The default scope is the graph store's default graph, so triples a user inserts without a
``GRAPH`` clause belong to it, and vectors without a ``scope`` field do too.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Sequence
from typing import Any

import pyoxigraph as ox

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError, UnknownScopeError

__all__ = [
    "DEFAULT_SCOPE", "NAME_PATTERN", "SCOPE_BASE", "check_known_scopes", "check_scope_argument",
    "dataset_options",
    "is_scope_name", "normalize_scopes", "scope_graph",
    "scope_of_graph", "scopes_elsewhere",
]

DEFAULT_SCOPE = "default"
SCOPE_BASE = "urn:trails:scope:"
# A scope's name (and a security level's, trails.config.AuditConfig).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"
_NAME = re.compile(NAME_PATTERN)


def check_scope(scope: str) -> str:
    """``scope`` if it is a scope's name; an InvalidArgumentError (a bad argument, whichever
    way it came: ingest, a query, a request) naming the rule if not."""
    if not isinstance(scope, str) or not _NAME.fullmatch(scope):  # "$" would allow "a\n"
        raise InvalidArgumentError(
            f"scope names are 1-128 characters of letters, digits, '_', '.', '-', starting "
            f"with a letter or digit; got {scope!r}"
        )
    return scope


def is_scope_name(value: object) -> bool:
    """Whether ``value`` is a scope name (a value read from the graph may be anything)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def normalize_scopes(scope: str | Sequence[str] | None) -> list[str]:
    """``None`` -> the default scope; a name or a list of names -> the checked list, each
    name once (in the order first given): a scope named twice is still one graph."""
    if scope is None:
        return [DEFAULT_SCOPE]
    names = [scope] if isinstance(scope, str) else list(scope)
    if not names:
        raise InvalidArgumentError("scope=[] names no scope; pass None for the default scope")
    return list(dict.fromkeys(check_scope(s) for s in names))


def check_scope_argument(scope: object, name: str = "scope") -> list[str]:
    """A caller's ``scope`` argument (None, a name, or a list or tuple of names) as the list
    of checked names (None: the default scope).

    Raises:
        InvalidArgumentTypeError: neither None, a str nor a list or tuple of str.
        InvalidArgumentError: an empty list, or a malformed name (the message names ``name``).
    """
    if scope is not None and not isinstance(scope, str) and (
            not isinstance(scope, (list, tuple)) or not all(isinstance(s, str) for s in scope)):
        try:
            shown = repr(scope)
        except ValueError:  # an int too long to print
            shown = f"<{type(scope).__name__}>"
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        raise InvalidArgumentTypeError(f"{name} must be a scope name, a list of them or None, "
                                       f"got {shown}")
    try:
        return normalize_scopes(scope)
    except ValueError as exc:
        raise InvalidArgumentError(f"{name}: {exc}") from None


def scope_graph(scope: str) -> ox.NamedNode | ox.DefaultGraph:
    """The graph that holds a scope's triples."""
    if scope == DEFAULT_SCOPE:
        return ox.DefaultGraph()
    return ox.NamedNode(SCOPE_BASE + check_scope(scope))


def scope_of_graph(graph: str) -> str | None:
    """The scope a named graph IRI holds, or None for a graph that is no scope's."""
    return graph[len(SCOPE_BASE):] if graph.startswith(SCOPE_BASE) else None


def check_known_scopes(scopes: Sequence[str], known: Collection[str], *,
                       readable: Collection[str] | None = None) -> None:
    """Refuse a read of a scope that holds nothing: a typo would otherwise read as "nothing
    matched". The default scope always exists. ``readable``: the scopes the caller may read
    (None: every scope); the message names no other, so it never tells one tenant another's.

    >>> check_known_scopes(["legal"], ["default", "legal"])
    >>> check_known_scopes(["legl"], ["default", "legal"])
    Traceback (most recent call last):
    ...
    trails.errors.UnknownScopeError: unknown scope 'legl' (did you mean 'legal'?); the scopes that exist: default, legal
    >>> check_known_scopes(["legl"], ["default", "legal", "hr"], readable=["legl", "legal"])
    Traceback (most recent call last):
    ...
    trails.errors.UnknownScopeError: unknown scope 'legl' (did you mean 'legal'?); the scopes you may read that hold anything: legal
    """
    for scope in scopes:
        if scope == DEFAULT_SCOPE or scope in known:
            continue
        existing = sorted(s for s in {DEFAULT_SCOPE, *known} if readable is None or s in readable)
        close = difflib.get_close_matches(scope, existing, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = (f"the scopes that exist: {', '.join(existing)}" if readable is None else
                  f"the scopes you may read that hold anything: {', '.join(existing)}"
                  if existing else "none of the scopes you may read holds anything yet")
        raise UnknownScopeError(f"unknown scope {scope!r}{hint}; {listed}")


def dataset_options(scopes: Sequence[str] | None) -> dict[str, Any]:
    """pyoxigraph's query options for a dataset of ``scopes`` (None: every graph, as one).

    Each graph is listed once: Oxigraph answers a solution once per copy of a graph in the
    default graph, so a scope named twice would double every count and multiply joins."""
    if scopes is None:
        return {"use_default_graph_as_union": True}
    graphs = [scope_graph(s) for s in dict.fromkeys(scopes)]
    named = [g for g in graphs if isinstance(g, ox.NamedNode)]
    return {"default_graph": graphs, "named_graphs": named}


def scopes_elsewhere(ctx: Any) -> list[str]:
    """The scopes holding documents in context ``ctx`` when the default scope, which a search
    naming no scope reads, holds none (so an empty answer has a cause to name); else none.

    One lookup in the graph when the default scope holds a document; the vector store's list
    of scopes (which may read every row) only when it holds none.
    """
    if ctx.kg.query(_DEFAULT_HOLDS_ONE, scopes=[DEFAULT_SCOPE]):
        return []
    listing = getattr(ctx.vectors, "scopes", None)
    holding = listing() if callable(listing) else []
    return [] if DEFAULT_SCOPE in holding else sorted(holding)


_DEFAULT_HOLDS_ONE = f'ASK {{ ?document trails:scope "{DEFAULT_SCOPE}" }}'
