"""The keyword postings rank exactly as FTS5's bm25() does, at every committed state.

The reference is FTS5 itself: ``bm25()`` read by SQL from the store's own ``keyword_index``
in the same read transaction (so the same committed state), or a store rebuilt from scratch.
Texts are random unicode with diacritics, stems that collide ("running runs"), staged rows,
deletes, re-adds of the same ids and enough writes to merge segments.
"""

from __future__ import annotations

import math
import random
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import killing
from trails.text import fts5_match, keyword_terms
from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore
from trails.vector.stores.sqlite_vec.keyword_postings import KeywordPostings
from trails.vector.stores.sqlite_vec.schema import INDEXED, KEYWORD_TOKENIZER

WORDS = ["café", "cafe", "résumé", "resume", "naïve", "Straße", "ÅNGSTRÖM", "running", "runs",
         "run", "ran", "日本語", "Ωmega", "x1", "ﬁle", "ǅemal", "data", "DATA", "daté"]
word_or_noise = st.one_of(
    st.sampled_from(WORDS),
    st.text(st.characters(codec="utf-8", categories=["L", "M", "N", "P", "Zs"]), max_size=8))
texts = st.lists(word_or_noise, max_size=14).map(" ".join)
queries = st.lists(word_or_noise, min_size=1, max_size=5).map(" ".join)


@pytest.fixture(params=["sparse", "dense"], autouse=True)
def lists(request, monkeypatch):
    """Every test here runs with posting lists stored sparse (gaps) and dense (a frequency
    per rowid of the span), as small and large corpora store them."""
    from trails.vector.stores.sqlite_vec import keyword_segments

    monkeypatch.setattr(keyword_segments, "_DENSE_LEAST", 10**9 if request.param == "sparse" else 1)
    return request.param


def fts5_ranking(store: SqliteVecStore, query: str, allowed: set[str] | None = None,
                 scopes: list[str] | None = None) -> list[tuple[str, float]]:
    """FTS5's own ranking (bm25() over the whole index, negated; ties by id), by SQL."""
    match = fts5_match(keyword_terms(query))
    if match is None:
        return []
    with store.snapshot():
        rows = store._db.execute(
            "SELECT i.id, -bm25(keyword_index), i.scope FROM keyword_index"
            " JOIN items i ON i.rowid = keyword_index.rowid WHERE keyword_index MATCH ?", (match,))
    kept = [(i, s) for i, s, scope in rows if (allowed is None or i in allowed)
            and (scopes is None or scope in scopes)]
    return sorted(kept, key=lambda p: (-p[1], p[0]))


def ranked(store: SqliteVecStore, query: str, k: int = 100_000, **kwargs) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in store.keyword_search(query, k, **kwargs)]


def same(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in expected]
    for (_, a), (_, b) in zip(got, expected):
        assert a == pytest.approx(b, rel=1e-9)


def through_postings(store: SqliteVecStore, query: str) -> bool:
    with store.snapshot():
        return store._keywords.postings.stems(keyword_terms(query)) is not None


def add(store: SqliteVecStore, rows: dict[str, str], scope: str = "default", **kwargs) -> None:
    names = list(rows)
    if names:
        store.add_many(names, np.ones((len(names), 2)),
                       [{"text": rows[n], "scope": scope, **kwargs} for n in names],
                       pending=bool(kwargs))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(texts, min_size=1, max_size=20), st.lists(texts, max_size=5),
       st.lists(queries, min_size=1, max_size=4), st.data())
def test_rankings_equal_fts5_bm25_on_unicode_texts(live, staged, asked, data):
    store = SqliteVecStore(dim=2)
    add(store, {f"d{i:02}": t for i, t in enumerate(live)})
    add(store, {f"s{i}": t for i, t in enumerate(staged)}, doc_iri="doc", version="v")
    gone = data.draw(st.sets(st.sampled_from(sorted(f"d{i:02}" for i in range(len(live))))))
    store.delete_many(sorted(gone))
    ids = [f"d{i:02}" for i in range(len(live))]
    for query in asked:
        same(ranked(store, query), fts5_ranking(store, query))
        allowed = data.draw(st.sets(st.sampled_from(ids)))
        same(ranked(store, query, ids=sorted(allowed)), fts5_ranking(store, query, allowed))
        k = data.draw(st.integers(1, 4))  # the cut at k, ties across it ordered by id
        same(ranked(store, query, k), fts5_ranking(store, query)[:k])
        # A small k among many allowed ids walks down the ranking instead of mapping ids.
        same(ranked(store, query, k, ids=sorted(allowed)), fts5_ranking(store, query, allowed)[:k])
        assert store.keyword_idf_sum(query) == pytest.approx(fts5_idf_sum(store, query), rel=1e-12)


def fts5_idf_sum(store: SqliteVecStore, query: str) -> float:
    """keyword_idf_sum as FTS5 alone computes it: stems and document counts from FTS5's
    vocabulary tables (the postings switched off for the call)."""
    postings = store._keywords.postings
    saved, postings._query = postings._query, None
    try:
        return store.keyword_idf_sum(query)
    finally:
        postings._query = saved


def test_most_words_rank_through_the_postings():
    """The property above is not only FTS5 compared with itself (the fallback)."""
    store = SqliteVecStore(dim=2)
    add(store, {"a": " ".join(WORDS)})
    assert all(through_postings(store, w) for w in WORDS)
    assert through_postings(store, "running runs résumé")


def by_hand(docs: dict[str, list[str]], phrases: list[str]) -> dict[str, float]:
    """FTS5's bm25() written out: one addend per query phrase (a repeated stem counts twice)."""
    n, average = len(docs), sum(map(len, docs.values())) / len(docs)
    scores = {}
    for doc, tokens in docs.items():
        tf, total = Counter(tokens), 0.0
        for phrase in phrases:
            held = sum(phrase in t for t in docs.values())
            idf = max(math.log((n - held + 0.5) / (held + 0.5)), 1e-6)
            total += idf * tf[phrase] * 2.2 / (tf[phrase] + 1.2 * (0.25 + 0.75 * len(tokens) / average))
        if set(tokens) & set(phrases):
            scores[doc] = total
    return scores


def test_two_query_words_with_one_stem_count_twice_as_in_fts5():
    store = SqliteVecStore(dim=2)
    docs = {"a": "run run fox", "b": "runs jazz", "c": "fox fox fox", "d": "jazz"}
    add(store, docs)
    expected = by_hand({d: t.replace("runs", "run").split() for d, t in docs.items()},
                       ["run", "run", "fox"])
    got = ranked(store, "running runs fox")
    assert [i for i, _ in got] == sorted(expected, key=lambda d: (-expected[d], d))
    for i, score in got:
        assert score == pytest.approx(expected[i], rel=1e-12)
    same(got, fts5_ranking(store, "running runs fox"))


OPERATIONS = st.lists(st.tuples(st.sampled_from(["add", "delete", "stage", "publish"]),
                                st.lists(st.integers(0, 40), min_size=1, max_size=12),
                                st.integers(0, 10_000)), min_size=5, max_size=40)


def state_is_rebuilt(store: SqliteVecStore) -> None:
    """The live rows the writer carried across its changes (keyword_state.py) are those a
    new connection's postings read from the file, row for row."""
    carried = store._keywords.postings.state()
    with store.snapshot():
        fresh = KeywordPostings(store._db, KEYWORD_TOKENIZER, INDEXED).state()
    assert carried is not None and fresh is not None
    assert (carried.token, carried.rows, carried.tokens, carried.whole) == (
        fresh.token, fresh.rows, fresh.tokens, fresh.whole)
    size = len(fresh.segment_of)
    assert len(carried.segment_of) >= size and (carried.segment_of[size:] == -1).all()
    assert carried.segment_of[:size].tolist() == fresh.segment_of.tolist()
    live = fresh.segment_of >= 0
    assert carried.lengths[:size][live].tolist() == fresh.lengths[live].tolist()
    assert carried.scopes[:size][live].tolist() == fresh.scopes[live].tolist()
    assert carried.norm[:size][live].tolist() == fresh.norm[live].tolist()
    assert {s: n for s, n in carried.live_counts.items() if n} == dict(
        Counter(fresh.segment_of[live].tolist()))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(OPERATIONS)
def test_any_sequence_of_writes_ranks_as_fts5_and_merges_segments(operations):
    store = SqliteVecStore(dim=2)
    vocabulary = ["alpha", "beta", "gamma", "delta", "running", "runs", "café", "cafe"]
    for step, (kind, rows, seed) in enumerate(operations):
        rng = random.Random(seed)
        texts = {f"r{r}": " ".join(rng.choices(vocabulary, k=rng.randint(0, 9))) for r in rows}
        scope = rng.choice(["public", "secret"])
        if kind == "add":
            add(store, texts, scope)
        elif kind == "delete":
            store.delete_many(sorted(texts))
        elif kind == "stage":
            add(store, texts, scope, doc_iri=f"doc{seed % 3}", version=f"v{step}")
        else:
            versions = {r[0]: r[1] for r in store.managed_rows() if r[3]}
            store.publish([DocumentVersion(d, v, "x", "h", 1) for d, v in versions.items()])
        for query in ("alpha running", "café beta delta", "gamma"):
            same(ranked(store, query), fts5_ranking(store, query))
            same(ranked(store, query, scopes=["public", "secret"]), fts5_ranking(store, query))
        state_is_rebuilt(store)
    live = store.count()
    segments = store._db.execute("SELECT COUNT(*) FROM keyword_segments")[0][0]
    assert segments <= 8 * (1 + math.log(max(live, 1), 8)) + 1  # merged as they accumulate


def test_scoped_rankings_equal_the_statistics_of_the_scope_alone():
    """With scopes, the postings score with the scopes' own statistics: as a store holding
    only those rows would (FTS5's bm25() over that store is the reference)."""
    rng = random.Random(5)
    vocabulary = ["alpha", "beta", "gamma", "delta", "running", "runs", "café", "cafe"]
    rows = {f"r{i:03}": (rng.choice(["a", "b", "c"]),
                         " ".join(rng.choices(vocabulary, k=rng.randint(1, 12)))) for i in range(300)}
    store = SqliteVecStore(dim=2)
    for scope in ("a", "b", "c"):
        add(store, {i: t for i, (s, t) in rows.items() if s == scope}, scope)
    for scopes in (["a"], ["a", "c"], ["b"]):
        alone = SqliteVecStore(dim=2)
        add(alone, {i: t for i, (s, t) in rows.items() if s in scopes})
        for query in ("alpha running", "café beta delta", "runs cafe gamma"):
            same(ranked(store, query, scopes=scopes), fts5_ranking(alone, query))
            allowed = {i for i in rows if rng.random() < 0.3}
            same(ranked(store, query, scopes=scopes, ids=sorted(allowed)),
                 fts5_ranking(alone, query, allowed))
            assert store.keyword_idf_sum(query, scopes=scopes) == pytest.approx(
                alone.keyword_idf_sum(query), rel=1e-12)


def test_a_store_opened_by_another_driver_ranks_with_fts5_after_it_wrote(tmp_path, monkeypatch):
    """A writer that cannot tokenise as FTS5 does marks the postings stale, for good: every
    connection then ranks with FTS5 (never with postings missing that writer's rows)."""
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=2) as store:
        add(store, {"a": "alpha beta", "b": "beta"})
    other = SqliteVecStore(path)
    other._keywords.postings._document = None  # as a driver without apsw's tokenizer
    other._keywords.postings._query = None
    add(other, {"c": "alpha alpha"})
    other.close()
    with SqliteVecStore(path) as store:
        assert not through_postings(store, "alpha")
        same(ranked(store, "alpha beta"), fts5_ranking(store, "alpha beta"))
        assert [i for i, _ in ranked(store, "alpha")] == ["c", "a"]


# -- other processes: readers beside a writer, a writer killed mid-commit -------------------

# Distinct ids: staging a live id would hide it until published (a third committed state).
STATES = {
    "a": {"a1": "alpha beta beta", "a2": "gamma alpha", "a3": "delta"},
    "b": {"b1": "beta", "b4": "alpha alpha gamma delta", "b5": "alpha", "b6": "running gamma"},
}
BASE = {f"base{i}": " ".join(["alpha", "beta", "gamma", "delta", "runs"][j % 5]
                              for j in range(i % 4 + 1)) for i in range(40)}

WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore
    STATES = eval(sys.argv[2])
    store = SqliteVecStore(sys.argv[1])
    print("ready", flush=True)
    for step in range(int(sys.argv[3])):
        name = "ab"[step % 2]
        rows = STATES[name]
        store.add_many(list(rows), np.ones((len(rows), 2)),
                       [{"text": t, "doc_iri": "doc", "version": f"{name}{step}"} for t in rows.values()],
                       pending=True)
        store.publish([DocumentVersion("doc", f"{name}{step}", "default", "h", len(rows))])
""")


def committed(name: str) -> SqliteVecStore:
    store = SqliteVecStore(dim=2)
    add(store, BASE | STATES[name])
    return store


def test_a_reader_beside_a_publishing_writer_sees_one_committed_state_per_answer(tmp_path):
    path = tmp_path / "v.db"
    with SqliteVecStore(path, dim=2) as store:
        add(store, BASE)
        store.add_many(list(STATES["b"]), np.ones((4, 2)),
                       [{"text": t, "doc_iri": "doc", "version": "b"} for t in STATES["b"].values()],
                       pending=True)
        store.publish([DocumentVersion("doc", "b", "default", "h", 4)])
    queries = ["alpha gamma", "beta running", "delta alpha beta"]
    expected = {q: [ranked(committed(n), q, 8) for n in "ab"] for q in queries}
    writer = killing.start(WRITER, [path, repr(STATES), "400"])
    reader = SqliteVecStore(path, read_only=True)
    seen, answers = set(), 0
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        while writer.poll() is None or answers < 30:
            query = queries[answers % len(queries)]
            got = ranked(reader, query, 8)
            assert got in expected[query], f"a ranking of no committed state: {got}"
            seen.add(expected[query].index(got))
            answers += 1
        assert writer.wait(timeout=120) == 0, writer.communicate(timeout=30)[1]
    finally:
        reader.close()
        writer.kill()
        writer.communicate(timeout=30)
    assert answers >= 30


KILLED = textwrap.dedent("""
    import random, sys
    import numpy as np
    from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore
    store = SqliteVecStore(sys.argv[1])
    words = ["alpha", "beta", "gamma", "delta", "running", "runs", "café", "cafe", "zeta"]
    rng = random.Random(int(sys.argv[2]))
    print("ready", flush=True)
    for step in range(100_000):
        doc = f"doc{rng.randrange(30)}"
        rows = [f"{doc}-{step}-{i}" for i in range(rng.randint(20, 120))]
        store.add_many(rows, np.ones((len(rows), 2)),
                       [{"text": " ".join(rng.choices(words, k=rng.randint(1, 30))),
                         "doc_iri": doc, "version": str(step), "scope": rng.choice("pq")}
                        for _ in rows], pending=True)
        store.publish([DocumentVersion(doc, str(step), "default", "h", len(rows))])
        if step % 5 == 0:
            store.delete_many(rng.sample(store.all_ids(), min(10, store.count())))
""")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_writer_killed_mid_commit_leaves_rankings_of_the_committed_state(tmp_path, seed):
    path = tmp_path / "v.db"
    SqliteVecStore(path, dim=2).close()
    finished = killing.run_worker(KILLED, [path, Path(str(seed))],
                                  kill_after=random.Random(seed).uniform(1.0, 4.0))
    assert not finished
    with SqliteVecStore(path) as store:
        live = {h.id: h.metadata for h in store.get(store.all_ids())}
        assert live, "the writer committed nothing before it was killed"
        rebuilt = SqliteVecStore(dim=2)
        for scope in ("p", "q"):
            add(rebuilt, {i: m["text"] for i, m in live.items() if m.get("scope") == scope}, scope)
        for query in ("alpha running", "café zeta", "beta gamma delta runs"):
            assert through_postings(store, query)
            same(ranked(store, query), ranked(rebuilt, query))
            same(ranked(store, query), fts5_ranking(store, query))
            same(ranked(store, query, scopes=["p"]), ranked(rebuilt, query, scopes=["p"]))
        add(store, {"new": "zeta zeta"})  # and it writes on from there
        assert "new" in dict(ranked(store, "zeta"))
        same(ranked(store, "zeta alpha"), fts5_ranking(store, "zeta alpha"))


def test_a_write_failing_mid_merge_rolls_back_and_the_next_reads_see_the_committed_state(
        monkeypatch):
    """The caches of a connection follow a rollback: segments and arrays written in the
    failed transaction are never read again, and later writes merge as usual."""
    from trails.vector.stores.sqlite_vec import keyword_segments

    store = SqliteVecStore(dim=2)
    rng = random.Random(3)
    vocabulary = ["alpha", "beta", "gamma", "delta", "running", "runs"]
    for batch in range(7):  # seven segments of one tier: the eighth write merges them
        add(store, {f"r{batch}-{i}": " ".join(rng.choices(vocabulary, k=5)) for i in range(9)})
    store.delete_many(["r0-1", "r3-4"])
    before = {q: ranked(store, q) for q in ("alpha running", "beta delta")}
    segments = store._db.execute("SELECT segment, token FROM keyword_segments")

    def failing(*args):
        raise OSError("disk full while merging")

    monkeypatch.setattr(keyword_segments, "_merge_page", failing)
    with pytest.raises(OSError):
        add(store, {f"r7-{i}": "alpha alpha" for i in range(9)})
    assert store._db.execute("SELECT segment, token FROM keyword_segments") == segments
    for query, ranking in before.items():
        same(ranked(store, query), ranking)
    monkeypatch.undo()
    add(store, {f"r7-{i}": "alpha alpha" for i in range(9)})
    assert store._db.execute("SELECT COUNT(*) FROM keyword_segments")[0][0] == 1  # merged
    for query in before:
        same(ranked(store, query), fts5_ranking(store, query))


def test_a_small_k_among_most_rows_walks_the_ranking_and_keeps_ties_by_id():
    """Walking down the best rows stops at k allowed ones, and every row tied with the k-th
    allowed one is read before the cut (ids are looked up for those rows only)."""
    store = SqliteVecStore(dim=2)
    order = list(range(300))
    random.Random(9).shuffle(order)  # rowid order is not id order: ties must be sorted by id
    add(store, {f"t{i:03}": "alpha beta" if i % 3 else "alpha" for i in order})
    allowed = {f"t{i:03}" for i in range(300) if i % 7}
    for k in (1, 3, 10, 50):
        same(ranked(store, "alpha beta", k, ids=sorted(allowed)),
             fts5_ranking(store, "alpha beta", allowed)[:k])
    few = {"t001", "t150", "t299"}  # the rows the walk reaches last
    same(ranked(store, "alpha beta", 2, ids=sorted(few | {"t000"})),
         fts5_ranking(store, "alpha beta", few | {"t000"})[:2])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 4), texts), min_size=1, max_size=20),
       st.lists(queries, min_size=1, max_size=3), st.data())
def test_rankings_of_documents_chunks_equal_fts5_restricted_to_them(rows, asked, data):
    """Candidates given as documents rank their live chunks (through a row mask over the
    postings) exactly as FTS5 ranks those chunks' ids."""
    from trails.vector.stores.records import DocumentIris

    store = SqliteVecStore(dim=2)
    names = [f"c{i:02}" for i in range(len(rows))]
    store.add_many(names, np.ones((len(rows), 2)),
                   [{"text": text, "doc_iri": f"doc{d}"} for d, text in rows])
    for query in asked:
        chosen = sorted(data.draw(st.sets(st.integers(0, 5))))
        documents = DocumentIris(f"doc{d}" for d in chosen)
        allowed = {n for n, (d, _) in zip(names, rows) if d in chosen}
        k = data.draw(st.integers(1, 25))
        same(ranked(store, query, k, ids=documents), fts5_ranking(store, query, allowed)[:k])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(OPERATIONS, st.data())
def test_scores_of_some_rows_are_those_rows_of_every_rows_scores_bit_for_bit(operations, data):
    """Scoring only candidate rows (a filter's) gives each exactly the score it has among
    every row's, with dead rows, re-indexed rows, scope masks and scoped statistics; and the
    k best of them are those of every row's scores kept to the candidates."""
    from trails.vector.stores.sqlite_vec.keyword_top import top_k

    store = SqliteVecStore(dim=2)
    vocabulary = ["alpha", "beta", "gamma", "running", "runs", "café"]
    for step, (kind, rows, seed) in enumerate(operations):
        rng = random.Random(seed)
        texts = {f"r{r}": " ".join(rng.choices(vocabulary, k=rng.randint(0, 9))) for r in rows}
        if kind in ("add", "stage"):
            extra = {"doc_iri": f"doc{seed % 3}", "version": f"v{step}"} if kind == "stage" else {}
            add(store, texts, rng.choice(["public", "secret"]), **extra)
        elif kind == "delete":
            store.delete_many(sorted(texts))
        else:
            versions = {r[0]: r[1] for r in store.managed_rows() if r[3]}
            store.publish([DocumentVersion(d, v, "x", "h", 1) for d, v in versions.items()])
    postings = store._keywords.postings
    with store.snapshot():
        stems = postings.stems(keyword_terms(data.draw(st.sampled_from(
            ["alpha running", "café beta gamma", "runs", "beta beta alpha"]))))
        state = postings.state()
        if stems is None or state is None:
            return
        size = len(state.segment_of)
        among = np.array(sorted(data.draw(st.sets(st.integers(0, max(size - 1, 0))))),
                         dtype=np.int64)[:size]
        mask = data.draw(st.sampled_from([None, postings.scope_mask(state, ["public"])]))
        for scoped in (False, True):
            whole = postings.scores(stems, mask, scoped)[1].copy()  # the next ranking reuses it
            some = postings.scores(stems, mask, scoped, among)[1]
            assert some.tobytes() == whole[among].tobytes()
            kept = np.zeros(size)
            kept[among] = whole[among]
            k = data.draw(st.integers(1, 5))
            assert top_k(store._db, some, k, None, among=among) == top_k(store._db, kept, k, None)
