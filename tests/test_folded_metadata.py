"""The vector store keeps a row's JSON without the fields its columns already say (schema
m007, ADR 0050); every reader must still see the metadata exactly as it was given."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore

FOLDABLE = ("iri", "doc_iri", "version", "scope", "snippet")
TEXTS = ["", "apple boat camel", "dune eagle fjord glacier", "é snow 雪 peak"]


def _strings(id: str, text: str | None) -> st.SearchStrategy[object]:
    """Values for a foldable field: often what its column would say, often not quite."""
    prefixes = [text[:n] for n in range(len(text) + 1)] if text is not None else []
    near = [p + "x" for p in prefixes] + [text + " " for text in TEXTS]  # not a prefix
    return st.one_of(st.sampled_from([id, "d1", "d2", "v1", "public", "", "default", *prefixes,
                                      *near]),
                     st.text(max_size=6), st.integers(-3, 3), st.none(), st.booleans(),
                     st.lists(st.integers(0, 2), max_size=2))


@st.composite
def rows(draw: st.DrawFn) -> list[tuple[str, dict[str, object]]]:
    made = []
    for n in range(draw(st.integers(1, 6))):
        id = f"r{n}"
        text = draw(st.one_of(st.none(), st.sampled_from(TEXTS)))
        metadata: dict[str, object] = {} if text is None else {"text": text}
        for key in draw(st.sets(st.sampled_from(FOLDABLE))):
            value = draw(_strings(id, text))
            # A snippet is keyword text: every store refuses one that is no string.
            metadata[key] = str(value) if key == "snippet" and value is not None else value
        if draw(st.booleans()):
            metadata["position"] = n
        made.append((id, metadata))
    return made


def _matching(expected: dict[str, dict[str, object]], key: str, value: str | None) -> list[str]:
    return sorted(i for i, m in expected.items()
                  if key in m and type(m[key]) is type(value) and m[key] == value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made=rows(), patch_iri=st.one_of(st.none(), st.sampled_from(["r0", "elsewhere"])))
def test_every_reader_sees_the_metadata_as_given(made, patch_iri):
    ids = [i for i, _ in made]
    expected = {i: dict(m) for i, m in made}
    with SqliteVecStore(dim=2) as store:
        store.add_many(ids, np.ones((len(ids), 2)), [dict(m) for _, m in made])
        assert store.metadata(ids) == expected
        assert {row.id: row.metadata for row in store.get(ids)} == expected
        assert {h.id: h.metadata for h in store.search([1.0, 1.0], k=10)} == expected
        for key in FOLDABLE:
            for value in {m[key] for m in expected.values()
                          if key in m and (m[key] is None or type(m[key]) is str)}:
                found = _matching(expected, key, value)
                assert sorted(r.id for r in store.find({key: value}, limit=10)) == found
                assert store.count({key: value}) == len(found)
        # A field patched into the JSON overrides what its column said, a None removes it.
        for id, metadata in made:
            if type(metadata.get("doc_iri")) is str:
                doc = metadata["doc_iri"]
                store.update_payload(doc, {"iri": patch_iri, "note": 1})
                for m in expected.values():
                    if type(m.get("doc_iri")) is str and m["doc_iri"] == doc:
                        m.pop("iri", None)
                        m.update({"note": 1} if patch_iri is None else
                                 {"iri": patch_iri, "note": 1})
                break
        assert store.metadata(ids) == expected
        for value in {m["iri"] for m in expected.values() if type(m.get("iri")) is str}:
            assert (sorted(r.id for r in store.find({"iri": value}, limit=10))
                    == _matching(expected, "iri", value))


def test_a_chunk_row_keeps_only_what_its_columns_do_not_say(tmp_path):
    """An ingested chunk's metadata, stored: the JSON holds its position and offsets, every
    other field comes back from the row's columns."""
    text = "Weapleapligra gouvi bavistifa. " * 20
    iri = "trails://local/doc/a/v/0123456789abcdef/c/3"
    given = {"iri": iri, "doc_iri": "trails://local/doc/a", "snippet": text[:280], "text": text,
             "scope": "legal", "version": "0123456789abcdef", "position": 3, "start": 2484,
             "end": 3407}
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=2) as store:
        store.add_many([iri], [[1.0, 0.0]], [dict(given)], pending=True)
        store.publish([DocumentVersion("trails://local/doc/a", "0123456789abcdef", "legal",
                                       "h", 1)])
        assert store.metadata([iri]) == {iri: given}
        assert [h.metadata for h in store.keyword_search("gouvi", k=1)] == [given]
        assert store.find({"snippet": text[:280]}, limit=1)[0].id == iri
    with sqlite3.connect(path) as raw:
        (stored,), = raw.execute("SELECT metadata FROM items")
    assert json.loads(stored) == {"end": 3407, "position": 3, "start": 2484}


def test_rows_written_before_folding_read_as_before(tmp_path):
    """A row of an older store (its whole JSON, ``folded`` 0 once upgraded) is read whole."""
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=2) as store:
        store.add_many(["a"], [[1.0, 0.0]], [{"iri": "a", "snippet": "ap", "text": "apple"}])
    with sqlite3.connect(path) as raw:  # as m001-m006 wrote it: every field in the JSON
        raw.execute("""UPDATE items SET metadata = '{"iri": "a", "snippet": "ap"}', folded = 0""")
    with SqliteVecStore(path, read_only=True) as store:
        assert store.metadata(["a"]) == {"a": {"iri": "a", "snippet": "ap", "text": "apple"}}
        assert [r.id for r in store.find({"snippet": "ap"}, limit=2)] == ["a"]
