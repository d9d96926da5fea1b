"""Vector stores: the :class:`VectorStore` protocol and its backends (sqlite-vec, Qdrant)."""
