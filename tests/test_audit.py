"""Every search on an auditing context is recorded, completely and faithfully, without ever
failing or blocking the search; records fold into the audit graph and age out by retention."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from trails import GraphRetriever, HybridRetriever, VectorRetriever, retrieve
from trails.audit import AUDIT_DIRECTORY, DeletionRecord, SearchRecord, SparqlQueryRecord
from trails.cli import app
from trails.config import AuditConfig
from trails.context import Context
from trails.errors import InvalidArgumentError
from trails.ingest import Document, ingest, ingest_all
from trails.testing import MockEmbedder, fresh_context

SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
         "FILTER(?d >= ?since) }")
DOCS = [Document(id=f"d{i}", source=f"d{i}.md", text=f"Claim {i} on rail safety evidence.",
                 metadata={"date": f"202{i}-01-05", "topic": "rail" if i % 2 else "road"})
        for i in range(6)]
COUNT = "SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE { GRAPH <urn:trails:audit> { ?r a prov:Activity } }"


def make(directory, **options) -> Context:
    ctx = Context.open(directory, embedder=MockEmbedder(dim=32), **options)
    if not ctx.vectors.count():
        ingest_all(DOCS, ctx=ctx)
    return ctx


def activities(ctx: Context) -> int:
    return ctx.kg.query(COUNT, ).rows[0]["n"]


def test_a_context_directory_records_by_default_and_memory_does_not(tmp_path):
    with make(tmp_path / "kb") as ctx:
        result = retrieve("rail safety", ctx)
        assert result.run_id is not None
        assert [r.run_id for r in ctx.audit.pending()] == [result.run_id]
    memory = fresh_context()
    assert retrieve("x", memory, mode="vector").run_id is None
    assert memory.audit.pending() == []
    memory.audit.enabled = True  # switchable
    assert retrieve("x", memory, mode="vector").run_id is not None
    with make(tmp_path / "off", audit=False) as ctx:
        assert retrieve("rail safety", ctx).run_id is None
    with make(tmp_path / "kb") as ctx:  # the first handle's record was folded at close
        assert activities(ctx) == 1


def test_a_record_holds_the_whole_search(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAILS_CALLER", "analyst-7")
    with make(tmp_path / "kb") as ctx:
        result = retrieve("rail safety", ctx, sparql_filter=SINCE, k=3,
                          bindings={"since": dt.date(2023, 1, 1)}, fusion="rrf")
        (record,) = ctx.audit.pending()
    assert isinstance(record, SearchRecord)
    assert record.caller == "analyst-7"
    assert record.query == "rail safety"
    assert record.query_sha256 == hashlib.sha256(b"rail safety").hexdigest()
    assert (record.mode, record.k, record.fusion, record.filter) == ("hybrid", 3, "rrf", SINCE)
    assert record.bindings == {"since": '"2023-01-01"^^<http://www.w3.org/2001/XMLSchema#date>'}
    assert record.scopes == ["default"]
    assert record.candidates == 3 and record.exhaustive  # d3, d4, d5: one chunk each
    assert record.plan == result.plan
    assert record.embedder is not None and "dim=32" in record.embedder
    assert record.graph_revision and record.store_revision
    assert [h.iri for h in record.hits] == [h.iri for h in result]
    assert [h.rank for h in record.hits] == [1, 2, 3]
    assert {h.document for h in record.hits} == {f"trails://local/doc/d{i}" for i in (3, 4, 5)}
    for hit, shown in zip(record.hits, result, strict=True):
        assert hit.score == shown.score and hit.components == shown.components
    started = dt.datetime.fromisoformat(record.started)
    assert started <= dt.datetime.fromisoformat(record.ended)
    assert abs(started - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)


def test_the_caller_argument_wins_and_a_blank_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAILS_CALLER", "from-env")
    with make(tmp_path / "kb") as ctx:
        retrieve("rail", ctx, caller="alice")
        retrieve("rail", ctx)
        ctx.audit.caller = "service"
        retrieve("rail", ctx)
        with pytest.raises(ValueError, match="caller"):
            retrieve("rail", ctx, caller="  ")
        assert [r.caller for r in ctx.audit.pending()] == ["alice", "from-env", "service"]


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_a_blank_caller_is_refused_by_feedback_deletion_and_the_handle_alike(tmp_path,
                                                                             monkeypatch,
                                                                             blank):
    # Feedback and deletions took "" for nobody and recorded the login name (someone
    # else), and "   " as a blank caller; a search refused both.
    monkeypatch.setenv("TRAILS_CALLER", "from-env")
    with make(tmp_path / "kb") as ctx:
        run = retrieve("rail", ctx).run_id
        with pytest.raises(InvalidArgumentError, match="caller must be a non-empty string"):
            ctx.audit.feedback(run, "up", caller=blank)
        with pytest.raises(InvalidArgumentError, match="caller must be a non-empty string"):
            ctx.delete_document(retrieve("rail", ctx)[0].document, caller=blank)
        with pytest.raises(InvalidArgumentError, match="caller must be a non-empty string"):
            ctx.audit.caller = blank
        assert ctx.audit.caller is None
        assert [r.kind for r in ctx.audit.pending()] == ["search"] * 2
        assert len(retrieve("rail", ctx, k=50, caller="alice")) == len(DOCS)  # none deleted
        ctx.audit.caller = "service"
        assert ctx.audit.feedback(run, "down").caller == "service"


def test_a_caller_or_note_utf8_cannot_hold_is_refused_and_no_record_is_lost(tmp_path):
    # The search ran and its record was lost (run_id None, a warning); feedback raised
    # Python's UnicodeEncodeError.
    with make(tmp_path / "kb") as ctx:
        with pytest.raises(InvalidArgumentError, match=r"caller holds a lone surrogate"):
            retrieve("rail", ctx, caller="bob\ud800")
        run = retrieve("rail", ctx).run_id
        for given in ({"caller": "bob\udce9"}, {"note": "wrong \ud800"}):
            with pytest.raises(InvalidArgumentError, match=r"holds a lone surrogate"):
                ctx.audit.feedback(run, "down", **given)
        with pytest.raises(InvalidArgumentError, match=r"caller holds a lone surrogate"):
            ctx.audit.caller = "bob\udce9"
        assert ctx.audit.failures == 0 and [r.kind for r in ctx.audit.pending()] == ["search"]


def test_a_caller_from_an_environment_that_is_no_utf8_is_recorded_as_its_bytes(tmp_path,
                                                                                monkeypatch):
    # TRAILS_CALLER or the login name in Latin-1: Python reads the byte 0xe9 as the lone
    # surrogate \udce9, and every search's record was lost.
    monkeypatch.setenv("TRAILS_CALLER", "ren\udce9")
    with make(tmp_path / "kb") as ctx:
        run = retrieve("rail", ctx).run_id
        assert run is not None and ctx.audit.failures == 0
        assert ctx.audit.feedback(run, "up").caller == "ren\\xe9"
        ctx.audit.fold()
        assert [r.caller for r in ctx.audit.activities()] == ["ren\\xe9"] * 2


def test_a_context_may_keep_only_the_query_digest(tmp_path):
    with make(tmp_path / "kb", audit=AuditConfig(query_text="sha256")) as ctx:
        retrieve("a confidential question", ctx)
    with make(tmp_path / "kb") as ctx:  # the setting was recorded in trails.json
        (record,) = ctx.audit.activities()
        assert ctx.audit.settings.query_text == "sha256"
        assert record.query is None
        assert record.query_sha256 == hashlib.sha256(b"a confidential question").hexdigest()
        assert not ctx.kg.query("ASK { GRAPH <urn:trails:audit> { ?r "
                                "<https://trails.dev/ns/audit#queryText> ?t } }")
        assert "confidential" not in (tmp_path / "kb" / "trails.json").read_text()


def test_each_hit_says_which_filter_solution_admitted_it(tmp_path):
    with make(tmp_path / "kb") as ctx:
        result = retrieve("rail", ctx, sparql_filter=SINCE, bindings={"since": dt.date(2024, 1, 1)})
        by_doc = {h.document: h.admitted_by for h in result}
        assert set(by_doc) == {"trails://local/doc/d4", "trails://local/doc/d5"}
        for i in (4, 5):
            why = by_doc[f"trails://local/doc/d{i}"]
            assert why["doc"] == f"<trails://local/doc/d{i}>"
            assert why["d"] == f'"202{i}-01-05"^^<http://www.w3.org/2001/XMLSchema#date>'
            assert why["since"] == '"2024-01-01"^^<http://www.w3.org/2001/XMLSchema#date>'
        # A filter selecting documents: the solution names the document.
        docs = retrieve("rail", ctx, sparql_filter='SELECT ?doc WHERE { ?doc meta:topic "road" }')
        assert {h.admitted_by["doc"] for h in docs} == {
            f"<trails://local/doc/d{i}>" for i in (0, 2, 4)}
        # A filter with a modifier cannot be opened up: its hits still come, with no solution.
        limited = retrieve("rail", ctx, sparql_filter=SINCE + " LIMIT 10",
                           bindings={"since": dt.date(2024, 1, 1)})
        assert len(limited) == 2 and all(h.admitted_by == {} for h in limited)
        records = ctx.audit.pending()
    assert [h.admitted_by for h in records[0].hits] == [h.admitted_by for h in result]


def test_why_can_be_asked_without_auditing_and_is_skipped_when_not_wanted(ctx):
    ingest_all(DOCS, ctx=ctx)
    asked = retrieve("rail", ctx, sparql_filter=SINCE, bindings={"since": dt.date(2024, 1, 1)},
                     why=True)
    assert all(h.admitted_by for h in asked)
    plain = retrieve("rail", ctx, sparql_filter=SINCE, bindings={"since": dt.date(2024, 1, 1)})
    assert all(h.admitted_by is None for h in plain)


def test_the_audit_graph_is_no_candidate_and_scoped_queries_do_not_see_it(tmp_path):
    with make(tmp_path / "kb") as ctx:
        retrieve("rail", ctx)
        assert ctx.audit.fold() == 1
        reads_audit = "SELECT ?iri WHERE { ?run prov:used ?iri }"
        assert list(retrieve("rail", ctx, sparql_filter=reads_audit)) == []
        assert list(retrieve("x", ctx, mode="graph", sparql_filter=reads_audit)) == []
        ask = "ASK { ?run a prov:Activity }"
        assert ctx.kg.query(ask) is True  # asked for explicitly: every graph
        assert ctx.kg.query(ask, scopes=["default"]) is False
        assert ctx.kg.query("ASK { GRAPH ?g { ?run a prov:Activity } }", scopes=["default"]) is False


def test_a_record_that_cannot_be_written_never_fails_the_search(tmp_path, caplog):
    with make(tmp_path / "kb") as ctx:
        (tmp_path / "kb" / AUDIT_DIRECTORY).write_text("a file where the log directory goes")
        expected = [h.iri for h in retrieve("rail safety", ctx, fusion=None)]
        with caplog.at_level(logging.WARNING, logger="trails.audit"):
            result = retrieve("rail safety", ctx, fusion=None)
        assert [h.iri for h in result] == expected and result.run_id is None
        assert ctx.audit.failures == 2
        assert "could not record" in caplog.text


def test_a_read_only_reader_records_and_the_writer_folds(tmp_path):
    make(tmp_path / "kb").close()
    with Context.open(tmp_path / "kb", read_only=True) as reader:
        ids = {retrieve("rail", reader, caller=f"reader-{i}").run_id for i in range(3)}
        assert reader.audit.fold() == 0  # a reader never writes the graph
        assert {r.run_id for r in reader.audit.activities()} == ids  # read from the log
    with make(tmp_path / "kb") as writer:
        assert {r.run_id for r in writer.audit.activities()} == ids
        assert writer.audit.pending() == []
        assert activities(writer) == 3


def test_records_older_than_the_retention_are_dropped_at_the_next_fold(tmp_path):
    with make(tmp_path / "kb", audit=AuditConfig(retention_days=30)) as ctx:
        fresh = retrieve("rail", ctx).run_id
        now = dt.datetime.now(dt.UTC)
        for days, run in ((400, "a" * 32), (31, "b" * 32), (29, "c" * 32)):
            started = (now - dt.timedelta(days=days)).isoformat()
            ctx.audit.record(SearchRecord(run_id=run, caller="old", started=started,
                                          ended=started, query_sha256="0" * 64, scopes=["default"]))
        ctx.audit.fold()
        assert {r.run_id for r in ctx.audit.activities(limit=None)} == {fresh, "c" * 32}
        left = ctx.kg.query("SELECT DISTINCT ?s WHERE { GRAPH <urn:trails:audit> { ?s ?p ?o } "
                            "FILTER(CONTAINS(STR(?s), 'aaaa') || CONTAINS(STR(?s), 'bbbb')) }")
        assert len(left) == 0  # every triple of the dropped runs, their hits' included


@pytest.mark.parametrize("days", [800_000, 10**12])
def test_a_retention_longer_than_the_calendar_keeps_every_record(tmp_path, days):
    # now - timedelta(days) fell before year 1: every fold raised OverflowError, so listing
    # failed and closing logged "could not fold", the records never reaching the graph.
    with make(tmp_path / "kb", audit=AuditConfig(retention_days=days)) as ctx:
        run = retrieve("rail", ctx).run_id
        old = "a" * 32
        ctx.audit.record(SearchRecord(run_id=old, caller="old", started="1970-01-01T00:00:00+00:00",
                                      ended="1970-01-01T00:00:00+00:00", query_sha256="0" * 64,
                                      scopes=["default"]))
        assert ctx.audit.fold() == 2
        assert [r.run_id for r in ctx.audit.activities()] == [run, old]
    with make(tmp_path / "kb") as ctx:
        assert activities(ctx) == 2


def test_listing_filters_by_time_and_caller(tmp_path):
    with make(tmp_path / "kb") as ctx:
        retrieve("one", ctx, caller="alice")
        middle = dt.datetime.now(dt.UTC)
        retrieve("two", ctx, caller="bob")
        retrieve("three", ctx, caller="alice")
        ctx.audit.fold()
        retrieve("four", ctx, caller="alice")  # pending, still listed
        assert [r.query for r in ctx.audit.activities(caller="alice")] == ["four", "three", "one"]
        assert [r.query for r in ctx.audit.activities(since=middle)] == ["four", "three", "two"]
        assert [r.query for r in ctx.audit.activities(limit=2)] == ["four", "three"]


def test_listing_takes_a_date_and_refuses_what_it_cannot_read(tmp_path):
    # A date raised AttributeError ('date' has no tzinfo), as did a string; limit=-1 a
    # SparqlError about COALESCE; 1.5 a TypeError; caller="" listed nothing at all.
    with make(tmp_path / "kb") as ctx:
        retrieve("one", ctx, caller="alice")
        ctx.audit.fold()
        retrieve("two", ctx, caller="alice")  # pending
        assert [r.query for r in ctx.audit.activities(since=dt.date(2000, 1, 1))] == [
            "two", "one"]
        assert ctx.audit.activities(since=dt.date(2999, 1, 1)) == []
        for wrong in ({"since": "2024-05-01"}, {"since": 1714521600}, {"limit": -1},
                      {"limit": 1.5}, {"limit": "3"}, {"limit": True}, {"caller": ""},
                      {"caller": 7}, {"level": ""}):
            with pytest.raises(InvalidArgumentError, match=f"{next(iter(wrong))} must be"):
                ctx.audit.activities(**wrong)
        assert ctx.audit.activities(limit=0) == []


def _at(day: int, hour: int = 0) -> str:
    return dt.datetime(2024, 5, day, hour, tzinfo=dt.UTC).isoformat()


def _run(n: int, started: str, kind: str, scopes: list[str]):
    common = {"run_id": f"{n:032x}", "caller": f"c{n % 2}", "started": started,
              "ended": started}
    if kind == "search":
        return SearchRecord(**common, query_sha256="0" * 64, scopes=scopes)
    if kind == "sparql":
        return SparqlQueryRecord(**common, query_sha256="0" * 64, scopes=scopes)
    return DeletionRecord(**common, reason="expired", documents=["urn:x:doc"])


def _audited(records, folded):
    """A memory context whose trail holds ``records``, those of ``folded`` in the graph."""
    ctx = fresh_context(dim=8)
    ctx.audit.enabled = True
    for n, record in enumerate(records):
        if n in folded:
            ctx.audit.record(record)
    ctx.audit.fold()
    for n, record in enumerate(records):
        if n not in folded:
            ctx.audit.record(record)
    return ctx


def test_listing_filters_by_until_and_scope_by_hand():
    records = [_run(1, _at(1), "search", ["legal"]), _run(2, _at(2), "search", ["default"]),
               _run(3, _at(2, 12), "sparql", []), _run(4, _at(3), "sparql", ["legal", "hr"]),
               _run(5, _at(4), "deletion", [])]
    for folded in ({0, 1, 2, 3, 4}, set(), {1, 3}):
        audit = _audited(records, folded).audit

        def ids(audit=audit, **options):
            return [int(r.run_id, 16) for r in audit.activities(**options)]

        assert ids(until=dt.date(2024, 5, 2)) == [1]  # before May 2nd's first moment
        assert ids(since=dt.date(2024, 5, 2), until=dt.date(2024, 5, 3)) == [3, 2]  # that day
        assert ids(until=dt.datetime(2024, 5, 2, 12, tzinfo=dt.UTC)) == [2, 1]  # excluded
        # the scope read: a SPARQL query confined to no scope read every graph; a deletion
        # read none
        assert ids(scope="legal") == [4, 3, 1]
        assert ids(scope="hr", until=dt.date(2024, 5, 3)) == [3]
        assert ids(scope="default", caller="c0") == [2]
        assert ids(scope="nowhere") == [3]


def test_listing_refuses_a_reversed_range_and_a_bad_until_or_scope():
    audit = _audited([_run(1, _at(1), "search", ["legal"])], {0}).audit
    for wrong, says in [({"until": "2024-05-01"}, "until must be a datetime or a date"),
                        ({"until": 1714521600}, "until must be a datetime or a date"),
                        ({"since": dt.date(2024, 5, 2), "until": dt.date(2024, 5, 1)},
                         "until .* must be later than since"),
                        ({"since": dt.date(2024, 5, 1), "until": dt.date(2024, 5, 1)},
                         "until .* must be later than since"),
                        ({"scope": "no spaces"}, "scope names are"),
                        ({"scope": 3}, "scope names are"),
                        ({"scope": ""}, "scope names are")]:
        with pytest.raises(InvalidArgumentError, match=says):
            audit.activities(**wrong)


DAYS = st.integers(1, 6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(DAYS, st.sampled_from(["search", "sparql", "deletion"]),
                          st.lists(st.sampled_from(["default", "legal", "hr"]), unique=True,
                                   max_size=2)), max_size=7),
       st.sets(st.integers(0, 6)), st.none() | DAYS, st.none() | DAYS,
       st.none() | st.sampled_from(["default", "legal", "hr"]))
def test_listing_is_the_records_that_match_folded_or_not(runs, folded, since, until, scope):
    """Whatever is folded, activities() lists exactly the records started in [since, until)
    that read the scope, newest first (brute force over the records the test wrote)."""
    if since is not None and until is not None and until <= since:
        until = None
    records = [_run(n, _at(day, n), kind, scopes or ["default"] if kind == "search" else scopes)
               for n, (day, kind, scopes) in enumerate(runs)]
    options = {"since": None if since is None else dt.date(2024, 5, since),
               "until": None if until is None else dt.date(2024, 5, until), "scope": scope}
    expected = [r.run_id for r in sorted(records, key=lambda r: r.started, reverse=True)
                if (since is None or r.started >= _at(since))
                and (until is None or r.started < _at(until))
                and (scope is None or (r.kind != "deletion"
                                       and (scope in r.scopes or (r.kind == "sparql"
                                                                  and not r.scopes))))]
    listed = _audited(records, folded).audit.activities(**options, limit=None)
    assert [r.run_id for r in listed] == expected


def test_the_cli_lists_by_until_and_scope_and_refuses_a_reversed_range(tmp_path):
    records = [_run(1, _at(1), "search", ["legal"]), _run(2, _at(2), "search", ["legal"]),
               _run(3, _at(2, 6), "search", ["default"]), _run(4, _at(3), "search", ["legal"])]
    with make(tmp_path / "kb") as ctx:
        for record in records:
            ctx.audit.record(record)

    def listed(*options):
        result = CliRunner().invoke(app, ["--db", str(tmp_path / "kb"), "audit", *options])
        return result.exit_code, result.output

    code, out = listed("--since", "2024-05-02", "--until", "2024-05-03", "--scope", "legal",
                       "--json")
    assert code == 0, out
    assert [int(r["run_id"], 16) for r in json.loads(out)] == [2]
    code, out = listed("--until", "2024-05-02T06:00:00+00:00", "--json")
    assert [int(r["run_id"], 16) for r in json.loads(out)] == [2, 1]
    code, out = listed("--scope", "hr")  # (stderr too: a scope nothing holds or names)
    assert (code, out.strip().splitlines()) == (0, [
        ("note: no scope 'hr' holds anything now, and no run listed names it (the scopes now: "
         "default); check the name"), "no recorded runs matching these options"])
    for options, says in [(("--since", "2024-05-03", "--until", "2024-05-02"),
                           "must be later than since"),
                          (("--until", "next week"), "--until 'next week' is no date"),
                          (("--scope", "no spaces"), "scope names are")]:
        code, out = listed(*options)
        assert code != 0 and says in out and "Traceback" not in out, out


def test_folding_leaves_the_graph_revision_alone_and_writes_move_it(tmp_path):
    with make(tmp_path / "kb") as ctx:
        graph, store = ctx.kg.revision, ctx.vectors.revision()
        retrieve("rail", ctx)
        ctx.audit.fold()
        assert (ctx.kg.revision, ctx.vectors.revision()) == (graph, store)
        ctx.kg.update('INSERT DATA { <urn:x:a> <urn:x:b> "c" }')
        assert ctx.kg.revision != graph and ctx.vectors.revision() == store
        ingest_all([Document(id="new", source="new.md", text="A new claim.")], ctx=ctx)
        assert ctx.vectors.revision() != store
        moved = ctx.kg.revision
    with Context.open(tmp_path / "kb", read_only=True) as reader:  # the stamp is on disk
        assert reader.kg.revision == moved


def test_hooks_and_log_records_tell_counts_and_durations_without_text(tmp_path, caplog):
    seen = []
    with make(tmp_path / "kb") as ctx:
        ctx.on_retrieve.append(seen.append)
        ctx.on_retrieve.append(lambda event: 1 / 0)  # a broken hook never fails the search
        with caplog.at_level(logging.INFO, logger="trails.retrieve"):
            result = retrieve("a secret question", ctx, k=2)
        assert len(result) == 2
    (event,) = seen
    assert event.result.run_id == result.run_id and event.seconds > 0
    assert event.call.query == "a secret question"
    (line,) = [r for r in caplog.records if r.name == "trails.retrieve" and r.levelno == logging.INFO]
    assert line.trails["hits"] == 2 and line.trails["mode"] == "hybrid"
    assert "secret" not in caplog.text
    assert "an on_retrieve hook raised" in caplog.text


def test_query_text_reaches_the_log_only_when_asked(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("TRAILS_LOG_TEXT", "1")
    with make(tmp_path / "kb") as ctx, caplog.at_level(logging.INFO, logger="trails.retrieve"):
        retrieve("a loggable question", ctx)
    assert "a loggable question" in caplog.text


def test_the_search_log_record_names_the_threshold_and_the_scores_it_kept(tmp_path, caplog):
    with make(tmp_path / "kb") as ctx:
        every = retrieve("rail", ctx, mode="vector", k=3)
        scores = sorted((h.score for h in every), reverse=True)
        threshold = scores[1]  # keeps the best two
        with caplog.at_level(logging.INFO, logger="trails.retrieve"):
            kept = retrieve("rail", ctx, mode="vector", k=3, min_score=threshold)
    assert len(kept) == 2
    (line,) = [r for r in caplog.records if r.name == "trails.retrieve" and r.levelno == logging.INFO]
    assert line.trails["k"] == 3 and line.trails["min_score"] == threshold
    assert line.trails["hits"] == 2
    assert (line.trails["top_score"], line.trails["lowest_score"]) == (scores[0], scores[1])
    assert f"min_score={threshold}" in line.getMessage()


def test_a_search_record_round_trips_through_the_graph(tmp_path):
    with make(tmp_path / "kb") as ctx:
        retrieve("rail", ctx, sparql_filter=SINCE, bindings={"since": dt.date(2022, 1, 1)})
        (pending,) = ctx.audit.pending()
        ctx.audit.fold()
        assert ctx.audit.get(pending.run_id) == pending
        assert ctx.audit.get(f"urn:trails:run:{pending.run_id}") == pending
        value = ctx.kg.query(
            "SELECT ?v WHERE { GRAPH <urn:trails:audit> { ?r <https://trails.dev/ns/audit#binding> ?b . "
            "?b <https://trails.dev/ns/audit#value> ?v } }").raw[0]["v"]
        assert value == ox.Literal("2022-01-01", datatype=ox.NamedNode(
            "http://www.w3.org/2001/XMLSchema#date"))


def test_ingest_hooks_and_log_records_report_what_was_committed(tmp_path, caplog):
    seen = []
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ctx.on_ingest.append(seen.append)
        ctx.on_ingest.append(lambda stats: 1 / 0)  # never fails the ingest
        with caplog.at_level(logging.INFO, logger="trails.ingest"):
            stats = ingest_all(DOCS[:3], ctx=ctx)
    assert stats.ingested == 3
    (reported,) = seen
    assert (reported.ingested, reported.chunks) == (3, 3)
    (line,) = [r for r in caplog.records if r.name == "trails.ingest" and r.levelno == logging.INFO]
    assert line.trails["ingested"] == 3 and "seconds" in line.trails
    assert "rail safety" not in caplog.text  # counts, never text
    assert "an on_ingest hook raised" in caplog.text


def test_an_ingest_stopped_early_still_reports_what_it_committed(tmp_path):
    seen = []
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ctx.on_ingest.append(seen.append)
        events = ingest(DOCS, ctx=ctx, batch_size=1)
        for event in events:
            if type(event).__name__ == "DocumentIngested":
                break
        events.close()  # the consumer stops (Ctrl-C in a loop, say)
    assert len(seen) == 1 and seen[0].ingested >= 1


def test_retrievers_record_their_searches_with_their_caller(tmp_path):
    with make(tmp_path / "kb") as ctx:
        VectorRetriever(ctx, k=2, caller="vec").retrieve("rail")
        HybridRetriever(ctx, sparql_filter=SINCE, bindings={"since": dt.date(2023, 1, 1)},
                        caller="hyb").retrieve("rail")
        GraphRetriever(ctx, sparql_filter=SINCE, bindings={"since": dt.date(2023, 1, 1)},
                       caller="gra").retrieve("rail")
        records = ctx.audit.pending()
    assert [(r.caller, r.mode) for r in records] == [("vec", "vector"), ("hyb", "hybrid"),
                                                     ("gra", "graph")]
    assert all(h.admitted_by for h in records[2].hits)


def test_deletions_are_recorded_with_their_reason(tmp_path):
    with make(tmp_path / "kb") as ctx:
        ingest_all([Document(id="old", source="old.md", text="An expired memo.",
                             metadata={"expires": "2020-01-01"})], ctx=ctx)
        assert ctx.delete_document("trails://local/doc/d0")
        assert not ctx.delete_document("trails://local/doc/never-there")  # nothing: no record
        removed = ctx.prune_expired()
        records = [r for r in ctx.audit.activities() if r.kind == "deletion"]
    assert [iri for iri, _ in removed] == ["trails://local/doc/old"]
    by_reason = {r.reason: r for r in records}
    assert set(by_reason) == {"deleted on request", "expired"}
    assert by_reason["deleted on request"].documents == ["trails://local/doc/d0"]
    assert by_reason["expired"].documents == ["trails://local/doc/old"]
    assert by_reason["expired"].expired_at == {
        "trails://local/doc/old": "2020-01-01T00:00:00+00:00"}
    with make(tmp_path / "kb") as ctx:
        gone = ctx.kg.query("SELECT ?doc WHERE { GRAPH <urn:trails:audit> { "
                            "?run a audit:Deletion ; prov:invalidated ?doc } }")
        assert sorted(gone.column("doc")) == ["trails://local/doc/d0", "trails://local/doc/old"]


def test_documents_pruned_with_their_source_files_are_recorded(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("Kept note.")
    (notes / "b.md").write_text("A note whose file goes away.")
    with make(tmp_path / "kb") as ctx:
        ingest_all(notes, ctx=ctx)
        (notes / "b.md").unlink()
        assert ingest_all(notes, ctx=ctx, prune=True).pruned == 1
        (record,) = [r for r in ctx.audit.pending() if r.kind == "deletion"]
    assert record.documents == ["trails://local/doc/b.md"]
    assert record.reason.startswith("source removed: ") and record.reason.endswith("b.md")


def test_a_record_without_an_rdf_form_never_blocks_the_fold(tmp_path):
    with make(tmp_path / "kb") as ctx:
        ctx.vectors.add("not an iri", [1.0] * 32, {"text": "rail safety by hand"})
        result = retrieve("rail safety by hand", ctx, mode="vector", k=10)
        assert "not an iri" in [h.iri for h in result]
        retrieve("rail", ctx)
        ctx.audit.record(SearchRecord(run_id="has a space", caller="x", started=result_time(),
                                      ended=result_time(), query_sha256="0" * 64,
                                      scopes=["default"]))
        assert ctx.audit.fold() == 3
        assert activities(ctx) == 2  # the search with a hand-made id folded, named by a literal
        assert ctx.kg.query('ASK { GRAPH <urn:trails:audit> { ?u audit:entityId "not an iri" } }')
        assert ctx.audit.failures == 1
        assert "has a space" in (tmp_path / "kb" / AUDIT_DIRECTORY / "rejected.txt").read_text()
        assert ctx.audit.pending() == []


def test_a_line_the_fold_cannot_read_is_kept_aside_not_deleted(tmp_path):
    """A record of a kind this version does not know (written by a newer one) or a torn line
    has no RDF form here; the fold must keep it for a person, as it keeps any such record."""
    foreign = '{"kind":"export","run_id":"abc123","caller":"ann","started":"2026-01-01T00:00:00+00:00"}'
    with make(tmp_path / "kb") as ctx:
        retrieve("rail", ctx)
        log = tmp_path / "kb" / AUDIT_DIRECTORY
        (log / "4242-feedbeef.jsonl").write_text(foreign + '\n{"kind":"search","run_\n')
        assert ctx.audit.fold() == 1  # the search; the other two lines are read by no one here
        assert ctx.audit.pending() == [] and activities(ctx) == 1
        kept = (log / "rejected.txt").read_text().splitlines()
        assert kept == [foreign, '{"kind":"search","run_']
        assert ctx.audit.failures == 2


def result_time() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def test_hooks_can_be_given_when_the_context_opens(tmp_path):
    searches, ingests = [], []
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16), on_retrieve=searches.append,
                      on_ingest=[ingests.append]) as ctx:
        ingest_all(DOCS[:2], ctx=ctx)
        retrieve("rail", ctx)
    assert len(searches) == 1 and len(ingests) == 1
    with pytest.raises(TypeError, match="on_retrieve takes a callable"):
        Context.open(tmp_path / "other", embedder=MockEmbedder(dim=16), on_retrieve=["nope"])
    assert not (tmp_path / "other").exists()  # refused before anything was made


def test_listing_since_a_time_whose_offset_has_seconds(tmp_path):
    # Paris kept local mean time (+00:09:21) until 1911: the time was bound with that offset,
    # no xsd:dateTime, and the listing refused it as a binding the graph cannot read.
    from zoneinfo import ZoneInfo

    with make(tmp_path / "kb") as ctx:
        retrieve("rail", ctx)
        ctx.audit.fold()
        retrieve("rail", ctx)  # pending
        since = dt.datetime(1900, 1, 1, tzinfo=ZoneInfo("Europe/Paris"))
        assert len(ctx.audit.activities(since=since)) == 2
        odd = dt.timezone(dt.timedelta(hours=5, minutes=30, seconds=7))
        assert ctx.audit.activities(since=dt.datetime(2999, 1, 1, tzinfo=odd)) == []
