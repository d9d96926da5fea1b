"""Hypothesis properties: search order, determinism, hybrid exactness against brute force,
round trips of vectors and RDF terms, and bindings that cannot change a query.

The reference for every score is an exactly rounded float64 cosine (``math.fsum``) of the
stored float32 vectors, computed here without the library's scoring code.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import numpy as np
import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from trails import retrieve
from trails.kg import IRI, OxigraphGraph, to_python, to_term
from trails.kg.bindings import apply_bindings
from trails.testing import fresh_context
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.base import decode, encode
from trails.vector.stores.matrix import VectorMatrix
from trails.vector.stores.sqlite_vec import SqliteVecStore

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
XSD = "http://www.w3.org/2001/XMLSchema#"
TRAILS = "https://trails.dev/ns#"


def cosine(a, b) -> float:
    a, b = [float(x) for x in a], [float(x) for x in b]
    dot = math.fsum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def top_k(scored: dict[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))[:k]


# -- search order and determinism ------------------------------------------------------

small_vectors = st.lists(st.integers(-2, 2), min_size=3, max_size=3).filter(any)


@SETTINGS
@given(
    vectors=st.lists(small_vectors, min_size=1, max_size=25),
    query=small_vectors,
    k=st.integers(0, 30),
    restrict=st.none() | st.sets(st.integers(0, 30)),
)
def test_search_is_sorted_by_score_then_id(vectors, query, k, restrict):
    # Small integer vectors: many exact ties and repeated directions.
    store = SqliteVecStore(dim=3)
    ids = [f"v{i:02d}" for i in range(len(vectors))]
    store.add_many(ids, vectors)
    allowed = None if restrict is None else [f"v{i:02d}" for i in restrict]
    hits = store.search(query, k=k, ids=allowed)
    eligible = ids if allowed is None else [i for i in ids if i in set(allowed)]
    assert len(hits) == min(k, len(eligible))
    assert len({h.id for h in hits}) == len(hits)
    assert {h.id for h in hits} <= set(eligible)
    keys = [(-h.score, h.id) for h in hits]
    assert keys == sorted(keys)
    assert all(-1.0 <= h.score <= 1.0 for h in hits)
    # Nothing left out scores better than the last hit.
    if hits:
        worst = (-hits[-1].score, hits[-1].id)
        stored = {s.id: s.vector for s in store.get(eligible)}
        for other in set(eligible) - {h.id for h in hits}:
            assert (-cosine(stored[other], query), other) > (worst[0] - 1e-12, worst[1])
    store.close()


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), k=st.integers(1, 12),
       data=st.data())
def test_search_does_not_depend_on_insertion_order_or_repetition(seed, n, k, data):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 8))
    vectors[rng.integers(0, n, size=n // 3)] = vectors[0]  # exact ties
    ids = [f"v{i:02d}" for i in range(n)]
    order = data.draw(st.permutations(range(n)))
    first, second = SqliteVecStore(dim=8), SqliteVecStore(dim=8)
    first.add_many(ids, vectors)
    for i in order:
        second.add(ids[i], vectors[i])
    query = rng.standard_normal(8)
    expected = first.search(query, k=k)
    assert second.search(query, k=k) == expected
    assert first.search(query, k=k) == expected
    first.close()
    second.close()


words = st.sampled_from(["rails", "Ruby", "elephant", "graph", "vector", "the", "is", "über",
                         "Rails", "κόσμος", "42", "a"])
texts = st.lists(words, max_size=8).map(" ".join)
queries = st.lists(words, min_size=1, max_size=8).map(" ".join)  # retrieve() refuses "" to rank


@SETTINGS
@given(text=texts, seed=st.integers(-5, 5), dim=st.integers(1, 48))
def test_mock_embedder_is_a_pure_function_of_text_seed_and_dim(text, seed, dim):
    one, two = MockEmbedder(dim=dim, seed=seed), MockEmbedder(dim=dim, seed=seed, batch_size=1)
    vector = one.embed(text)
    assert len(vector) == dim
    assert two.embed(text) == vector
    assert one.embed(text) == vector
    assert two.embed_many([text, "other words", text]) == [vector, two.embed("other words"), vector]
    assert math.isclose(math.sqrt(math.fsum(x * x for x in vector)), 1.0, abs_tol=1e-6)
    assert one.embed(text.upper()) == one.embed(text.upper().lower())  # case-insensitive


def test_mock_embedder_seeds_and_words_matter():
    base = MockEmbedder(dim=32, seed=0)
    assert base.embed("rails web framework") != MockEmbedder(dim=32, seed=1).embed(
        "rails web framework")
    assert base.embed("rails") != base.embed("elephant")
    near = cosine(base.embed("rails web framework"), base.embed("rails framework"))
    far = cosine(base.embed("rails web framework"), base.embed("grey elephants"))
    assert near > far


# -- hybrid retrieval is exact at every selectivity -------------------------------------

DIM = 12
BUCKETS = 8
FILTER = "SELECT ?iri WHERE { ?iri trails:bucket ?b FILTER(?b < ?limit) }"
QUERY_EMBEDDER = MockEmbedder(dim=DIM, seed=0)  # the same function as the context's embedder


def chunk_iri(i: int) -> str:
    return f"trails://t/chunk/{i}"


def doc_iri(d: int) -> str:
    return f"trails://t/doc/{d}"


chunks = st.lists(
    st.fixed_dictionaries({
        "doc": st.integers(0, 4),
        "vector": st.sampled_from([True, True, True, False]),
        "buckets": st.lists(st.integers(0, BUCKETS - 1), min_size=1, max_size=2),
        "copy": st.none() | st.integers(0, 200),  # reuse an earlier chunk's vector: exact tie
    }),
    min_size=1,
    max_size=60,
)


def build_corpus(ctx, chunk_specs, doc_buckets, ghosts, seed):
    """Vectors and bucket triples; returns (stored vector ids -> doc, selectable IRIs -> buckets)."""
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((len(chunk_specs), DIM))
    ids, vectors, metadata, doc_of = [], [], [], {}
    for i, spec in enumerate(chunk_specs):
        if spec["copy"] is not None and i > 0:
            raw[i] = raw[spec["copy"] % i] * 2.0
        if spec["vector"]:
            ids.append(chunk_iri(i))
            vectors.append(raw[i])
            metadata.append({"doc_iri": doc_iri(spec["doc"]), "snippet": f"chunk {i}"})
            doc_of[chunk_iri(i)] = doc_iri(spec["doc"])
    if ids:
        ctx.vectors.add_many(ids, np.array(vectors), metadata)
    buckets: dict[str, list[int]] = {chunk_iri(i): s["buckets"] for i, s in enumerate(chunk_specs)}
    buckets.update({doc_iri(d): [b] for d, b in doc_buckets.items()})
    buckets.update({f"trails://t/ghost/{g}": [b] for g, b in enumerate(ghosts)})
    bucket = ox.NamedNode(TRAILS + "bucket")
    ctx.kg.extend(
        ox.Quad(ox.NamedNode(iri), bucket, ox.Literal(str(b), datatype=ox.NamedNode(XSD + "integer")))
        for iri, values in buckets.items()
        for b in values
    )
    return doc_of, buckets


def check_hybrid_exact(ctx, doc_of, buckets, limit, k, query):
    selected = {iri for iri, values in buckets.items() if min(values) < limit}
    candidates = {c for c in selected if c in doc_of}
    candidates |= {c for c, d in doc_of.items() if d in selected}
    stored = {s.id: s.vector for s in ctx.vectors.get(sorted(candidates))}
    assert set(stored) == candidates
    q = QUERY_EMBEDDER.embed(query)
    expected = top_k({c: cosine(v, q) for c, v in stored.items()}, k)

    result = retrieve(query, ctx, mode="hybrid", k=k, sparql_filter=FILTER, fusion=None,
                      bindings={"limit": limit})

    assert [h.iri for h in result] == [c for c, _ in expected]
    assert len(result) == min(k, len(candidates))
    for hit, (_, score) in zip(result, expected):
        assert abs(hit.score - score) <= 1e-9
        assert hit.metadata["doc_iri"] == doc_of[hit.iri]
    assert result.exhaustive is True
    if not selected:
        assert (result.plan, result.candidates) == ("empty-filter", 0)
    else:
        assert result.plan in ("gather", "masked-scan")
        assert result.candidates == len(candidates)
    return result


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    chunk_specs=chunks,
    doc_buckets=st.dictionaries(st.integers(0, 4), st.integers(0, BUCKETS - 1), max_size=5),
    ghosts=st.lists(st.integers(0, BUCKETS - 1), max_size=4),
    limit=st.integers(1, BUCKETS) | st.just(0),
    k=st.integers(1, 25),  # retrieve() refuses k=0
    query=queries,
    seed=st.integers(0, 2**32 - 1),
)
def test_hybrid_equals_brute_force_over_the_candidates(
    chunk_specs, doc_buckets, ghosts, limit, k, query, seed
):
    with fresh_context(dim=DIM) as ctx:
        doc_of, buckets = build_corpus(ctx, chunk_specs, doc_buckets, ghosts, seed)
        result = check_hybrid_exact(ctx, doc_of, buckets, limit, k, query)
    event(f"plan={result.plan}")


@pytest.mark.parametrize("limit, plan", [(1, "gather"), (BUCKETS, "masked-scan")])
def test_hybrid_exactness_covers_both_scoring_plans(limit, plan):
    # 200 chunks; bucket 0 holds exactly one chunk, so limit=1 selects one candidate
    # and limit=BUCKETS the whole corpus.
    specs = [{"doc": i % 5, "vector": True, "buckets": [0 if i == 17 else 1 + i % (BUCKETS - 1)],
              "copy": 3 if i % 50 == 49 else None} for i in range(200)]
    with fresh_context(dim=DIM) as ctx:
        doc_of, buckets = build_corpus(ctx, specs, {}, [], seed=5)
        result = check_hybrid_exact(ctx, doc_of, buckets, limit, 10, "rails graph")
    assert result.plan == plan
    assert result.candidates == (1 if limit == 1 else 200)


def test_hybrid_with_document_iris_and_a_mid_selectivity():
    specs = [{"doc": i % 4, "vector": i % 7 != 0, "buckets": [i % BUCKETS, (i * 3) % BUCKETS],
              "copy": 1 if i % 9 == 0 else None} for i in range(120)]
    with fresh_context(dim=DIM) as ctx:
        doc_of, buckets = build_corpus(ctx, specs, {0: 0, 2: 6}, [0, 3, 5], seed=9)
        for limit in range(BUCKETS + 1):
            for k in (1, 7, 200):
                check_hybrid_exact(ctx, doc_of, buckets, limit, k, "elephant vector")


# -- VectorMatrix: exact with near ties --------------------------------------------------


@SETTINGS
@given(
    dim=st.integers(2, 40),
    steps=st.lists(st.integers(1, 100), min_size=2, max_size=12, unique=True),
    copies=st.lists(st.integers(0, 11), max_size=4),
    n_far=st.integers(0, 40),
    k=st.integers(1, 10),
    restrict=st.sampled_from(["all", "some", "one"]),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_vector_matrix_is_exact_on_near_ties(dim, steps, copies, n_far, k, restrict, seed, data):
    """Rows 1e-5..1e-3 away from the query: their float32 scores are indistinguishable (gaps
    of 1e-10..1e-7), so only the float64 re-scoring orders them right."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)
    rows = {}
    for j in steps:
        w = rng.standard_normal(dim)
        w -= (w @ u) * u
        v = u + (j * 1e-5) * w / np.linalg.norm(w)
        rows[f"near{j:03d}"] = (v / np.linalg.norm(v)).astype(np.float32)
    near_ids = sorted(rows)
    for c in copies:  # exact duplicates of near rows, under other ids
        rows[f"copy{c:02d}"] = rows[near_ids[c % len(near_ids)]].copy()
    for f in range(n_far):
        v = rng.standard_normal(dim)
        rows[f"far{f:02d}"] = (v / np.linalg.norm(v)).astype(np.float32)
    ids = data.draw(st.permutations(sorted(rows)))
    matrix = VectorMatrix(dim, capacity=4)
    matrix.upsert(ids, np.array([rows[i] for i in ids]), [None] * len(ids))
    removed = ids[: len(ids) // 4]
    matrix.remove(removed)
    live = [i for i in ids if i not in set(removed)]
    if restrict == "all":
        allowed, chosen = None, live
    else:
        size = 1 if restrict == "one" else max(1, len(live) // 2)
        chosen = data.draw(st.lists(st.sampled_from(live), min_size=size, max_size=size))
        allowed = matrix.rows_for(chosen + ["unknown"])
    expected = top_k({i: cosine(rows[i], u) for i in set(chosen)}, k)
    ranked, plan, candidates = matrix.search(u, k, allowed)
    assert [i for i, _ in ranked] == [i for i, _ in expected]
    for (_, got), (_, want) in zip(ranked, expected):
        assert abs(got - want) <= 1e-12
    assert candidates == len(set(chosen))
    assert plan in ("full-scan", "gather", "masked-scan")


# -- round trips -------------------------------------------------------------------------


@SETTINGS
@given(arrays(np.float32, st.integers(0, 64)))
def test_encode_decode_round_trip_is_bit_exact(vector):
    blob = encode(vector)
    assert len(blob) == 4 * len(vector)
    back = decode(blob)
    assert back.dtype == np.float32
    assert back.tobytes() == vector.astype("<f4").tobytes()  # NaN payloads included


@SETTINGS
@given(st.lists(st.floats(width=32, allow_nan=False), max_size=16))
def test_encode_is_little_endian_float32(values):
    assert encode(np.array(values, dtype=np.float64)) == struct.pack(f"<{len(values)}f", *values)


naive_or_offset = st.sampled_from([
    None, dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)),
    dt.timezone(-dt.timedelta(hours=11)),
])
plain_values = st.one_of(
    st.text(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.booleans(),
    st.dates(),
    st.datetimes(timezones=naive_or_offset),
    st.decimals(allow_nan=False, allow_infinity=False),
)


@SETTINGS
@given(plain_values)
@example(float("inf"))
@example(-float("inf"))
@example(Decimal("1E+2"))
@example(Decimal("-1E-7"))
def test_to_term_to_python_round_trip(value):
    back = to_python(to_term(value))
    assert type(back) is type(value)
    assert back == value
    if isinstance(value, float):
        assert math.copysign(1.0, back) == math.copysign(1.0, value)


def test_nan_round_trips_as_nan():
    term = to_term(float("nan"))
    assert term.value == "NaN"
    assert math.isnan(to_python(term))


@pytest.mark.parametrize("value, lexical, datatype", [
    (True, "true", "boolean"),
    (7, "7", "integer"),
    (0.5, "0.5", "double"),
    (float("inf"), "INF", "double"),
    (-float("inf"), "-INF", "double"),
    (Decimal("1E+2"), "100", "decimal"),
    (Decimal("-0.25"), "-0.25", "decimal"),
    (dt.date(2024, 1, 2), "2024-01-02", "date"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05", "dateTime"),
])
def test_to_term_writes_valid_xsd_lexical_forms(value, lexical, datatype):
    term = to_term(value)
    assert (term.value, term.datatype.value) == (lexical, XSD + datatype)


def test_iri_and_terms_bind_as_themselves():
    assert to_term(IRI("https://x/a")) == ox.NamedNode("https://x/a")
    assert to_term("https://x/a") == ox.Literal("https://x/a")
    literal = ox.Literal("x", language="en")
    assert to_term(literal) is literal
    with pytest.raises(TypeError, match="IRI"):
        to_term(object())


graph_values = st.one_of(
    st.text(),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.dates(),
    st.datetimes(min_value=dt.datetime(1, 1, 1), timezones=naive_or_offset),
)


@SETTINGS
@given(graph_values)
def test_values_survive_a_trip_through_the_graph(value):
    kg = OxigraphGraph()
    kg.update("INSERT DATA { <https://x/s> <https://x/p> <https://x/o> }")
    rows = kg.query("SELECT ?x WHERE { ?s ?p ?o BIND(?v AS ?x) }", {"v": value}).rows
    assert rows == [{"x": value}]


# -- bindings cannot change the query ----------------------------------------------------

hostile = st.text(alphabet=st.sampled_from(list('"\'{}#\\<>?.;\n\t aSELCTDW:()*$|&=')), max_size=30)
HOSTILE_EXAMPLES = [
    '"} ; DELETE WHERE { ?s ?p ?o } #',
    '" || true || "',
    '"""',
    '}',
    '#',
    "x\" } UNION { ?s ?p ?o } #",
    '\\" . ?s ?p ?o . #',
    "'''",
]


@SETTINGS
@given(
    names=st.lists(st.one_of(hostile, st.sampled_from(HOSTILE_EXAMPLES)), min_size=1,
                   max_size=6),
    probe=st.one_of(hostile, st.sampled_from(HOSTILE_EXAMPLES)),
)
@example(names=HOSTILE_EXAMPLES, probe='" || true || "')
@example(names=HOSTILE_EXAMPLES, probe='"} ; DELETE WHERE { ?s ?p ?o } #')
def test_hostile_string_bindings_only_ever_match_literally(names, probe):
    kg = OxigraphGraph()
    name = ox.NamedNode("https://schema.org/name")
    kg.extend(ox.Quad(ox.NamedNode(f"https://x/{i}"), name, ox.Literal(n))
              for i, n in enumerate(names))
    size = len(kg)
    expected = {f"https://x/{i}" for i, n in enumerate(names) if n == probe}

    found = kg.query("SELECT ?s WHERE { ?s schema:name ?name }", {"name": probe}).column("s")
    assert set(found) == expected
    assert kg.select_iris("SELECT ?s WHERE { ?s schema:name ?n }", {"n": probe}) == sorted(
        expected, key=found.index)
    kg.update("DELETE { ?s schema:name ?name } WHERE { ?s schema:name ?name }", {"name": probe})
    assert len(kg) == size - len(expected)


@SETTINGS
@given(st.one_of(hostile, st.sampled_from(HOSTILE_EXAMPLES)))
def test_apply_bindings_only_adds_one_values_row(value):
    query = "SELECT ?s WHERE { ?s schema:name ?name }"
    bound = apply_bindings(query, {"name": value})
    prefix = "SELECT ?s WHERE { VALUES (?name) { ("
    suffix = ") } ?s schema:name ?name }"
    assert bound.startswith(prefix) and bound.endswith(suffix)
    serialised = bound[len(prefix): -len(suffix)]
    assert ox.Literal(value) == _parse_literal(serialised)


def _parse_literal(text: str) -> ox.Literal:
    (quad,) = ox.parse(f"<https://x/s> <https://x/p> {text} .", format=ox.RdfFormat.N_TRIPLES)
    return quad.object
