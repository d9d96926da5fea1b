"""Open a context's parts from their recorded settings, and record the parts a caller built.

:mod:`trails.registry` says where each backend lives; this module knows, for each one, how to
open it inside a context directory from its settings in ``trails.json`` (``open_graph``,
``open_vectors``, ``build_embedder``) and which settings describe an open one
(``describe_graph``, ``describe_vectors``, ``describe_embedder``). Settings are constructor
options; a relative ``path`` is inside the context directory. Secrets are never settings:
they are read from the environment each time a part opens.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from trails.config import EmbedderConfig, PartConfig, Setting
from trails.errors import ConfigurationError
from trails.kg.base import KnowledgeGraph
from trails.registry import EMBEDDERS, GRAPHS, VECTOR_STORES, Backends
from trails.resilience import Resilience
from trails.vector.embedders.base import Embedder, EmbedderIdentity
from trails.vector.embedders.openai import DEFAULT_RESILIENCE as OPENAI_RESILIENCE
from trails.vector.stores.base import VectorStore
from trails.vector.stores.pgvector.core import DSN_ENV as PG_DSN_ENV
from trails.vector.stores.pgvector.core import public_dsn

if TYPE_CHECKING:
    from trails.kg.oxigraph import OxigraphGraph
    from trails.kg.remote import SparqlEndpointGraph
    from trails.vector.embedders.mock import MockEmbedder
    from trails.vector.embedders.openai import OpenAIEmbedder
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder
    from trails.vector.stores.pgvector import PgVectorStore
    from trails.vector.stores.qdrant import QdrantStore
    from trails.vector.stores.sqlite_vec import SqliteVecStore

__all__ = [
    "DEFAULT_MODEL",
    "GRAPH_DIR",
    "PG_DSN_ENV",
    "QDRANT_DIR",
    "QDRANT_KEY_ENV",
    "SPARQL_AUTH_ENV",
    "VECTORS_FILE",
    "Settings",
    "Where",
    "build_embedder",
    "default_embedder",
    "describe_embedder",
    "describe_graph",
    "describe_vectors",
    "new_embedder",
    "open_graph",
    "open_vectors",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
GRAPH_DIR = "graph"
VECTORS_FILE = "vectors.db"
QDRANT_DIR = "qdrant"
# The value of the Authorization header sent to a SPARQL endpoint ("Bearer TOKEN", "Basic ...").
SPARQL_AUTH_ENV = "TRAILS_SPARQL_AUTH"
QDRANT_KEY_ENV = "QDRANT_API_KEY"

Settings = dict[str, Setting]


class Where(NamedTuple):
    """What a part opens inside: the context directory, its mode, the vectors' dimension."""

    root: Path
    read_only: bool
    dim: int | None = None

    def path(self, value: Setting, default: str) -> Path:
        """A recorded path: relative ones are inside the context directory."""
        path = Path(str(value if value is not None else default)).expanduser()
        return path if path.is_absolute() else self.root / path


Opener = Callable[[type[Any], Settings, Where], Any]
Describer = Callable[[Any, Path], "Settings | None"]


# -- graphs ------------------------------------------------------------------------------------

def _open_oxigraph(cls: type[Any], settings: Settings, where: Where) -> Any:
    return cls(where.path(settings.get("path"), GRAPH_DIR), read_only=where.read_only)


def _open_sparql(cls: type[Any], settings: Settings, where: Where) -> Any:
    auth = os.environ.get(SPARQL_AUTH_ENV)
    return cls(**settings, headers={"Authorization": auth} if auth else None)


def _describe_oxigraph(kg: OxigraphGraph, root: Path) -> Settings | None:
    return None if kg.path is None else {"path": _relative(kg.path, root)}


def _describe_sparql(kg: SparqlEndpointGraph, root: Path) -> Settings | None:
    settings: Settings = {"query_url": kg.query_url, "update_url": kg.update_url,
                          "timeout": kg.timeout, "batch_size": kg.batch_size}
    if kg.default_graph_uri is not None:
        settings["default_graph_uri"] = kg.default_graph_uri
    if kg.dialect != "standard":
        settings["dialect"] = kg.dialect
    return _with_resilience(settings, kg.resilience)


def _with_resilience(settings: Settings, policy: Resilience,
                     default: Resilience | None = None) -> Settings:
    """``settings`` and, when it differs from the part's ``default``, its resilience policy
    (retries, breaker, ``max_rps``, ``require_tls``): a reopen keeps what the user chose."""
    chosen = policy.settings(default)
    return {**settings, "resilience": chosen} if chosen else settings


# -- vector stores -----------------------------------------------------------------------------

def _open_sqlite_vec(cls: type[Any], settings: Settings, where: Where) -> Any:
    return cls(where.path(settings.get("path"), VECTORS_FILE), dim=where.dim,
               read_only=where.read_only)


def _open_qdrant(cls: type[Any], settings: Settings, where: Where) -> Any:
    options: dict[str, Any] = dict(settings)
    if "url" in options:
        options["api_key"] = os.environ.get(QDRANT_KEY_ENV) or None
    else:
        options["path"] = where.path(options.get("path"), QDRANT_DIR)
    return cls(**options, dim=where.dim, read_only=where.read_only)


def _open_pgvector(cls: type[Any], settings: Settings, where: Where) -> Any:
    options: dict[str, Any] = dict(settings)
    options["dsn"] = _pg_dsn(options.get("dsn"))
    return cls(**options, dim=where.dim, read_only=where.read_only)


def _pg_dsn(recorded: Setting) -> str | None:
    """The DSN to connect with: the recorded one (no password: libpq reads ``PGPASSWORD``
    or ``~/.pgpass``), or ``$TRAILS_PG_DSN`` when it is the same DSN with a password (or
    when nothing is recorded)."""
    full = os.environ.get(PG_DSN_ENV) or None
    if recorded is None or recorded == "":
        return full
    if full is not None and public_dsn(full) == public_dsn(str(recorded)):
        return full
    return str(recorded)


# PgVectorStore's settings that trails.json records when they differ from these defaults.
_PG_DEFAULTS: dict[str, Setting] = {"pool_min": 1, "pool_max": 4, "connect_timeout": 5.0,
                                    "statement_timeout": 60.0, "hnsw": False,
                                    "min_recall": 0.95}


def _describe_pgvector(store: PgVectorStore, root: Path) -> Settings | None:
    settings: Settings = {"dsn": store.dsn, "table": store.table}
    for name, default in _PG_DEFAULTS.items():
        if getattr(store, name) != default:
            settings[name] = getattr(store, name)
    return _with_resilience(settings, store.resilience)


def _describe_sqlite_vec(store: SqliteVecStore, root: Path) -> Settings | None:
    return None if store.path == ":memory:" else {"path": _relative(store.path, root)}


def _describe_qdrant(store: QdrantStore, root: Path) -> Settings | None:
    location = store.location
    if location in (":memory:", "client"):  # nothing on disk, or a client only the caller has
        return None
    if "://" in location:
        return _with_resilience({"collection": store.collection, "url": location},
                                store.resilience)
    if Path(location).is_dir():  # local mode
        return {"collection": store.collection, "path": _relative(location, root)}
    return _with_resilience({"collection": store.collection, "url": f"http://{location}"},
                            store.resilience)  # host:port


# -- embedders ---------------------------------------------------------------------------------

def _open_sentence_transformer(cls: type[Any], settings: Settings, identity: EmbedderIdentity
                               ) -> Any:
    # from_identity rebuilds the inference backend that made the vectors (and falls back when
    # it cannot run here); a model directory is recorded in settings, as the identity names
    # only its folder.
    model = settings.get("model")
    named = identity if model is None else identity.model_copy(update={"model": str(model)})
    return cls.from_identity(named)


def _describe_mock(embedder: MockEmbedder, root: Path) -> Settings | None:
    return {"dim": embedder.dim, "seed": embedder.seed}


def _describe_openai(embedder: OpenAIEmbedder, root: Path) -> Settings | None:
    settings: Settings = {"model": embedder.model, "dim": embedder.dim}
    if embedder.base_url is not None:
        settings["base_url"] = embedder.base_url
    # The policy as given: `resilience` folds in max_retries and the backoff, recorded apart.
    return _with_resilience(settings, embedder._policy, OPENAI_RESILIENCE)


def _describe_sentence_transformer(embedder: SentenceTransformerEmbedder, root: Path
                                   ) -> Settings | None:
    folder = Path(embedder.model).expanduser()
    return {"model": str(folder.resolve()) if folder.is_dir() else embedder.model}


_OPENERS: dict[str, Opener] = {
    "oxigraph": _open_oxigraph,
    "sparql": _open_sparql,
    "sqlite-vec": _open_sqlite_vec,
    "qdrant": _open_qdrant,
    "pgvector": _open_pgvector,
}
# Embedders whose identity, not only their settings, decides how they are rebuilt.
_REBUILDERS: dict[str, Callable[[type[Any], Settings, EmbedderIdentity], Any]] = {
    "sentence-transformers": _open_sentence_transformer,
}
_DESCRIBERS: dict[str, Describer] = {
    "oxigraph": _describe_oxigraph,
    "sparql": _describe_sparql,
    "sqlite-vec": _describe_sqlite_vec,
    "qdrant": _describe_qdrant,
    "pgvector": _describe_pgvector,
    "mock": _describe_mock,
    "openai": _describe_openai,
    "sentence-transformers": _describe_sentence_transformer,
}


# -- the public functions ----------------------------------------------------------------------

def open_graph(part: PartConfig, root: Path, *, read_only: bool = False) -> KnowledgeGraph:
    """The graph ``part`` records, opened for a context in ``root``.

    Raises:
        ConfigurationError: an unknown backend, or a part trails cannot rebuild.
        MissingExtraError: the backend's packages are not installed.
    """
    graph: KnowledgeGraph = _open(GRAPHS, part, Where(root, read_only), "kg")
    return graph


def open_vectors(part: PartConfig, root: Path, *, dim: int | None, read_only: bool = False
                 ) -> VectorStore:
    """The vector store ``part`` records; ``dim`` is required to create a new one."""
    store: VectorStore = _open(VECTOR_STORES, part, Where(root, read_only, dim), "vectors")
    return store


def _open(table: Backends, part: PartConfig, where: Where, argument: str) -> Any:
    if part.backend is None:
        raise ConfigurationError(
            f"this context's {table.kind} is a {part.settings.get('class')}, which trails "
            f"cannot reopen by itself; pass {argument}=... to Context.open")
    cls = table.load(part.backend)
    return _OPENERS[part.backend](cls, dict(part.settings), where)


def new_embedder(backend: str, settings: Mapping[str, Setting] | None = None) -> Embedder:
    """A new embedder of registry name ``backend``, built with ``settings`` as options.

    >>> new_embedder("mock", {"dim": 8}).identity.describe()
    'trails-mock-bow:seed=0 (dim=8, normalized=True)'
    """
    embedder: Embedder = EMBEDDERS.load(backend)(**(settings or {}))
    return embedder


def default_embedder() -> Embedder:
    """The local model a context gets when none is chosen (all-MiniLM-L6-v2)."""
    return new_embedder("sentence-transformers", {"model": DEFAULT_MODEL})


def build_embedder(part: EmbedderConfig) -> Embedder:
    """The embedder ``part`` records, rebuilt to embed as its vectors were made.

    Raises:
        ConfigurationError: the identity names no embedder trails can rebuild.
    """
    name, settings = ((part.backend, dict(part.settings)) if part.backend is not None
                      else _inferred(part.identity))
    rebuild = _REBUILDERS.get(name)
    if rebuild is None:  # the settings are the constructor's options
        return new_embedder(name, settings)
    embedder: Embedder = rebuild(EMBEDDERS.load(name), settings, part.identity)
    return embedder


_MOCK = re.compile(r"^trails-mock-bow:seed=(-?\d+)$")


def _inferred(identity: EmbedderIdentity) -> tuple[str, Settings]:
    """Backend and settings from an identity alone (format 1, or an unregistered class)."""
    match = _MOCK.match(identity.model)
    if match:
        return "mock", {"dim": identity.dim, "seed": int(match.group(1))}
    if identity.model.startswith("sentence-transformers/"):
        return "sentence-transformers", {}
    if identity.model.startswith("openai/"):
        # The key and endpoint are not recorded: $OPENAI_API_KEY / $OPENAI_BASE_URL on use.
        return "openai", {"model": identity.model.split("/", 1)[1], "dim": identity.dim}
    raise ConfigurationError(
        f"this context was built with {identity.describe()}, which cannot be recreated "
        "automatically; pass embedder=... to Context.open")


def describe_graph(kg: KnowledgeGraph, root: Path) -> PartConfig:
    """The record of a graph a caller built, for ``trails.json`` in ``root``."""
    return _describe(GRAPHS, kg, root)


def describe_vectors(store: VectorStore, root: Path) -> PartConfig:
    """The record of a vector store a caller built, for ``trails.json`` in ``root``."""
    return _describe(VECTOR_STORES, store, root)


def describe_embedder(embedder: Embedder) -> EmbedderConfig:
    """The record of an embedder: its backend and settings when registered, and its identity."""
    part = _describe(EMBEDDERS, embedder, Path.cwd())
    settings = part.settings if part.backend is not None else {}
    return EmbedderConfig(backend=part.backend, settings=settings, identity=embedder.identity)


def _describe(table: Backends, part: object, root: Path) -> PartConfig:
    cls = type(part)
    name = table.name_of(cls)
    settings = None if name is None else _DESCRIBERS[name](part, root)
    if name is None or settings is None:
        return PartConfig(backend=None, settings={"class": f"{cls.__module__}.{cls.__qualname__}"})
    return PartConfig(backend=name, settings=settings)


def _relative(path: str | os.PathLike[str], root: Path) -> str:
    """``path`` relative to ``root`` when inside it (the directory can move), else absolute."""
    absolute = Path(path).expanduser().resolve()
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(absolute)
