"""What the engine asks of a vector store, and the base classes that derive most of it.

- :class:`VectorStore`: every call retrieval, ranking steps and SPARQL similarity make. A
  store of your own implements this (subclass :class:`BaseVectorStore` to write only a few
  methods) and works with ``retrieve``.
- Capabilities, each a narrow ``runtime_checkable`` protocol the engine checks with
  ``isinstance`` before using it: :class:`VersionedStore` (ADR 0005's versioned commits: what
  ingestion, ``verify``, repair and ``delete_document`` need), :class:`KeywordIndex` (a BM25
  ranking that ``retrieve`` fuses; without it fusion runs on the vector ranking alone, with a
  note), :class:`KeywordWeights` (a query's BM25 weight, from which fusion reads the keyword
  ranking's quality), :class:`Snapshots` (reads that share one committed state) and
  :class:`NumberedStates` (a name for each committed state), and :class:`BackReferences`
  (:mod:`.lookups`). ``SqliteVecStore`` has all six, ``QdrantStore`` all but
  ``KeywordWeights`` and ``NumberedStates``.
- :class:`BaseVectorStore` and :class:`BaseKeywordIndex`: the checks and preambles every store
  shares (input validation, scope and candidate normalisation), as template methods.

The record types (:class:`VectorHit`, :class:`StoredVector`, :class:`SearchPlan`,
:class:`DocumentVersion`) and the vector checks of :mod:`trails.vector.stores.arrays` are
importable from here.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from trails.errors import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    InvalidArgumentError,
)
from trails.vector.embedders.base import Embedder, EmbedderIdentity
from trails.vector.stores import arguments

# Re-exported: the checks every store applies to input vectors, and their encoding.
from trails.vector.stores.arrays import (
    SEARCH_REFUSED,
    VectorLike,
    as_matrix,
    decode,
    encode,
    normalize_rows,
    optional_str,
    unit_rows,
)
from trails.vector.stores.keywords import BaseKeywordIndex  # re-exported
from trails.vector.stores.lookups import (  # re-exported
    BackReferences,
    MetadataLookups,
    checked_filters,
    json_equal,
    metadata_matches,
    storable,
)
from trails.vector.stores.records import DocumentVersion, SearchPlan, StoredVector, VectorHit

if TYPE_CHECKING:
    from typing import Self

__all__ = [
    "BackReferences", "BaseKeywordIndex", "BaseVectorStore", "DocumentVersion", "KeywordIndex",
    "KeywordWeights", "NumberedStates", "RevisionedStore", "ScopeListing", "SearchPlan",
    "Snapshots", "StoredVector", "VectorHit", "VectorLike", "VectorStore", "VersionedStore",
    "as_matrix", "check_compatible", "decode", "encode", "json_equal", "metadata_matches",
    "normalize_rows", "optional_str", "unit_rows", "versioned"
]

Batch = Sequence[VectorLike] | np.ndarray
Metadatas = Sequence[Mapping[str, Any] | None] | None


@runtime_checkable
class VectorStore(Protocol):
    """A collection of unit-normalised vectors keyed by string id, searched by cosine similarity.

    ``search`` returns hits sorted by score descending, ties broken by id ascending; with
    ``ids`` it ranks exactly those ids (vector ids, or document IRIs standing for all their
    chunks; missing ones are ignored) and must be exact over them. ``scopes`` keeps only
    vectors of those scopes (a vector without a ``scope`` field is in the default scope).
    ``with_metadata=False`` lets a store leave hits' metadata empty when reading it costs
    time; :meth:`metadata` then fetches it for the hits kept. Metadata ``text`` (else
    ``snippet``) is what keyword ranking reads: a string or None, any other type is refused.
    """

    @property
    def dim(self) -> int: ...

    @property
    def embedder_identity(self) -> EmbedderIdentity | None: ...

    def bind_embedder(self, identity: EmbedderIdentity) -> None: ...

    def add(self, id: str, vector: VectorLike, metadata: Mapping[str, Any] | None = None) -> None: ...

    def add_many(self, ids: Sequence[str], vectors: Batch, metadata: Metadatas = None) -> None: ...

    def search(self, vector: VectorLike, k: int = 10, ids: Iterable[str] | None = None, *,
               scopes: Sequence[str] | None = None) -> list[VectorHit]: ...

    def search_with_plan(
        self, vector: VectorLike, k: int = 10, ids: Iterable[str] | None = None, *,
        scopes: Sequence[str] | None = None, with_metadata: bool = True,
    ) -> tuple[list[VectorHit], SearchPlan]: ...

    def expand_ids(self, iris: Iterable[str]) -> list[str]: ...

    def get(self, ids: Iterable[str]) -> list[StoredVector]: ...

    def metadata(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]: ...

    def all_ids(self) -> list[str]: ...

    def delete(self, id: str) -> bool: ...

    def delete_many(self, ids: Iterable[str]) -> int: ...

    def delete_where(self, filters: Mapping[str, Any]) -> int: ...

    def find(self, filters: Mapping[str, Any], limit: int = 1) -> list[StoredVector]: ...

    def count(self, filters: Mapping[str, Any] | None = None) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class ScopeListing(Protocol):
    """A store that can list the scopes its live vectors belong to."""

    def scopes(self) -> list[str]: ...


@runtime_checkable
class Snapshots(Protocol):
    """A store whose reads can share one committed state: inside ``with store.snapshot():``
    every search, keyword search, metadata and version lookup sees the same state of the
    store, whatever a writer commits meanwhile (as far as the backend allows: see each
    store's ``snapshot``). ``retrieve`` holds one for its whole read (ADR 0005, "Readers")."""

    def snapshot(self) -> AbstractContextManager[Any]: ...


@runtime_checkable
class NumberedStates(Protocol):
    """``state()`` (in a snapshot: the snapshot's) changes whenever anyone commits."""

    def state(self) -> Hashable: ...


@runtime_checkable
class RevisionedStore(Protocol):
    """``revision()`` is a stamp every commit renews, kept with the data: unlike
    :class:`NumberedStates` it means the same to every process and across runs (the audit
    trail records it, and a replay compares it)."""

    def revision(self) -> str | None: ...


@runtime_checkable
class VersionedStore(Protocol):
    """Versioned commits (ADR 0005): a document version's vectors are staged (``pending``,
    invisible to search), then :meth:`publish` makes them current and drops the previous
    version's in one commit point. Ingestion, ``verify``, repair and ``delete_document`` need
    it; retrieval does not."""

    def add_many(self, ids: Sequence[str], vectors: Batch, metadata: Metadatas = None, *,
                 pending: bool = False) -> None: ...

    def publish(self, versions: Sequence[DocumentVersion]) -> None: ...

    def update_payload(self, doc_iri: str, fields: Mapping[str, Any]) -> int: ...

    def current_versions(self, doc_iris: Iterable[str] | None = None
                         ) -> dict[str, DocumentVersion]: ...

    def document_rows(self, doc_iri: str) -> list[tuple[str, str | None, bool]]:
        """Every row of a document: ``(id, version, pending)``, by id."""
        ...

    def managed_rows(self) -> list[tuple[str, str, str | None, bool]]:
        """``(id, doc_iri, version, pending)`` of every row that belongs to a document."""
        ...

    def pending_ids(self) -> list[str]: ...

    def delete_document(self, doc_iri: str) -> int: ...


@runtime_checkable
class KeywordIndex(Protocol):
    """A BM25 ranking over the stored text, restricted exactly as ``search`` is (ADR 0009)."""

    def keyword_search(
        self, query: str, k: int = 10, ids: Iterable[str] | None = None, *,
        scopes: Sequence[str] | None = None, stopwords: Iterable[str] | None = None,
        with_metadata: bool = True,
    ) -> list[VectorHit]: ...


@runtime_checkable
class KeywordWeights(Protocol):
    """A query's BM25 weight in the store: the sum of its terms' IDFs (ADR 0010)."""

    def keyword_idf_sum(self, query: str, *, stopwords: Iterable[str] | None = None,
                        scopes: Sequence[str] | None = None) -> float:
        """The weight among the rows of ``scopes`` (every row's without them)."""
        ...


def versioned(store: object, purpose: str) -> VersionedStore:
    """``store`` as a :class:`VersionedStore`, or a ConfigurationError saying what needs it."""
    if not isinstance(store, VersionedStore):
        raise ConfigurationError(
            f"{purpose} needs a vector store with versioned commits (publish, current_versions,"
            f" ...: trails.vector.stores.base.VersionedStore), and {type(store).__name__} has "
            "none; use SqliteVecStore or QdrantStore")
    return store


class BaseVectorStore(MetadataLookups, abc.ABC):
    """Derives ``add``, the checks of ``add_many`` and ``delete_where``, ``search``,
    ``metadata``, ``delete``, ``delete_many``, ``bind_embedder``, ``with`` and ``len()`` from
    the eight abstract methods below: what the engine cannot do without (writing, exact
    search, deleting by id, reading by id, listing ids, the embedder's record, closing).

    ``expand_ids``, ``count``, ``find``, ``delete_where`` (``_delete_matching``) and
    ``_label`` (the store's name in messages) have defaults that scan the store's metadata
    through ``all_ids`` and ``get``: right for any store, slow for a large one, so a backend
    replaces them with queries (the three shipped stores do)."""

    _dim: int
    read_only: bool
    # Where to re-ingest when the recorded embedder differs.
    _new_home: ClassVar[str] = "a new store"

    # -- what a backend writes ------------------------------------------------------------

    @property
    @abc.abstractmethod
    def embedder_identity(self) -> EmbedderIdentity | None: ...

    @abc.abstractmethod
    def _record_embedder(self, identity: EmbedderIdentity) -> None: ...

    @abc.abstractmethod
    def _write(self, ids: list[str], unit: np.ndarray, metas: list[dict[str, Any]],
               pending: bool) -> None:
        """Store checked, non-empty rows: unit float32 vectors, each metadata a copy."""

    @abc.abstractmethod
    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        """``search_with_plan`` for a unit float64 ``query`` and ``k >= 0``."""

    @abc.abstractmethod
    def _delete_ids(self, ids: list[str]) -> int:
        """Remove these ids; how many existed."""

    @abc.abstractmethod
    def get(self, ids: Iterable[str]) -> list[StoredVector]: ...

    @abc.abstractmethod
    def all_ids(self) -> list[str]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- defaults a backend may replace with queries -----------------------------------------

    @property
    def _label(self) -> str:
        return type(self).__name__

    def expand_ids(self, iris: Iterable[str]) -> list[str]:
        """Live vector ids named by ``iris``: the ids themselves, or the chunks of document
        IRIs (``metadata["doc_iri"]``), sorted."""
        wanted = {i for i in iris if isinstance(i, str)}
        if not wanted:
            return []
        every = self.metadata(self.all_ids())
        return sorted(id for id, metadata in every.items()
                      if id in wanted or metadata.get("doc_iri") in wanted)

    def count(self, filters: Mapping[str, Any] | None = None) -> int:
        """Live vectors; with ``filters``, those :meth:`find` would find."""
        return len(self.all_ids()) if filters is None else self._count_matching(filters)

    def _delete_matching(self, filters: Mapping[str, Any]) -> int:
        """``delete_where`` for at least one filter, every key an identifier: values compare
        as typed JSON, as ``find``'s do, except that ``None`` matches nothing."""
        checked = self._checked_filters(filters, "delete_where")
        if any(value is None for value in checked.values()):
            self._check_writable()
            return 0
        return self._delete_ids(self._matching(checked, None))

    # -- derived --------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        return self._dim

    def bind_embedder(self, identity: EmbedderIdentity) -> None:
        """Record the embedder that makes this store's vectors, or check it is the same one."""
        arguments.check_identity(identity, EmbedderIdentity)
        if identity.dim != self._dim:
            raise DimensionMismatchError(
                f"embedder {identity.describe()} makes {identity.dim}-d vectors but store "
                f"{self._label!r} holds {self._dim}-d vectors; use a matching embedder or store"
            )
        recorded = self.embedder_identity
        if recorded is None:
            if not self.read_only:
                self._record_embedder(identity)
            return
        if not recorded.compatible_with(identity):
            raise EmbeddingModelMismatchError(
                f"vector store {self._label!r} was built with {recorded.describe()} but "
                f"{identity.describe()} is in use; scores across models are meaningless. "
                f"Use the original embedder, or re-ingest into {self._new_home}."
            )

    def add(self, id: str, vector: VectorLike, metadata: Mapping[str, Any] | None = None) -> None:
        """Insert or replace one vector."""
        self.add_many([arguments.check_id(id)], [arguments.check_vector(vector)],
                      [arguments.check_metadata(metadata)])

    def add_many(self, ids: Sequence[str], vectors: Batch, metadata: Metadatas = None, *,
                 pending: bool = False) -> None:
        """Insert or replace vectors. Every vector is checked before anything is written.

        ``pending=True`` stages them: stored, invisible to search until ``publish`` makes
        their document version current (stores with versioned commits)."""
        checked, unit, metas = self._checked_batch(ids, vectors, metadata)
        if checked:
            self._write(checked, unit, metas, pending)

    def _checked_batch(self, ids: Sequence[str], vectors: Batch, metadata: Metadatas,
                       ) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
        """``add_many``'s arguments, checked before anything is written: the ids, the vectors
        as unit float32 rows, and a copy of each metadata. No ids: no vectors are checked."""
        self._check_writable()
        checked = [arguments.check_id(i, f"ids[{n}]")
                   for n, i in enumerate(arguments.check_ids(ids))]
        if len(set(checked)) != len(checked):
            raise InvalidArgumentError("ids passed to add_many must be unique within the call")
        metas = arguments.check_metadatas(metadata, len(checked))
        if not checked:
            return checked, np.empty((0, self._dim), dtype=np.float32), metas
        unit = normalize_rows(as_matrix(arguments.check_vector(vectors, "vectors"), self._dim))
        if len(unit) != len(checked):
            raise InvalidArgumentError(f"got {len(checked)} ids but {len(unit)} vectors")
        return checked, unit, metas

    def search(self, vector: VectorLike, k: int = 10, ids: Iterable[str] | None = None, *,
               scopes: Sequence[str] | None = None) -> list[VectorHit]:
        """Exact top-``k`` by cosine similarity, optionally over ``ids`` only.

        ``ids`` may name vector ids or document IRIs (every chunk of the document is then a
        candidate). ``scopes`` keeps only vectors of those scopes (a vector without a ``scope``
        field is in the default scope). Sorted by score descending, ties by id.
        """
        return self.search_with_plan(vector, k, ids, scopes=scopes)[0]

    def search_with_plan(
        self, vector: VectorLike, k: int = 10, ids: Iterable[str] | None = None, *,
        scopes: Sequence[str] | None = None, with_metadata: bool = True,
    ) -> tuple[list[VectorHit], SearchPlan]:
        """:meth:`search`'s hits, and the :class:`SearchPlan` that says how they were found.

        ``with_metadata=False`` lets a store leave the hits' metadata empty (``{}``) when
        reading it costs time: fusion ranks hundreds of hits and then needs the metadata of
        the few it keeps, which :meth:`metadata` fetches."""
        k = arguments.check_k(k)
        ids = None if ids is None else arguments.check_ids(ids)
        query = unit_rows(as_matrix(arguments.check_vector(vector), self._dim,
                                     refused=SEARCH_REFUSED))[0]
        return self._search_unit(query, k, ids, arguments.check_scopes(scopes),
                                 with_metadata=with_metadata)

    def metadata(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The metadata of the ids that exist, as search hits carry it."""
        return {row.id: row.metadata for row in self.get(arguments.check_ids(ids))}

    def delete(self, id: str) -> bool:
        """Remove one vector; True if it existed."""
        return self.delete_many([arguments.check_id(id)]) == 1

    def delete_many(self, ids: Iterable[str]) -> int:
        """Remove vectors by id; returns how many existed."""
        return self._delete_ids(list(arguments.check_ids(ids)))

    def delete_where(self, filters: Mapping[str, Any]) -> int:
        """Remove every vector whose metadata equals all of ``filters``; returns how many.

        Keys are identifiers (``[A-Za-z_][A-Za-z0-9_]*``), each compared with one value: a
        str, int, float, bool or date, as typed JSON (``1 == 1.0``, but ``1 != True != "1"``,
        as :meth:`find`); ``None`` matches nothing. ``doc_iri`` and ``scope`` compare the
        promoted fields and take a str. Anything else (a list, a dict, a set, bytes...) is
        refused with InvalidArgumentError before anything is deleted.

        >>> from trails.vector.stores.sqlite_vec import SqliteVecStore
        >>> store = SqliteVecStore(dim=2)
        >>> store.add_many(["a", "b"], [[1, 0], [0, 1]], [{"doc_iri": "d1"}, {"doc_iri": "d2"}])
        >>> store.delete_where({"doc_iri": "d1"}), store.count()
        (1, 1)
        """
        if not arguments.check_filters(filters):
            raise InvalidArgumentError("delete_where needs at least one filter; to empty a "
                                       "store use a new one")
        checked = checked_filters(filters, "delete_where", scalars=True)
        if not storable(checked):  # a lone surrogate: no row holds it
            self._check_writable()
            return 0
        return self._delete_matching(checked)

    def _check_writable(self) -> None:
        if self.read_only:
            raise ConfigurationError(
                f"vector store {self._label!r} was opened read-only; reopen it without "
                "read_only=True to change it"
            )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.count()


def check_compatible(embedder: Embedder, store: VectorStore) -> None:
    """Refuse an embedder whose vectors cannot be compared with ``store``'s (dimension or
    recorded model differ); never records anything."""
    if embedder.dim != store.dim:
        raise DimensionMismatchError(
            f"the embedder makes {embedder.dim}-d vectors but the store holds {store.dim}-d "
            "vectors; use the embedder the store was built with"
        )
    if store.embedder_identity is not None:  # only check: retrieval never writes
        store.bind_embedder(embedder.identity)
