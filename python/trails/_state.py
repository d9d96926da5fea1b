"""The engine's process-wide state, kept in one place so tests can isolate it.

This module is the only place the library keeps anything across calls: the default context,
and :func:`cached`, the one process-wide cache (loaded models, tokenizers and the like). No
other module holds a module-level cache. ``trails.testing.isolated_kernel()`` snapshots,
empties and restores everything here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar, cast

__all__ = ["ENV_PREFIXES", "ENV_SHARED", "ENV_VARS", "cached", "default_context",
           "isolated_environment", "model_cache"]

T = TypeVar("T")

# The context retrieve() uses when none is passed (set with trails.set_default_context).
default_context: Any = None
# What cached() has made, by key. Filled only through cached(); isolated_kernel() empties it.
model_cache: dict[Hashable, Any] = {}
# Held while something is made, so two threads asking for one key load it once. Reentrant:
# loading one thing may ask for another (a model's encoder loads its tokenizer).
_making = threading.RLock()
# Environment variables that change what the engine talks to; isolated in tests.
ENV_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
            "OPENAI_ADMIN_KEY", "OPENAI_CUSTOM_HEADERS", "TRAILS_HOME", "TRAILS_DB",
            "TRAILS_MODEL", "QDRANT_URL", "QDRANT_API_KEY", "TRAILS_CALLER", "TRAILS_LOG_TEXT",
            "TRAILS_PG_DSN", "TRAILS_SPARQL_AUTH", "TRAILS_MODEL_PROGRESS", "TRAILS_DEBUG",
            "TRAILS_BEIR_DIR")
# Any other variable of these prefixes is isolated too: a name missing from ENV_VARS (a
# credential added later) would otherwise reach every test from the developer's shell.
ENV_PREFIXES = ("TRAILS_", "OPENAI_", "QDRANT_")
# Kept as they are: where ONNX exports live, shared by every kernel of a test session on
# purpose (an export is a pure function of the weights, so sharing it leaks no state).
ENV_SHARED = frozenset({"TRAILS_ONNX_CACHE"})


def isolated_environment(environ: Mapping[str, str]) -> set[str]:
    """The variables of ``environ`` (and of :data:`ENV_VARS`) that ``isolated_kernel()``
    hides and restores."""
    return {name for name in (*ENV_VARS, *environ)
            if name.startswith(ENV_PREFIXES) and name not in ENV_SHARED}


def cached(key: Hashable, make: Callable[[], T]) -> T:
    """What ``make()`` returns, made once per process for ``key`` and shared afterwards.

    Use it for anything expensive to build and safe to share between contexts and threads
    (a loaded model, a tokenizer). Start the key with what kind of thing it is, so that keys
    of different kinds never collide: ``("sentence-transformers", path, device)``.

    >>> cached(("doc-example",), lambda: [1, 2]) is cached(("doc-example",), list)
    True
    """
    try:
        return cast(T, model_cache[key])  # the common case: no lock once it is made
    except KeyError:
        pass
    with _making:
        if key not in model_cache:
            model_cache[key] = make()
        return cast(T, model_cache[key])
