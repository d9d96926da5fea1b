"""A row names its graph resource by ``metadata["iri"]`` whatever its id (the trails.vector
design's back-reference): hybrid, keyword and graph retrieval match the filter's candidates on
it, exactly, and the hits carry the IRI.

Expected rankings are brute force over the rows the test itself wrote (float64 cosine of the
vectors it gave the store), never the store's own answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.ingest import Document, ingest_all
from trails.testing import fresh_context
from trails.vector import MockEmbedder, SqliteVecStore, retrieve

EX = "https://example.org/"
TURTLE = f"""
@prefix schema: <https://schema.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
<{EX}doc/old> schema:dateCreated "2023-06-01"^^xsd:date .
<{EX}doc/new> schema:dateCreated "2024-03-12"^^xsd:date .
<{EX}chunk/1> schema:isPartOf <{EX}doc/old> .
<{EX}chunk/2> schema:isPartOf <{EX}doc/new> .
<{EX}chunk/3> schema:isPartOf <{EX}doc/new> .
"""
SINCE_2024 = """
    SELECT ?iri WHERE {
        ?iri schema:isPartOf ?doc .
        ?doc schema:dateCreated ?d .
        FILTER (?d >= "2024-01-01"^^xsd:date)
    }
"""
TEXTS = {f"{EX}chunk/1": "the defendant was abroad in 2023",
         f"{EX}chunk/2": "evidence that the defendant was present at the scene",
         f"{EX}chunk/3": "a witness saw the defendant at the scene"}


def cosine(a, b) -> float:
    a, b = [float(x) for x in a], [float(x) for x in b]
    return math.fsum(x * y for x, y in zip(a, b)) / (
        math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def sketch_store(embedder, ids):
    """The design's store, filled with the given vector ids and metadata["iri"] per chunk."""
    store = SqliteVecStore(path=":memory:", dim=embedder.dim)
    for id, (iri, text) in zip(ids, TEXTS.items()):
        store.add(id=id, vector=embedder.embed(text), metadata={"iri": iri, "snippet": text})
    return store


@pytest.mark.parametrize("ids", [["vec-0", "vec-1", "vec-2"], list(TEXTS)],
                         ids=["ids-differ", "ids-are-iris"])
@pytest.mark.parametrize("fusion", [None, "auto", "rrf"])
def test_the_designs_hybrid_sketch_keeps_the_hits_whose_metadata_iri_is_a_candidate(ids, fusion):
    ctx = fresh_context(dim=16)
    ctx.kg.load(TURTLE, format="turtle")
    embedder = MockEmbedder(dim=16, seed=1)
    store = sketch_store(embedder, ids)
    query = "evidence that the defendant was present at the scene"
    hits = retrieve(query, ctx=ctx, mode="hybrid", k=20, sparql_filter=SINCE_2024,
                    vector_store=store, embedder=embedder, fusion=fusion)
    assert sorted(h.iri for h in hits) == [f"{EX}chunk/2", f"{EX}chunk/3"]
    if fusion is None:  # cosine order, from the vectors this test computed
        q = embedder.embed(query)
        expected = sorted([f"{EX}chunk/2", f"{EX}chunk/3"],
                          key=lambda iri: -cosine(embedder.embed(TEXTS[iri]), q))
        assert [h.iri for h in hits] == expected
    assert all(h.snippet == TEXTS[h.iri] and h.metadata["iri"] == h.iri for h in hits)


def test_graph_mode_returns_the_candidates_that_have_a_vector_by_metadata_iri():
    ctx = fresh_context(dim=16)
    ctx.kg.load(TURTLE, format="turtle")
    embedder = MockEmbedder(dim=16, seed=1)
    store = sketch_store(embedder, ["vec-0", "vec-1", "vec-2"])
    hits = retrieve("", ctx=ctx, mode="graph", k=10, sparql_filter=SINCE_2024,
                    vector_store=store, embedder=embedder)
    assert sorted(h.iri for h in hits) == [f"{EX}chunk/2", f"{EX}chunk/3"]
    assert all(h.snippet == TEXTS[h.iri] for h in hits)


def test_an_id_that_is_another_rows_iri_is_not_a_candidate():
    """Swapped names: the row whose id is a candidate IRI but whose metadata["iri"] is not
    stays out; the row that refers to the candidate comes in."""
    ctx = fresh_context(dim=16)
    ctx.kg.load(TURTLE, format="turtle")
    embedder = MockEmbedder(dim=16, seed=1)
    store = SqliteVecStore(dim=16)
    store.add(f"{EX}chunk/2", embedder.embed("a"), {"iri": f"{EX}chunk/1", "snippet": "a"})
    store.add(f"{EX}chunk/1", embedder.embed("b"), {"iri": f"{EX}chunk/2", "snippet": "b"})
    hits = retrieve("a", ctx=ctx, mode="hybrid", k=10, sparql_filter=SINCE_2024,
                    vector_store=store, embedder=embedder, fusion=None)
    assert [(h.iri, h.snippet) for h in hits] == [(f"{EX}chunk/2", "b")]


rows = st.lists(st.tuples(st.sampled_from([f"{EX}chunk/{i}" for i in range(6)] + [None]),
                          st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4)
                          .filter(lambda v: sum(x * x for x in v) > 1e-3)),
                min_size=1, max_size=12)


examples = given(rows=rows, chosen=st.sets(st.integers(0, 5)),
                 id_kind=st.sampled_from(["opaque", "shuffled-iris"]),
                 query=st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@examples
def test_hybrid_over_metadata_iri_equals_brute_force_over_the_candidates(rows, chosen, id_kind,
                                                                         query):
    """Whatever the ids (opaque, or other rows' IRIs), hybrid ranks exactly the rows whose
    metadata["iri"] is a candidate (a row without one is named by its id)."""
    hybrid_equals_brute_force(SqliteVecStore(dim=4), rows, chosen, id_kind, query)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@examples
def test_hybrid_over_metadata_iri_equals_brute_force_on_every_store(store_factory, rows, chosen,
                                                                    id_kind, query):
    """The same property on each installed backend (sqlite-vec, Qdrant local, pgvector): a
    persistent backend's store is emptied first, as each example starts from no rows."""
    store = store_factory.new(4)
    try:
        store.delete_many(store.all_ids())
        hybrid_equals_brute_force(store, rows, chosen, id_kind, query)
    finally:
        store.close()


def hybrid_equals_brute_force(store, rows, chosen, id_kind, query) -> None:
    """Fill the empty ``store`` with ``rows`` under opaque ids or other rows' IRIs, and check
    hybrid retrieval against float64 cosine over the rows whose back-reference is chosen."""
    if sum(x * x for x in query) < 1e-3:
        query = [1.0, 0.0, 0.0, 0.0]
    ctx = fresh_context(dim=4)
    candidates = [f"{EX}chunk/{i}" for i in sorted(chosen)]
    ctx.kg.load("".join(f"<{c}> a <{EX}Thing> .\n" for c in candidates) or
                f"<{EX}x> a <{EX}Other> .", format="turtle")
    names = [f"{EX}chunk/{(n * 5 + 3) % 6}" for n in range(len(rows))]
    expected = []
    for n, (iri, vector) in enumerate(rows):
        id = f"row-{n}" if id_kind == "opaque" else names[n]
        metadata = {} if iri is None else {"iri": iri}
        if store.get([id]):
            continue  # an id used twice: keep the first row
        store.add(id, vector, metadata)
        if (iri if iri is not None else id) in candidates:
            expected.append((iri if iri is not None else id, cosine(vector, query)))
    hits = retrieve("q", ctx=ctx, mode="hybrid", k=20, fusion=None, vector_store=store,
                    embedder=_FixedEmbedder(query),
                    sparql_filter=f"SELECT ?iri WHERE {{ ?iri a <{EX}Thing> }}")
    assert sorted(h.iri for h in hits) == sorted(iri for iri, _ in expected)
    assert sorted(h.score for h in hits) == pytest.approx(sorted(s for _, s in expected),
                                                          abs=1e-5)


class _FixedEmbedder(MockEmbedder):
    """Embeds every text as one given vector."""

    def __init__(self, vector) -> None:
        super().__init__(dim=len(vector), seed=0)
        self._vector = [float(x) for x in vector]

    def embed(self, text):
        return list(self._vector)

    def embed_batch(self, texts):
        return np.array([self._vector for _ in texts], dtype=np.float32)


def test_deleting_a_document_removes_the_rows_that_stand_for_it_or_its_chunks():
    """A row added under its own id with ``metadata["iri"]`` naming a chunk (or the document)
    goes with the document: left behind, vector search kept returning the deleted chunk's IRI
    and text, and ``verify`` saw nothing amiss. Rows standing for other resources stay."""
    ctx = fresh_context(dim=16)
    ingest_all([Document(id="a", source="a.md", text="The defendant was present at the scene."),
                Document(id="b", source="b.md", text="A witness saw the bridge collapse.")],
               ctx=ctx)
    chunk = {h.document: h.iri for h in retrieve("scene", ctx=ctx, mode="vector", k=5)}
    doc_a, doc_b = sorted(chunk)
    vector = ctx.embedder.embed("the scene")
    ctx.vectors.add("user-chunk", vector, {"iri": chunk[doc_a], "snippet": "deleted text"})
    ctx.vectors.add("user-doc", vector, {"iri": doc_a, "snippet": "deleted text"})
    ctx.vectors.add("user-other", vector, {"iri": chunk[doc_b], "snippet": "kept"})
    ctx.vectors.add("user-plain", vector, {"snippet": "kept too"})
    assert ctx.delete_document(doc_a)
    assert sorted(ctx.vectors.all_ids()) == sorted([chunk[doc_b], "user-other", "user-plain"])
    hits = retrieve("the scene", ctx=ctx, mode="vector", k=10)
    assert {h.iri for h in hits} == {chunk[doc_b], "user-plain"}
    assert "deleted text" not in {h.snippet for h in hits}
    assert ctx.verify().ok


def test_a_row_standing_for_an_ingested_chunk_has_the_chunks_document_and_span():
    """``hit.document`` and ``hit.span`` of a row added under its own id with
    ``metadata["iri"]`` naming an ingested chunk are the chunk's (they were None), in every
    mode that returns it; a row named by a non-IRI id keeps none."""
    ctx = fresh_context(dim=16)
    ingest_all([Document(id="a", source="a.md", title="A", text="The defendant was there.")],
               ctx=ctx)
    [own] = retrieve("defendant", ctx=ctx, mode="vector", k=5)
    vector = ctx.embedder.embed("defendant")
    ctx.vectors.add("user-row", vector, {"iri": own.iri, "text": "a note on it"})
    ctx.vectors.add("vec-9", vector, {"text": "a row of no chunk"})
    only = f"SELECT ?iri WHERE {{ VALUES ?iri {{ <{own.iri}> }} }}"
    for mode, flt in [("vector", None), ("hybrid", only)]:
        hits = retrieve("defendant", ctx=ctx, mode=mode, k=5, sparql_filter=flt)
        [note] = [h for h in hits if h.snippet == "a note on it"]
        assert (note.iri, note.document, note.span, note.title) == (
            own.iri, own.document, own.span, "A")
    [plain] = [h for h in retrieve("defendant", ctx=ctx, mode="vector", k=5)
               if h.iri == "vec-9"]
    assert (plain.document, plain.span) == (None, None)
