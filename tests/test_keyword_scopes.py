"""Keyword scores depend on the caller's scopes only: no side channel through BM25 statistics.

BM25 reads three statistics (row count, average length, each term's document frequency). If
they spanned every scope, a caller in ``public`` could watch its scores and fusion weights
move as words are added to ``secret``. The scores here are checked against BM25 computed by
hand, and against FTS5's own ``bm25()`` when one scope holds everything.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.testing import fresh_context
from trails.vector.stores.sqlite_vec import SqliteVecStore
from trails.vector.stores.sqlite_vec.scoped_bm25 import varint

WORDS = ["apple", "boat", "camel", "dune", "eagle", "fjord", "grape", "harbour"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


def store_with(rows: dict[str, tuple[str, str]]) -> SqliteVecStore:
    """A store holding ``{id: (scope, text)}`` (vectors are irrelevant to keyword scores)."""
    store = SqliteVecStore(dim=2)
    ids = list(rows)
    if ids:
        store.add_many(ids, np.ones((len(ids), 2)),
                       [{"scope": rows[i][0], "text": rows[i][1]} for i in ids])
    return store


def by_hand(query: str, rows: dict[str, str]) -> dict[str, float]:
    """FTS5's BM25 formula (k1 1.2, b 0.75) on exactly these rows (words are their own stems)."""
    n = len(rows)
    lengths = {i: len(t.split()) for i, t in rows.items()}
    average = sum(lengths.values()) / n
    scores: dict[str, float] = {}
    for i, text in rows.items():
        words, total = text.split(), 0.0
        for term in set(query.split()):
            tf = words.count(term)
            if not tf:
                continue
            df = sum(term in t.split() for t in rows.values())
            idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
            total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[i] / average))
        if total:
            scores[i] = total
    return scores


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(public=st.lists(texts, min_size=1, max_size=6), secret=st.lists(texts, max_size=6),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
def test_a_scope_scores_as_if_it_were_alone(public, secret, query):
    rows = {f"p{i}": ("public", t) for i, t in enumerate(public)}
    rows |= {f"s{i}": ("secret", t) for i, t in enumerate(secret)}
    together = store_with(rows)
    alone = store_with({i: r for i, r in rows.items() if r[0] == "public"})
    seen = {h.id: h.score for h in together.keyword_search(query, k=50, scopes=["public"])}
    expected = {h.id: h.score for h in alone.keyword_search(query, k=50, scopes=["public"])}
    assert seen.keys() == expected.keys()
    for i, score in seen.items():
        assert score == pytest.approx(expected[i], rel=1e-9)
    hand = by_hand(query, {i: t for i, (s, t) in rows.items() if s == "public"})
    assert seen.keys() == hand.keys()
    for i, score in seen.items():
        assert score == pytest.approx(hand[i], rel=1e-9)
    assert together.keyword_idf_sum(query, scopes=["public"]) == pytest.approx(
        alone.keyword_idf_sum(query, scopes=["public"]), rel=1e-9)


def test_candidates_inside_a_scope_keep_the_scopes_statistics():
    rows = {"p1": ("public", "apple boat"), "p2": ("public", "apple camel camel"),
            "s1": ("secret", "apple"), "s2": ("secret", "apple apple dune")}
    together, alone = store_with(rows), store_with({"p1": rows["p1"], "p2": rows["p2"]})
    for store in (together, alone):
        hits = store.keyword_search("apple camel", k=5, ids=["p2"], scopes=["public"])
        assert [h.id for h in hits] == ["p2"]
    assert together.keyword_search("apple camel", ids=["p2"], scopes=["public"])[0].score == \
        pytest.approx(alone.keyword_search("apple camel", ids=["p2"], scopes=["public"])[0].score)


def test_one_scope_holding_everything_scores_as_fts5_does():
    """The confined formula and FTS5's bm25() agree where their statistics are the same."""
    rows = {f"r{i}": ("public", " ".join(WORDS[j % 8] for j in range(i, i + 2 + i % 5)))
            for i in range(12)}
    store = store_with(rows)
    fts5 = {h.id: h.score for h in store.keyword_search("apple camel grape", k=20)}
    confined = store._keywords.confined(["apple", "camel", "grape"], 20, ["public", "other"],
                                        None, store._db.state())
    assert confined is None  # the scopes hold every row: FTS5's ranking is used
    store.add_many(["x"], np.ones((1, 2)), [{"scope": "other", "text": "zebra"}])
    confined = store._keywords.confined(["apple", "camel", "grape"], 20, ["public"], None,
                                        store._db.state())
    assert confined is not None
    # FTS5 counted one more row ("x") than the public scope holds: recompute without it.
    hand = by_hand("apple camel grape", {i: t for i, (_, t) in rows.items()})
    assert dict(confined).keys() == fts5.keys() == hand.keys()
    for i, score in confined:
        assert score == pytest.approx(hand[i], rel=1e-9)


def test_the_statistics_follow_writes_of_the_same_connection():
    store = store_with({"p1": ("public", "apple"), "s1": ("secret", "boat")})
    before = store.keyword_search("apple", scopes=["public"])[0].score
    store.add_many(["p2"], np.ones((1, 2)), [{"scope": "public", "text": "boat camel"}])
    after = store.keyword_search("apple", scopes=["public"])[0].score
    assert after != before
    assert after == pytest.approx(by_hand("apple", {"p1": "apple", "p2": "boat camel"})["p1"])


def test_retrieve_in_one_scope_does_not_move_with_another_scopes_words():
    """End to end: a public caller's hybrid ranking, scores and fusion weights, before and
    after secret documents full of one of the query's words are ingested (with statistics
    across scopes, "harbour" would lose its weight and b.md overtake a.md)."""
    ctx = fresh_context(dim=16)
    public = {"a.md": "harbour quay", "b.md": "boats quay", "c.md": "desert camels",
              "d.md": "winter snow", "e.md": "grape vine"}
    ingest_all([Document(n, n, t) for n, t in public.items()], ctx=ctx, scope="public")
    ingest_all([Document("x.md", "x.md", "unrelated words")], ctx=ctx, scope="secret")

    def seen():
        result = retrieve("harbour boats", ctx, mode="hybrid", scope="public", k=5)
        keyword = ctx.vectors.keyword_search("harbour boats", k=5, scopes=["public"])
        return ([(h.iri, round(h.score, 12)) for h in result], result.fusion_weights,
                [(h.id, round(h.score, 12)) for h in keyword])

    before = seen()
    ingest_all([Document(f"h{i}.md", f"h{i}.md", "harbour tides") for i in range(12)],
               ctx=ctx, scope="secret")
    assert seen() == before


def test_varint_reads_sqlite_varints():
    assert varint(bytes([0x05])) == 5
    assert varint(bytes([0x81, 0x00])) == 128
    assert varint(bytes([0x83, 0xFF, 0x7F])) == (3 << 14) | (0x7F << 7) | 0x7F
