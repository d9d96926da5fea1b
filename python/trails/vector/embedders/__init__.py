"""Embedders: the :class:`Embedder` protocol and its backends (mock, sentence-transformers, OpenAI)."""
