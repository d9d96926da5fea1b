"""Hits can be hashed as they are compared: ``set(hits)``, a dict keyed by hits.

A hit holds its metadata in a dict, so the hash Python derives from every field (a frozen
dataclass's, a tuple's) raised ``TypeError: unhashable type: 'dict'``.
"""

from __future__ import annotations

import copy

from trails.records import RetrievalHit
from trails.vector.stores.records import VectorHit


def _retrieval_hits() -> tuple[RetrievalHit, RetrievalHit, RetrievalHit]:
    hit = RetrievalHit("https://x/doc/a#c0", 0.5, "alpha", {"tags": ["x"], "doc_iri": "d"},
                       {"vector": 0.5})
    return hit, copy.deepcopy(hit), RetrievalHit("https://x/doc/b#c0", 0.5, "alpha")


def test_equal_retrieval_hits_hash_alike_and_count_once_in_a_set():
    hit, same, other = _retrieval_hits()
    assert hit == same and hit is not same
    assert hash(hit) == hash(same)
    assert {hit, same, other} == {hit, other}
    assert len({hit, same, other}) == 2
    assert {hit: "first"}[same] == "first"


def test_hits_that_differ_only_in_metadata_are_still_unequal_in_a_set():
    hit = RetrievalHit("https://x/doc/a#c0", 0.5, "alpha", {"k": 1})
    changed = RetrievalHit("https://x/doc/a#c0", 0.5, "alpha", {"k": 2})
    assert hit != changed
    assert len({hit, changed}) == 2


def test_equal_vector_hits_hash_alike_and_count_once_in_a_set():
    hit = VectorHit("c1", 0.25, {"doc_iri": "d", "tags": ["x"]})
    same = VectorHit("c1", 0.25, {"doc_iri": "d", "tags": ["x"]})
    other = VectorHit("c2", 0.25, {"doc_iri": "d"})
    assert hash(hit) == hash(same)
    assert len({hit, same, other}) == 2
    assert {hit: 1}[same] == 1
