"""Which rows of a store stand for which IRIs: a row stands for the resource its
``metadata["iri"]`` names, whatever its id (the back-reference, ADR 0028), else for its id."""

from __future__ import annotations

from collections.abc import Iterable

from trails.vector.stores.base import BackReferences, VectorStore

__all__ = ["live_rows", "resolves_by_iri"]


def resolves_by_iri(store: VectorStore) -> bool:
    """Whether some row of ``store`` names its IRI in metadata under another id (a store
    without the capability names every row by its id)."""
    return isinstance(store, BackReferences) and store.has_back_references()


def live_rows(store: VectorStore, iris: Iterable[str]) -> dict[str, str]:
    """``{id: IRI}`` of the live rows ``iris`` name (by back-reference, or as their document)."""
    if resolves_by_iri(store):
        return store.rows_named(iris)  # type: ignore[attr-defined, no-any-return]
    return {id: id for id in store.expand_ids(iris)}
