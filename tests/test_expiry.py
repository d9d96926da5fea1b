"""Document expiry: where an expiry comes from (``expires``, a scope's retention rule), that an
expired document is never a retrieval candidate in any mode, retriever or store, and that
``prune_expired`` removes exactly the expired documents."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.config import CONFIG_FILE
from trails.context import Context
from trails.errors import InvalidArgumentError
from trails.ingest import (
    Document,
    DocumentFailed,
    DocumentMetadataUpdated,
    ingest,
    ingest_all,
)
from trails.kg import IRI
from trails.kg.oxigraph import OxigraphGraph
from trails.records import RetrievalHit
from trails.retrieval.retrievers import GraphRetriever, HybridRetriever, VectorRetriever
from trails.testing import fresh_context
from trails.vector.embedders.mock import MockEmbedder

UTC = dt.UTC
PAST, FUTURE = "2000-01-01", "2100-01-01"
BASE = "trails://local/"
DOCUMENTS = "SELECT ?d WHERE { ?d a trails:Document }"
CHUNKS = "SELECT ?c WHERE { ?c a trails:Chunk }"


def doc(name: str, scope: str = "default") -> str:
    return f"{BASE}doc/{name}" if scope == "default" else f"{BASE}scope/{scope}/doc/{name}"


def documents_of(hits) -> set[str]:
    """The documents hits come from, read from the hit IRI (chunk IRIs extend their
    document's IRI with /v/<version>/c/<n>), not from anything the store returned."""
    return {h.iri.rsplit("/v/", 1)[0] for h in hits}


def expires_in_graph(ctx: Context, iri: str) -> list[str]:
    rows = ctx.kg.query("SELECT ?e WHERE { ?d trails:expires ?e }", {"d": IRI(iri)}).rows
    return sorted(row["e"].isoformat() for row in rows)


@pytest.fixture
def mixed(store_factory, tmp_path):
    """A context (of each store) holding, about the same topic, documents expired and live
    by every source of an expiry; returns (ctx, live documents, expired documents)."""
    embedder = MockEmbedder(dim=64)
    store = store_factory.new(64, embedder.identity)
    ctx = Context(OxigraphGraph(), store, embedder, retention={"tmp": "P30D"})
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "old.md").write_text(f"---\nexpires: {PAST}\n---\nRetention policy for rails logs.\n")
    (notes / "new.md").write_text(f"---\nexpires: {FUTURE}\n---\nRetention policy for rails "
                                  "audits.\n")
    (notes / "plain.md").write_text("Retention policy for rails backups.\n")
    assert ingest_all(notes, ctx=ctx).failed == 0
    assert ingest_all([
        Document("meta-old", "meta-old", "Retention policy for rails mail.",
                 metadata={"expires": "2001-02-03T04:05:06+02:00"}),
        Document("meta-new", "meta-new", "Retention policy for rails chat.",
                 metadata={"expires": dt.datetime(2100, 1, 1, tzinfo=UTC)}),
    ], ctx=ctx).failed == 0
    assert ingest_all([
        Document("rule-old", "rule-old", "Retention policy for rails tickets.",
                 metadata={"date": "2001-01-01"}),
        Document("rule-new", "rule-new", "Retention policy for rails wikis.",
                 metadata={"date": "2099-12-01"}),
    ], ctx=ctx, scope="tmp").failed == 0
    live = {doc("new.md"), doc("plain.md"), doc("meta-new"),
            doc("rule-new", "tmp")}
    expired = {doc("old.md"), doc("meta-old"), doc("rule-old", "tmp")}
    yield ctx, live, expired
    ctx.close()


def test_every_source_of_an_expiry_is_written_to_the_graph_in_utc(mixed):
    ctx, _, _ = mixed
    assert expires_in_graph(ctx, doc("old.md")) == ["2000-01-01T00:00:00+00:00"]
    assert expires_in_graph(ctx, doc("meta-old")) == ["2001-02-03T02:05:06+00:00"]
    # The rule counts 30 days from the document's own date.
    assert expires_in_graph(ctx, doc("rule-old", "tmp")) == ["2001-01-31T00:00:00+00:00"]
    assert expires_in_graph(ctx, doc("plain.md")) == []
    typed = ctx.kg.query("ASK { ?d trails:expires ?e FILTER(datatype(?e) = xsd:dateTime) }")
    assert typed is True


MODES = [
    {"mode": "vector"},
    {"mode": "hybrid"},
    {"mode": "hybrid", "fusion": None},
    {"mode": "hybrid", "fusion": "rrf"},
    {"mode": "hybrid", "sparql_filter": DOCUMENTS},
    {"mode": "hybrid", "sparql_filter": CHUNKS},
    {"mode": "hybrid", "sparql_filter": DOCUMENTS, "fusion": None},
]


MODE_IDS = ["vector", "hybrid", "hybrid-vector-only", "hybrid-rrf", "documents-filter",
            "chunks-filter", "documents-filter-vector-only"]


@pytest.mark.parametrize("options", MODES, ids=MODE_IDS)
def test_expired_documents_are_never_candidates(mixed, options):
    ctx, live, _ = mixed
    result = retrieve("retention policy rails", ctx, k=50, scope=["default", "tmp"], **options)
    assert documents_of(result) == live  # all the live ones, none of the expired
    for hit in result:  # each hit still shows its own text and document
        assert "Retention policy" in hit.snippet
        assert hit.metadata["doc_iri"] == hit.iri.rsplit("/v/", 1)[0]
    if "sparql_filter" in options:  # the count is of candidates that can be returned
        assert result.candidates == len(live)


@pytest.mark.parametrize("query", [DOCUMENTS, CHUNKS])
def test_graph_mode_lists_no_expired_document_nor_chunk(mixed, query):
    ctx, live, _ = mixed
    result = retrieve("", ctx, mode="graph", k=50, scope=["default", "tmp"], sparql_filter=query)
    assert documents_of(result) == live
    assert result.candidates == len(live)


def test_retrievers_exclude_expired_documents(mixed):
    ctx, live, _ = mixed
    scopes = ["default", "tmp"]
    for retriever in (VectorRetriever(ctx, k=50, scope=scopes),
                      HybridRetriever(ctx, k=50, scope=scopes),
                      HybridRetriever(ctx, k=50, scope=scopes, sparql_filter=DOCUMENTS),
                      GraphRetriever(ctx, k=50, scope=scopes, sparql_filter=DOCUMENTS)):
        assert documents_of(retriever.retrieve("retention policy rails")) == live, retriever


def test_k_non_expired_hits_come_back_when_expired_ones_rank_first(ctx):
    # The expired documents match the query best: a ranking cut at k before dropping them
    # would come back short.
    ingest_all([Document(f"x{i}", f"x{i}", "alpha beta gamma", metadata={"expires": PAST})
                for i in range(20)] +
               [Document(f"y{i}", f"y{i}", f"alpha delta {i}") for i in range(5)], ctx=ctx)
    for options in MODES[:4]:
        result = retrieve("alpha beta gamma", ctx, k=3, **options)
        assert len(result) == 3, options
        assert all("/doc/y" in h.iri for h in result), options


def test_a_repeated_filter_hands_the_store_the_same_cut_candidates(ctx, monkeypatch):
    """The store keeps what it derives from a candidate tuple (ADR 0013): cutting expired
    documents must hand it the same tuple again while nothing changed."""
    ingest_all([Document("old", "old", "audit scope", metadata={"expires": PAST}),
                Document("new", "new", "audit scope notes")], ctx=ctx)
    seen = []
    search = ctx.vectors.search_with_plan

    def spy(vector, k=10, ids=None, **options):
        seen.append(ids)
        return search(vector, k, ids, **options)

    monkeypatch.setattr(ctx.vectors, "search_with_plan", spy)
    for _ in range(2):
        retrieve("audit", ctx, mode="hybrid", fusion=None, sparql_filter=DOCUMENTS)
    assert list(seen[0]) == [doc("new")] and seen[1] is seen[0]


def test_a_step_cannot_bring_an_expired_chunk_back(ctx):
    ingest_all([Document("old", "old", "shift handover", metadata={"expires": PAST}),
                Document("new", "new", "shift handover notes")], ctx=ctx)
    (expired_chunk,) = [i for i in ctx.vectors.all_ids() if i.startswith(doc("old"))]

    def expanding(query, hits, context):  # as a graph expansion reaching a linked chunk would
        return [*hits, RetrievalHit(expired_chunk, 0.0, "", {}), RetrievalHit(doc("old"), 0.0,
                                                                             "", {})]

    result = retrieve("shift handover", ctx, mode="vector", k=10, steps=[expanding])
    assert documents_of(result) == {doc("new")}


def test_an_expiry_passing_between_two_calls_takes_effect_and_time_can_go_back(ctx):
    ingest_all([Document("a", "a", "quarterly report", metadata={"expires": "2030-06-01"}),
                Document("b", "b", "quarterly summary")], ctx=ctx)
    before, after = (dt.datetime(2030, 5, 31, 23, 59, tzinfo=UTC),
                     dt.datetime(2030, 6, 1, 0, 0, tzinfo=UTC))
    for now, expected in ((before, {doc("a"), doc("b")}), (after, {doc("b")}),
                          (before, {doc("a"), doc("b")}), (after, {doc("b")})):
        for options in ({"mode": "vector"}, {"mode": "hybrid", "sparql_filter": DOCUMENTS}):
            assert documents_of(retrieve("quarterly", ctx, k=10, now=now, **options)) == expected


def test_a_new_expired_document_is_excluded_at_once(ctx):
    ingest_all([Document("a", "a", "incident runbook")], ctx=ctx)
    assert documents_of(retrieve("incident runbook", ctx, mode="vector")) == {doc("a")}
    ingest_all([Document("b", "b", "incident runbook", metadata={"expires": PAST})], ctx=ctx)
    assert documents_of(retrieve("incident runbook", ctx, mode="vector")) == {doc("a")}


def test_an_expiry_written_later_through_a_held_raw_store_takes_effect(ctx):
    """The raw store, once handed out, writes unseen whenever its holder likes: no kept set of
    expired documents may outlive such a write."""
    ingest_all([Document("a", "a", "incident runbook"), Document("b", "b", "incident runbook")],
               ctx=ctx)
    raw = ctx.kg.store  # held, as a caller keeps a handle
    assert documents_of(retrieve("incident runbook", ctx, mode="vector")) == {doc("a"), doc("b")}
    raw.update(f'INSERT DATA {{ <{doc("b")}> <https://trails.dev/ns#expires> '
               '"2000-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> }')
    for options in ({"mode": "vector"}, {"mode": "hybrid", "sparql_filter": DOCUMENTS}):
        assert documents_of(retrieve("incident runbook", ctx, **options)) == {doc("a")}


def test_a_metadata_only_update_moves_the_expiry(ctx):
    def version(expires):
        metadata = {} if expires is None else {"expires": expires}
        return [Document("a", "a", "vendor contract terms", metadata=metadata)]

    ingest_all(version(FUTURE), ctx=ctx)
    assert documents_of(retrieve("vendor contract", ctx, mode="vector")) == {doc("a")}
    events = list(ingest(version(PAST), ctx=ctx))
    assert any(isinstance(e, DocumentMetadataUpdated) for e in events)
    assert expires_in_graph(ctx, doc("a")) == ["2000-01-01T00:00:00+00:00"]
    assert documents_of(retrieve("vendor contract", ctx, mode="vector")) == set()
    ingest_all(version(None), ctx=ctx)
    assert expires_in_graph(ctx, doc("a")) == []
    assert documents_of(retrieve("vendor contract", ctx, mode="vector")) == {doc("a")}
    assert ctx.verify().ok


def test_a_changed_rule_reaches_documents_as_a_metadata_update_on_the_next_ingest(tmp_path):
    notes = [Document("n", "n", "shift notes", metadata={"date": "2020-01-01"})]
    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=16), retention={"tmp": "P30D"}) as ctx:
        ingest_all(notes, ctx=ctx, scope="tmp")
        assert expires_in_graph(ctx, doc("n", "tmp")) == ["2020-01-31T00:00:00+00:00"]
    with Context.open(root, retention={"tmp": "P10D"}) as ctx:
        assert expires_in_graph(ctx, doc("n", "tmp")) == ["2020-01-31T00:00:00+00:00"]
        events = list(ingest(notes, ctx=ctx, scope="tmp"))
        assert [type(e) for e in events if isinstance(e, DocumentMetadataUpdated)] == [
            DocumentMetadataUpdated]
        assert expires_in_graph(ctx, doc("n", "tmp")) == ["2020-01-11T00:00:00+00:00"]
    with Context.open(root, retention={}) as ctx:  # no rule: the expiry goes
        ingest_all(notes, ctx=ctx, scope="tmp")
        assert expires_in_graph(ctx, doc("n", "tmp")) == []
        assert ctx.verify().ok


def test_both_an_expires_field_and_a_rule_give_the_earlier_expiry():
    with Context.memory(MockEmbedder(dim=64)) as base:
        ctx = Context(base.kg, base.vectors, base.embedder, retention={"tmp": "P10D"})
        ingest_all([Document("short", "short", "x", metadata={"date": "2020-01-01",
                                                              "expires": "2020-01-05"}),
                    Document("long", "long", "y", metadata={"date": "2020-01-01",
                                                            "expires": "2020-03-01"})],
                   ctx=ctx, scope="tmp")
        assert expires_in_graph(ctx, doc("short", "tmp")) == ["2020-01-05T00:00:00+00:00"]
        assert expires_in_graph(ctx, doc("long", "tmp")) == ["2020-01-11T00:00:00+00:00"]


@pytest.mark.parametrize("value", ["next week", "2025-13-01", "2025-01-31T10:00:00", 42,
                                   dt.datetime(2025, 1, 31, 10, 0)])
def test_a_bad_expires_value_fails_that_document_naming_it_and_the_format(ctx, value):
    events = list(ingest([Document("bad", "bad.md", "text", metadata={"expires": value}),
                          Document("good", "good.md", "text")], ctx=ctx))
    failed = [e for e in events if isinstance(e, DocumentFailed)]
    assert len(failed) == 1 and failed[0].source == "bad.md"
    assert "'bad'" in failed[0].reason and "expires" in failed[0].reason
    assert "2025-01-31" in failed[0].reason and "offset" in failed[0].reason
    assert ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d") == [doc("good")]


def test_a_document_of_a_scope_with_a_rule_and_no_date_is_refused():
    with Context.memory(MockEmbedder(dim=64)) as base:
        ctx = Context(base.kg, base.vectors, base.embedder, retention={"tmp": "P30D"})
        events = list(ingest([Document("undated", "undated", "text")], ctx=ctx, scope="tmp"))
        (failed,) = [e for e in events if isinstance(e, DocumentFailed)]
        assert "P30D" in failed.reason and "date" in failed.reason
        # Other scopes have no rule: undated documents are fine there.
        assert ingest_all([Document("undated", "undated", "text")], ctx=ctx).failed == 0


@pytest.mark.parametrize("rules", [{"tmp": "30 days"}, {"tmp": "P30"}, {"tmp": 30},
                                   {"bad scope!": "P30D"}, ["tmp"]])
def test_a_malformed_retention_rule_is_refused_before_anything_is_written(tmp_path, rules):
    with pytest.raises(InvalidArgumentError, match="retention"):
        Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), retention=rules)
    assert not (tmp_path / "kb" / CONFIG_FILE).exists()


def test_retention_is_kept_in_trails_json_and_older_files_open_without_it(tmp_path):
    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=8), retention={"tmp": "P30D"}):
        pass
    assert json.loads((root / CONFIG_FILE).read_text())["retention"] == {"tmp": "P30D"}
    with Context.open(root, embedder=MockEmbedder(dim=8)) as reopened:
        assert dict(reopened.retention) == {"tmp": "P30D"}
    raw = json.loads((root / CONFIG_FILE).read_text())
    del raw["retention"]  # a file written before rules existed
    (root / CONFIG_FILE).write_text(json.dumps(raw))
    with Context.open(root, embedder=MockEmbedder(dim=8), read_only=True) as older:
        assert dict(older.retention) == {}
    raw["retention"] = {"tmp": "thirty days"}  # a hand-edited rule is refused on open
    (root / CONFIG_FILE).write_text(json.dumps(raw))
    with pytest.raises(InvalidArgumentError, match="P<days>D"):
        Context.open(root, embedder=MockEmbedder(dim=8))
    raw["retention"] = {}
    (root / CONFIG_FILE).write_text(json.dumps(raw))
    with Context.open(root, embedder=MockEmbedder(dim=8)):  # nothing stayed locked
        pass


def test_now_without_an_offset_is_refused(ctx):
    with pytest.raises(InvalidArgumentError, match="offset"):
        retrieve("x", ctx, now=dt.datetime(2030, 1, 1))


# -- exactness against deletion ---------------------------------------------------------------

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
NOW = dt.datetime(2030, 1, 1, tzinfo=UTC)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), min_size=1,
                      max_size=12),
       offsets=st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=12, max_size=12),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
       k=st.integers(1, 8))
def test_ranking_equals_the_ranking_with_expired_documents_deleted(texts, offsets, query, k):
    """With expiries around NOW (some passed, some not, some exactly now), every ranking
    equals the one of a context where the documents expired at NOW were never there."""
    everything, survivors = [], []
    for i, words in enumerate(texts):
        offset = offsets[i]
        metadata = {} if offset is None else {"expires": NOW + dt.timedelta(hours=offset)}
        document = Document(f"d{i}", f"d{i}", " ".join(words) + f" n{i}", metadata=metadata)
        everything.append(document)
        if offset is None or offset > 0:
            survivors.append(Document(document.id, document.source, document.text))
    question = " ".join(query)
    with fresh_context() as full, fresh_context() as deleted:
        ingest_all(everything, ctx=full)
        ingest_all(survivors, ctx=deleted)
        for options in ({"mode": "vector"}, {"mode": "hybrid", "fusion": None},
                        {"mode": "hybrid", "fusion": None, "sparql_filter": DOCUMENTS},
                        {"mode": "hybrid", "fusion": None, "sparql_filter": CHUNKS}):
            got = retrieve(question, full, k=k, now=NOW, **options)
            want = retrieve(question, deleted, k=k, **options)
            assert [(h.iri, round(h.score, 6)) for h in got] == [
                (h.iri, round(h.score, 6)) for h in want], options
            # Each hit shows what it shows without expired documents: text, source, version.
            assert [(h.snippet, h.source, h.metadata.get("version")) for h in got] == [
                (h.snippet, h.source, h.metadata.get("version")) for h in want], options
        for options in ({"mode": "hybrid"}, {"mode": "hybrid", "sparql_filter": DOCUMENTS}):
            # Fused rankings: BM25 statistics still count expired chunks until they are
            # pruned, so the order may differ; the hits never include one, and are as many.
            got = retrieve(question, full, k=k, now=NOW, **options)
            want = retrieve(question, deleted, k=k, **options)
            assert len(got) == len(want), options
            assert documents_of(got) <= {doc(d.id) for d in survivors}, options


# -- a SPARQL endpoint (no graph generations: nothing is kept between calls) --------------------

def test_a_remote_graph_excludes_and_prunes_expired_documents(tmp_path):
    pytest.importorskip("httpx")
    from trails.kg import SparqlEndpointGraph
    from trails.testing.servers.oxigraph import OxigraphServer
    from trails.vector import SqliteVecStore

    embedder = MockEmbedder(dim=32)
    with OxigraphServer(tmp_path / "oxigraph") as server:
        ctx = Context(SparqlEndpointGraph(server.query_url),
                      SqliteVecStore(":memory:", dim=32, embedder=embedder.identity), embedder,
                      retention={"tmp": "P30D"})
        ingest_all([Document("old", "old", "tender documents", metadata={"expires": PAST}),
                    Document("new", "new", "tender documents new")], ctx=ctx, scope="legal")
        ingest_all([Document("draft", "draft", "tender draft", metadata={"date": "2001-01-01"}),
                    Document("fresh", "fresh", "tender fresh", metadata={"date": "2099-01-01"})],
                   ctx=ctx, scope="tmp")
        # Named scopes: oxigraph serve cannot name its default graph beside them.
        live = {doc("new", "legal"), doc("fresh", "tmp")}
        scopes = ["legal", "tmp"]
        for options in ({"mode": "vector"}, {"mode": "hybrid"},
                        {"mode": "hybrid", "sparql_filter": DOCUMENTS},
                        {"mode": "graph", "sparql_filter": DOCUMENTS}):
            assert documents_of(retrieve("tender", ctx, k=10, scope=scopes, **options)) == live
        assert {r.iri for r in ctx.prune_expired()} == {doc("old", "legal"), doc("draft", "tmp")}
        assert ctx.verify().ok
        assert documents_of(retrieve("tender", ctx, k=10, scope=scopes, mode="vector")) == live
        ctx.close()


# -- what an expires value means -------------------------------------------------------------------

@given(st.datetimes(min_value=dt.datetime(1900, 1, 2), max_value=dt.datetime(2999, 12, 30),
                    timezones=st.timezones()))
def test_an_aware_datetime_means_that_moment_whatever_its_offset(moment):
    from trails.ingest.expiry import parse_expiry

    for value in (moment, moment.isoformat()):
        parsed = parse_expiry(value)
        assert parsed.utcoffset() == dt.timedelta(0)
        assert parsed.timestamp() == moment.timestamp()


@given(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2999, 12, 31)))
def test_a_date_means_the_start_of_that_day_in_utc(day):
    from trails.ingest.expiry import parse_expiry

    for value in (day, day.isoformat()):
        parsed = parse_expiry(value)
        assert (parsed.year, parsed.month, parsed.day) == (day.year, day.month, day.day)
        assert (parsed.hour, parsed.minute, parsed.second, parsed.microsecond) == (0, 0, 0, 0)
        assert parsed.utcoffset() == dt.timedelta(0)


@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2999, 12, 31)))
def test_a_datetime_without_an_offset_is_always_refused(moment):
    from trails.ingest.expiry import parse_expiry

    for value in (moment, moment.isoformat()):
        with pytest.raises(InvalidArgumentError, match="offset"):
            parse_expiry(value)
