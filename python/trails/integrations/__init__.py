"""Adapters that let other frameworks call a trails retriever.

- :mod:`trails.integrations.langchain`: :class:`TrailsRetriever`, a LangChain
  ``BaseRetriever`` (``pip install 'trails[langchain]'``);
- :mod:`trails.integrations.llamaindex`: :class:`TrailsLlamaRetriever`, a LlamaIndex
  ``BaseRetriever`` (``pip install 'trails[llamaindex]'``).

Both wrap any trails retriever (``VectorRetriever``, ``HybridRetriever``, ``GraphRetriever``,
``RerankedRetriever``, ``CompositeRetriever`` or your own object with ``retrieve(query)``),
sync and async, and carry each hit's provenance in the framework's metadata
(:func:`trails.integrations.hits.hit_metadata`). Importing this package imports neither
framework.
"""

from __future__ import annotations

__all__: list[str] = []
