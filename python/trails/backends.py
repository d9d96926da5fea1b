"""Open a context's parts from their recorded settings, and record the parts a caller built.

:mod:`trails.registry` says where each backend lives; the backend's class says how it is
recorded and rebuilt (:class:`trails.recorded.Recordable` for graphs and vector stores,
:class:`trails.vector.embedders.base.Rebuildable` for embedders). This module joins the two
and knows no backend by name: ``open_graph``, ``open_vectors`` and ``build_embedder`` open the
part ``trails.json`` records; ``describe_graph``, ``describe_vectors`` and
``describe_embedder`` record one a caller built. Settings are constructor options; a relative
``path`` is inside the context directory. Secrets are never settings: each backend reads its
own from the environment each time it opens.

Adding a backend: its class implements ``from_settings`` and ``recorded_settings`` in its own
module, and one entry in :mod:`trails.registry` names it; nothing here changes.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from trails.config import EmbedderConfig, PartConfig, Setting
from trails.errors import ConfigurationError, InvalidArgumentError, InvalidArgumentTypeError
from trails.kg.base import KnowledgeGraph
from trails.recorded import Recordable, Settings, Where
from trails.registry import EMBEDDERS, GRAPHS, VECTOR_STORES, Backends
from trails.vector.embedders.base import Embedder, EmbedderIdentity, Rebuildable
from trails.vector.stores.base import VectorStore

__all__ = [
    "DEFAULT_MODEL",
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
    if not issubclass(cls, Recordable):
        raise ConfigurationError(
            f"{table.kind} {part.backend!r} ({cls.__qualname__}) cannot be opened from "
            "trails.json: its class needs from_settings and recorded_settings "
            "(trails.recorded.Recordable)")
    _check_settings(table.kind, part.backend, cls, part.settings, supplied={"dim"})
    with _recorded_settings(table.kind, part.backend):
        return cls.from_settings(dict(part.settings), where)


# Constructor parameters no record holds: the opener supplies them, or they are objects or
# secrets (read from the environment on each open).
_NOT_SETTINGS = frozenset({"read_only", "embedder", "client", "api_key", "headers", "sleep",
                           "clock"})


def _check_settings(kind: str, backend: str, cls: type, settings: Mapping[str, Any], *,
                    supplied: set[str] | None = None) -> None:
    """Refuse settings the part's constructor does not take: a key mistyped in a hand-edited
    ``trails.json`` would otherwise be ignored (a part opened with its defaults: another
    folder, collection or table, answering as if empty) or fail as a TypeError.

    Raises:
        ConfigurationError: naming the keys, the nearest the part takes, and all it takes.
    """
    parameters = inspect.signature(cls).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return  # it takes any option
    taken = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    taken -= _NOT_SETTINGS | (supplied or set())
    unknown = sorted(set(settings) - taken)
    needed = sorted(p.name for p in parameters if p.default is p.empty and p.name in taken
                    and p.name not in settings and p.kind is not p.VAR_POSITIONAL)
    if needed and not unknown:
        raise ConfigurationError(
            f"trails.json records the {kind} {backend!r} without the setting"
            f"{'s' if len(needed) > 1 else ''} {', '.join(map(repr, needed))}, which it needs. "
            "Add it to the context's trails.json, or make the context again with trails init")
    if not unknown:
        return
    near = [f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key)
            for key in unknown for close in [difflib.get_close_matches(key, taken, n=1)]]
    raise ConfigurationError(
        f"trails.json records the {kind} {backend!r} with the setting"
        f"{'s' if len(unknown) > 1 else ''} {', '.join(near)}, which it does not take; it "
        f"takes {', '.join(sorted(taken)) or 'none'}. Correct or remove "
        f"{'them' if len(unknown) > 1 else 'it'} in the context's trails.json")


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


def chosen_embedder(embedder: object, recorded: EmbedderConfig | None = None) -> Embedder:
    """``embedder`` as a context is given it; when it is None, the ``recorded`` one rebuilt,
    else the default local model.

    Raises:
        InvalidArgumentTypeError: it is no :class:`~trails.vector.embedders.base.Embedder` (a
            backend's name, say: that is what ``trails.json`` or ``trails init`` take).
    """
    if embedder is None:
        return default_embedder() if recorded is None else build_embedder(recorded)
    if isinstance(embedder, type):  # a class passes the protocol check: its attributes exist
        raise InvalidArgumentTypeError(
            f"embedder must be an Embedder, got the class {embedder.__name__}: make one, "
            f"{embedder.__name__}(...)")
    if not isinstance(embedder, Embedder):
        raise InvalidArgumentTypeError(
            f"embedder must be an Embedder (MockEmbedder(dim=64), "
            f"SentenceTransformerEmbedder(), ...) or None, got {type(embedder).__name__} "
            f"{embedder!r:.60}; a model named by text is chosen with `trails init --model`")
    return embedder


def build_embedder(part: EmbedderConfig) -> Embedder:
    """The embedder ``part`` records, rebuilt to embed as its vectors were made.

    Raises:
        ConfigurationError: the identity names no embedder trails can rebuild.
    """
    name, settings = ((part.backend, dict(part.settings)) if part.backend is not None
                      else _inferred(part.identity))
    cls = EMBEDDERS.load(name)
    _check_settings(EMBEDDERS.kind, name, cls, settings)
    with _recorded_settings(EMBEDDERS.kind, name):
        if not issubclass(cls, Rebuildable):  # the settings are the constructor's options
            return new_embedder(name, settings)
        # A registered embedder class is an Embedder and Rebuildable; the registry types neither.
        return cast(Embedder, cls.from_record(settings, part.identity))


@contextmanager
def _recorded_settings(kind: str, backend: str) -> Iterator[None]:
    """A part built from what trails.json records refuses a value (a wrong type, a number out
    of range, in a hand-edited file): say that the value is trails.json's, and where."""
    try:
        yield
    except InvalidArgumentError as exc:
        raise ConfigurationError(
            f"trails.json records the {kind} {backend!r} with a setting it refuses: {exc}. "
            "Correct it in the context's trails.json, or make the context again with "
            "trails init") from exc


_MOCK = re.compile(r"^trails-mock-bow:seed=(-?\d+)$")


def _inferred(identity: EmbedderIdentity) -> tuple[str, Settings]:
    """Backend and settings from an identity alone: format 1 recorded no backend, and knew
    only these three embedders (an unregistered class's identity ends up here too)."""
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
    settings = _recorded(part, root) if name is not None else None
    if name is None or settings is None:
        return PartConfig(backend=None, settings={"class": f"{cls.__module__}.{cls.__qualname__}"})
    return PartConfig(backend=name, settings=settings)


def _recorded(part: object, root: Path) -> Settings | None:
    """The part's own record of its settings; None when its class keeps none."""
    record = getattr(part, "recorded_settings", None)
    settings: Settings | None = record(root) if callable(record) else None
    return settings
