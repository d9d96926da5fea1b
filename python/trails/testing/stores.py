"""Factories of empty vector stores, one per installed backend, for tests that must hold on
every backend (the ``trails_store_factory`` fixture, tests/test_vector_store_contract.py).

A factory makes stores of one backend in a test's private directory and closes everything it
made when the test ends:

- ``new(dim, embedder=None)``: an empty store (the first call for a persistent factory creates
  the store's file; later calls open the same one).
- ``reopen(dim=None, embedder=None, read_only=False)``: persistent factories only; another
  object (a second connection) on the same data.

The list comes from :data:`trails.registry.VECTOR_STORES`: each registered store names its
ways (:class:`~trails.registry.StoreFixture`), and :func:`factories` keeps those whose
packages are installed here: the two sqlite-vec ones always, the two Qdrant local-mode ones
when qdrant-client is installed (``trails[vector-qdrant]``), and ``pgvector`` (a fresh schema
of the process's PostgreSQL test server, :func:`trails.testing.servers.postgres.shared_server`)
when psycopg and pgserver are (``trails[pgvector,dev]``). A store registered later (a
plugin's) joins at the next collection. Importing this module imports neither client; making
a store does.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import ClassVar, cast

from trails._lazy import import_target
from trails.errors import ConfigurationError, InvalidArgumentError
from trails.recorded import Recordable, Settings, Where
from trails.registry import VECTOR_STORES, StoreFixture, installed
from trails.testing.servers.postgres import shared_server
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores.base import VectorStore
from trails.vector.stores.pgvector import PgVectorStore
from trails.vector.stores.qdrant import QdrantStore
from trails.vector.stores.sqlite_vec import SqliteVecStore

__all__ = ["FACTORIES", "PERSISTENT", "QDRANT_INSTALLED", "RecordedStores", "StoreFactory",
           "factories", "factory_named", "factory_names"]

# qdrant-client is an optional extra: its backends join the list when it is installed.
QDRANT_INSTALLED = installed(("qdrant_client",))
# PgVectorStore's client and the test server's wheel.
PGVECTOR_INSTALLED = installed(("psycopg", "psycopg_pool", "pgvector", "pgserver"))


class StoreFactory:
    """Makes stores of one backend under ``tmp_path``; :meth:`close_all` closes them."""

    name: ClassVar[str] = "?"
    persistent: ClassVar[bool] = False

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = Path(tmp_path)
        self._made: list[VectorStore] = []

    def _keep(self, store: VectorStore) -> VectorStore:
        self._made.append(store)
        return store

    def prepare(self) -> None:
        """Start what the stores need (a test server) before the test; the fixture skips the
        test when it cannot start here."""

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> VectorStore:
        """An empty store of dimension ``dim`` (persistent backends: the same file each call)."""
        raise NotImplementedError

    def reopen(self, dim: int | None = None, embedder: EmbedderIdentity | None = None,
               read_only: bool = False) -> VectorStore:
        """Another object on the data :meth:`new` made.

        Raises:
            InvalidArgumentError: the backend keeps nothing to reopen (an in-memory store).
        """
        raise InvalidArgumentError(
            f"the {self.name} backend keeps nothing to reopen: use a persistent backend "
            "(the trails_persistent_store_factory fixture)")

    def close_all(self) -> None:
        """Close every store this factory made, newest first."""
        for store in reversed(self._made):
            with contextlib.suppress(Exception):  # a test may have closed it already
                store.close()
        self._made.clear()


class SqliteVecMemory(StoreFactory):
    name = "sqlite-vec-memory"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> VectorStore:
        return self._keep(SqliteVecStore(":memory:", dim=dim, embedder=embedder))


class SqliteVecFile(StoreFactory):
    name = "sqlite-vec-file"
    persistent = True

    @property
    def path(self) -> Path:
        return self.tmp_path / "vectors.db"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> VectorStore:
        return self._keep(SqliteVecStore(self.path, dim=dim, embedder=embedder))

    def reopen(self, dim: int | None = None, embedder: EmbedderIdentity | None = None,
               read_only: bool = False) -> VectorStore:
        return self._keep(
            SqliteVecStore(self.path, dim=dim, embedder=embedder, read_only=read_only))


class QdrantMemory(StoreFactory):
    name = "qdrant-memory"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> VectorStore:
        return self._keep(QdrantStore(dim=dim, embedder=embedder))


class QdrantLocalFolder(StoreFactory):
    name = "qdrant-path"
    persistent = True

    @property
    def path(self) -> Path:
        return self.tmp_path / "qdrant"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> VectorStore:
        return self._keep(QdrantStore(dim=dim, path=self.path, embedder=embedder))

    def reopen(self, dim: int | None = None, embedder: EmbedderIdentity | None = None,
               read_only: bool = False) -> VectorStore:
        return self._keep(
            QdrantStore(dim=dim, path=self.path, embedder=embedder, read_only=read_only))


class PgVectorSchema(StoreFactory):
    """Stores in a schema of their own on the process's PostgreSQL test server."""

    name = "pgvector"
    persistent = True

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self._dsn: str | None = None

    @property
    def dsn(self) -> str:
        """The DSN of this factory's schema (made, and the server started, at first use)."""
        if self._dsn is None:
            self._dsn = shared_server().new_schema()
        return self._dsn

    def prepare(self) -> None:
        self.dsn  # noqa: B018 - starts the server

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> VectorStore:
        return self._keep(PgVectorStore(self.dsn, dim=dim, embedder=embedder))

    def reopen(self, dim: int | None = None, embedder: EmbedderIdentity | None = None,
               read_only: bool = False) -> VectorStore:
        return self._keep(
            PgVectorStore(self.dsn, dim=dim, embedder=embedder, read_only=read_only))


class RecordedStores(StoreFactory):
    """Stores of a registered backend opened from settings as ``trails.json`` reopens them
    (``from_settings``), inside the test's directory: the default way of a
    :class:`~trails.registry.StoreFixture` without a factory of its own."""

    backend: ClassVar[str]
    settings: ClassVar[Settings]

    def _open(self, dim: int | None, embedder: EmbedderIdentity | None,
              read_only: bool) -> VectorStore:
        cls = VECTOR_STORES.load(self.backend)
        if not issubclass(cls, Recordable):
            raise ConfigurationError(
                f"vector store {self.backend!r} has no from_settings: give its StoreFixture a "
                "factory, or implement trails.recorded.Recordable")
        store = self._keep(cast(VectorStore, cls.from_settings(
            dict(self.settings), Where(self.tmp_path, read_only, dim))))
        if embedder is not None:
            store.bind_embedder(embedder)
        return store

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> VectorStore:
        return self._open(dim, embedder, read_only=False)

    def reopen(self, dim: int | None = None, embedder: EmbedderIdentity | None = None,
               read_only: bool = False) -> VectorStore:
        if not self.persistent:
            return super().reopen(dim, embedder, read_only)
        return self._open(dim, embedder, read_only)


# The shipped stores' factories, by the fixture ids their registry entries declare (the engine
# never names the test kit; a plugin's store names its own factory in its entry).
SHIPPED: dict[str, type[StoreFactory]] = {factory.name: factory for factory in (
    SqliteVecMemory, SqliteVecFile, QdrantMemory, QdrantLocalFolder, PgVectorSchema)}


def factories() -> list[type[StoreFactory]]:
    """One factory per way each registered vector store names, if installed here."""
    found: list[type[StoreFactory]] = []
    for backend, entry in VECTOR_STORES.items():
        for fixture in entry.tests:
            if installed(entry.requires + fixture.requires):
                found.append(_factory(backend, fixture))
    return found


def _factory(backend: str, fixture: StoreFixture) -> type[StoreFactory]:
    if fixture.factory is None and fixture.id in SHIPPED:
        return SHIPPED[fixture.id]
    if fixture.factory is not None:
        factory = import_target(fixture.factory)
        if not (isinstance(factory, type) and issubclass(factory, StoreFactory)
                and factory.name == fixture.id and factory.persistent == fixture.persistent):
            raise ConfigurationError(
                f"{fixture.factory} (the test factory of vector store {backend!r}) must be a "
                f"StoreFactory named {fixture.id!r} with persistent={fixture.persistent}")
        return factory
    return type(f"RecordedStores[{fixture.id}]", (RecordedStores,), {
        "name": fixture.id, "persistent": fixture.persistent, "backend": backend,
        "settings": dict(fixture.settings)})


def factory_names(persistent: bool = False) -> list[str]:
    """The test ids of :func:`factories` (only the persistent ones' with ``persistent``)."""
    return [f.name for f in factories() if f.persistent or not persistent]


FACTORIES: list[type[StoreFactory]] = factories()
PERSISTENT: list[type[StoreFactory]] = [f for f in FACTORIES if f.persistent]


def factory_named(name: str) -> type[StoreFactory]:
    """The installed backend's factory called ``name`` (``"sqlite-vec-file"``...).

    Raises:
        InvalidArgumentError: no installed backend has that name (the message lists them).
    """
    found = factories()
    for factory in found:
        if factory.name == name:
            return factory
    raise InvalidArgumentError(
        f"no installed vector store backend is called {name!r}: use one of "
        f"{[f.name for f in found]} (the Qdrant ones need trails[vector-qdrant])")
