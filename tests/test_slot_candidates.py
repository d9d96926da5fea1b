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


# Steps on a store of chunks: ("add", document, chunk), ("delete", chunk), ("ask", documents).
_STEP = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("ask"), st.sets(st.integers(0, 6), max_size=7),
              st.sampled_from([None, ["a"], ["b"], ["a", "b"], ["c"]])))


@settings(max_examples=80, deadline=None)
@example(steps=[("add", 0, 0), ("ask", {0}, None), ("add", 1, 0), ("add", 0, 1),
                ("ask", {0, 1}, ["b"])],
         pass_every=10**9)
@example(steps=[("add", 0, 0), ("add", 0, 1), ("ask", {0}, None), ("delete", 0, 0),
                ("ask", {0}, ["a"])],
         pass_every=10**9)
@given(steps=st.lists(_STEP, max_size=14),
       pass_every=st.sampled_from([0, 10**9]))
def test_documents_rows_are_their_live_chunks_as_the_store_changes(
        steps: list[tuple], pass_every: int) -> None:
    """A filter's documents find exactly their live chunks, by a binary search per document
    or by the pass over every slot's document (its table made at one state, then the store
    grows, loses rows and gains documents between lookups), within the scopes asked for
    (a document's chunks in two scopes; scope "c" holds none)."""
    store = SqliteVecStore(dim=2)
    live: dict[str, str] = {}  # chunk id -> its document
    scope_of = {}  # chunk id -> its scope
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slot_index, "DOCUMENT_PASS", pass_every)
        for n, step in enumerate(steps):
            if step[0] == "add":
                chunk, doc = f"doc:{step[1]}/c/{step[2]}", f"doc:{step[1]}"
                if chunk not in live:
                    scope_of[chunk] = "ab"[step[2] % 2]
                    store.add(chunk, [1.0, float(n)], {"doc_iri": doc, "text": "word",
                                                       "scope": scope_of[chunk]})
                    live[chunk] = doc
            elif step[0] == "delete":
                chunk = f"doc:{step[1]}/c/{step[2]}"
                assert store.delete(chunk) == (chunk in live)
                live.pop(chunk, None)
            else:
                asked, scopes = sorted(f"doc:{d}" for d in step[1]), step[2]
                expected = {c for c, doc in live.items()
                            if doc in asked and (scopes is None or scope_of[c] in scopes)}
                found = store.search([1.0, 0.0], k=100, ids=DocumentIris(asked), scopes=scopes)
                assert {hit.id for hit in found} == expected
                keyword = store.keyword_search("word", 100, DocumentIris(asked), scopes=scopes)
                assert {hit.id for hit in keyword} == expected


@settings(max_examples=80, deadline=None)
@given(names=st.lists(st.one_of(st.none(), st.text(max_size=5)), min_size=1, max_size=30),
       asks=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 30), st.data()), max_size=8))
def test_hashes_picked_by_code_are_the_names_hashes(names: list, asks: list) -> None:
    """Names given as codes into a list that grows under its token (``DocumentIris.coded``)
    hash as the names themselves would: the list hashed in parts as it grows, three tokens
    kept apart, and asks too small to be worth hashing the list answered by name."""
    index = slot_index.SlotIndex(vector_file.VectorFiles(":memory:", 2))
    tokens = [object(), object(), object()]
    for token_number, length, data in asks:
        universe = np.array([*names[:length], None], dtype=object)[:-1]  # shared prefixes
        if token_number:  # other tokens see other lists
            universe = np.array([*[f"{token_number}:{n}" for n in names[:length]], None],
                                dtype=object)[:-1]
        iris = [i for i, n in enumerate(universe) if n is not None]
        codes = np.array(data.draw(st.lists(st.sampled_from(iris), unique=True)) if iris
                         else [], dtype=np.int64)
        asked = DocumentIris(universe[codes].tolist())
        asked.coded = (tokens[token_number], universe, codes)
        assert index._keys(asked).tolist() == vector_file.key_hashes(list(asked)).tolist()


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(st.integers(0, 6), max_size=40),
       wanted=st.lists(st.integers(0, 8), max_size=8))
def test_a_documents_slots_through_its_runs_or_one_pass_are_its_slots(docs, wanted):
    """Each slot's document from the runs of slots documents hold, in any slot order (a
    document's slots interleaved with others', in several runs): its slots through the runs
    and through one pass over every slot are the slots holding it, counted here one by one."""
    from trails.vector.stores.sqlite_vec.document_runs import DocumentRuns

    runs = DocumentRuns(np.array(docs, dtype=np.uint64))
    ordinals = runs.ordinals(np.array(sorted(wanted), dtype=np.uint64))
    expected = [slot for slot, doc in enumerate(docs) if doc in wanted]
    assert runs.slots_of(ordinals).tolist() == expected
    assert np.flatnonzero(runs.mask(ordinals)).tolist() == expected
    assert sorted(runs.distinct.tolist()) == sorted(set(docs))


def test_colliding_rows_that_outrank_the_named_ones_leave_the_k_best_named_rows(monkeypatch):
    """Rows a hash collision lets in are dropped from a keyword ranking and their places are
    taken by named rows: k hits, the best of the named rows, however many strangers scored
    higher."""
    monkeypatch.setattr(vector_file, "key_hashes", _colliding)
    monkeypatch.setattr(slot_index, "key_hashes", _colliding)
    store = SqliteVecStore(dim=2)
    for n in range(6):  # strangers: the word often, in short texts
        store.add(f"s{n}", [1.0, float(n)], {"doc_iri": "doc:other", "text": "word " * 6})
    for n in range(4):  # named: the word n + 1 times among the same filler
        store.add(f"n{n}", [1.0, float(n)],
                  {"doc_iri": "doc:named", "text": "word " * (n + 1) + "filler " * 12})
    assert [h.id for h in store.keyword_search("word", 2, ["doc:named"])] == ["n3", "n2"]
    assert [h.id for h in store.keyword_search("word", 3, ["doc:named", "s0"])] == [
        "s0", "n3", "n2"]
