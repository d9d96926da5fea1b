"""From a filter's candidate IRIs to the store's rows, by each row's back-reference.

A row stands for the graph resource its ``metadata["iri"]`` names, whatever its id (the
trails.vector design's convention; :func:`~trails.vector.stores.records.back_reference`).
Ingestion writes every row with its IRI as id, and then candidates go to the store as they are
(the fast path: one probe of the store says so). A store filled by hand with other ids
(``vec-0``, ...) gets its candidates resolved to those ids first, exactly: a row is a candidate
when its back-reference, or its document, is one.
"""

from __future__ import annotations

from collections.abc import Sequence

from trails.vector.stores.base import VectorStore
from trails.vector.stores.rows import live_rows, resolves_by_iri, rows_standing_for

__all__ = ["candidate_rows", "live_rows", "resolves_by_iri", "rows_standing_for"]


def candidate_rows(store: VectorStore, iris: Sequence[str] | None) -> Sequence[str] | None:
    """What to pass as ``ids`` to the store's searches for the candidates ``iris``: the IRIs
    themselves when every row's id is its IRI, else the ids of the rows they name."""
    if iris is None or not resolves_by_iri(store):
        return iris
    return tuple(store.rows_named(iris))  # type: ignore[attr-defined]
