"""The backends trails can build by name: graphs, vector stores and embedders.

Each entry maps a name (the one ``trails.json`` records and ``trails init`` accepts) to an
import string and the extra that installs its optional packages. Nothing here imports a
backend: :meth:`Backends.load` imports the one that is chosen, and only that one.

>>> VECTOR_STORES["qdrant"].extra
'vector-qdrant'
>>> sorted(GRAPHS)
['oxigraph', 'sparql']
>>> EMBEDDERS.load("mock").__name__
'MockEmbedder'

Adding a backend is one module and one entry here. The module's class implements
:class:`trails.recorded.Recordable` (``from_settings`` and ``recorded_settings``: how
``trails.json`` reopens it, its secrets read from the environment there), or for an embedder
:class:`trails.vector.embedders.base.Rebuildable`; the entry names the class, the extra that
installs its packages and, for a vector store, how a test makes an empty one
(:class:`StoreFixture`): the shared contract suite (``trails_store_factory``) then runs on
it. A plugin of its own registers at import with :meth:`Backends.register`.

>>> [fixture.id for fixture in VECTOR_STORES["sqlite-vec"].tests]
['sqlite-vec-memory', 'sqlite-vec-file']
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from trails._lazy import import_target, require
from trails.errors import ConfigurationError
from trails.recorded import Settings

__all__ = ["EMBEDDERS", "GRAPHS", "VECTOR_STORES", "Backend", "Backends", "StoreFixture",
           "installed"]


@dataclass(frozen=True)
class StoreFixture:
    """How the shared vector store suites make an empty store of one backend
    (``trails_store_factory[<id>]``, :mod:`trails.testing.stores`).

    Attributes:
        id: the test id, unique over every backend.
        settings: what the kit's default factory opens the store from, as ``trails.json``
            would, inside the test's own directory
            (:class:`trails.testing.stores.RecordedStores`).
        factory: instead, ``"module:Class"`` of a ``StoreFactory`` of its own (an in-memory
            store, a test server). The shipped stores' factories are the kit's own, found by
            ``id`` there: the engine never names the test kit.
        persistent: its data can be reopened (``trails_persistent_store_factory``).
        requires: modules the test needs beyond the backend's own (a test server's).
    """

    id: str
    settings: Settings = field(default_factory=dict)
    factory: str | None = None
    persistent: bool = True
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Backend:
    """Where a backend lives and what it needs installed.

    Attributes:
        target: ``"package.module:Class"``, imported when the backend is chosen.
        extra: the ``trails[extra]`` that installs its optional packages (None: the base
            install has everything).
        requires: optional modules (keys of ``trails._lazy.OPTIONAL_MODULES``) checked when
            the backend is loaded, so a missing one is reported before anything is built.
            Packages the backend loads later on its own (a model) are not listed.
        summary: one line for people.
        tests: for a vector store, how the shared suites make empty ones (one
            :class:`StoreFixture` each way); without any the contract suite skips it.
    """

    target: str
    extra: str | None = None
    requires: tuple[str, ...] = ()
    summary: str = ""
    tests: tuple[StoreFixture, ...] = ()


class Backends(Mapping[str, Backend]):
    """The backends of one kind, by name; a read-only mapping with loading on top."""

    def __init__(self, kind: str, entries: Mapping[str, Backend]) -> None:
        self.kind = kind
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> Backend:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def backend(self, name: str) -> Backend:
        """The entry called ``name``.

        Raises:
            ConfigurationError: no such backend; the message lists the valid names.
        """
        entry = self._entries.get(name)
        if entry is None:
            raise ConfigurationError(
                f"unknown {self.kind} {name!r}: choose one of {', '.join(sorted(self))}")
        return entry

    def load(self, name: str) -> type[Any]:
        """The class of backend ``name``, importing its module and nothing else.

        Raises:
            ConfigurationError: no such backend.
            MissingExtraError: a package it needs is not installed; the message names the
                ``pip install "trails[extra]"`` command.
        """
        entry = self.backend(name)
        for module in entry.requires:
            require(module, f"The {name} {self.kind}")
        loaded = import_target(entry.target)
        if not isinstance(loaded, type):
            raise ConfigurationError(f"{self.kind} {name!r} names {entry.target}, not a class")
        return loaded

    def register(self, name: str, entry: Backend) -> None:
        """Add backend ``name`` (a plugin registering its own at import). Registering the
        same entry again does nothing.

        Raises:
            ConfigurationError: another backend has that name.
        """
        if self._entries.setdefault(name, entry) != entry:
            raise ConfigurationError(
                f"{self.kind} {name!r} is already registered ({self._entries[name].target}); "
                "choose another name")

    def unregister(self, name: str) -> None:
        """Remove backend ``name`` if registered (a test's own, when it ends)."""
        self._entries.pop(name, None)

    def name_of(self, cls: type) -> str | None:
        """The name under which ``cls`` itself (not a subclass) is registered, if any.

        Looks only at backends whose module is already imported: an instance of a class
        means its module was imported, so nothing new is loaded.
        """
        for name, entry in self._entries.items():
            module, _, attribute = entry.target.partition(":")
            loaded = sys.modules.get(module)
            if loaded is not None and getattr(loaded, attribute, None) is cls:
                return name
        return None


def installed(modules: tuple[str, ...]) -> bool:
    """Whether every module (``"pgvector.psycopg"``: its top package) can be imported,
    without importing any."""
    return all(importlib.util.find_spec(module.split(".")[0]) is not None for module in modules)


GRAPHS = Backends("graph", {
    "oxigraph": Backend(
        "trails.kg.oxigraph:OxigraphGraph",
        summary="embedded Oxigraph store in the context directory"),
    "sparql": Backend(
        "trails.kg.remote:SparqlEndpointGraph", extra="remote", requires=("httpx",),
        summary="a SPARQL 1.1 endpoint (query and update URLs)"),
})

VECTOR_STORES = Backends("vector store", {
    "sqlite-vec": Backend(
        "trails.vector.stores.sqlite_vec:SqliteVecStore", extra="sqlite-vec",
        summary="embedded SQLite file in the context directory",
        tests=(StoreFixture("sqlite-vec-memory", persistent=False),
               StoreFixture("sqlite-vec-file"))),
    "qdrant": Backend(
        "trails.vector.stores.qdrant:QdrantStore", extra="vector-qdrant",
        requires=("qdrant_client",),
        summary="a Qdrant server (url) or a local Qdrant folder (path)",
        tests=(StoreFixture("qdrant-memory", persistent=False),
               StoreFixture("qdrant-path"))),
    "pgvector": Backend(
        "trails.vector.stores.pgvector:PgVectorStore", extra="pgvector",
        requires=("psycopg", "psycopg_pool", "pgvector.psycopg"),
        summary="a PostgreSQL table with pgvector (dsn)",
        tests=(StoreFixture("pgvector",
                            requires=("pgserver",)),)),
})

EMBEDDERS = Backends("embedder", {
    "mock": Backend(
        "trails.vector.embedders.mock:MockEmbedder",
        summary="deterministic bag-of-words vectors, for tests"),
    "sentence-transformers": Backend(
        # torch and the packaged model load on the first batch, not when chosen.
        "trails.vector.embedders.sentence_transformer:SentenceTransformerEmbedder",
        extra="local-model", summary="a local sentence-transformers model (all-MiniLM-L6-v2)"),
    "openai": Backend(
        "trails.vector.embedders.openai:OpenAIEmbedder", extra="vector-openai",
        requires=("openai", "tiktoken"),
        summary="OpenAI's embeddings API or a compatible server"),
})
