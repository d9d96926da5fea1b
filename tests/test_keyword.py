"""Keyword (BM25) ranking: the index kept in step with writes, exact restriction to candidates
and scopes, BM25 as documented, safe queries, and the schema-2 -> 3 upgrade."""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections import Counter
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from old_stores import make_old_store
from pg_support import pg_server
from trails.errors import ConfigurationError
from trails.text import STOPWORDS, fts5_match, keyword_terms
from trails.vector.stores.sqlite_vec import DocumentVersion, SqliteVecStore, schema

BACKENDS = ["sqlite-vec", "qdrant", "pgvector"]


def make_store(backend: str, dim: int = 2):
    if backend == "pgvector":
        from trails.vector.stores.pgvector import PgVectorStore

        return PgVectorStore(pg_server().new_schema(), dim=dim)
    if backend == "qdrant":
        pytest.importorskip("qdrant_client")
        from trails.vector.stores.qdrant import QdrantStore

        return QdrantStore(dim=dim)
    return SqliteVecStore(dim=dim)


@pytest.fixture(params=BACKENDS)
def store(request):
    made = make_store(request.param)
    yield made
    made.close()


def ids(hits):
    return [h.id for h in hits]


def unit(i: int) -> list[float]:
    return [1.0, float(i % 7) / 7]


def add_texts(store, texts: dict[str, str], **kwargs) -> None:
    names = list(texts)
    store.add_many(names, [unit(i) for i in range(len(names))],
                   [{"text": texts[n]} for n in names], **kwargs)


# -- the index follows every write -------------------------------------------------------


def test_upsert_replaces_the_indexed_text(store):
    add_texts(store, {"a": "rails routing maps urls", "b": "ruby gems"})
    assert ids(store.keyword_search("rails", 5)) == ["a"]
    store.add("a", unit(0), {"text": "elephants are grey"})
    assert store.keyword_search("rails", 5) == []
    assert ids(store.keyword_search("grey", 5)) == ["a"]
    store.add("a", unit(0), {"snippet": "snippet only"})  # no text: the snippet is indexed
    assert store.keyword_search("grey", 5) == []
    assert ids(store.keyword_search("snippet", 5)) == ["a"]


def test_metadata_text_round_trips_and_is_indexed(store):
    store.add("a", unit(0), {"text": "full chunk text", "snippet": "full", "n": 1})
    assert store.get(["a"])[0].metadata == {"text": "full chunk text", "snippet": "full", "n": 1}
    (hit,) = store.keyword_search("chunk", 5)
    assert hit.metadata == {"text": "full chunk text", "snippet": "full", "n": 1}


def test_deletes_leave_the_index(store):
    store.add_many(["a", "b", "c"], [unit(0), unit(1), unit(2)], [
        {"text": "rails one", "doc_iri": "d1"}, {"text": "rails two", "doc_iri": "d2"},
        {"text": "rails three", "doc_iri": "d3"}])
    assert ids(store.keyword_search("rails", 5)) == ["a", "b", "c"]
    store.delete("a")
    assert store.delete_where({"doc_iri": "d2"}) == 1
    assert ids(store.keyword_search("rails", 5)) == ["c"]
    store.delete_document("d3")
    assert store.keyword_search("rails", 5) == []
    store.add("z", unit(0), {"text": "rails again"})  # may reuse a freed rowid
    assert ids(store.keyword_search("rails", 5)) == ["z"]


def test_delete_where_text_matches_the_stored_text(store):
    add_texts(store, {"a": "rails", "b": "ruby"})
    assert store.delete_where({"text": "rails"}) == 1
    assert ids(store.keyword_search("rails ruby", 5)) == ["b"]


def test_staged_rows_are_invisible_until_published(store):
    add_texts(store, {"live": "graph databases store triples"})
    store.add_many(["d/v1/0", "d/v1/1"], [unit(0), unit(1)], [
        {"text": "staged rails text", "doc_iri": "d", "version": "v1"},
        {"text": "more staged words", "doc_iri": "d", "version": "v1"}], pending=True)
    assert store.keyword_search("staged rails", 5) == []
    store.publish([DocumentVersion("d", "v1", "default", "h1", 2)])
    assert ids(store.keyword_search("staged rails", 5)) == ["d/v1/0", "d/v1/1"]
    store.publish([DocumentVersion("d", "v1", "default", "h1", 2)])  # idempotent
    assert ids(store.keyword_search("staged rails", 5)) == ["d/v1/0", "d/v1/1"]
    # A new version: staged (old one still the live one), then published (old one gone).
    store.add_many(["d/v2/0"], [unit(2)], [{"text": "version two elephants", "doc_iri": "d",
                                            "version": "v2"}], pending=True)
    assert store.keyword_search("elephants", 5) == []
    assert ids(store.keyword_search("rails", 5)) == ["d/v1/0"]
    store.publish([DocumentVersion("d", "v2", "default", "h2", 1)])
    assert ids(store.keyword_search("elephants", 5)) == ["d/v2/0"]
    assert store.keyword_search("rails staged", 5) == []
    assert ids(store.keyword_search("graph", 5)) == ["live"]


def test_staging_a_live_id_hides_it_until_published():
    store = SqliteVecStore(dim=2)
    store.add("a", unit(0), {"text": "rails", "doc_iri": "d", "version": "v1"})
    store.add_many(["a"], [unit(0)], [{"text": "ruby", "doc_iri": "d", "version": "v1"}],
                   pending=True)
    assert store.keyword_search("rails ruby", 5) == []
    store.publish([DocumentVersion("d", "v1", "default", "h", 1)])
    assert ids(store.keyword_search("rails ruby", 5)) == ["a"]
    assert store.keyword_search("rails", 5) == []


def indexed_rowids(store: SqliteVecStore) -> set[int]:
    return {r[0] for r in store._db.execute("SELECT rowid FROM keyword_index")}


def live_rowids(store: SqliteVecStore) -> set[int]:
    return {r[0] for r in store._db.execute("SELECT rowid FROM items WHERE pending = 0")}


def test_the_index_holds_exactly_the_live_rows_after_any_writes():
    store = SqliteVecStore(dim=2)
    add_texts(store, {f"x{i}": f"word{i} common" for i in range(6)})
    store.add_many(["x1", "p"], [unit(1), unit(2)], [
        {"text": "t", "doc_iri": "d", "version": "v"}, {"text": "u", "doc_iri": "d", "version": "v"}],
        pending=True)
    assert indexed_rowids(store) == live_rowids(store)
    store.publish([DocumentVersion("d", "v", "default", "h", 2)])
    store.delete_many(["x0", "x5"])
    assert indexed_rowids(store) == live_rowids(store)
    assert len(indexed_rowids(store)) == 5  # 6 - x0 - x5 + p


# -- BM25 as documented ------------------------------------------------------------------

# Words the Porter stemmer leaves unchanged, so the reference needs no stemmer.
VOCAB = ["cat", "dog", "red", "sun", "map", "tree", "fox", "jazz"]


def fts5_bm25(docs: dict[str, list[str]], terms: list[str], k1=1.2, b=0.75) -> dict[str, float]:
    """SQLite FTS5's bm25() (negated), over every live document that has text."""
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    scores = {}
    for doc, tokens in docs.items():
        tf, score = Counter(tokens), 0.0
        for term in terms:
            df = sum(term in t for t in docs.values())
            idf = math.log((n - df + 0.5) / (df + 0.5))
            idf = idf if idf > 0 else 1e-6
            score += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(tokens) / avgdl))
        if tf.keys() & set(terms):
            scores[doc] = score
    return scores


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=12), min_size=1,
                max_size=25),
       st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4),
       st.lists(st.booleans(), max_size=25))
# An exact tie that the reference's arithmetic rounds apart: d04 (tf 3 of 3 tokens) and d07
# (tf 9 of 12) score 6.6/3.9 = 19.8/11.7 against an average length of 4.5.
@example([["cat"]] * 3 + [["cat"] * 2, ["cat"] * 3, ["cat"] * 4, ["cat"] * 12,
          ["cat"] * 9 + ["dog"] * 3], ["cat"], [])
def test_scores_are_fts5_bm25_over_live_rows_only(texts, query, staged):
    store = SqliteVecStore(dim=2)
    live = {f"d{i:02}": t for i, t in enumerate(texts)}
    add_texts(store, {d: " ".join(t) for d, t in live.items()})
    pending = {f"p{i}": ["cat"] * 3 for i, s in enumerate(staged) if s}  # must not count
    if pending:
        store.add_many(list(pending), [unit(0)] * len(pending),
                       [{"text": " ".join(t), "doc_iri": "x", "version": "v"} for t in pending.values()],
                       pending=True)
    expected = fts5_bm25(live, list(dict.fromkeys(query)))
    hits = store.keyword_search(" ".join(query), k=len(live))
    assert sorted(ids(hits)) == sorted(expected)
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.id], rel=1e-9)
        assert hit.score > 0
    # Best first by the reference, up to its rounding; equal scores in id order.
    for a, b in itertools.pairwise(hits):
        assert expected[a.id] >= expected[b.id] * (1 - 1e-9)
        assert a.score > b.score or (a.score == b.score and a.id < b.id)


def test_ties_are_ordered_by_id_across_the_cut(store):
    add_texts(store, {f"t{i}": "same words here" for i in (5, 3, 9, 1, 7)} | {"z": "other"})
    assert ids(store.keyword_search("words", 2)) == ["t1", "t3"]
    assert ids(store.keyword_search("words", 10)) == ["t1", "t3", "t5", "t7", "t9"]


def test_stemming_and_diacritics_in_sqlite():
    store = SqliteVecStore(dim=2)
    add_texts(store, {"a": "Running elephants in the café", "b": "nothing relevant"})
    assert ids(store.keyword_search("run elephant", 5)) == ["a"]
    assert ids(store.keyword_search("CAFE", 5)) == ["a"]


# -- exact restriction to candidates and scopes ------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_restriction_equals_the_full_ranking_filtered(backend, data):
    n = data.draw(st.integers(1, 30))
    texts = data.draw(st.lists(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8),
                               min_size=n, max_size=n))
    scopes = data.draw(st.lists(st.sampled_from(["default", "legal", "hr"]), min_size=n, max_size=n))
    docs = [f"doc{i % 5}" for i in range(n)]
    names = [f"c{i:02}" for i in range(n)]
    store = make_store(backend)
    try:
        store.add_many(names, [unit(i) for i in range(n)], [
            {"text": " ".join(t), "scope": s, "doc_iri": d} for t, s, d in zip(texts, scopes, docs)])
        query = " ".join(data.draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3)))
        k = data.draw(st.integers(1, n + 2))
        chosen = data.draw(st.lists(st.sampled_from(names + sorted(set(docs)) + ["unknown"]),
                                    max_size=n, unique=True))
        use_ids = data.draw(st.booleans())
        wanted_scopes = data.draw(st.one_of(st.none(), st.lists(
            st.sampled_from(["default", "legal", "hr"]), min_size=1, max_size=2, unique=True)))
        # Statistics are those of the scopes asked for (tests/test_keyword_scopes.py checks
        # them by hand); candidates then only restrict that ranking.
        full = store.keyword_search(query, k=n, scopes=wanted_scopes)
        admitted = {c for i, c in enumerate(names)
                    if (not use_ids or c in chosen or docs[i] in chosen)
                    and (wanted_scopes is None or scopes[i] in wanted_scopes)}
        got = store.keyword_search(query, k, chosen if use_ids else None, scopes=wanted_scopes)
        assert got == [h for h in full if h.id in admitted][:k]
    finally:
        store.close()


def test_an_empty_candidate_list_or_scope_list_finds_nothing(store):
    add_texts(store, {"a": "rails"})
    assert store.keyword_search("rails", 5, []) == []
    assert store.keyword_search("rails", 5, ["unknown"]) == []
    assert store.keyword_search("rails", 5, scopes=[]) == []
    assert store.keyword_search("rails", 5, scopes=["other"]) == []
    assert store.keyword_search("rails", 0) == []
    with pytest.raises(ValueError, match="k"):
        store.keyword_search("rails", -1)


# -- queries are words, never syntax -----------------------------------------------------

HOSTILE = ['"', '""', "'", "rails\"", 'rails" OR "ruby', "NEAR(rails ruby)", "NEAR", "rails*",
           "*", "(", ")", "rails)", "(rails", "rails AND", "NOT rails", "-rails", "+rails",
           "^rails", "text:rails", "{text}: rails", "rails:", "a OR", "OR", "AND NOT", ":",
           "\x00", "rails\x00ruby", "\\", "%", "_", "'; DROP TABLE items; --", "  ", "",
           "\u200b", "🚂 rails", "ǅ", "e\u0301"]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_are_words_or_nothing(store, query):
    add_texts(store, {"a": "rails near ruby and text", "b": "or not"})
    hits = store.keyword_search(query, 5)
    assert set(ids(hits)) <= {"a", "b"}
    if "rails" in query.lower():
        assert "a" in ids(hits)
    assert store.count() == 2


@pytest.mark.parametrize("query", ["", "   ", "!!!", "()", '""', "*", "_"])
def test_queries_without_words_give_no_hits(store, query):
    add_texts(store, {"a": "rails"})
    assert store.keyword_search(query, 5) == []


@functools.cache
def shared_store() -> SqliteVecStore:
    store = SqliteVecStore(dim=2)
    store.add_many(["a", "b"], [[1, 0], [0, 1]],
                   [{"text": "NEAR rails ruby AND OR NOT ünïcödé 東京"}, {"text": "x y z"}])
    return store


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_is_a_valid_query(query):
    hits = shared_store().keyword_search(query, 3)
    assert all(h.score > 0 for h in hits)


def test_terms_and_match_expression():
    assert keyword_terms('rails" OR "ruby') == ["rails", "ruby"]  # "or" is a stopword
    assert keyword_terms("NEAR(rails* ruby)") == ["near", "rails", "ruby"]
    assert keyword_terms("The THE the") == ["the"]  # only stopwords: keep them
    assert keyword_terms("the rails", stopwords=()) == ["the", "rails"]
    assert keyword_terms("rails gem", stopwords=["GEM"]) == ["rails"]
    assert keyword_terms("snake_case") == ["snake", "case"]
    assert fts5_match([]) is None
    assert fts5_match(["a", "b"]) == '"a" OR "b"'
    assert "the" in STOPWORDS and "what" not in STOPWORDS


def test_the_tokeniser_lives_in_layer_0_and_stays_importable_from_rank():
    import trails.rank
    import trails.rank.keyword
    import trails.text

    assert trails.rank.keyword_terms is trails.rank.keyword.keyword_terms is keyword_terms
    assert trails.rank.keyword.fts5_match is fts5_match
    # trails.text imports nothing of trails: stores (below ranking) tokenise through it.
    source = Path(trails.text.__file__).read_text(encoding="utf-8")
    assert "from trails" not in source and "import trails" not in source


def test_the_stopword_knob_changes_the_ranking():
    store = SqliteVecStore(dim=2)
    add_texts(store, {"a": "the the the the cat dog", "b": "cat", "c": "sun", "d": "tree"})
    assert ids(store.keyword_search("the cat", 1)) == ["b"]  # "cat" alone: the shorter text
    assert ids(store.keyword_search("the cat", 1, stopwords=())) == ["a"]


# -- upgrading a schema-2 store ----------------------------------------------------------


def test_a_schema_2_store_is_upgraded_and_indexed_on_open(tmp_path):
    path = tmp_path / "old.db"
    make_old_store(path, 2, 2, [
        ("a", unit(0), {"text": "rails in json text"}), ("b", unit(1), {"snippet": "ruby snippet"}),
        ("c", unit(2), {"n": 1}),
        ("p", unit(3), {"text": "rails staged", "doc_iri": "d", "version": "v"})],
        pending=[False, False, False, True])

    with pytest.raises(ConfigurationError, match="upgrade"):
        SqliteVecStore(path, read_only=True)
    store = SqliteVecStore(path)
    assert store._meta("schema") == str(len(schema.MIGRATIONS)) == "7"
    assert sorted(ids(store.keyword_search("rails ruby", 5))) == ["a", "b"]
    assert store.get(["a"])[0].metadata == {"text": "rails in json text"}
    store.publish([DocumentVersion("d", "v", "default", "h", 1)])
    assert ids(store.keyword_search("staged", 5)) == ["p"]
    assert indexed_rowids(store) == live_rowids(store) - {3}  # "c" has no text to index
    store.close()
    reopened = SqliteVecStore(path, read_only=True)
    assert sorted(ids(reopened.keyword_search("rails", 5))) == ["a", "p"]
    reopened.close()


def connect(path) -> apsw.Connection:
    """A second connection to a store file, through the store's own SQLite (two SQLite
    libraries in one process do not see each other's locks)."""
    return apsw.Connection(str(path))


def automerge(path) -> list:
    """FTS5's automerge as the index's config table keeps it ([]: its default, 4)."""
    db = connect(path)
    try:
        return db.execute("SELECT v FROM keyword_index_config WHERE k = 'automerge'").fetchall()
    finally:
        db.close()


def untune(path) -> None:
    db = connect(path)
    db.execute("DELETE FROM keyword_index_config WHERE k = 'automerge'")
    db.close()


def test_keyword_merges_are_tuned_in_new_and_older_files_by_a_writer_only(tmp_path):
    SqliteVecStore(tmp_path / "new.db", dim=2).close()
    assert automerge(tmp_path / "new.db") == [(16,)]
    path = tmp_path / "old.db"
    make_old_store(path, 2, 3, [("a", unit(0), {"text": "rails"})])
    store = SqliteVecStore(path)  # upgraded to the current schema; then tuned
    store.close()
    untune(path)  # a file written before the tuning: at the current schema
    SqliteVecStore(path, read_only=True).close()
    assert automerge(path) == []  # a reader writes nothing
    store = SqliteVecStore(path)
    assert automerge(path) == [(16,)]
    assert ids(store.keyword_search("rails", 5)) == ["a"]
    store.close()


def test_a_file_busy_at_open_opens_untuned_and_is_tuned_by_the_next_writer(tmp_path, caplog):
    path = tmp_path / "v.db"
    add_texts(store := SqliteVecStore(path, dim=2), {"a": "rails"})
    store.close()
    untune(path)
    db = connect(path)
    db.execute("BEGIN IMMEDIATE")  # another writer, longer than the busy timeout
    try:
        with caplog.at_level("INFO", logger="trails.vector"):
            store = SqliteVecStore(path)
        assert "not tuned yet" in caplog.text
    finally:
        db.execute("ROLLBACK")
        db.close()
    assert ids(store.keyword_search("rails", 5)) == ["a"]
    store.close()
    assert automerge(path) == []
    SqliteVecStore(path).close()
    assert automerge(path) == [(16,)]


def test_another_connection_sees_keyword_writes(tmp_path):
    path = tmp_path / "v.db"
    writer, reader = SqliteVecStore(path, dim=2), None
    try:
        add_texts(writer, {"a": "rails", "b": "ruby"})
        reader = SqliteVecStore(path, read_only=True)
        assert ids(reader.keyword_search("rails ruby", 5, ["a", "b"])) == ["a", "b"]
        writer.delete("a")
        add_texts(writer, {"c": "rails"})
        assert ids(reader.keyword_search("rails ruby", 5, ["a", "b", "c"])) == ["b", "c"]
    finally:
        writer.close()
        if reader is not None:
            reader.close()


def test_qdrant_keyword_search_on_an_old_client_is_a_configuration_error(monkeypatch):
    pytest.importorskip("qdrant_client")
    from trails.vector.stores.qdrant import QdrantStore

    store = QdrantStore(dim=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.delattr(store._m, "TextQuery")
    with pytest.raises(ConfigurationError, match="1.20"):
        store.keyword_search("rails", 5)


# -- the query's BM25 weight (keyword_idf_sum) and the keyword quality ------------------------


def test_keyword_idf_sum_by_hand_on_a_read_only_reopen(tmp_path):
    from trails.rank.keyword import keyword_quality

    path = str(tmp_path / "v.db")
    with SqliteVecStore(path, dim=2) as writer:
        add_texts(writer, {"a": "rails routing", "b": "ruby gems", "c": "go", "d": "ruby"})
    with SqliteVecStore(path, read_only=True) as store:
        # FTS5's bm25() IDF: ln((N - n + 0.5) / (n + 0.5)), N = 4 rows, floored at 1e-6.
        # "routes" and "routing" share the Porter stem "rout" (n = 1); "zebra" is in no row;
        # "ruby" is in two, so ln(2.5 / 2.5) = 0 and the floor applies.
        rout, zebra = (math.log((4 - n + 0.5) / (n + 0.5)) for n in (1, 0))
        ruby = 1e-6
        assert store.keyword_idf_sum("routes") == pytest.approx(rout, rel=1e-12)
        assert store.keyword_idf_sum("Routes, ruby and zebra?") == pytest.approx(
            rout + ruby + zebra, rel=1e-12)  # "and" is a stopword
        assert store.keyword_idf_sum("   ") == 0.0
        hits = store.keyword_search("routes ruby", 4)
        quality = keyword_quality("routes ruby", store, hits)
        assert quality == pytest.approx(hits[0].score / (rout + ruby), rel=1e-12)
        assert keyword_quality("zebra", store, store.keyword_search("zebra", 4)) == 0.0
        assert keyword_quality("x", object(), []) is None  # a store that cannot weigh


@pytest.mark.parametrize("postings", [True, False])
def test_rows_without_text_are_in_no_keyword_statistic(tmp_path, postings, monkeypatch):
    """FTS5 counts the rows it indexed; the query weight counted every live vector, so rows
    added without text (in another scope, or in the searched one) moved a scope's weight."""
    if not postings:  # the FTS5 path, as when the postings cannot answer
        monkeypatch.setattr("trails.vector.stores.sqlite_vec.keyword_postings.KeywordPostings."
                            "stems", lambda self, terms: None)
    texts = ["rails routing guide", "ruby gems", "routing tables", "go modules"]
    plain = SqliteVecStore(tmp_path / "plain.db", dim=2)
    plain.add_many([f"t{i}" for i in range(4)], [[1, i] for i in range(4)],
                   [{"text": t, "scope": "legal"} for t in texts])
    padded = SqliteVecStore(tmp_path / "padded.db", dim=2)
    padded.add_many([f"t{i}" for i in range(4)], [[1, i] for i in range(4)],
                    [{"text": t, "scope": "legal"} for t in texts])
    padded.add_many([f"h{i}" for i in range(30)], [[i, 1] for i in range(30)],
                    [{"scope": "hr"} if i % 2 else {"scope": "legal"} for i in range(30)])
    for scopes in (["legal"], None):
        expected = plain.keyword_idf_sum("routing rails", scopes=scopes)
        assert padded.keyword_idf_sum("routing rails", scopes=scopes) == pytest.approx(expected)
    # FTS5's own N: 4 indexed rows, "rail" in 1 of them (not 34 live vectors)
    assert padded.keyword_idf_sum("rails") == pytest.approx(math.log((4 - 1 + 0.5) / 1.5))


@pytest.mark.parametrize(("query", "found"), [("Straße", ["a"]), ("STRASSE", ["b"]),
                                              ("ﬁle", ["c"])])
def test_query_words_are_folded_as_the_index_folds_its_rows(query, found):
    """casefold() made the query's 'Straße' 'strasse' and 'ﬁle' 'file', words the index,
    which keeps 'ß' and ligatures, holds for no row that says them."""
    store = SqliteVecStore(dim=2)
    store.add_many(["a", "b", "c"], [[1, 0], [0, 1], [1, 1]],
                   [{"text": "Die Straße ist lang"}, {"text": "strasse"}, {"text": "the ﬁle"}])
    assert [h.id for h in store.keyword_search(query, 5)] == found
    assert keyword_terms(query) == [query.lower()]


@pytest.mark.parametrize("backend", ["sqlite-vec", "pgvector"])
def test_scores_are_fts5s_to_the_last_bit(backend):
    """FTS5 scores a term ``idf * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + b * len / avgdl)))``
    and adds the terms up in the query's order. PgVectorStore multiplied ``idf * tf`` first,
    which rounds another way: keyword scores a unit in the last place apart, so fused scores
    on PostgreSQL differed from SqliteVecStore's for the same data (a filter admitting every
    chunk of 16,000, say)."""
    store = make_store(backend)
    add_texts(store, {"a": "graph graph graph rails", "b": "alpha beta gamma rails",
                      "c": "one two three four", "d": "red green blue pink"})

    def term(df: int, tf: int) -> float:  # every text has 4 words: len / avgdl = 1
        idf = max(math.log((4 - df + 0.5) / (df + 0.5)), 1e-6)
        return idf * ((tf * (1.2 + 1.0)) / (tf + 1.2 * (1 - 0.75 + 0.75 * 4 / 4.0)))

    assert [(h.id, h.score) for h in store.keyword_search("graph", 5)] == [("a", term(1, 3))]
    assert term(1, 3) != math.log(3.5 / 1.5) * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 4 / 4.0))
    found = {h.id: h.score for h in store.keyword_search("graph rails", 5)}
    assert found == {"a": 0.0 + term(1, 3) + term(2, 1), "b": 0.0 + term(2, 1)}
    store.close()
