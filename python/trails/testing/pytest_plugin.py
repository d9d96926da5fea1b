"""The trails pytest plugin: fixtures for tests of code built on trails (docs/testing.md).

pytest loads it through the ``pytest11`` entry point of an installed trails. Loading it imports
nothing of the engine: each fixture imports what it needs when a test first asks for it, so a
project that never uses these fixtures pays nothing for them.

- ``trails_ctx``: a fresh in-memory context (MockEmbedder, dim 64) inside
  :func:`~trails.testing.isolated_kernel`: it is the default context, and environment, model
  cache and temporary directory are private to the test.
- ``trails_dir``: a context persisted in a temporary directory (``trails_dir.directory``),
  inside the same isolated kernel, closed after the test.
- ``trails_store_factory``: makes empty vector stores of one backend; the tests that use it
  run once per way each registered vector store names (``trails.registry``'s
  ``StoreFixture``s) whose packages are installed: sqlite-vec in memory and in a file; Qdrant
  local mode in memory and in a folder when qdrant-client is installed; pgvector with
  pgserver; a store a plugin registers, as soon as it is registered.
- ``trails_persistent_store_factory``: the same, over the backends whose data can be reopened.
- ``trails_store``: an empty 64-dimensional store of each installed backend.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import trails.testing as kit

if TYPE_CHECKING:
    from trails.context import Context
    from trails.testing.stores import StoreFactory
    from trails.vector.stores.base import VectorStore

    BACKENDS: list[str]  # module __getattr__ below
    PERSISTENT_BACKENDS: list[str]

__all__ = ["BACKENDS", "PERSISTENT_BACKENDS"]

STORE_DIM = 64
# The fixtures that run once per store, and whether only persistent stores apply.
_PER_STORE = {"trails_store_factory": False, "trails_persistent_store_factory": True}


def __getattr__(name: str) -> Any:
    """``BACKENDS`` and ``PERSISTENT_BACKENDS``: the test ids the store fixtures run over,
    read from the registry when asked (loading the plugin imports no store)."""
    if name in ("BACKENDS", "PERSISTENT_BACKENDS"):
        return kit.factory_names(persistent=name == "PERSISTENT_BACKENDS")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run a test that uses a store fixture once per registered, installed store; read at
    collection, so a store registered before (a plugin's) is in."""
    for fixture, persistent in _PER_STORE.items():
        if fixture in metafunc.fixturenames:
            names = kit.factory_names(persistent=persistent)
            metafunc.parametrize(fixture, names, ids=names, indirect=True)


@pytest.fixture
def trails_ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Context]:
    """A fresh in-memory context, the default context, in a kernel private to the test."""
    # isolated_kernel() points tempfile at a directory it deletes on exit: pytest's base
    # temporary directory must be chosen before, or later tests' tmp_path would vanish.
    tmp_path_factory.getbasetemp()
    with kit.isolated_kernel(dim=STORE_DIM) as ctx:
        yield ctx


@pytest.fixture
def trails_dir(trails_ctx: Context, tmp_path: Path) -> Iterator[Context]:
    """A context persisted in a temporary directory, with ``trails_ctx``'s embedder."""
    with kit.context_directory(tmp_path / "context", embedder=trails_ctx.embedder) as ctx:
        yield ctx


def _factory(name: str, tmp_path: Path) -> Iterator[StoreFactory]:
    factory = kit.factory_named(name)(tmp_path)
    _ready_or_skip(factory)
    try:
        yield factory
    finally:
        factory.close_all()


def _ready_or_skip(factory: StoreFactory) -> None:
    """Start what the factory needs (a test server), or skip the test when it cannot start
    here (never under CI, where it must run)."""
    try:
        factory.prepare()
    except Exception as exc:  # a TrailsError: pgserver is missing or did not start
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no {factory.name} test server: {exc}")


@pytest.fixture
def trails_store_factory(request: pytest.FixtureRequest,
                         tmp_path: Path) -> Iterator[StoreFactory]:
    """Makes empty stores of one installed backend (the test runs once per backend)."""
    yield from _factory(request.param, tmp_path)


@pytest.fixture
def trails_persistent_store_factory(request: pytest.FixtureRequest,
                                    tmp_path: Path) -> Iterator[StoreFactory]:
    """Like ``trails_store_factory``, over the backends whose data can be reopened."""
    yield from _factory(request.param, tmp_path)


@pytest.fixture
def trails_store(trails_store_factory: StoreFactory) -> VectorStore:
    """An empty 64-dimensional store (MockEmbedder's default) of each installed backend."""
    return trails_store_factory.new(STORE_DIM)
