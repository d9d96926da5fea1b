"""The Python functions registered on an embedded graph, as one query calls them.

pyoxigraph turns an exception raised by a custom function into an unbound value; a query's
:class:`FunctionCalls` keeps the first one and re-raises it once evaluation ends, and builds
per-query functions (``per_query=True``) for the query's scopes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyoxigraph as ox

__all__ = ["FunctionCalls"]


class FunctionCalls:
    """The registered functions for one query: per-query state, and the first error to re-raise."""

    def __init__(self, registry: Mapping[str, tuple[Callable[..., Any], bool]],
                 scopes: Sequence[str] | None) -> None:
        self.error: BaseException | None = None
        self.functions = {
            ox.NamedNode(iri): self._guarded(fn(None if scopes is None else list(scopes))
                                             if per_query else fn)
            for iri, (fn, per_query) in registry.items()
        }

    def _guarded(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*terms: Any) -> Any:
            if self.error is not None:
                return None
            try:
                return fn(*terms)
            except Exception as exc:  # noqa: BLE001 - re-raised by check() after evaluation
                self.error = exc
                return None

        return call

    def options(self) -> dict[str, Any]:
        return {"custom_functions": self.functions} if self.functions else {}

    def check(self) -> None:
        if self.error is not None:
            raise self.error
