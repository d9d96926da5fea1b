"""QdrantStore's local-mode path: in qdrant-client's local mode the store applies the live
filter to the collection's own arrays and scores with numpy instead of pushing the filter into
Qdrant (which local mode checks point by point in Python). It must answer exactly as the filter
path does, and both as brute force: same ids, order, scores, metadata and plan, with document
IRIs, scopes, deleted and upserted points, and staged, orphaned and superseded versions.

The filter path is the one a Qdrant server takes; here it is forced by hiding the local arrays
(``_local_points`` returns None). The reference scores are exactly rounded float64 cosines
(``math.fsum``) of the stored float32 vectors.
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.errors import ContextLockedError, EndpointUnavailableError
from trails.vector.stores.qdrant import QdrantStore, local
from trails.vector.stores.sqlite_vec import DocumentVersion

pytest.importorskip("qdrant_client")

DIM = 6
SCOPES = ["default", "a", "b"]
WORDS = ["rails", "graph", "vector", "the", "elephant"]
# What happens to a versioned document: (its versions in order, the crash in the last publish).
STORIES = {
    "current": (["1"], "none"),         # v1 published
    "staged": (["1"], "unpublished"),   # v1 staged only: nothing shown
    "next-staged": (["1", "2"], "unpublished"),  # v1 shown, v2 staged
    "replaced": (["1", "2"], "none"),   # v2 shown, v1 deleted
    "crash-record": (["1", "2"], "record"),  # v2 flipped to pending=false, record still v1
    "crash-cleanup": (["1", "2"], "cleanup"),  # record names v2, v1 points left behind
    "orphan": (["1"], "record"),        # v1 flipped to pending=false, no record at all
}


def cosine(a, b) -> float:
    a, b = [float(x) for x in a], [float(x) for x in b]
    dot = math.fsum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def by_filter(store, method, *args, **kwargs):
    """``store.<method>(...)`` through the filter path, as on a server."""
    with mock.patch.object(store, "_local_points", return_value=None):
        return getattr(store, method)(*args, **kwargs)


def publish(store, version, crash):
    """Publish ``version``, or crash it after flipping the points ("record": the version
    record is never written) or after writing the record ("cleanup": old points stay)."""
    if crash == "unpublished":
        return
    if crash == "none":
        store.publish([version])
        return
    client, calls = store._client, []
    real_upsert, real_batch = client.upsert, client.batch_update_points

    def upsert(name, *args, **kwargs):
        if name == store.versions_collection:
            raise ConnectionError("server went away")
        return real_upsert(name, *args, **kwargs)

    def batch(name, *args, **kwargs):
        calls.append(name)
        if len(calls) == 2:
            raise ConnectionError("server went away")
        return real_batch(name, *args, **kwargs)

    name, fake = ("upsert", upsert) if crash == "record" else ("batch_update_points", batch)
    with mock.patch.object(client, name, fake), pytest.raises(EndpointUnavailableError):
        store.publish([version])


class Model:
    """What the store must show: every point's doc, scope and text, which are not pending
    (``candidates`` counts them) and which are live (not pending, version current)."""

    def __init__(self):
        self.points: dict[str, tuple[str | None, str, str]] = {}
        self.nonpending: set[str] = set()
        self.live: set[str] = set()

    def eligible(self, among, iris, scopes):
        return {p for p in among if (iris is None or p in iris or self.points[p][0] in iris)
                and (scopes is None or self.points[p][1] in scopes)}


def build(store, plain, docs, removed, moved, seed):
    rng, model, drawn = np.random.default_rng(seed), Model(), []

    def vector(copy):  # a copy of an earlier vector, scaled: an exact tie
        if copy is None or not drawn:
            drawn.append(rng.standard_normal(DIM))
            return drawn[-1]
        return drawn[copy % len(drawn)] * 2.0

    ids = [f"trails://t/chunk/{i}" for i in range(len(plain))]
    metas = [{"doc_iri": p["doc"], "scope": p["scope"], "snippet": p["text"]} for p in plain]
    if ids:
        store.add_many(ids, [vector(p["copy"]) for p in plain], metas)
    for id, meta in zip(ids, metas):
        model.points[id] = (meta["doc_iri"], meta["scope"], meta["snippet"])
        model.nonpending.add(id)
        model.live.add(id)
    for i in sorted(removed):
        if i < len(ids):
            store.delete(ids[i])
            model.nonpending.discard(ids[i])
            model.live.discard(ids[i])
    for i, scope in sorted(moved.items()):  # upserts: another document and scope
        if i < len(ids):
            meta = {"doc_iri": "trails://t/doc/moved", "scope": scope, "snippet": "moved rails"}
            store.add(ids[i], vector(None), meta)
            model.points[ids[i]] = ("trails://t/doc/moved", scope, "moved rails")
            model.nonpending.add(ids[i])
            model.live.add(ids[i])
    for j, doc in enumerate(docs):
        stage_story(store, model, f"trails://t/vdoc/{j}", doc, vector)
    return model


def stage_story(store, model, doc, spec, vector):
    versions, crash = STORIES[spec["story"]]
    chunks = {}
    for version in versions:
        chunks[version] = [f"{doc}/v/{version}/c/{i}" for i in range(spec["chunks"])]
        meta = {"doc_iri": doc, "version": version, "scope": spec["scope"], "snippet": spec["text"]}
        store.add_many(chunks[version], [vector(spec["copy"]) for _ in chunks[version]],
                       [meta] * spec["chunks"], pending=True)
        model.points.update((c, (doc, spec["scope"], spec["text"])) for c in chunks[version])
        record = DocumentVersion(doc, version, spec["scope"], f"hash-{version}", spec["chunks"])
        last = version == versions[-1]
        publish(store, record, crash if last else "none")
    first, last = chunks[versions[0]], chunks[versions[-1]]
    shown = {"current": first, "staged": [], "next-staged": first, "replaced": last,
             "crash-record": first, "crash-cleanup": last, "orphan": []}[spec["story"]]
    flipped = {"current": first, "staged": [], "next-staged": first, "replaced": last,
               "crash-record": first + last, "crash-cleanup": first + last,
               "orphan": first}[spec["story"]]
    model.live.update(shown)
    model.nonpending.update(flipped)


plain_points = st.lists(st.fixed_dictionaries({
    "doc": st.sampled_from([None, "trails://t/doc/0", "trails://t/doc/1", "trails://t/doc/2",
                            "trails://t/chunk/0"]),  # an IRI that is a chunk and a document
    "scope": st.sampled_from(SCOPES),
    "text": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    "copy": st.none() | st.integers(0, 50),
}), max_size=25)
versioned_docs = st.lists(st.fixed_dictionaries({
    "story": st.sampled_from(sorted(STORIES)),
    "chunks": st.integers(1, 3),
    "scope": st.sampled_from(SCOPES),
    "text": st.sampled_from(["rails graph", "vector", "the elephant rails"]),
    "copy": st.none() | st.integers(0, 50),
}), max_size=5)
searches = st.lists(st.tuples(
    st.none() | st.lists(st.sampled_from(
        ["trails://t/doc/0", "trails://t/doc/1", "trails://t/doc/moved", "trails://t/nothing",
         *(f"trails://t/chunk/{i}" for i in range(12)),
         *(f"trails://t/vdoc/{j}" for j in range(5)),
         *(f"trails://t/vdoc/{j}/v/{v}/c/0" for j in range(5) for v in "12")]), max_size=8),
    st.none() | st.lists(st.sampled_from(SCOPES), max_size=2),
    st.integers(0, 25),
    st.sampled_from(WORDS),
), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(plain=plain_points, docs=versioned_docs, removed=st.sets(st.integers(0, 24), max_size=4),
       moved=st.dictionaries(st.integers(0, 24), st.sampled_from(SCOPES), max_size=3),
       queries=searches, seed=st.integers(0, 2**32 - 1))
def test_local_path_equals_the_filter_path_and_brute_force(plain, docs, removed, moved,
                                                           queries, seed):
    with QdrantStore(dim=DIM) as store:
        model = build(store, plain, docs, removed, moved, seed)
        stored = {s.id: s.vector for s in store.get(sorted(model.points))}
        assert store.count() == by_filter(store, "count") == len(model.nonpending)
        assert store.all_ids() == by_filter(store, "all_ids") == sorted(model.nonpending)
        rng = np.random.default_rng(seed)
        for iris, scopes, k, word in queries:
            query = rng.standard_normal(DIM) if k % 3 else np.asarray(stored[min(stored)]) \
                if stored else rng.standard_normal(DIM)
            check_search(store, model, stored, query, k, iris, scopes)
            check_keyword(store, model, word, k, iris, scopes)
            if iris is not None:
                named = set(iris)
                assert store.expand_ids(iris) == by_filter(store, "expand_ids", iris) == sorted(
                    model.eligible(model.live, named, None))


def check_search(store, model, stored, query, k, iris, scopes):
    fast = store.search_with_plan(query, k, iris, scopes=scopes)
    assert fast == by_filter(store, "search_with_plan", query, k, iris, scopes=scopes)
    named, within = (None if x is None else set(x) for x in (iris, scopes))
    live = model.eligible(model.live, named, within)
    expected = sorted(((c, cosine(stored[c], query)) for c in live),
                      key=lambda pair: (-pair[1], pair[0]))[:k]
    hits, plan = fast
    assert [h.id for h in hits] == [c for c, _ in expected]
    assert all(abs(h.score - score) <= 1e-9 for h, (_, score) in zip(hits, expected))
    assert [(h.metadata["doc_iri"], h.metadata["scope"], h.metadata["snippet"])
            for h in hits] == [model.points[c] for c, _ in expected]
    assert plan.name == ("qdrant-full" if iris is None else "qdrant-filtered-exact")
    assert plan.candidates == (0 if iris == [] or scopes == [] else
                               len(model.eligible(model.nonpending, named, within)))
    assert plan.exhaustive is True


def check_keyword(store, model, word, k, iris, scopes):
    hits = store.keyword_search(word, k, iris, scopes=scopes)
    assert hits == by_filter(store, "keyword_search", word, k, iris, scopes=scopes)
    named, within = (None if x is None else set(x) for x in (iris, scopes))
    matching = {c for c in model.eligible(model.live, named, within)
                if word in model.points[c][2].split()}
    assert {h.id for h in hits} <= matching
    assert len(hits) == min(k, len(matching))  # a query of stopwords only keeps them
    assert hits == sorted(hits, key=lambda h: (-h.score, h.id))


# -- the path is taken, and reads nothing through the filter ------------------------------


# -- qdrant-client's internals, which only trails.vector.stores.qdrant.local relies on ------


@pytest.mark.parametrize("where", ["memory", "path"])
def test_qdrant_client_local_internals_are_as_local_py_expects(tmp_path, where):
    """Fails, naming the internal, when a qdrant-client release changes what local.py reads
    (the store would still answer, exactly but slowly, through the filter path). Raise the
    bound on qdrant-client in pyproject.toml only once this passes on the new release."""
    store = QdrantStore(dim=3) if where == "memory" else QdrantStore(dim=3, path=tmp_path)
    store.add("a", [1.0, 0.0, 0.0])
    assert local.is_local(store._client), "qdrant-client's local mode is no longer a QdrantLocal"
    problem = local.internals_problem(store._client, store.collection)
    assert problem is None, f"qdrant-client {qdrant_client_version()} changed: {problem}"
    assert store._local_points() is not None
    store.close()


def test_qdrant_client_folder_lock_is_as_local_py_expects(tmp_path):
    """local.py checks qdrant-client's folder lock (``<path>/.lock``, held exclusively through
    portalocker) before opening a folder, and reads its error text: both must still hold."""
    import portalocker
    import qdrant_client

    client = qdrant_client.QdrantClient(path=str(tmp_path))
    try:
        lock = tmp_path / ".lock"
        assert lock.exists(), "qdrant-client no longer locks <path>/.lock"
        with open(lock, "r+") as handle, pytest.raises(portalocker.exceptions.LockException):
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE
                             | portalocker.LockFlags.NON_BLOCKING)
        with pytest.raises(RuntimeError, match="already accessed"):
            qdrant_client.QdrantClient(path=str(tmp_path))
        with pytest.raises(ContextLockedError, match="another process"):
            local.open_folder(qdrant_client, str(tmp_path))
    finally:
        client.close()


def test_unexpected_internals_fall_back_to_the_filter_path(monkeypatch):
    store = QdrantStore(dim=3)
    store.add_many(["a", "b"], [[1, 0, 0], [0, 1, 0]], [{"snippet": "rails"}, {}])
    expected = store.search_with_plan([1, 0.1, 0], 2)
    collection = store._client._client.collections[store.collection]
    monkeypatch.setattr(collection, "payload", tuple(collection.payload))  # kept otherwise
    assert local.internals_problem(store._client, store.collection) == (
        "LocalCollection.payload is not a list")
    assert store._local_points() is None
    with mock.patch.object(store, "_query", wraps=store._query) as query:
        assert store.search_with_plan([1, 0.1, 0], 2) == expected
        assert [h.id for h in store.keyword_search("rails", 2)] == ["a"]
    assert query.called


def qdrant_client_version() -> str:
    from importlib.metadata import version

    return version("qdrant-client")


@pytest.mark.parametrize("where", ["memory", "path"])
def test_local_mode_searches_without_a_filter_pass(tmp_path, where):
    """A qdrant-client that keeps its local points otherwise would silently fall back to the
    slow filter path: this fails first."""
    store = QdrantStore(dim=3) if where == "memory" else QdrantStore(dim=3, path=tmp_path)
    store.add_many(["a", "b", "c"], [[1, 0, 0], [0, 1, 0], [1, 1, 0]],
                   [{"doc_iri": "d", "snippet": "rails"}, {"scope": "x"}, {"doc_iri": "d"}])
    assert store._local_points() is not None
    with mock.patch.object(store._client, "count", side_effect=AssertionError("count")), \
            mock.patch.object(store, "_query", side_effect=AssertionError("query")), \
            mock.patch.object(store, "_scroll", side_effect=AssertionError("scroll")):
        hits, plan = store.search_with_plan([1, 0.1, 0], 2, ["d", "b"])
        assert [h.id for h in hits] == ["a", "c"] and plan == ("qdrant-filtered-exact", 3, True)
        assert store.search_with_plan([0, 1, 0], 5, scopes=["x"])[1] == ("qdrant-full", 1, True)
        assert store.count() == 3 and store.all_ids() == ["a", "b", "c"]
        assert store.expand_ids(["d"]) == ["a", "c"]
    store.close()


@pytest.mark.filterwarnings("ignore:Local mode performs exact")  # search_params, as for a server
def test_a_server_keeps_the_filter_path(monkeypatch):
    store = QdrantStore(dim=3)
    monkeypatch.setattr(store, "local", False)  # as a client built with url= or host=
    assert store._local_points() is None
    store.add("a", [1.0, 0.0, 0.0])
    with mock.patch.object(store, "_query", wraps=store._query) as query:
        assert [h.id for h in store.search([1.0, 0.0, 0.0], 1)] == ["a"]
    assert query.called


def test_hit_metadata_is_a_copy():
    store = QdrantStore(dim=2)
    store.add("a", [1.0, 0.0], {"tags": ["x"], "snippet": "rails"})
    store.search([1.0, 0.0], 1)[0].metadata["tags"].append("changed")
    store.keyword_search("rails", 1)[0].metadata["tags"].append("changed")
    assert store.get(["a"])[0].metadata == {"tags": ["x"], "snippet": "rails"}


def test_document_iris_name_documents_only_on_the_filter_path_too():
    """A ``DocumentIris`` restricts by ``doc_iri`` alone in a server's filter as in local
    mode: a point whose id equals a document IRI is not a candidate (a plain list admits it)."""
    from trails.vector.stores.records import DocumentIris

    store = QdrantStore(dim=2)
    store.add_many(["c1", "d2"], [[1, 0], [0, 1]],
                   [{"doc_iri": "d1", "text": "apple"}, {"doc_iri": "other", "text": "apple"}])
    documents = DocumentIris(["d1", "d2"])
    direct = lambda s, method, *args: getattr(s, method)(*args)
    for path in (direct, by_filter):
        ranked = (path(store, "search", [0, 1], 5, documents),
                  path(store, "keyword_search", "apple", 5, documents))
        assert [[hit.id for hit in hits] for hits in ranked] == [["c1"], ["c1"]]
        assert [h.id for h in path(store, "search", [0, 1], 5, ["d2"])] == ["d2"]
        assert path(store, "search", [0, 1], 5, DocumentIris([])) == []
