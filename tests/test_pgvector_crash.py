"""Killing an ingest into a context on PostgreSQL (SIGKILL) never exposes half a document
version: the pattern of tests/test_crash_safety.py, with the vectors in a real server.

Each kill starts from a fresh schema and context directory holding edition 1; a worker
re-ingests edition 2 and is killed at a random moment. Then retrieval shows whole versions
only, ``verify(repair=True)`` fixes what the kill left, and the next ingest completes."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

import killing
from pg_support import pg_server
from test_crash_safety import WORKER, _all_current, _assert_whole_versions, _snapshot, _write_corpus
from trails.context import Context
from trails.ingest import ingest_all
from trails.vector import MockEmbedder

pytest.importorskip("psycopg")
pytest.importorskip("pgserver")

from trails.vector.stores.pgvector import PgVectorStore

KILLS = int(os.environ.get("TRAILS_PG_CRASH_KILLS", "4"))
DOCS = 40


@pytest.fixture(scope="module")
def editions(tmp_path_factory):
    server = pg_server()
    root = tmp_path_factory.mktemp("pg-crash")
    v1, v2 = root / "v1", root / "v2"
    _write_corpus(v1, 1, DOCS)
    _write_corpus(v2, 2, DOCS)
    wholes: dict[str, list[set[str]]] = defaultdict(list)
    for corpus in (v1, v2):  # what each edition shows, from the embedded store
        with Context.open(root / f"scratch-{corpus.name}", embedder=MockEmbedder(dim=32, seed=3)) as ctx:
            assert ingest_all(corpus, ctx=ctx, batch_size=8).failed == 0
            for doc, snippets in _snapshot(ctx).items():
                wholes[doc].append(snippets)
    return server, v1, v2, wholes, root


def _base(server, v1: Path, directory: Path) -> Path:
    """A context at edition 1 with its vectors in a new schema."""
    store = PgVectorStore(server.new_schema(), dim=32)
    with Context.open(directory, embedder=MockEmbedder(dim=32, seed=3), vectors=store) as ctx:
        assert ingest_all(v1, ctx=ctx, batch_size=8).failed == 0
    return directory


def test_kill_at_random_moments_never_exposes_half_a_version_on_postgres(editions):
    server, v1, v2, wholes, root = editions
    fresh = (_base(server, v1, root / name) for name in ("timing", *map(str, range(3 * KILLS))))
    for state in killing.random_kills(WORKER, [v2], fresh, KILLS, 20261128):
        with Context.open(state) as ctx:
            assert isinstance(ctx.vectors, PgVectorStore)
            _assert_whole_versions(ctx, wholes)
            if not ctx.verify().ok:
                shown = _snapshot(ctx)
                repaired = ctx.verify(repair=True)
                assert repaired.repaired and repaired.removed == []
                assert ctx.verify().ok, ctx.verify().summary()
                assert _snapshot(ctx) == shown
            assert ingest_all(v2, ctx=ctx, batch_size=8).failed == 0
            assert ctx.verify().ok
            _all_current(ctx, wholes)
