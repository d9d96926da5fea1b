"""A candidate set's names decide which rows it admits, whatever their hashes (slot_index).

The slot index finds a filter's rows by 64-bit hashes of their names; the hashes only
shortlist. Here every name hashes alike, so every row is shortlisted for every name, and the
answers must still be exactly the rows the names stand for.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trails.vector.stores.records import DocumentIris
from trails.vector.stores.sqlite_vec import SqliteVecStore, slot_index, vector_file


def _colliding(names: object) -> np.ndarray:
    listed = list(names)  # type: ignore[call-overload]
    return np.full(len(listed), 7, dtype=np.uint64)


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> SqliteVecStore:
    monkeypatch.setattr(vector_file, "key_hashes", _colliding)
    monkeypatch.setattr(slot_index, "key_hashes", _colliding)
    made = SqliteVecStore(dim=2)
    rows = [("a", "doc:1"), ("b", "doc:1"), ("c", "doc:2"), ("d", "doc:3"), ("doc:2", None)]
    for n, (id, doc) in enumerate(rows):
        metadata = {"text": f"word{n} shared"} if doc is None else {
            "doc_iri": doc, "text": f"word{n} shared"}
        made.add(id, [1.0, float(n)], metadata)
    return made


NAMES = ["a", "b", "c", "d", "doc:1", "doc:2", "doc:3", "x"]
# What each name stands for (chunk ids, or a document's chunks; a row may be named both ways).
ROWS = {"a": {"a"}, "b": {"b"}, "c": {"c"}, "d": {"d"}, "x": set(),
        "doc:1": {"a", "b"}, "doc:2": {"c", "doc:2"}, "doc:3": {"d"}}
DOCUMENT_ROWS = {"doc:1": {"a", "b"}, "doc:2": {"c"}, "doc:3": {"d"}}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # read only
@given(chosen=st.lists(st.sampled_from(NAMES), max_size=5))
def test_colliding_hashes_admit_only_the_named_rows(store: SqliteVecStore,
                                                    chosen: list[str]) -> None:
    expected = set().union(*(ROWS[name] for name in chosen))
    found = {hit.id for hit in store.search([1.0, 0.5], k=10, ids=chosen)}
    assert found == expected
    keyword = {hit.id for hit in store.keyword_search("shared", 10, chosen)}
    assert keyword == expected


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # read only
@given(chosen=st.lists(st.sampled_from(["doc:1", "doc:2", "doc:3", "a"]), max_size=4))
def test_colliding_hashes_admit_only_the_named_documents_chunks(store: SqliteVecStore,
                                                               chosen: list[str]) -> None:
    expected = set().union(*(DOCUMENT_ROWS.get(name, set()) for name in chosen))
    found = {hit.id for hit in store.search([1.0, 0.5], k=10, ids=DocumentIris(chosen))}
    assert found == expected



@settings(max_examples=60, deadline=None)
@example(batches=[["a"], ["b", "a"]], cap=1)  # full with a name asked again: cleared first
@example(batches=[["a", "a", "b"]], cap=2)  # one name twice: it fits
@given(batches=st.lists(st.lists(st.text(max_size=6), max_size=8), max_size=6),
       cap=st.integers(min_value=1, max_value=10))
def test_remembered_name_keys_are_the_names_hashes(batches: list[list[str]], cap: int) -> None:
    """The memo of names hashed before answers exactly what hashing them again would, while
    it fills, overflows its cap and is cleared (names repeated within and across calls)."""
    index = slot_index.SlotIndex(vector_file.VectorFiles(":memory:", 2))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slot_index, "NAME_KEYS", cap)
        for names in batches:
            keys = index._keys(names)
            assert keys.dtype == np.uint64
            assert keys.tolist() == vector_file.key_hashes(names).tolist()
            assert len(index._name_keys) <= cap
