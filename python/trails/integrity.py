"""A context's two halves belong together: each embedded part is there, and is this context's.

A context directory holds a graph (``graph/``) and a vector store (``vectors.db``) that only
make sense together: repair compares them and removes what one has and the other lacks. If
a writable open quietly created a missing half empty, or took another context's file, repair
would then delete the surviving half of every document. So before a part is opened:

- an embedded part ``trails.json`` records must exist and not be empty;
- the context's id (``trails.json``'s ``id``) must match the one each embedded part records:
  a marker file in the graph directory, a ``meta`` row in the store file.

A context made before ids were kept gets one in its parts on its next writable open (its
``trails.json`` is left as it is, and the parts' ids must then agree with each other). Remote parts (a SPARQL
endpoint, a Qdrant server) are the operator's to keep together; they are not checked here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from trails.audit.trail import AUDIT_DIRECTORY
from trails.config import CONFIG_FILE, AuditConfig, ContextConfig, PartConfig
from trails.durable import replace_file
from trails.errors import (
    ConfigurationError,
    ContextDamagedError,
    InvalidArgumentTypeError,
    StorageError,
)
from trails.kg.base import KnowledgeGraph
from trails.kg.oxigraph import GRAPH_DIR
from trails.recorded import Where
from trails.vector.stores.base import VectorStore
from trails.vector.stores.sqlite_vec.store import VECTORS_FILE
from trails.writer_lock import LOCK_FILE

__all__ = ["GRAPH_MARKER", "check_open_arguments", "check_parts_belong", "check_parts_present",
           "check_room", "new_context_id"]

@runtime_checkable
class ContextMarked(Protocol):
    """A store that records which context it belongs to (``SqliteVecStore``: a ``meta`` row),
    so that a context refuses a store file of another context."""

    @property
    def context_id(self) -> str | None: ...

    def bind_context(self, context_id: str) -> None: ...


GRAPH_MARKER = "trails-context"  # in the graph directory: the id of its context

_FIX = ("restore the context directory from a backup; or, to start over, move it aside, "
        "create a new context and ingest the sources again")


def new_context_id() -> str:
    return uuid.uuid4().hex


def _embedded_path(root: Path, part: PartConfig, backend: str, default: str) -> Path | None:
    """Where an embedded part lives (as ``backends`` opens it), None for another backend."""
    if part.backend != backend:
        return None
    return Where(root, read_only=True).path(part.settings.get("path"), default)


def _graph_path(root: Path, config: ContextConfig) -> Path | None:
    return _embedded_path(root, config.graph, "oxigraph", GRAPH_DIR)


def check_open_arguments(kg: object, vectors: object, metadata_predicates: object,
                         audit: object) -> None:
    """Refuse parts and settings given to ``Context.open`` that are of the wrong kind, before
    anything is written (a graph named by text would be recorded as one of type ``str``).

    Raises:
        InvalidArgumentTypeError: naming the argument and what it takes.
    """
    if kg is not None and not isinstance(kg, KnowledgeGraph):
        raise InvalidArgumentTypeError(
            f"kg must be a KnowledgeGraph (OxigraphGraph(...), a remote graph) or None, got "
            f"{type(kg).__name__}; a backend named by text is chosen with `trails init`")
    if vectors is not None and not isinstance(vectors, VectorStore):
        raise InvalidArgumentTypeError(
            f"vectors must be a VectorStore (SqliteVecStore(...), QdrantStore(...)) or None, "
            f"got {type(vectors).__name__}; a backend named by text is chosen with `trails init`")
    if metadata_predicates is not None and not isinstance(metadata_predicates, Mapping):
        raise InvalidArgumentTypeError(
            f"metadata_predicates must map metadata keys to predicates "
            f"({{\"author\": \"dcterms:creator\"}}), got {type(metadata_predicates).__name__}")
    if audit is not None and not isinstance(audit, (bool, AuditConfig)):
        raise InvalidArgumentTypeError(f"audit must be True, False, an AuditConfig or None, got "
                                       f"{type(audit).__name__} {audit!r:.40}")


def check_room(root: Path, *, given: tuple[object, ...] = ()) -> None:
    """Refuse to create a context in a directory that holds files of its own (a folder of
    documents, a project): the context's parts would sit among them, a later ingest of that
    folder would meet them, and removing the context would mean picking its files out.

    What a context writes is no obstacle (a creation cut short is finished on the next
    open), nor are hidden files (``.DS_Store``, ``.gitkeep``).

    ``given``: the parts passed in, if any (a store opened on a folder of the directory
    may already have written there): then the caller has chosen the directory's contents.

    Raises:
        ConfigurationError: names the directory, some of its files and what to do.
    """
    if any(part is not None for part in given):
        return
    try:
        foreign = sorted(p.name for p in root.iterdir() if not is_context_file(p.name))
    except (FileNotFoundError, NotADirectoryError):
        return  # a new directory; or a file, which creating the directory reports
    except OSError as exc:
        raise StorageError(f"cannot read {root}: {exc.strerror or exc}") from exc
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if foreign[3:] else "")
        beside = root.resolve()
        raise ConfigurationError(
            f"{root} holds files that are not a trails context ({shown}); a context needs a "
            f"directory of its own: open a new or empty one (it is created), such as "
            f"{beside.with_name(beside.name + '-trails')}, and ingest this folder into it")


def is_context_file(name: str) -> bool:
    """Whether a file named ``name`` in a context's directory is one a context writes (an
    open or a `trails init` cut short leaves them without ``trails.json``): trails.json and
    its temporary files, the writer's lock, vectors.db and its -wal, .f32 and .keys files,
    the graph, the audit log's directory; and hidden files."""
    return name.startswith((".", f"{CONFIG_FILE}.", VECTORS_FILE)) or name in (
        CONFIG_FILE, LOCK_FILE, GRAPH_DIR, AUDIT_DIRECTORY)


def check_parts_present(root: Path, config: ContextConfig) -> None:
    """Refuse to open a context whose embedded graph or vector store is gone or empty.

    Raises:
        ContextDamagedError: names the missing part and what to do.
    """
    graph = _graph_path(root, config)
    if graph is not None and (not graph.is_dir() or not any(graph.iterdir())):
        raise ContextDamagedError(
            f"the graph of the context in {root} is missing or empty ({graph}), while "
            f"{root / 'trails.json'} says it was created; trails will not create an empty one "
            f"(a repair would then delete every document's vectors): {_FIX}")
    vectors = _embedded_path(root, config.vectors, "sqlite-vec", VECTORS_FILE)
    if vectors is not None and (not vectors.is_file() or vectors.stat().st_size == 0):
        raise ContextDamagedError(
            f"the vector store of the context in {root} is missing or empty ({vectors}), while "
            f"{root / 'trails.json'} says it was created; trails will not create an empty one "
            f"(a repair would then delete every document's triples): {_FIX}")


def check_parts_belong(root: Path, config: ContextConfig, kg: KnowledgeGraph | None,
                       store: VectorStore, *, read_only: bool, creating: bool = False) -> str | None:
    """Check that the embedded parts record this context's id (``trails.json``'s, or for a
    context made before ids were kept, the one its parts agree on), and record it in a part
    that has none yet when ``read_only`` is off. ``trails.json`` itself is never rewritten.
    Returns the context's id (None: read-only, and nothing records one).

    ``creating``: ``trails.json`` does not exist yet, so ``config.id`` is only a proposal. It
    is written last, so parts that record an id (agreeing with each other) are what a
    creation that failed part way (a full disk) left: the context takes their id, and opening
    the directory again finishes the creation instead of refusing its own parts.

    Raises:
        ContextDamagedError: a part records another context's id.
        StorageError: the id cannot be written.
    """
    graph = _graph_path(root, config) if kg is not None else None
    marker = graph / GRAPH_MARKER if graph is not None else None
    graph_id = _read_marker(marker) if marker is not None else None
    store_id = store.context_id if isinstance(store, ContextMarked) else None
    expected = (graph_id or store_id or config.id) if creating else (
        config.id or graph_id or store_id)
    for part, recorded in (("graph", graph_id), ("vector store", store_id)):
        if part == "graph" and recorded is not None and expected is not None and \
                recorded != expected and expected.startswith(recorded):
            raise ContextDamagedError(
                f"{marker} holds the context id cut short ({recorded!r} of {expected!r}), "
                f"torn by an interrupted write: remove {marker} and open the context again "
                "(it is written again from trails.json)")
        if recorded is not None and recorded != expected:
            raise ContextDamagedError(
                f"the {part} in {root} belongs to another context (it records context "
                f"{recorded}, the context is {expected}): the two halves of a context must "
                f"come from the same directory; {_FIX}")
    if read_only:
        return expected
    expected = expected or new_context_id()
    if marker is not None and graph_id is None:
        try:  # written whole or not at all: a torn id would read as another context's
            replace_file(marker, f"{expected}\n".encode(),
                         marker.with_name(f"{marker.name}.{os.getpid()}.tmp"))
        except OSError as exc:
            raise StorageError(f"cannot write {marker}: {exc.strerror or exc}") from exc
    if isinstance(store, ContextMarked) and store_id is None:
        store.bind_context(expected)
    return expected


def _read_marker(marker: Path) -> str | None:
    try:
        return marker.read_text().strip() or None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {marker}: {exc.strerror or exc}") from exc
