"""The records stores return: search hits, stored vectors, search plans, document versions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, SupportsIndex, overload

__all__ = ["CodedIris", "DocumentIris", "DocumentVersion", "SearchPlan", "StoredVector", "VectorHit",
           "back_reference", "distinct_names"]


def back_reference(id: str, metadata: Mapping[str, Any]) -> str:
    """The graph resource a row stands for: its ``metadata["iri"]`` when that is a non-empty
    string (the trails.vector convention: the id may then be anything), else its id.

    >>> back_reference("vec-0", {"iri": "trails://app/Chunk/1"}), back_reference("c", {})
    ('trails://app/Chunk/1', 'c')
    """
    iri = metadata.get("iri")
    return iri if isinstance(iri, str) and iri else id


class CodedIris(tuple[str, ...]):
    """Distinct candidate IRIs that know their place in their source's list of names.

    ``coded``: ``(token, names, codes)``, the names as codes into a list of names that source
    keeps appending to while the token stays the same (``kg.filter_index.Selected``), so a
    store that hashes names hashes that list once per token, and a check that parses them
    parses each once (None: not known). With ``coded`` set, every IRI is a ``str``: a store
    does not check each again."""

    coded: tuple[object, Any, Any] | None = None


class DocumentIris(CodedIris):
    """Candidate IRIs that are documents: a store's ``search(ids=...)`` and
    ``keyword_search`` rank each one's chunks and never read one as a vector id (a filter
    evaluated over documents may also select other resources, which have no chunks).
    ``generation``: the graph generation the filter read (None: not known); ``coded`` as
    :class:`CodedIris` says."""

    generation: int | None = None


def distinct_names(ids: Iterable[object]) -> Sequence[str]:
    """The strings of ``ids``, each once, in order; a ``DocumentIris`` when ``ids`` was one
    (a store then matches them as documents only).

    >>> distinct_names(["a", "b", "a"]), type(distinct_names(DocumentIris(["d", "d"]))).__name__
    (['a', 'b'], 'DocumentIris')
    """
    if (isinstance(ids, CodedIris) and ids.coded is not None) or (
            isinstance(ids, DocumentIris) and set(map(type, ids)) <= {str}
            and len(set(ids)) == len(ids)):
        return ids  # already so (a filter index's answer is, by its codes): the same tuple
    names = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
    return DocumentIris(names) if isinstance(ids, DocumentIris) else names


class VectorHit(NamedTuple):
    """One search result: cosine similarity in [-1, 1], higher is better.

    A record (``hit.id``, ``hit[0]``, ``id, score, metadata = hit``) that also reads as the
    mapping ``{"id", "score", "metadata"}``: ``hit["id"]``, ``hit.get(...)``, ``keys()``,
    ``items()``, ``values()`` and ``dict(hit)`` (ADR 0028). It stays a tuple: ``len``,
    iteration, ``in``, ``==`` and ``json.dumps`` are the tuple's (``dict(hit)`` for a JSON
    object).

    >>> hit = VectorHit("c1", 0.5, {"iri": "c1"})
    >>> hit["score"], dict(hit)
    (0.5, {'id': 'c1', 'score': 0.5, 'metadata': {'iri': 'c1'}})
    """

    id: str
    score: float
    metadata: dict[str, Any]

    @overload
    def __getitem__(self, key: SupportsIndex) -> Any: ...
    @overload
    def __getitem__(self, key: slice) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, key: str) -> Any: ...

    def __getitem__(self, key: SupportsIndex | slice | str) -> Any:
        if isinstance(key, str):
            if key not in self._fields:
                raise KeyError(f"a vector hit has {', '.join(self._fields)}; no {key!r}")
            return getattr(self, key)
        return tuple.__getitem__(self, key)

    def keys(self) -> tuple[str, ...]:
        """The field names, as a mapping's keys (so ``dict(hit)`` works)."""
        return self._fields

    def get(self, key: str, default: Any = None) -> Any:
        """The field ``key``, or ``default`` when a hit has no such field."""
        return getattr(self, key) if key in self._fields else default

    def items(self) -> list[tuple[str, Any]]:
        """``(field, value)`` pairs, as a mapping's items."""
        return list(zip(self._fields, self))

    def values(self) -> list[Any]:
        """The field values in order, as a mapping's values."""
        return list(self)

    def __hash__(self) -> int:
        # A tuple's hash would hash the metadata, a dict, and fail; equal hits have equal ids
        # and scores, so a set of hits or a dict keyed by them works.
        return hash((self.id, self.score))


class StoredVector(NamedTuple):
    id: str
    vector: list[float]
    metadata: dict[str, Any]


class SearchPlan(NamedTuple):
    """How a store answered a search, so short results are never ambiguous.

    ``name`` is the plan (``full-scan``, ``gather``, ``masked-scan``, ``ann+exact-fallback``...),
    ``candidates`` how many vectors were eligible, ``exhaustive`` whether every eligible vector
    was scored exactly.
    """

    name: str
    candidates: int
    exhaustive: bool


class DocumentVersion(NamedTuple):
    """The current version of one ingested document, as the vector store records it."""

    doc_iri: str
    version: str
    scope: str
    content_hash: str
    chunks: int
