"""Vector store factories for the contract suite (tests/test_vector_store_contract.py).

A backend joins the suite by adding a factory class to ``FACTORIES`` (and to ``PERSISTENT`` if
its data outlives the object). A factory makes stores of one backend in a test's private
directory and closes everything it made when the test ends:

- ``new(dim, embedder=None)``: an empty store (the first call for a persistent factory creates
  the store's file; later calls open the same one).
- ``reopen(dim=None, embedder=None, read_only=False)``: persistent factories only; another
  object (a second connection) on the same data.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from trails.vector.embedders.base import EmbedderIdentity


class _Factory:
    name = "?"
    persistent = False

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self._made: list[Any] = []

    def _keep(self, store: Any) -> Any:
        self._made.append(store)
        return store

    def close_all(self) -> None:
        for store in reversed(self._made):
            with contextlib.suppress(Exception):  # a test may have closed it already
                store.close()
        self._made.clear()


class SqliteVecMemory(_Factory):
    name = "sqlite-vec-memory"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> Any:
        from trails.vector.stores.sqlite_vec import SqliteVecStore

        return self._keep(SqliteVecStore(":memory:", dim=dim, embedder=embedder))


class SqliteVecFile(_Factory):
    name = "sqlite-vec-file"
    persistent = True

    @property
    def path(self) -> Path:
        return self.tmp_path / "vectors.db"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> Any:
        from trails.vector.stores.sqlite_vec import SqliteVecStore

        return self._keep(SqliteVecStore(self.path, dim=dim, embedder=embedder))

    def reopen(
        self,
        dim: int | None = None,
        embedder: EmbedderIdentity | None = None,
        read_only: bool = False,
    ) -> Any:
        from trails.vector.stores.sqlite_vec import SqliteVecStore

        return self._keep(
            SqliteVecStore(self.path, dim=dim, embedder=embedder, read_only=read_only)
        )


FACTORIES: list[type[_Factory]] = [SqliteVecMemory, SqliteVecFile]
PERSISTENT: list[type[_Factory]] = [f for f in FACTORIES if f.persistent]


import importlib.util  # kept with the Qdrant factories appended below


class QdrantMemory(_Factory):
    name = "qdrant-memory"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> Any:
        from trails.vector.stores.qdrant import QdrantStore

        return self._keep(QdrantStore(dim=dim, embedder=embedder))


class QdrantLocalFolder(_Factory):
    name = "qdrant-path"
    persistent = True

    @property
    def path(self) -> Path:
        return self.tmp_path / "qdrant"

    def new(self, dim: int, embedder: EmbedderIdentity | None = None) -> Any:
        from trails.vector.stores.qdrant import QdrantStore

        return self._keep(QdrantStore(dim=dim, path=self.path, embedder=embedder))

    def reopen(
        self,
        dim: int | None = None,
        embedder: EmbedderIdentity | None = None,
        read_only: bool = False,
    ) -> Any:
        from trails.vector.stores.qdrant import QdrantStore

        return self._keep(
            QdrantStore(dim=dim, path=self.path, embedder=embedder, read_only=read_only)
        )


# qdrant-client is an optional extra (trails[vector-qdrant]): its backends join when installed.
if importlib.util.find_spec("qdrant_client") is not None:
    FACTORIES += [QdrantMemory, QdrantLocalFolder]
    PERSISTENT[:] = [f for f in FACTORIES if f.persistent]
