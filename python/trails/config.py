"""``trails.json``: what a context directory is made of, so that it reopens by itself.

The file names the graph, the vector store and the embedder, each as a backend of
:mod:`trails.registry` with its settings (constructor options such as a URL, a collection, a
model). Settings never hold a secret: API keys and credentials come from the environment
(``OPENAI_API_KEY``, ``QDRANT_API_KEY``, ``TRAILS_SPARQL_AUTH``) each time a context opens.

A format-2 file::

    {"format": 2, "base_iri": "trails://local/",
     "graph":    {"backend": "sparql", "settings": {"query_url": "http://host:7878/query", ...}},
     "vectors":  {"backend": "qdrant", "settings": {"collection": "trails", "path": "qdrant"}},
     "embedder": {"backend": "openai", "settings": {"model": "text-embedding-3-small", ...},
                  "identity": {"model": "openai/text-embedding-3-small", "dim": 1536, ...}}}

``payload`` lists the document metadata keys vector payloads may hold
(:mod:`trails.ingest.payload`); a new context allows none. A file written before the setting
existed reads as the fields its vectors were made with (``LEGACY_PAYLOAD``), so an upgrade
finds nothing to repair; narrow it with ``trails init --payload``.

Format 1 (the first release) recorded only ``base_iri`` and the embedder's identity; it reads
as an embedded Oxigraph graph and sqlite-vec store, which is what it always meant.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from trails.durable import replace_file
from trails.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StorageError,
)
from trails.faults import corrupt_file, storage_fault, translated
from trails.recorded import Scalar, Setting
from trails.scopes import NAME_PATTERN
from trails.vector.embedders.base import EmbedderIdentity

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_BASE_IRI",
    "FORMAT",
    "LEGACY_PAYLOAD",
    "AuditConfig",
    "ContextConfig",
    "EmbedderConfig",
    "LinkerConfig",
    "PartConfig",
    "Scalar",
    "Setting",
    "context_directory",
    "read_config",
    "write_config",
]

CONFIG_FILE = "trails.json"
DEFAULT_BASE_IRI = "trails://local/"
FORMAT: Final = 2
_READABLE = (1, FORMAT)

# What every vector carried before the allowlist existed: a trails.json without ``payload``.
LEGACY_PAYLOAD: Final = ("source", "title", "date")
# A scope's name and a security level's: letters, digits, '_', '.', '-' (trails.scopes).
ScopeName = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
LevelName = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


class PartConfig(BaseModel):
    """A graph or vector store: its registry name and settings.

    ``backend`` is None for a part trails cannot rebuild (a class outside the registry, an
    in-memory store); ``settings["class"]`` then names it, and reopening the context needs
    the part passed in again.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str | None
    settings: dict[str, Setting] = Field(default_factory=dict)


class EmbedderConfig(PartConfig):
    """The embedder: its registry name, settings, and the identity its vectors carry.

    ``backend`` None means the identity alone says how to rebuild it (as format 1 did).
    """

    identity: EmbedderIdentity


class AuditConfig(BaseModel):
    """How a context keeps its audit trail (docs/compliance.md).

    ``enabled``: record every search (contexts in memory never do unless switched on).
    ``query_text``: ``"full"`` keeps each query's text, ``"sha256"`` only its digest (a
    replay then needs the text given again). ``retention_days``: records older than this are
    dropped when the trail is next folded into the graph (None: kept). ``why``: keep, for
    each hit of a filtered search, the filter's solution that admitted it.

    ``levels``: each scope's security level (``{"hr": "protected", "default": "official"}``):
    every record of a search or SPARQL query names the levels of the scopes it read, so
    "every search that read protected data" is one query of the trail. ``digest_levels``:
    the levels whose searches keep only the query's digest, whatever ``query_text`` says (and
    whose query text the log never shows).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    query_text: Literal["full", "sha256"] = "full"
    retention_days: int | None = Field(default=None, ge=1)
    why: bool = True
    levels: dict[ScopeName, LevelName] = {}
    digest_levels: list[LevelName] = []

    def levels_of(self, scopes: Sequence[str] | None) -> dict[str, str]:
        """Scope -> level for each of ``scopes`` that has one; None (every scope, as a SPARQL
        query confined to none) gives every level set.

        >>> AuditConfig(levels={"hr": "protected"}).levels_of(["hr", "default"])
        {'hr': 'protected'}
        """
        if scopes is None:
            return dict(self.levels)
        return {scope: self.levels[scope] for scope in scopes if scope in self.levels}

    def digest_only(self, scopes: Sequence[str] | None) -> bool:
        """Whether a search of ``scopes`` reads a scope of a digest level: its record keeps
        only the query's digest, and logs and spans never show its text."""
        return bool(set(self.levels_of(scopes).values()) & set(self.digest_levels))

class LinkerConfig(BaseModel):
    """The label linker's settings a context links with (``trails.ingest.linker_settings``):
    recorded when a linker is given, so ``trails ingest --link`` and ``trails link`` link
    the same way until other settings are given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    predicates: list[str]
    languages: list[str] | None = None
    case: bool = True
    accents: bool = True
    nested: bool = False
    min_length: int = Field(default=2, ge=1)


class ContextConfig(BaseModel):
    """The whole of ``trails.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[2] = FORMAT
    base_iri: str = DEFAULT_BASE_IRI
    graph: PartConfig = PartConfig(backend="oxigraph")
    vectors: PartConfig = PartConfig(backend="sqlite-vec")
    embedder: EmbedderConfig
    # Metadata key -> predicate IRI for document triples (expanded; default: meta:<key>).
    metadata_predicates: dict[str, str] = {}
    # Scope -> ISO 8601 days ("P30D") its documents are kept after their date; checked when a
    # context opens (trails.ingest.expiry). Files written before it existed keep none.
    retention: dict[str, str] = {}
    # Document metadata keys copied into vector payloads (trails.ingest.payload); the rest
    # stays in the graph only. New contexts allow none; older files read as LEGACY_PAYLOAD.
    payload: list[str] = []
    # Names this context in its embedded parts, so a graph or store file of another context is
    # refused on open (None: a context made before ids were kept; its parts then agree on one).
    id: str | None = None
    audit: AuditConfig = AuditConfig()
    # The label linker's settings last given (None: never given, so the defaults).
    linker: LinkerConfig | None = None


def context_directory(directory: object, read_only: object = False) -> Path:
    """``directory`` as an absolute path, if it names one and ``read_only`` is a bool: a
    truthy string such as ``"no"`` would open read-only, ``None`` would fail deep inside
    ``Path``. A leading ``~`` is the home directory, as a shell reads it (else ``"~/kb"``
    would make a directory named ``~`` in the working directory). Absolute, so that a
    process changing its working directory keeps writing its graph, vectors and audit log
    there (and refusing exports over them), not under the relative path's new meaning.

    Raises:
        InvalidArgumentTypeError: either is of another type.
        InvalidArgumentError: the directory is an empty string.
    """
    if not isinstance(directory, (str, os.PathLike)):
        raise InvalidArgumentTypeError(f"a context's directory is a path (str or Path), got "
                                       f"{type(directory).__name__} {directory!r:.80}")
    if not isinstance(read_only, bool):
        raise InvalidArgumentTypeError(f"read_only must be True or False, got "
                                       f"{type(read_only).__name__} {read_only!r:.80}")
    if directory == "":
        raise InvalidArgumentError("a context's directory is an empty string; name one "
                                   "(\".\" for the working directory)")
    try:
        return Path(os.path.abspath(Path(directory).expanduser()))
    except RuntimeError as exc:  # ~user of no user, or no home directory to be found
        raise InvalidArgumentError(f"a context's directory {os.fspath(directory)!r}: {exc}; "
                                   f"give the path without ~") from None


def read_config(root: Path) -> ContextConfig | None:
    """The configuration in ``root``, or None when the directory holds no context.

    Raises:
        ConfigurationError: the file is of a format this version cannot read, or malformed.
        ContextDamagedError: the file is not a JSON object (corrupt, truncated, overwritten).
        StorageError: the file cannot be read (permissions, the mount).
    """
    path = root / CONFIG_FILE
    with translated(str(path), "reading"):
        try:  # only a missing file is no context: one that cannot be read is no new one
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:  # a stale network share, an I/O error: never "no context"
            raise storage_fault(exc, str(path), "reading") or StorageError(
                f"reading {path} failed ({exc}); check the disk and the mount, then run it "
                "again") from exc
        raw = json.loads(data)
    if not isinstance(raw, dict):
        raise corrupt_file(str(path), f"a JSON {type(raw).__name__}, not an object")
    version = raw.get("format")
    if not isinstance(version, int) or isinstance(version, bool):
        # Every trails wrote a number here: without one the file is no trails.json as written.
        raise corrupt_file(str(path), f"its \"format\" is {version!r}, not a format number"
                           if "format" in raw else "it names no \"format\"")
    if version not in _READABLE:
        raise ConfigurationError(
            f"{path} has format {version!r}, this trails reads formats "
            f"{', '.join(map(str, _READABLE))}; upgrade trails to open it")
    raw.setdefault("payload", list(LEGACY_PAYLOAD))
    try:
        return _from_format_1(raw) if version == 1 else ContextConfig.model_validate(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{path} is not a valid trails configuration: {exc}") from exc


def _from_format_1(raw: dict[str, Any]) -> ContextConfig:
    identity = EmbedderIdentity.model_validate(raw["embedder"])
    return ContextConfig(base_iri=raw["base_iri"], payload=list(LEGACY_PAYLOAD),
                         embedder=EmbedderConfig(backend=None, identity=identity))


def write_config(root: Path, config: ContextConfig) -> None:
    """Write ``trails.json`` atomically and durably: a crash, or a power loss, leaves the old
    file or the new one, never half a configuration nor an empty file (:mod:`trails.durable`).

    Raises:
        StorageError: it cannot be written (a full disk, a read-only mount, permissions); the
            previous file, if any, is left as it was.
    """
    text = json.dumps(config.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    # A name of its own per write: two threads writing at once each replace the file whole,
    # never with a temporary file the other is still writing.
    tmp = root / f"{CONFIG_FILE}.{os.getpid()}.{threading.get_ident()}.tmp"
    path = root / CONFIG_FILE
    try:
        with translated(str(path), "writing"):  # synced: a power loss keeps one file whole
            replace_file(path, text.encode("utf-8"), tmp)
    except OSError as exc:  # an I/O error, a stale share: said as the others are
        raise StorageError(f"writing {path} failed ({exc.strerror or exc}); check the disk "
                           "and the mount, then run it again") from exc


# Held while one thread reads trails.json, changes it and writes it back (the context
# directory's writer lock keeps other processes out), so two changes never undo each other.
CONFIG_CHANGE = threading.Lock()
