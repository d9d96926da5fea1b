"""Hermetic, deterministic engines for tests: ``fresh_context()`` and ``isolated_kernel()``.

The engine never imports this package, and importing it loads nothing: every name resolves on
first use, so the pytest plugin (:mod:`trails.testing.pytest_plugin`, registered through the
``pytest11`` entry point) costs a project that does not use its fixtures nothing. Its parts:

- :mod:`trails.testing.kernel`: :func:`fresh_context`, :func:`isolated_kernel` and
  :func:`context_directory`; with
  :class:`MockEmbedder`, the deterministic embedder they use;
- :mod:`trails.testing.pytest_plugin`: the fixtures ``trails_ctx``, ``trails_dir``,
  ``trails_store`` and ``trails_store_factory`` (docs/testing.md);
- :mod:`trails.testing.stores`: a factory of empty vector stores per installed backend;
- :mod:`trails.testing.strategies`: hypothesis strategies for documents, chunks and filters of
  known selectivity (needs ``hypothesis``);
- :mod:`trails.testing.models`: :func:`tiny_cross_encoder`, a random-weight reranker model
  (building one imports torch; importing it does not);
- :mod:`trails.testing.servers`: local stand-ins for an OpenAI-compatible API and a SPARQL
  endpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_attributes

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from trails.testing.kernel import context_directory, fresh_context, isolated_kernel
    from trails.testing.models import tiny_cross_encoder
    from trails.testing.stores import factory_named, factory_names
    from trails.vector.embedders.mock import MockEmbedder

__all__ = [
    "MockEmbedder", "context_directory", "factory_named", "factory_names", "fresh_context",
    "isolated_kernel", "tiny_cross_encoder",
]

__getattr__, __dir__ = lazy_attributes(__name__, {
    "fresh_context": "trails.testing.kernel:fresh_context",
    "isolated_kernel": "trails.testing.kernel:isolated_kernel",
    "context_directory": "trails.testing.kernel:context_directory",
    "factory_named": "trails.testing.stores:factory_named",
    "factory_names": "trails.testing.stores:factory_names",
    "tiny_cross_encoder": "trails.testing.models:tiny_cross_encoder",
    "MockEmbedder": "trails.vector.embedders.mock:MockEmbedder",
}, __all__)
