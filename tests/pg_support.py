"""The PostgreSQL test server for tests that run a context or a store on it: skipped where
pgserver cannot start (never under CI, where it must run)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from trails.errors import TrailsError

INSTALLED = all(importlib.util.find_spec(m) is not None
                for m in ("psycopg", "psycopg_pool", "pgvector", "pgserver"))


def pg_server():
    """The process's shared test server, or a skip."""
    if not INSTALLED:
        pytest.skip("PgVectorStore needs trails[pgvector] and pgserver (trails[dev])")
    from trails.testing.servers.postgres import shared_server

    try:
        return shared_server()
    except TrailsError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL test server: {exc}")


def pg_context(dim: int):
    """An in-memory graph with a PgVectorStore in a new schema, and a MockEmbedder."""
    from trails.context import Context
    from trails.kg.oxigraph import OxigraphGraph
    from trails.vector.embedders.mock import MockEmbedder
    from trails.vector.stores.pgvector import PgVectorStore

    embedder = MockEmbedder(dim=dim)
    store = PgVectorStore(pg_server().new_schema(), dim=dim, embedder=embedder.identity)
    return Context(OxigraphGraph(), store, embedder)
