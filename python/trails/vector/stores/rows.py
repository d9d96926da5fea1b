"""Which rows of a store stand for which IRIs: a row stands for the resource its
``metadata["iri"]`` names, whatever its id (the back-reference, ADR 0028), else for its id."""

from __future__ import annotations

from collections.abc import Iterable

from trails.vector.stores.base import BackReferences, StoredVector, VectorStore

__all__ = ["live_rows", "resolves_by_iri", "rows_standing_for"]


def resolves_by_iri(store: VectorStore) -> bool:
    """Whether some row of ``store`` names its IRI in metadata under another id (a store
    without the capability names every row by its id)."""
    return isinstance(store, BackReferences) and store.has_back_references()


def live_rows(store: VectorStore, iris: Iterable[str]) -> dict[str, str]:
    """``{id: IRI}`` of the live rows ``iris`` name (by back-reference, or as their document)."""
    if resolves_by_iri(store):
        return store.rows_named(iris)  # type: ignore[attr-defined, no-any-return]
    return {id: id for id in store.expand_ids(iris)}


def rows_standing_for(store: VectorStore, iris: Iterable[str]) -> list[tuple[str, StoredVector]]:
    """``(IRI, row)`` for each live row that stands for one of ``iris`` itself (by its
    back-reference, else its id; not a chunk of a document among them), in ``store.get``'s
    order. An IRI may have several rows, one per scope: a caller keys them by the row's scope.

    Look vectors up by the resource they stand for through this, never ``store.get(iris)``: a
    row filled with another id than its IRI carries the IRI only in ``metadata["iri"]``.
    """
    wanted = list(dict.fromkeys(iris))
    named = set(wanted)
    rows = {id: iri for id, iri in live_rows(store, wanted).items() if iri in named}
    return [(rows[row.id], row) for row in store.get(list(rows))]
