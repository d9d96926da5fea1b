"""PgVectorStore against a real PostgreSQL server with pgvector (trails.testing.servers.postgres).

The store contract suite runs on it through the ``pgvector`` store factory; these tests hold
what is its own: typed, parameterised metadata filters; BM25 in SQL on the caller's scopes'
statistics; snapshots and versioned commits in transactions; reopening a context from its
directory; and what an unreachable or refusing server gives.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pg_support import pg_server
from test_keyword_scopes import by_hand
from test_sqlite_vec import PATCHES, assert_same_searches
from trails import retrieve
from trails.context import Context
from trails.errors import (
    ConfigurationError,
    EndpointUnavailableError,
    InvalidArgumentError,
)
from trails.ingest import Document, ingest_all
from trails.resilience import Resilience
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.records import DocumentVersion

pytest.importorskip("psycopg")
pytest.importorskip("pgserver")

from trails.testing.servers.postgres import PostgresServer
from trails.vector.stores.pgvector import PgVectorStore


@pytest.fixture(scope="module")
def server():
    return pg_server()


@pytest.fixture
def dsn(server):
    return server.new_schema()


@pytest.fixture
def store(dsn):
    made = PgVectorStore(dsn, dim=2)
    yield made
    made.close()


def no_retry() -> Resilience:
    return Resilience(attempts=1, failure_threshold=1000)


# -- typed, parameterised metadata filters ------------------------------------------------


def typed_rows(store) -> None:
    values = {"int": 1, "float": 1.0, "true": True, "string": "1", "null": None, "list": [1]}
    ids = sorted(values)
    store.add_many(ids, np.ones((len(ids), 2)), [{"v": values[i], "name": i} for i in ids])
    store.add("missing", [1, 0], {"name": "missing"})


@pytest.mark.parametrize("value, expected", [
    (1, ["float", "int"]),        # JSON numbers compare by value: 1 == 1.0
    (True, ["true"]),             # ... but never as a boolean
    ("1", ["string"]),
    (None, ["null"]),             # an explicit null, not a missing key
    ([1], ["list"]),
    (2, []),
])
def test_find_and_count_compare_metadata_as_typed_json(store, value, expected):
    typed_rows(store)
    found = store.find({"v": value}, limit=10)
    assert [row.id for row in found] == expected
    assert store.count({"v": value}) == len(expected)
    assert all(row.metadata["name"] == row.id for row in found)


def test_find_keeps_id_order_limits_and_skips_staged_rows(store):
    store.add_many(["c", "a", "b"], np.ones((3, 2)), [{"k": "x"}] * 3)
    store.add_many(["s"], [[1, 0]], [{"k": "x"}], pending=True)
    assert [r.id for r in store.find({"k": "x"}, limit=2)] == ["a", "b"]
    assert [r.id for r in store.find({"k": "x"}, limit=10)] == ["a", "b", "c"]
    assert store.count({"k": "x"}) == 3 and store.count() == 3
    assert store.find({"k": "x"}, limit=0) == []
    with pytest.raises(InvalidArgumentError, match="limit"):
        store.find({"k": "x"}, limit=-1)


HOSTILE = ["'; DROP TABLE trails; --", "k') OR true --", "a\"b", "$1", "%s", "' OR '1'='1"]


@pytest.mark.parametrize("text", HOSTILE)
def test_filter_values_are_parameters_never_sql_and_hostile_keys_are_refused(store, text):
    """Keys are identifiers on every store (the contract suite); values are parameters."""
    store.add("a", [1, 0], {text: text, "k": text})
    assert [r.id for r in store.find({"k": text})] == ["a"]
    assert store.count({"k": "other"}) == 0
    with pytest.raises(InvalidArgumentError, match="identifier"):
        store.find({text: text})
    assert store.count() == 1  # the table is still there, whole


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(
        st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(st.characters(
        blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=3), inner,
        max_size=3), max_leaves=6))
def test_a_stored_value_is_found_by_itself_and_only_by_equal_json(server, value):
    store = PgVectorStore(server.new_schema(), dim=2)
    try:
        store.add_many(["x", "y"], [[1, 0], [0, 1]], [{"v": value}, {"v": "other"}])
        assert [r.id for r in store.find({"v": value}, limit=5)] == (
            ["x", "y"] if value == "other" else ["x"])
        assert store.get(["x"])[0].metadata == {"v": value}
    finally:
        store.close()


def test_delete_where_compares_typed_json_and_none_matches_nothing(store):
    typed_rows(store)
    assert store.delete_where({"v": None}) == 0
    assert store.delete_where({"v": True}) == 1
    assert store.delete_where({"v": 1}) == 2
    assert store.delete_where({"doc_iri": None}) == 0


def test_nul_characters_are_refused_before_anything_is_written(store):
    store.add("a", [1, 0], {"k": 1})
    with pytest.raises(InvalidArgumentError, match="NUL"):
        store.add_many(["b", "c"], [[1, 0], [0, 1]], [{"k": 2}, {"k": "x\x00y"}])
    assert store.all_ids() == ["a"]


# -- BM25 in SQL, scoped ------------------------------------------------------------------


WORDS = ["apple", "boat", "camel", "dune", "eagle", "fjord"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=10).map(" ".join)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(public=st.lists(texts, min_size=1, max_size=5), secret=st.lists(texts, max_size=5),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
def test_keyword_scores_are_bm25_on_the_callers_scopes_alone(server, public, secret, query):
    rows = {f"p{i}": ("public", t) for i, t in enumerate(public)}
    rows |= {f"s{i}": ("secret", t) for i, t in enumerate(secret)}
    store = PgVectorStore(server.new_schema(), dim=2)
    try:
        ids = list(rows)
        store.add_many(ids, np.ones((len(ids), 2)),
                       [{"scope": rows[i][0], "text": rows[i][1]} for i in ids])
        store.add_many(["staged"], [[1, 1]], [{"scope": "public", "text": query}], pending=True)
        seen = {h.id: h.score for h in store.keyword_search(query, k=50, scopes=["public"])}
        hand = by_hand(query, {i: t for i, (s, t) in rows.items() if s == "public"})
        assert seen.keys() == hand.keys()
        for i, score in seen.items():
            assert score == pytest.approx(hand[i], rel=1e-9)
        public_rows = sum(s == "public" for s, _ in rows.values())
        terms = set(query.split())
        expected_idf = sum(
            max(math.log((public_rows - df + 0.5) / (df + 0.5)), 1e-6)
            for df in (sum(t in text.split() for s, text in rows.values() if s == "public")
                       for t in terms))
        assert store.keyword_idf_sum(query, scopes=["public"]) == pytest.approx(
            expected_idf, rel=1e-9)
    finally:
        store.close()


@pytest.mark.parametrize("empty", [{"text": ""}, {"snippet": ""}, {"text": "", "snippet": "boat"}])
def test_a_row_whose_keyword_text_is_empty_is_no_row_of_the_statistics(store, empty):
    """SqliteVecStore indexes no empty text (FTS5 never sees the row), so such a row must not
    count in N or the average length here either: the scores and the query's weight are those
    of the rows that hold text, whatever the backend."""
    store.add_many(["a", "b", "c"], np.ones((3, 2)),
                   [{"text": "apple boat"}, {"text": "camel"}, empty])
    hand = by_hand("apple", {"a": "apple boat", "b": "camel"})
    assert [(h.id, pytest.approx(h.score, rel=1e-9))
            for h in store.keyword_search("apple", k=10)] == [("a", hand["a"])]
    assert store.keyword_idf_sum("apple") == pytest.approx(
        max(math.log((2 - 1 + 0.5) / (1 + 0.5)), 1e-6), rel=1e-9)


def test_candidates_restrict_the_ranking_and_keep_the_scopes_statistics(store):
    store.add_many(["a", "b", "c"], np.ones((3, 2)), [
        {"text": "apple boat", "doc_iri": "d1"}, {"text": "apple apple camel", "doc_iri": "d2"},
        {"text": "dune", "doc_iri": "d2"}])
    everything = {h.id: h.score for h in store.keyword_search("apple", k=10)}
    only = store.keyword_search("apple", k=10, ids=["d2"])
    assert [(h.id, h.score) for h in only] == [("b", everything["b"])]


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: json.dumps(p))
def test_update_payload_reindexes_what_keyword_and_scoped_searches_read(server, patch):
    """After ``update_payload`` every search answers as on a store that was given the patched
    metadata in the first place: the same hits, scores and scopes, keyword text included."""
    before = {"a": {"doc_iri": "d1", "scope": "public", "text": "apple boat", "snippet": "camel"},
              "b": {"doc_iri": "d1", "scope": "public", "text": "apple", "snippet": "dune"},
              "c": {"doc_iri": "d2", "scope": "public", "text": "apple eagle", "snippet": "x"}}
    after = {i: {k: v for k, v in ({**m, **patch} if m["doc_iri"] == "d1" else m).items()
                 if v is not None} for i, m in before.items()}
    vectors = np.eye(3)[:, :2] + 0.5
    patched, fresh = (PgVectorStore(server.new_schema(), dim=2) for _ in range(2))
    try:
        patched.add_many(list(before), vectors, list(before.values()))
        assert patched.update_payload("d1", patch) == 2
        fresh.add_many(list(after), vectors, list(after.values()))
        assert_same_searches(patched, fresh)
    finally:
        patched.close()
        fresh.close()


# -- commits and snapshots ----------------------------------------------------------------


def test_publish_swaps_whole_versions_in_one_transaction(store):
    store.add_many(["d/v1/0", "d/v1/1"], [[1, 0], [0, 1]],
                   [{"doc_iri": "d", "version": "v1", "text": "old"}] * 2, pending=True)
    assert store.all_ids() == [] and store.keyword_search("old") == []
    store.publish([DocumentVersion("d", "v1", "default", "h1", 2)])
    assert store.all_ids() == ["d/v1/0", "d/v1/1"]
    store.add_many(["d/v2/0"], [[1, 1]], [{"doc_iri": "d", "version": "v2", "text": "new"}],
                   pending=True)
    assert store.all_ids() == ["d/v1/0", "d/v1/1"]
    store.publish([DocumentVersion("d", "v2", "default", "h2", 1)])
    assert store.all_ids() == ["d/v2/0"]
    assert store.current_versions() == {"d": DocumentVersion("d", "v2", "default", "h2", 1)}
    assert [h.id for h in store.keyword_search("old new")] == ["d/v2/0"]


def test_a_snapshot_holds_one_state_while_another_connection_commits(dsn):
    reader, writer = PgVectorStore(dsn, dim=2), PgVectorStore(dsn, dim=2)
    try:
        writer.add("a", [1, 0], {"text": "apple"})
        with reader.snapshot():
            before = reader.revision()
            writer.add("b", [1, 0], {"text": "apple"})
            writer.delete("a")
            assert reader.all_ids() == ["a"]
            assert [h.id for h in reader.search([1, 0], k=5)] == ["a"]
            assert [h.id for h in reader.keyword_search("apple")] == ["a"]
            assert reader.revision() == before
        assert reader.all_ids() == ["b"] and reader.revision() != before
    finally:
        reader.close()
        writer.close()


def test_threads_read_and_write_at_once_and_every_read_sees_whole_batches(dsn):
    store = PgVectorStore(dsn, dim=2, pool_max=4)
    errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        try:
            for batch in range(15):
                ids = [f"b{batch:02d}-{i}" for i in range(5)]
                store.add_many(ids, np.ones((5, 2)), [{"batch": batch}] * 5)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                with store.snapshot():
                    assert store.count() % 5 == 0
                    assert len(store.search([1, 1], k=1000)) == store.count()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    store.close()
    assert not errors, errors


# -- contexts: init, reopen, scopes --------------------------------------------------------


def docs() -> list[Document]:
    return [Document(id=f"d{i}", source=f"d{i}.md",
                     text=f"Document {i} talks about {['rails', 'django', 'flask'][i % 3]} "
                          f"routing and views number {i}.") for i in range(6)]


def test_a_context_reopens_from_its_directory_alone_without_recording_a_password(
        dsn, tmp_path, monkeypatch):
    directory = tmp_path / "ctx"
    embedder = MockEmbedder(dim=16)
    with_password = dsn + " password=s3cret-value"
    # The test server trusts local connections: a password is accepted and never needed.
    with Context.open(directory, embedder=embedder,
                      vectors=PgVectorStore(with_password, dim=16, statement_timeout=30)) as ctx:
        ingest_all(docs()[:3], ctx=ctx)
        ingest_all(docs()[3:], ctx=ctx, scope="secret")
    recorded = (directory / "trails.json").read_text()
    assert "s3cret" not in recorded
    vectors = json.loads(recorded)["vectors"]
    assert vectors["backend"] == "pgvector"
    assert vectors["settings"]["statement_timeout"] == 30
    with Context.open(directory) as ctx:
        assert isinstance(ctx.vectors, PgVectorStore)
        assert ctx.vectors.statement_timeout == 30
        default = retrieve("rails routing", ctx, mode="hybrid", k=10)
        secret = retrieve("rails routing", ctx, mode="hybrid", k=10, scope="secret")
        assert {h.document for h in default} == {f"trails://local/doc/d{i}" for i in range(3)}
        assert {h.document for h in secret} == {
            f"trails://local/scope/secret/doc/d{i}" for i in range(3, 6)}
        assert ctx.verify().ok


def test_trails_dsn_from_the_environment_is_used_only_for_the_recorded_server(
        dsn, tmp_path, monkeypatch):
    from trails.vector.stores.pgvector.store import dsn_to_connect as _pg_dsn

    monkeypatch.setenv("TRAILS_PG_DSN", dsn + " password=from-env")
    assert _pg_dsn(dsn) == dsn + " password=from-env"
    assert _pg_dsn(dsn.replace("dbname=postgres", "dbname=other")) == dsn.replace(
        "dbname=postgres", "dbname=other")
    assert _pg_dsn(None) == dsn + " password=from-env"


def test_trails_init_records_pgvector_and_the_cli_reopens_it(dsn, tmp_path):
    from typer.testing import CliRunner

    from trails.cli import app

    directory = tmp_path / "kb"
    runner = CliRunner()
    made = runner.invoke(app, ["--db", str(directory), "init", "--model", "mock:16",
                               "--vectors", "pgvector", "--pg-dsn", dsn + " password=s3cret-cli",
                               "--resilience", "attempts=2", "--json"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["vectors"] == "pgvector"
    recorded = (directory / "trails.json").read_text()
    assert "s3cret" not in recorded and "s3cret" not in made.output
    assert json.loads(recorded)["vectors"]["settings"]["resilience"] == {"attempts": 2}
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.md").write_text("Rails routing maps URLs to controllers.")
    ingested = runner.invoke(app, ["--db", str(directory), "ingest", str(source)])
    assert ingested.exit_code == 0, ingested.output
    with Context.open(directory) as ctx:
        assert ctx.vectors.count() >= 1 and ctx.vectors.resilience.attempts == 2
    missing = runner.invoke(app, ["--db", str(tmp_path / "other"), "init", "--model", "mock:16",
                                  "--vectors", "pgvector"])
    assert missing.exit_code != 0 and "--pg-dsn" in missing.output


def test_pool_timeout_and_hnsw_settings_reopen_from_the_directory_alone(dsn, tmp_path):
    """Every setting that differs from its default is recorded (never the password) and a
    store reopened from ``trails.json`` alone has them all, and runs with them."""
    chosen = {"pool_min": 2, "pool_max": 3, "connect_timeout": 2.5, "statement_timeout": 7.0,
              "hnsw": True, "min_recall": 0.9}
    directory = tmp_path / "ctx"
    made = PgVectorStore(dsn + " password=s3cret-value", table="kb", dim=16, resilience=QUICK,
                         **chosen)
    with Context.open(directory, embedder=MockEmbedder(dim=16), vectors=made) as ctx:
        ingest_all(docs()[:2], ctx=ctx)
        stored = made.count()
    recorded = (directory / "trails.json").read_text()
    assert "s3cret" not in recorded
    assert json.loads(recorded)["vectors"]["settings"] == {
        "dsn": made.dsn, "table": "kb", **chosen, "resilience": QUICK.settings()}
    with Context.open(directory) as ctx:
        store = ctx.vectors
        assert {name: getattr(store, name) for name in chosen} == chosen
        assert (store.table, store.resilience, store._breaker) == ("kb", QUICK, made._breaker)
        assert (store._pool.min_size, store._pool.max_size, store._pool.timeout) == (2, 3, 2.5)
        timeout = store._run(lambda conn: conn.execute("SHOW statement_timeout").fetchone()[0])
        assert timeout == "7s" and store.count() == stored > 0
    plain = tmp_path / "plain"  # defaults are not recorded: a reopen takes today's defaults
    with Context.open(plain, embedder=MockEmbedder(dim=16), vectors=PgVectorStore(
            dsn, table="plain", dim=16)):
        pass
    assert set(json.loads((plain / "trails.json").read_text())["vectors"]["settings"]) == {
        "dsn", "table"}


def test_a_recorded_statement_timeout_cancels_a_blocked_read_with_a_clear_error(dsn, tmp_path):
    """A read held up (here by another session's lock) past the statement_timeout that
    trails.json records ends as EndpointUnavailableError naming the setting, outside a
    snapshot and inside one, never as psycopg's error; the store works once it is free."""
    import psycopg

    directory = tmp_path / "ctx"
    store = PgVectorStore(dsn, dim=16, statement_timeout=0.2, resilience=no_retry())
    with Context.open(directory, embedder=MockEmbedder(dim=16), vectors=store) as ctx:
        ingest_all(docs()[:2], ctx=ctx)
    with Context.open(directory) as ctx, psycopg.connect(dsn) as blocker:
        reopened = ctx.vectors
        assert reopened.statement_timeout == 0.2
        blocker.execute(reopened._sql("LOCK TABLE {items} IN ACCESS EXCLUSIVE MODE"))
        with pytest.raises(EndpointUnavailableError, match="statement_timeout") as caught:
            reopened.count()
        assert not isinstance(caught.value, psycopg.Error)
        with reopened.snapshot(), pytest.raises(EndpointUnavailableError,
                                                match="statement_timeout"):
            reopened.search([1.0] * 16, k=3)
        with pytest.raises(EndpointUnavailableError, match="fallback"):
            retrieve("rails routing", ctx, mode="vector", k=3)
        blocker.rollback()
        assert reopened.count() == len(reopened.all_ids()) > 0


@pytest.mark.parametrize("missing", [("psycopg",), ("psycopg_pool",),
                                     ("pgvector", "pgvector.psycopg")])
def test_a_missing_client_package_names_the_pgvector_extra(missing, monkeypatch, tmp_path):
    """The store, ``trails init --vectors pgvector`` and a context that records one say
    which extra installs what is missing; init writes nothing."""
    from typer.testing import CliRunner

    from trails.cli import app
    from trails.errors import MissingExtraError

    for module in missing:
        monkeypatch.setitem(sys.modules, module, None)  # import now fails as if not installed
    with pytest.raises(MissingExtraError, match=r'pip install "trails\[pgvector\]"'):
        PgVectorStore("host=/nowhere dbname=kb", dim=2)
    made = CliRunner().invoke(app, ["--db", str(tmp_path / "kb"), "init", "--model", "mock:4",
                                    "--vectors", "pgvector", "--pg-dsn", "host=/nowhere"])
    assert made.exit_code != 0 and 'pip install "trails[pgvector]"' in made.output
    assert "Traceback" not in made.output and not (tmp_path / "kb" / "trails.json").exists()


def test_the_pgvector_extra_installs_every_package_the_store_requires():
    """Each optional module the store's package loads (``require``) is installed by
    ``trails[pgvector]`` as pyproject lists it, and the registry names the same modules."""
    import re
    import tomllib
    from pathlib import Path

    from trails import _lazy
    from trails.registry import VECTOR_STORES

    package = Path(PgVectorStore.__module__.replace(".", "/")).parent
    root = Path(__file__).resolve().parents[1]
    source = "".join(p.read_text() for p in (root / "python" / package).glob("*.py"))
    required = set(re.findall(r'require\("([\w.]+)"', source))
    assert required == set(VECTOR_STORES["pgvector"].requires)
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["pgvector"]
    listed = {re.match(r"[\w.-]+", r).group().lower() for r in extra}
    for module in required:
        distribution, name = _lazy.OPTIONAL_MODULES[module]
        assert name == "pgvector" and distribution in listed


# -- a server that is down or refuses -----------------------------------------------------


@pytest.mark.parametrize("secret", ["password", "sslpassword"])
def test_no_server_is_endpoint_unavailable_naming_it_without_the_password(tmp_path, secret):
    """Neither the password nor the client key's passphrase reaches a message or a record."""
    dsn = f"host={tmp_path} port=5999 user=u {secret}=topsecret dbname=db"
    with pytest.raises(EndpointUnavailableError) as caught:
        PgVectorStore(dsn, dim=2, connect_timeout=1, resilience=no_retry())
    assert str(tmp_path) in str(caught.value) and "topsecret" not in str(caught.value)
    from trails.vector.stores.pgvector.core import public_dsn

    assert "topsecret" not in public_dsn(dsn)
    assert "topsecret" not in public_dsn(f"postgresql://u@h/db?{secret}=topsecret")


def test_a_missing_database_or_role_is_a_configuration_error(server):
    base = server.dsn
    with pytest.raises(ConfigurationError, match="database"):
        PgVectorStore(base.replace("/postgres?", "/no_such_db?"), dim=2, resilience=no_retry())
    with pytest.raises(ConfigurationError, match="role"):
        PgVectorStore(base.replace("postgres:@", "nobody:@"), dim=2, resilience=no_retry())


def test_a_table_trails_did_not_make_and_bad_names_are_refused(dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE theirs (id int)")
    with pytest.raises(ConfigurationError, match="not a trails vector store"):
        PgVectorStore(dsn, table="theirs", dim=2)
    with pytest.raises(ConfigurationError, match="identifier"):
        PgVectorStore(dsn, table="x; DROP TABLE theirs", dim=2)


def test_a_statement_past_the_timeout_is_endpoint_unavailable(store):
    store.add("a", [1, 0])
    slow = PgVectorStore(store._dsn, dim=2, statement_timeout=0.05, resilience=no_retry())
    try:
        with pytest.raises(EndpointUnavailableError, match="statement_timeout"):
            slow._run(lambda conn: conn.execute("SELECT pg_sleep(1)"))
    finally:
        slow.close()


def test_a_read_only_store_cannot_write_even_through_sql(dsn):
    PgVectorStore(dsn, dim=2).close()
    reader = PgVectorStore(dsn, read_only=True)
    try:
        with pytest.raises(ConfigurationError, match="read-only"):
            reader.add("a", [1, 0])
        with pytest.raises(ConfigurationError, match="read-only"):
            reader._run(lambda conn: conn.execute(reader._sql("DELETE FROM {items}")))
    finally:
        reader.close()


def test_an_outage_gives_endpoint_unavailable_and_the_keyword_fallback(tmp_path):
    with PostgresServer() as own:  # its own server: this one goes down
        store = PgVectorStore(own.new_schema(), dim=16, connect_timeout=1,
                              resilience=no_retry())
        ctx = Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=16), vectors=store)
        try:
            ingest_all(docs(), ctx=ctx)
            healthy = retrieve("rails routing", ctx, mode="hybrid", k=3)
            assert not healthy.degraded
            own.stop()
            with pytest.raises(EndpointUnavailableError):
                store.count()
            with pytest.raises(EndpointUnavailableError, match="fallback"):
                retrieve("rails routing", ctx, mode="vector", k=3)
            found = retrieve("rails routing", ctx, mode="vector", k=3, fallback="keyword")
            assert found.degraded and found.plan == "keyword-fallback"
            assert found[0].document in {h.document for h in healthy}
            own.start()  # the pool reconnects on its own, with backoff
            deadline = time.monotonic() + 30
            while True:
                try:
                    assert store.count() == len(store.all_ids()) > 0
                    break
                except EndpointUnavailableError:
                    assert time.monotonic() < deadline, "the store never reconnected"
                    time.sleep(0.5)
        finally:
            ctx.close()


# The cool-down outlasts a connect timeout (1 s), so the circuit stays open between calls.
QUICK = Resilience(attempts=2, initial_backoff=0.01, max_backoff=0.05, failure_threshold=2,
                   cool_down=4)


def test_a_server_gone_mid_session_opens_its_own_circuit_and_a_probe_closes_it(
        server, tmp_path, monkeypatch):
    """The breaker counts failed calls per server: at its threshold calls fail at once
    (nothing sent), retrieval falls back to keywords, another server's stores with the same
    policy go on, and the first call after the cool-down probes and closes the circuit."""
    with PostgresServer() as own:  # its own server: this one goes down
        store = PgVectorStore(own.new_schema(), dim=16, connect_timeout=1, resilience=QUICK)
        neighbour = PgVectorStore(server.new_schema(), dim=2, resilience=QUICK)
        ctx = Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=16), vectors=store)
        try:
            ingest_all(docs(), ctx=ctx)
            healthy = retrieve("rails routing", ctx, mode="hybrid", k=3)
            own.stop()
            tries, connection = [], store._pool.connection
            monkeypatch.setattr(store._pool, "connection",
                                lambda *args, **kwargs: tries.append(1) or connection())
            for _ in range(QUICK.failure_threshold):  # each call tries twice, then fails
                with pytest.raises(EndpointUnavailableError) as failure:
                    store.count()
                assert "circuit is open" not in str(failure.value)
            assert len(tries) == QUICK.attempts * QUICK.failure_threshold
            assert store._breaker.state == "open"
            with pytest.raises(EndpointUnavailableError, match="circuit is open") as failure:
                store.count()
            assert len(tries) == QUICK.attempts * QUICK.failure_threshold  # nothing sent
            assert "PostgreSQL at postgresql://" in str(failure.value)
            # A snapshot begun while the circuit is open asks for no connection either.
            monkeypatch.setattr(store._pool, "getconn", lambda *args, **kwargs: pytest.fail(
                "a snapshot asked for a connection while the circuit was open"))
            with store.snapshot(), pytest.raises(EndpointUnavailableError, match="circuit"):
                store.count()
            monkeypatch.undo()
            found = retrieve("rails routing", ctx, mode="vector", k=3, fallback="keyword")
            assert found.plan == "keyword-fallback" and "circuit is open" in found.degraded[0]
            assert found[0].document in {h.document for h in healthy}
            neighbour.add("a", [1, 0])  # another server: its own circuit, closed
            assert neighbour.count() == 1 and neighbour._breaker.state == "closed"
            own.start()
            deadline = time.monotonic() + 30
            while True:  # a probe after each cool-down, until the pool reconnects
                time.sleep(QUICK.cool_down)
                try:
                    assert store.count() == len(store.all_ids()) > 0
                    break
                except EndpointUnavailableError:
                    assert time.monotonic() < deadline, "the circuit never closed"
            assert store._breaker.state == "closed"
        finally:
            ctx.close()
            neighbour.close()


# -- HNSW only where a measured recall holds ----------------------------------------------


def test_the_index_answers_only_broad_searches_after_a_measured_recall(dsn):
    vectors = np.random.default_rng(5).standard_normal((300, 8))
    ids = [f"v{i:03d}" for i in range(300)]
    store = PgVectorStore(dsn, dim=8, hnsw=True)
    try:
        store.add_many(ids, vectors, [{"scope": "a" if i < 200 else "b"} for i in range(300)])
        query = vectors[7]
        exact = store.search(query, k=10)
        assert store.search_with_plan(query, k=10)[1].name == "pg-exact"  # not measured yet
        assert store.explain(query, k=10).indexed is False
        assert store.measure_recall(queries=30, k=10) >= 0.95
        hits, plan = store.search_with_plan(query, k=10)
        assert plan == ("pg-hnsw", 300, False)
        assert next(h.id for h in hits) == exact[0].id == "v007"
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        explained = store.explain(query, k=10)
        assert explained.indexed and "hnsw" in explained.text
        assert "hnsw" not in store.explain(query, k=10, ids=ids[:5]).text
        # A narrow filter ranks its candidates exactly.
        narrow, narrow_plan = store.search_with_plan(query, k=3, ids=ids[:5])
        assert narrow_plan == ("pg-filtered-exact", 5, True)
        assert [h.id for h in narrow] == [h.id for h in store.search(query, k=3, ids=ids[:5])]
        # A broad filter the index leaves short (its rows are far from the query): exact.
        store.ann_share = 0.0
        far = ids[:3]
        away = -vectors[:3].mean(axis=0)
        fallback, fallback_plan = store.search_with_plan(away, k=3, ids=far)
        assert fallback_plan == ("pg-hnsw+exact-fallback", 3, True)
        assert sorted(h.id for h in fallback) == far
    finally:
        store.close()


def test_a_recall_below_the_bound_or_an_outgrown_measurement_keeps_search_exact(dsn):
    rng = np.random.default_rng(6)
    store = PgVectorStore(dsn, dim=8, hnsw=True, min_recall=1.0)
    try:
        store.add_many([f"a{i}" for i in range(50)], rng.standard_normal((50, 8)))
        store._run(lambda conn: conn.execute(store._sql(
            "UPDATE {meta} SET ann_recall = 0.99, ann_rows = 50")), write=True)
        assert store.search_with_plan(rng.standard_normal(8), k=5)[1].name == "pg-exact"
        store._run(lambda conn: conn.execute(store._sql(
            "UPDATE {meta} SET ann_recall = 1.0, ann_rows = 20")), write=True)
        assert store.search_with_plan(rng.standard_normal(8), k=5)[1].name == "pg-exact"
        store._run(lambda conn: conn.execute(store._sql(
            "UPDATE {meta} SET ann_rows = 50")), write=True)
        assert store.search_with_plan(rng.standard_normal(8), k=5)[1].name == "pg-hnsw"
    finally:
        store.close()


def test_version_lookups_by_a_document_no_row_can_hold_find_nothing(store):
    store.add_many(["d/v1/0"], [[1, 0]], [{"doc_iri": "d", "version": "v1"}], pending=True)
    store.publish([DocumentVersion("d", "v1", "default", "h1", 1)])
    assert store.current_versions(["d\x00", "d"]) == {
        "d": DocumentVersion("d", "v1", "default", "h1", 1)}
    assert store.document_rows("d\x00") == [] and store.delete_document("d\x00") == 0
    assert store.update_payload("d\x00", {"k": 1}) == 0
    assert store.all_ids() == ["d/v1/0"]


@pytest.mark.parametrize("few", [0, 5000])  # every list many, every list few
def test_a_few_or_many_candidate_names_select_the_same_rows(store, monkeypatch, few):
    """A few names are looked up in the indexes (a semi-join), many matched by a hashed
    subplan: either way a search names exactly the rows whose id or document is among them."""
    from trails.vector.stores.pgvector import search

    monkeypatch.setattr(search, "FEW_CANDIDATES", few)
    vectors = np.random.default_rng(5).standard_normal((40, 2))
    store.add_many([f"c{i}" for i in range(40)], vectors,
                   [{"doc_iri": f"d{i % 8}"} for i in range(40)])
    names = ["c3", "c17", "d5", "unknown", *[f"x{i}" for i in range(1200)]]
    wanted = {f"c{i}" for i in range(40) if f"c{i}" in names or f"d{i % 8}" in names}
    hits = store.search(np.array([1.0, 0.0]), k=40, ids=names)
    assert {h.id for h in hits} == wanted


def test_candidate_names_past_the_hash_memory_are_matched_in_time(dsn):
    """150,000 names did not fit the hashed subplan's memory: PostgreSQL then compared each row
    with every name and the search ran past its statement_timeout, where SQLite and Qdrant
    answer at once. The same rows, in the same order, now come back in time."""
    store = PgVectorStore(dsn, dim=2, statement_timeout=2.0, resilience=no_retry())
    try:
        n = 1000
        vectors = np.random.default_rng(7).standard_normal((n, 2))
        store.add_many([f"c{i:04d}" for i in range(n)], vectors,
                       [{"doc_iri": f"d{i % 50}", "text": f"word{i % 3}"} for i in range(n)])
        names = [f"x{i}" for i in range(150_000)] + ["c0001", "c0002", "d7"]
        wanted = sorted({"c0001", "c0002"} | {f"c{i:04d}" for i in range(n) if i % 50 == 7})
        query = np.array([1.0, 0.25])
        scores = vectors @ query / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query)
        best = sorted(wanted, key=lambda id: (-scores[int(id[1:])], id))[:5]
        assert [h.id for h in store.search(query, k=5, ids=names)] == best
        assert store.expand_ids(names) == wanted
        found = store.keyword_search("word1", k=50, ids=names)
        assert sorted(h.id for h in found) == [id for id in wanted if int(id[1:]) % 3 == 1]
    finally:
        store.close()

def statements_of(store, monkeypatch) -> list[str]:
    """Every SQL template the store formats from now on (its statements, in order)."""
    seen: list[str] = []
    inner = store._sql

    def recording(template: str):
        seen.append(template)
        return inner(template)

    monkeypatch.setattr(store, "_sql", recording)
    return seen


def test_a_filtered_exact_search_reads_only_its_candidates(store, monkeypatch):
    """Without an HNSW index no statement of a filtered search counts every live row (a read
    of the whole table, whatever the filter's size); with one, the count decides."""
    store.add_many([f"c{i}" for i in range(20)], np.eye(2)[np.arange(20) % 2],
                   [{"doc_iri": f"d{i % 4}"} for i in range(20)])
    seen = statements_of(store, monkeypatch)
    hits = store.search(np.array([1.0, 0.0]), k=3, ids=["c2", "d1"])
    assert [h.id for h in hits] == ["c2", "c1", "c13"]
    assert seen and not [s for s in seen if s.rstrip().endswith("WHERE NOT pending")]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_both_forms_of_a_candidate_filter_rank_alike(store, monkeypatch, data):
    """The same searches, keyword rankings and expansions through the semi-join (a few names)
    and the hashed subplan (many): the same rows, the same order, what brute force says."""
    from trails.vector.stores.pgvector import search

    store.delete_many([f"c{i}" for i in range(30)])  # the examples share the store
    n = data.draw(st.integers(1, 30))
    docs = data.draw(st.lists(st.sampled_from(["d0", "d1", "d2", None]), min_size=n, max_size=n))
    pending = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    ids = [f"c{i}" for i in range(n)]
    vectors = np.random.default_rng(n).standard_normal((n, 2))
    for i in range(n):
        meta = {"text": f"word{i % 3} common"} | ({} if docs[i] is None else {"doc_iri": docs[i]})
        store.add_many([ids[i]], vectors[i:i + 1], [meta], pending=pending[i])
    names = data.draw(st.lists(st.sampled_from([*ids, "d0", "d1", "d2", "nothing"]),
                               min_size=1, max_size=12))
    live = [i for i in range(n) if not pending[i] and (ids[i] in names or docs[i] in names)]
    query = np.array([1.0, 0.5])
    scores = vectors @ query / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query)
    expected = sorted((ids[i] for i in live), key=lambda id: (-scores[ids.index(id)], id))
    answers = []
    for few in (0, 1000):
        monkeypatch.setattr(search, "FEW_CANDIDATES", few)
        answers.append(([h.id for h in store.search(query, k=n, ids=names)],
                        store.expand_ids(names),
                        [(h.id, round(h.score, 9)) for h in store.keyword_search(
                            "common", k=n, ids=names)]))
    assert answers[0] == answers[1]
    assert answers[0][0] == expected and answers[0][1] == sorted(ids[i] for i in live)
    assert sorted(id for id, _ in answers[0][2]) == sorted(ids[i] for i in live)


def test_whether_any_row_has_a_back_reference_is_answered_from_its_own_index(dsn):
    """Every filtered search asks whether some row's metadata["iri"] names another IRI: a
    partial index of those rows answers it (a table made before the index gets it at its next
    writable open), and the answer follows the rows."""
    from trails.vector.stores.pgvector import schema

    def plan(store) -> str:
        def explain(conn):
            conn.execute("SET LOCAL enable_seqscan = off")
            return conn.execute(store._sql(
                "EXPLAIN SELECT EXISTS (SELECT 1 FROM {items} WHERE NOT pending AND "
                + schema.BACK_REFERENCE + ")")).fetchall()
        return "\n".join(row[0] for row in store._run(explain))

    with PgVectorStore(dsn, dim=2, table="refs") as store:
        store.add_many(["c1", "c2"], np.eye(2), [{"iri": "c1"}, {"text": "no iri"}])
        assert not store.has_back_references()
        assert "refs__back_refs" in plan(store) and "Seq Scan" not in plan(store)
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP INDEX refs__back_refs")
    with PgVectorStore(dsn, table="refs") as store:  # an older table, opened writable
        assert "refs__back_refs" in plan(store)
        store.add_many(["c3"], np.eye(2)[:1], [{"iri": "urn:chunk:3"}])
        assert store.has_back_references()
        store.delete_many(["c3"])
        assert not store.has_back_references()


def test_an_hnsw_index_is_built_on_a_large_table_past_the_statement_timeout(dsn):
    """Asking for the HNSW index on a table that already holds rows builds it at open, which
    reads every row: longer than a short statement_timeout allows a query, and not refused
    for it (an open with hnsw=True failed past 60 s on 100,000 rows)."""
    import psycopg

    rows = np.random.default_rng(3).standard_normal((4000, 32))
    with PgVectorStore(dsn, dim=32, table="big") as store:
        store.add_many([f"c{i}" for i in range(4000)], rows)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = 30")  # ms: what the store's queries get below
        with pytest.raises(psycopg.errors.QueryCanceled):  # the build alone takes longer
            conn.execute("CREATE INDEX big__probe ON big USING hnsw (embedding vector_ip_ops)")
    with PgVectorStore(dsn, table="big", hnsw=True, statement_timeout=0.03) as store:
        assert store.count() == 4000
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('big__hnsw')").fetchone()[0] is not None
