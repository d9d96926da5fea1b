"""QdrantStore beyond the shared contract: exact hybrid retrieval at every selectivity, equality
with SqliteVecStore, the version protocol (including interrupted publishes), ingestion end to
end, deterministic point ids, and the missing-extra message.

Runs on qdrant-client's local mode (no server here), where the store filters and scores with
numpy; tests/test_qdrant_local.py checks that path against the filter path a server takes. The
reference for every score is an exactly rounded float64 cosine (``math.fsum``) of the stored
float32 vectors.
"""

from __future__ import annotations

import math
import subprocess
import sys
import uuid

import numpy as np
import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.context import Context
from trails.errors import (
    ConfigurationError,
    ContextLockedError,
    EndpointUnavailableError,
    InvalidArgumentError,
    MissingExtraError,
    UnknownScopeError,
)
from trails.ingest import Document, SentenceChunker, ingest_all
from trails.kg import OxigraphGraph
from trails.scopes import scope_graph
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.qdrant import POINT_NAMESPACE, QdrantStore, point_id
from trails.vector.stores.qdrant import search as qdrant_search
from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore

pytest.importorskip("qdrant_client")

DIM = 12
BUCKETS = 8
TRAILS = "https://trails.dev/ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"
FILTER = "SELECT ?iri WHERE { ?iri trails:bucket ?b FILTER(?b < ?limit) }"
EMBEDDER = MockEmbedder(dim=DIM, seed=0)
SCOPES = ["default", "legal"]


def cosine(a, b) -> float:
    a, b = [float(x) for x in a], [float(x) for x in b]
    dot = math.fsum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def top_k(scored: dict[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))[:k]


def qdrant_context(dim: int = DIM) -> Context:
    return Context(OxigraphGraph(), QdrantStore(dim=dim), MockEmbedder(dim=dim, seed=0))


# -- point ids and the optional extra ----------------------------------------------------


def test_point_ids_are_deterministic_uuid5_of_the_vector_id():
    iri = "trails://local/doc/a/v/1/c/0"
    assert point_id(iri) == str(uuid.uuid5(POINT_NAMESPACE, iri))
    assert point_id(iri) == "d838d687-44de-5ce7-b334-ac5de4c87dfd"  # pinned: stored data uses it
    assert uuid.UUID(point_id(iri)).version == 5
    assert point_id(iri) != point_id(iri + "1")
    with QdrantStore(dim=3) as store:
        store.add(iri, [1.0, 0.0, 0.0], {"doc_iri": "trails://local/doc/a"})
        (record,) = store._client.retrieve(store.collection, [point_id(iri)], with_payload=True)
        assert str(record.id) == point_id(iri)
        assert record.payload["id"] == iri
        assert record.payload["doc_iri"] == "trails://local/doc/a"
        assert record.payload["scope"] == "default" and record.payload["pending"] is False


def test_point_ids_are_the_same_in_another_process():
    code = "from trails.vector.stores.qdrant import point_id; print(point_id('trails://x/c/1'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == point_id("trails://x/c/1")


def test_missing_qdrant_client_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # import now fails
    with pytest.raises(MissingExtraError, match=r'pip install "trails\[vector-qdrant\]"') as info:
        QdrantStore(dim=3)
    assert isinstance(info.value, ImportError)
    assert info.value.extra == "vector-qdrant" and info.value.package == "qdrant-client"


def test_importing_trails_vector_does_not_import_qdrant_client():
    code = ("import sys, trails.vector; assert 'qdrant_client' not in sys.modules; "
            "assert 'QdrantStore' in trails.vector.__all__; "
            "from trails.vector import QdrantStore; assert 'qdrant_client' not in sys.modules; "
            "QdrantStore(dim=2); assert 'qdrant_client' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_constructor_arguments_pick_one_location(tmp_path):
    with pytest.raises(ValueError, match="at most one"):
        QdrantStore(dim=3, url="http://localhost:6333", path=tmp_path)
    with pytest.raises(ValueError, match="api_key"):
        QdrantStore(dim=3, api_key="secret")
    with pytest.raises(ConfigurationError, match="dimension"):
        QdrantStore()
    with pytest.raises(ConfigurationError, match="read-only"):
        QdrantStore(dim=3, read_only=True)
    with pytest.raises(ConfigurationError, match="read-only"):
        QdrantStore(path=tmp_path / "nothing", read_only=True)


def test_a_folder_open_in_another_process_is_a_clear_error(tmp_path):
    folder = tmp_path / "qdrant"
    QdrantStore(path=folder, dim=3).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", ("import sys; from trails.vector.stores.qdrant import QdrantStore; "
                                f"s = QdrantStore(path={str(folder)!r}); print('open', flush=True);"
                                " sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(ContextLockedError, match="another process"):
            QdrantStore(path=folder)
    finally:
        holder.communicate("")
    with QdrantStore(path=folder) as store:  # and usable again once it is closed there
        assert store.dim == 3


def test_stores_on_one_folder_in_one_process_share_a_client(tmp_path):
    first = QdrantStore(path=tmp_path, dim=3)
    second = QdrantStore(path=tmp_path, read_only=True)
    assert second._client is first._client
    first.add("a", [1.0, 0.0, 0.0])
    assert second.count() == 1
    first.close()
    assert second.count() == 1  # the client stays open while a store uses it
    second.close()
    assert second._client._client.closed


def test_a_collection_trails_did_not_make_is_refused():
    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection("theirs", vectors_config=models.VectorParams(
        size=3, distance=models.Distance.COSINE))
    with pytest.raises(ConfigurationError, match="not a trails vector store"):
        QdrantStore("theirs", dim=3, client=client)
    store = QdrantStore("ours", dim=3, client=client)
    store.add("a", [1.0, 2.0, 3.0])
    store.close()  # a client passed in is not closed
    assert QdrantStore("ours", client=client).count() == 1


def test_repr_and_context_manager():
    with QdrantStore("named", dim=2) as store:
        store.add("a", [1.0, 0.0])
        assert repr(store) == "<QdrantStore collection='named' location=':memory:' dim=2 count=1>"
    assert "closed" in repr(store)
    with pytest.raises(ConfigurationError, match="closed"):
        store.count()


# -- hybrid retrieval is exact at every selectivity --------------------------------------

chunk_specs = st.lists(
    st.fixed_dictionaries({
        "doc": st.integers(0, 4),
        "scope": st.sampled_from(["default", "default", "legal"]),  # see SCOPES
        "vector": st.sampled_from([True, True, True, False]),
        "buckets": st.lists(st.integers(0, BUCKETS - 1), min_size=1, max_size=2),
        "copy": st.none() | st.integers(0, 200),  # reuse an earlier chunk's vector: exact tie
    }),
    min_size=1,
    max_size=40,
)


def build_corpus(ctx, specs, doc_buckets, seed):
    """Vectors (with doc_iri and scope) and bucket triples; returns ({id: (doc, scope)}, buckets)."""
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((len(specs), DIM))
    ids, vectors, metadata, where = [], [], [], {}
    for i, spec in enumerate(specs):
        if spec["copy"] is not None and i > 0:
            raw[i] = raw[spec["copy"] % i] * 3.0
        if spec["vector"]:
            iri, doc = f"trails://t/chunk/{i}", f"trails://t/doc/{spec['doc']}"
            ids.append(iri)
            vectors.append(raw[i])
            metadata.append({"doc_iri": doc, "scope": spec["scope"], "snippet": f"chunk {i}"})
            where[iri] = (doc, spec["scope"])
    if ids:
        ctx.vectors.add_many(ids, np.array(vectors), metadata)
    # A chunk's triples live in its scope's graph; a document's in every scope's.
    buckets = {f"trails://t/chunk/{i}": (s["buckets"], [s["scope"]]) for i, s in enumerate(specs)}
    buckets.update({f"trails://t/doc/{d}": ([b], SCOPES) for d, b in doc_buckets.items()})
    bucket = ox.NamedNode(TRAILS + "bucket")
    ctx.kg.extend(
        ox.Quad(ox.NamedNode(iri), bucket, ox.Literal(str(b), datatype=ox.NamedNode(XSD + "integer")),
                scope_graph(scope))
        for iri, (values, scopes) in buckets.items() for b in values for scope in scopes)
    return where, buckets


def check_hybrid_exact(ctx, where, buckets, limit, k, query, scope):
    scopes = ["default"] if scope is None else [scope] if isinstance(scope, str) else scope
    selected = {iri for iri, (values, graphs) in buckets.items()
                if min(values) < limit and set(graphs) & set(scopes)}
    candidates = {c for c, (doc, s) in where.items() if (c in selected or doc in selected)
                  and s in scopes}
    stored = {s.id: s.vector for s in ctx.vectors.get(sorted(candidates))}
    assert set(stored) == candidates
    q = EMBEDDER.embed(query)
    expected = top_k({c: cosine(v, q) for c, v in stored.items()}, k)
    held = {s for _, s in where.values()} | {g for _, graphs in buckets.values() for g in graphs}
    if not set(scopes) - {"default"} <= held:  # a scope that holds nothing is an error
        with pytest.raises(UnknownScopeError, match="unknown scope 'legal'"):
            retrieve(query, ctx, mode="hybrid", k=k, sparql_filter=FILTER, fusion=None,
                     bindings={"limit": limit}, scope=scope)
        return None

    result = retrieve(query, ctx, mode="hybrid", k=k, sparql_filter=FILTER, fusion=None,
                      bindings={"limit": limit}, scope=scope)

    assert [h.iri for h in result] == [c for c, _ in expected]
    assert len(result) == min(k, len(candidates))
    for hit, (_, score) in zip(result, expected):
        assert abs(hit.score - score) <= 1e-9
        assert (hit.metadata["doc_iri"], hit.metadata["scope"]) == where[hit.iri]
    assert result.exhaustive is True
    if not selected:
        assert (result.plan, result.candidates) == ("empty-filter", 0)
    else:
        assert result.plan == "qdrant-filtered-exact"
        assert result.candidates == len(candidates)
    return result


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    specs=chunk_specs,
    doc_buckets=st.dictionaries(st.integers(0, 4), st.integers(0, BUCKETS - 1), max_size=5),
    limit=st.integers(0, BUCKETS),
    k=st.integers(1, 25),  # retrieve() refuses k=0
    query=st.lists(st.sampled_from(["rails", "graph", "vector", "elephant", "the"]),
                   min_size=1, max_size=4).map(" ".join),  # retrieve() refuses "" to rank
    scope=st.sampled_from([None, "legal", ["default", "legal"]]),
    seed=st.integers(0, 2**32 - 1),
)
def test_hybrid_through_qdrant_equals_brute_force(specs, doc_buckets, limit, k, query, scope,
                                                   seed):
    with qdrant_context() as ctx:
        where, buckets = build_corpus(ctx, specs, doc_buckets, seed)
        check_hybrid_exact(ctx, where, buckets, limit, k, query, scope)


def test_hybrid_at_every_selectivity_on_a_larger_corpus():
    specs = [{"doc": i % 6, "scope": "legal" if i % 11 == 0 else "default",
              "vector": i % 7 != 0, "buckets": [i % BUCKETS, (i * 3) % BUCKETS],
              "copy": 1 if i % 9 == 0 else None} for i in range(240)]
    with qdrant_context() as ctx:
        where, buckets = build_corpus(ctx, specs, {0: 0, 2: 6}, seed=9)
        for limit in range(BUCKETS + 1):
            for k in (1, 7, 300):
                check_hybrid_exact(ctx, where, buckets, limit, k, "elephant vector", None)
        check_hybrid_exact(ctx, where, buckets, 4, 5, "rails", ["default", "legal"])
        vector_mode = retrieve("rails", ctx, mode="vector", k=5)
        assert (vector_mode.plan, vector_mode.candidates, vector_mode.exhaustive) == (
            "qdrant-full", None, True)


# -- the same answers as SqliteVecStore --------------------------------------------------


def near_tie_rows(rng, dim, u, n):
    """Unit rows 1e-5..1e-3 (angle) from ``u``: float32 cannot order them, float64 can."""
    rows = []
    for j in range(1, n + 1):
        w = rng.standard_normal(dim)
        w -= (w @ u) * u
        v = u + (j * 1e-5) * w / np.linalg.norm(w)
        rows.append(v / np.linalg.norm(v))
    return np.array(rows)


def twin_stores(dim=16, n=300, seed=3):
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)
    vectors = np.vstack([rng.standard_normal((n, dim)), near_tie_rows(rng, dim, u, 60)])
    vectors[rng.integers(0, len(vectors), 30)] = vectors[5] * 2.5  # exact ties
    ids = [f"c{i:03d}" for i in rng.permutation(len(vectors))]
    meta = [{"doc_iri": f"d{i % 13}", "scope": ["default", "a", "b"][i % 3], "n": i}
            for i in range(len(vectors))]
    stores = (SqliteVecStore(dim=dim), QdrantStore(dim=dim))
    for store in stores:
        store.add_many(ids, vectors, meta)
    return stores, ids, u, rng


def test_qdrant_and_sqlite_vec_give_the_same_hits_and_scores():
    (sqlite, qdrant), ids, u, rng = twin_stores()
    queries = [u, -u, *rng.standard_normal((12, 16))]
    for i, query in enumerate(queries):
        k = [1, 5, 10, 40, 500][i % 5]
        size = int(rng.integers(0, len(ids)))
        allowed = None if i % 4 == 0 else [str(x) for x in rng.choice(ids, size)]
        if i % 6 == 1:
            allowed = (allowed or []) + ["d3", "d7"]  # document IRIs
        scopes = [None, ["default"], ["a", "b"]][i % 3]
        a, plan_a = sqlite.search_with_plan(query, k, allowed, scopes=scopes)
        b, plan_b = qdrant.search_with_plan(query, k, allowed, scopes=scopes)
        assert [h.id for h in b] == [h.id for h in a]
        assert all(abs(x.score - y.score) <= 1e-9 for x, y in zip(a, b))
        assert [h.metadata for h in b] == [h.metadata for h in a]
        assert plan_b.candidates == plan_a.candidates and plan_b.exhaustive
    assert qdrant.get(ids[:50]) == sqlite.get(ids[:50])  # bit-identical stored vectors
    assert qdrant.all_ids() == sqlite.all_ids() and qdrant.count() == sqlite.count()
    assert qdrant.expand_ids(["d4", "c001", "zz"]) == sorted(sqlite.expand_ids(["d4", "c001", "zz"]))
    for store in (sqlite, qdrant):
        assert store.delete_where({"scope": "a", "n": 4}) == 1
        assert store.delete_where({"doc_iri": "d2"}) > 0
    assert qdrant.all_ids() == sqlite.all_ids()


def test_near_ties_beyond_the_overfetch_are_ordered_exactly(monkeypatch):
    """60 rows whose float32 scores are indistinguishable: the store must keep fetching until
    the k-th float64 score is clear of everything Qdrant left out (the filter path, as on a
    server), and local mode's numpy path must re-score every one that may be in the top k."""
    (sqlite, qdrant), ids, u, _ = twin_stores()
    for k in (1, 3, 10, 40):
        assert qdrant.search(u, k) == sqlite.search(u, k)  # local mode's own path
        assert qdrant.search(u, k, ids[::2]) == sqlite.search(u, k, ids[::2])
    monkeypatch.setattr(qdrant, "_local_points", lambda: None)
    calls = []
    real_query = qdrant._query
    monkeypatch.setattr(qdrant, "_query", lambda *a: calls.append(a[2]) or real_query(*a))
    for overfetch in (16, 0):
        monkeypatch.setattr(qdrant_search, "OVERFETCH", overfetch)
        for k in (1, 3, 10):
            calls.clear()
            assert qdrant.search(u, k) == sqlite.search(u, k)
            assert len(calls) > 1 and calls[-1] > k + overfetch  # it asked again, for more


def test_ann_answers_fall_back_to_exact_when_short(monkeypatch):
    """As on a server above EXACT_THRESHOLD: an HNSW answer that comes back short is redone
    exactly, and a full-length HNSW answer is reported as not exhaustive."""
    (sqlite, qdrant), ids, u, _ = twin_stores()
    monkeypatch.setattr(qdrant_search, "EXACT_THRESHOLD", 10)
    monkeypatch.setattr(qdrant, "local", False)
    modes = []

    def ann_drops_half(q32, flt, limit, exact):
        modes.append(exact)
        points = qdrant._client.query_points(qdrant.collection, query=q32, query_filter=flt,
                                             limit=limit, with_vectors=True).points
        return points if exact or not short else points[: len(points) // 2]

    monkeypatch.setattr(qdrant, "_query", ann_drops_half)
    allowed = ids[:200]
    for short in (True, False):
        modes.clear()
        hits, plan = qdrant.search_with_plan(u, 10, allowed)
        assert hits == sqlite.search(u, 10, allowed)  # local mode scores by brute force anyway
        assert plan.name == "qdrant-ann+exact-fallback" and plan.candidates == 200
        assert plan.exhaustive is short and modes[0] is False and modes[-1] is short


# -- document versions -------------------------------------------------------------------


def stage(store, doc, version, n, seed):
    ids = [f"{doc}/v/{version}/c/{i}" for i in range(n)]
    vectors = np.random.default_rng(seed).standard_normal((n, 4))
    store.add_many(ids, vectors, [{"doc_iri": doc, "version": version} for _ in ids], pending=True)
    return DocumentVersion(doc, version, "default", f"hash-{version}", n)


def visible(store):
    return sorted(h.id for h in store.search([1.0, 0.0, 0.0, 0.0], k=100))


def test_publish_flips_a_version_whole_and_pending_points_stay_hidden():
    store = QdrantStore(dim=4)
    v1 = stage(store, "d", "1", 3, seed=1)
    assert visible(store) == [] and store.count() == 0
    assert store.pending_ids() == ["d/v/1/c/0", "d/v/1/c/1", "d/v/1/c/2"]
    store.publish([v1])
    assert visible(store) == store.all_ids() == ["d/v/1/c/0", "d/v/1/c/1", "d/v/1/c/2"]
    assert store.current_versions() == {"d": v1} == store.current_versions(["d", "other"])
    v2 = stage(store, "d", "2", 2, seed=2)
    assert visible(store) == ["d/v/1/c/0", "d/v/1/c/1", "d/v/1/c/2"]
    store.publish([v2])
    assert visible(store) == ["d/v/2/c/0", "d/v/2/c/1"]
    assert store.document_rows("d") == [("d/v/2/c/0", "2", False), ("d/v/2/c/1", "2", False)]
    assert store.managed_rows() == [("d/v/2/c/0", "d", "2", False), ("d/v/2/c/1", "d", "2", False)]
    assert store.delete_document("d") == 2
    assert visible(store) == [] and store.current_versions() == {}


@pytest.mark.parametrize("crash_at", ["record", "cleanup"])
def test_an_interrupted_publish_never_shows_part_of_a_version(monkeypatch, crash_at):
    store = QdrantStore(dim=4)
    store.publish([stage(store, "d", "1", 3, seed=1)])
    v2 = stage(store, "d", "2", 4, seed=2)
    client = store._client
    real_upsert, real_batch = client.upsert, client.batch_update_points
    batches = []

    def upsert(name, *args, **kwargs):
        if name == store.versions_collection:
            raise ConnectionError("server went away")
        return real_upsert(name, *args, **kwargs)

    def batch(name, *args, **kwargs):
        batches.append(name)
        if len(batches) == 2:
            raise ConnectionError("server went away")
        return real_batch(name, *args, **kwargs)

    if crash_at == "record":
        monkeypatch.setattr(client, "upsert", upsert)
        expected = ["d/v/1/c/0", "d/v/1/c/1", "d/v/1/c/2"]  # new points live but not current
    else:
        monkeypatch.setattr(client, "batch_update_points", batch)
        expected = ["d/v/2/c/0", "d/v/2/c/1", "d/v/2/c/2", "d/v/2/c/3"]  # old ones superseded
    with pytest.raises(EndpointUnavailableError) as caught:  # in trails' words, the cause kept
        store.publish([v2])
    assert isinstance(caught.value.__cause__, ConnectionError)
    monkeypatch.undo()
    assert visible(store) == expected
    assert store.search([1.0, 0.0, 0.0, 0.0], k=2, ids=["d"]) == store.search(
        [1.0, 0.0, 0.0, 0.0], k=2, ids=expected)
    assert store.expand_ids(["d"]) == expected
    assert len(store.document_rows("d")) == 7  # the leftovers a retry or verify() removes
    store.publish([v2])
    assert visible(store) == ["d/v/2/c/0", "d/v/2/c/1", "d/v/2/c/2", "d/v/2/c/3"]
    assert len(store.document_rows("d")) == 4


# -- ingestion end to end ----------------------------------------------------------------

DOCS = [
    Document(id="rails.md", source="rails.md", text="Rails is a web framework written in Ruby. "
             "It favours convention over configuration.", metadata={"topic": "rails"}),
    Document(id="graphs.md", source="graphs.md", text="A knowledge graph links entities with "
             "typed relations. SPARQL queries it.", metadata={"topic": "graphs"}),
    Document(id="elephants.md", source="elephants.md", text="Elephants are the largest land "
             "animals. They live in herds.", metadata={"topic": "animals"}),
]
CHUNKER = SentenceChunker(max_chars=60, overlap=0)  # a few chunks per document
TOPIC = "SELECT ?doc WHERE { ?doc a trails:Document ; meta:topic ?topic }"


def test_ingest_into_a_qdrant_context_matches_sqlite_vec():
    with qdrant_context(32) as ctx, Context.memory(MockEmbedder(dim=32, seed=0)) as twin:
        for target in (ctx, twin):
            assert ingest_all(DOCS, ctx=target, chunker=CHUNKER).ingested == 3
        assert ctx.verify().ok
        assert ctx.vectors.count() == twin.vectors.count() > 3
        assert ctx.vectors.current_versions() == twin.vectors.current_versions()
        # Both rankings match (rrf's scores depend on ranks alone); the default hybrid's
        # guard reads a keyword quality only sqlite-vec can weigh (ADR 22), so only its
        # order is compared.
        scoped = {"sparql_filter": TOPIC, "bindings": {"topic": "rails"}}
        for mode, options in (("vector", {}), ("hybrid", {**scoped, "fusion": "rrf"}),
                              ("hybrid", scoped)):
            got = retrieve("ruby web framework", ctx, mode=mode, k=4, **options)
            want = retrieve("ruby web framework", twin, mode=mode, k=4, **options)
            assert [(h.iri, h.metadata) for h in got] == [(h.iri, h.metadata) for h in want]
            if "fusion" in options or mode == "vector":
                assert all(abs(a.score - b.score) <= 1e-9 for a, b in zip(got, want))
        assert {h.metadata["doc_iri"] for h in retrieve("x", ctx, k=10, sparql_filter=TOPIC,
                                                        bindings={"topic": "rails"})} == {
            "trails://local/doc/rails.md"}


def test_reingest_skips_and_a_change_replaces_the_version():
    with qdrant_context(32) as ctx:
        ingest_all(DOCS, ctx=ctx, chunker=CHUNKER)
        again = ingest_all(DOCS, ctx=ctx, chunker=CHUNKER)
        assert (again.ingested, again.skipped) == (0, 3)
        doc = "trails://local/doc/rails.md"
        old = ctx.vectors.current_versions([doc])[doc]
        changed = [Document(id="rails.md", source="rails.md", text="Rails now ships Hotwire.",
                            metadata={"topic": "rails"})]
        assert ingest_all(changed, ctx=ctx, chunker=CHUNKER).ingested == 1
        new = ctx.vectors.current_versions([doc])[doc]
        assert new.version != old.version
        rows = ctx.vectors.document_rows(doc)
        assert rows and all(v == new.version and not p for _, v, p in rows)
        hits = retrieve("rails", ctx, k=10, sparql_filter=TOPIC, bindings={"topic": "rails"})
        assert [h.snippet for h in hits] == ["Rails now ships Hotwire."]
        assert ctx.verify().ok
        assert ctx.delete_document(doc)
        assert ctx.vectors.document_rows(doc) == [] and ctx.verify().ok


def test_scopes_are_isolated_in_a_qdrant_context():
    with qdrant_context(32) as ctx:
        ingest_all(DOCS[:2], ctx=ctx, chunker=CHUNKER)
        ingest_all(DOCS[2:], ctx=ctx, scope="zoo", chunker=CHUNKER)
        default = retrieve("elephants herds", ctx, k=10)
        zoo = retrieve("elephants herds", ctx, k=10, scope="zoo")
        both = retrieve("elephants herds", ctx, k=10, scope=["default", "zoo"])
        assert {h.metadata["scope"] for h in default} == {"default"}
        assert {h.metadata["scope"] for h in zoo} == {"zoo"} and "Elephants" in zoo[0].snippet
        assert len(both) == len(default) + len(zoo)
        # a chunk IRI of another scope named in the filter finds nothing
        other = zoo[0].iri
        leak = retrieve("x", ctx, k=5, sparql_filter=f"SELECT ?c WHERE {{ VALUES ?c {{ <{other}> }} }}")
        assert list(leak) == []
        assert ctx.verify().ok and ctx.stats()["scopes"] == ["default", "zoo"]


def test_context_open_with_a_qdrant_folder_persists(tmp_path):
    embedder = MockEmbedder(dim=32, seed=0)
    with Context.open(tmp_path / "ctx", embedder=embedder,
                      vectors=QdrantStore(path=tmp_path / "qdrant", dim=32)) as ctx:
        ingest_all(DOCS, ctx=ctx, chunker=CHUNKER)
        before = retrieve("knowledge graph", ctx, k=3)
    store = QdrantStore(path=tmp_path / "qdrant")
    assert store.embedder_identity == embedder.identity and store.dim == 32
    with Context.open(tmp_path / "ctx", vectors=store) as ctx:
        after = retrieve("knowledge graph", ctx, k=3)
        assert [(h.iri, h.score) for h in after] == [(h.iri, h.score) for h in before]
        assert ctx.verify().ok
        assert ingest_all(DOCS, ctx=ctx, chunker=CHUNKER).skipped == 3


# -- an unreachable or failing server, a closed store ------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_server_is_endpoint_unavailable():
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(EndpointUnavailableError) as caught:
        QdrantStore(url=url, dim=4)
    assert url.split("//")[1] in str(caught.value) and "running" in str(caught.value)
    assert not isinstance(caught.value, (ConnectionError, OSError))


def test_credentials_in_the_url_are_never_shown_nor_recorded(tmp_path):
    port = _free_port()
    with pytest.raises(EndpointUnavailableError) as caught:
        QdrantStore(url=f"http://alice:s3cret@127.0.0.1:{port}", dim=4,
                    resilience={"attempts": 1})
    assert f"Qdrant at http://127.0.0.1:{port}" in str(caught.value)
    assert "s3cret" not in str(caught.value) and "alice" not in str(caught.value)


@pytest.fixture
def answering(request):
    """An HTTP server answering every request with one status (a broken or guarded Qdrant)."""
    import http.server
    import threading

    status = request.param

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = b'{"status": {"error": "no"}, "time": 0}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


SERVER_VERSION = "ignore:Failed to obtain server version:UserWarning"


@pytest.mark.filterwarnings(SERVER_VERSION)
@pytest.mark.parametrize("answering", [500, 503], indirect=True)
def test_a_failing_server_is_endpoint_unavailable(answering):
    with pytest.raises(EndpointUnavailableError) as caught:
        QdrantStore(url=answering, dim=4)
    assert "HTTP 5" in str(caught.value) and answering.split("//")[1] in str(caught.value)


@pytest.mark.filterwarnings(SERVER_VERSION)
@pytest.mark.parametrize("answering", [401, 403], indirect=True)
def test_a_refused_key_names_the_environment_variable(answering):
    with pytest.raises(ConfigurationError, match="QDRANT_API_KEY"):
        QdrantStore(url=answering, dim=4)


def test_a_closed_qdrant_store_says_so_on_every_call():
    store = QdrantStore(dim=3)
    store.add("a", [1.0, 0.0, 0.0], {"doc_iri": "d", "text": "x"})
    store.close()
    calls = [lambda: store.search([1, 0, 0]), lambda: store.add("b", [0, 1, 0]), store.count,
             lambda: store.keyword_search("x"), store.all_ids, lambda: store.get(["a"]),
             lambda: store.delete("a"), store.current_versions, lambda: store.document_rows("d"),
             lambda: store.expand_ids(["d"]), lambda: store.snapshot().__enter__()]
    for number, call in enumerate(calls):
        with pytest.raises(ConfigurationError, match="closed"):
            call()
            pytest.fail(f"call {number} did not say the store is closed")


def test_a_snapshot_pins_each_documents_version_across_rankings():
    """A publish landing between the vector and the keyword ranking of one snapshot: both
    rankings show the version pinned first, never one each."""
    store = QdrantStore(dim=4)
    store.publish([stage(store, "d", "1", 3, seed=1)])
    v2 = stage(store, "d", "2", 3, seed=2)
    with store.snapshot():
        before = store.search([1.0, 0.0, 0.0, 0.0], k=10, ids=["d"])
        # Another store on the same client (its own lock): a writer this block does not hold.
        QdrantStore(client=store._client, collection=store.collection).publish([v2])
        during = store.search([1.0, 0.0, 0.0, 0.0], k=10, ids=["d"])
        assert store.current_versions(["d"])["d"].version == "1"
    after = store.search([1.0, 0.0, 0.0, 0.0], k=10, ids=["d"])
    assert {h.id.split("/v/")[1][0] for h in before} == {"1"}
    assert {h.id.split("/v/")[1][0] for h in during} <= {"1"}  # v1's points, or none: never v2
    assert {h.id.split("/v/")[1][0] for h in after} == {"2"}


@pytest.mark.parametrize("bad", ["", "a/b", 123, None])
def test_a_collection_name_qdrant_cannot_hold_is_refused_by_name(bad: object) -> None:
    # Qdrant's client answered a bare ValueError (or TypeError for a number) from inside.
    with pytest.raises(InvalidArgumentError, match="collection must be a non-empty str"):
        QdrantStore(collection=bad, dim=4)  # type: ignore[arg-type]
