"""A recorded search runs again exactly as recorded and the differences are reported: the
same answer on an unchanged context, and every kind of change (new, gone, moved, which part
changed) otherwise; from Python and from the command line."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest
from typer.testing import CliRunner

from trails import replay, retrieve
from trails.audit import DeletionRecord
from trails.cli import app
from trails.config import AuditConfig
from trails.context import Context
from trails.errors import (
    EmbeddingModelMismatchError,
    InvalidArgumentError,
    UnknownRunError,
    UnknownScopeError,
)
from trails.ingest import Document, ingest_all
from trails.kg import IRI
from trails.scopes import scope_graph
from trails.testing import MockEmbedder

SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
         "FILTER(?d >= ?since) }")
runner = CliRunner()


def docs(revision: int = 0) -> list[Document]:
    return [Document(id=f"d{i}", source=f"d{i}.md",
                     text=f"Seal report {i}: the pump seal {'failed' if i % 2 else 'held'}"
                          f"{' again' * revision}.", metadata={"date": f"202{i}-01-05"})
            for i in range(5)]


@pytest.fixture
def kb(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all(docs(), ctx=ctx, scope="legal")
    return tmp_path / "kb"


def open_kb(kb, **options) -> Context:
    return Context.open(kb, embedder=MockEmbedder(dim=32), **options)


def test_an_unchanged_context_gives_the_same_answer_and_says_nothing_changed(kb):
    with open_kb(kb) as ctx:
        first = retrieve("pump seal failed", ctx, sparql_filter=SINCE, scope="legal",
                         bindings={"since": dt.date(2021, 1, 1)}, fusion="weighted", k=3,
                         min_score=0.2)
        report = replay(ctx, first.run_id, caller="reviewer")
        assert report.identical and report.same == [h.iri for h in first]
        assert report.changed == {"graph": False, "store": False, "embedder": False}
        assert [h.iri for h in report.result] == [h.iri for h in first]
        assert [h.score for h in report.result] == [h.score for h in first]
        again = ctx.audit.get(report.result.run_id)
        assert again.replay_of == f"urn:trails:run:{first.run_id}"
        assert (again.caller, again.fusion, again.k, again.scopes, again.min_score) == (
            "reviewer", "weighted", 3, ["legal"], 0.2)
        assert again.bindings == ctx.audit.get(first.run_id).bindings


def test_changes_are_reported_as_new_gone_and_moved_with_what_changed(kb):
    with open_kb(kb) as ctx:
        first = retrieve("pump seal failed", ctx, scope="legal", k=5)
        ctx.delete_document(first[0].document)  # gone
        ingest_all([Document(id="n", source="n.md", text="The pump seal failed, failed.")],
                   ctx=ctx, scope="legal")  # new, and pushes the others down: moved
        report = replay(ctx, first.run_id)
    assert not report.identical
    assert report.gone[0] == (first[0].iri, 1)
    assert [iri for iri, _ in report.new] and all("/doc/n/" in iri for iri, _ in report.new)
    assert report.changed["graph"] and report.changed["store"] and not report.changed["embedder"]
    old = {h.iri: rank for rank, h in enumerate(first, 1)}
    for iri, before, after in report.moved:
        assert old[iri] == before != after
    assert set(report.same) | {i for i, _, _ in report.moved} | {i for i, _ in report.new} == {
        h.iri for h in report.result}


def test_a_filter_that_admits_other_chunks_or_runs_another_path_is_noted(kb):
    with open_kb(kb) as ctx:
        since = {"since": dt.date(2024, 1, 1)}  # d4 only
        first = retrieve("pump seal", ctx, sparql_filter=SINCE, scope="legal", bindings=since)
        assert first.candidates == 1 and first.filter_path == "documents-columns"
        assert replay(ctx, first.run_id).notes == []  # nothing changed: nothing noted
        d0_chunk = next(i for i in ctx.vectors.all_ids() if "/doc/d0/" in i)
        d4 = first[0].document
        ctx.kg.update(f"INSERT DATA {{ GRAPH {scope_graph('legal')} {{ <{d0_chunk}> "
                      f"schema:isPartOf <{d4}> }} }}")  # by hand: d0's chunk is now d4's too
        report = replay(ctx, first.run_id)
    assert report.result.candidates == 2
    assert report.notes == [
        "the filter admitted 1 chunk then, 2 chunks now",
        ("the filter ran documents-columns then, chunks-reordered (chunk links or document "
         "types changed by hand: trails verify plans it again) now")]


def test_a_replay_with_another_embedder_is_refused_as_any_search_is(kb):
    with open_kb(kb) as ctx:
        run = retrieve("seal", ctx, scope="legal", mode="vector").run_id
    with (Context.open(kb, embedder=MockEmbedder(dim=32, seed=7)) as other,
          pytest.raises(EmbeddingModelMismatchError)):
        replay(other, run)


def test_a_digest_only_run_needs_the_exact_query_again(kb):
    with open_kb(kb, audit=AuditConfig(query_text="sha256")) as ctx:
        run = retrieve("pump seal", ctx, scope="legal").run_id
        with pytest.raises(InvalidArgumentError, match="--query"):
            replay(ctx, run)
        with pytest.raises(InvalidArgumentError, match="SHA-256 differs"):
            replay(ctx, run, query="pump seals")
        assert replay(ctx, run, query="pump seal").identical


def test_what_cannot_be_replayed_is_refused_by_name(kb):
    with open_kb(kb) as ctx:
        with pytest.raises(UnknownRunError, match="trails audit"):
            replay(ctx, "0" * 32)
        ctx.audit.record(DeletionRecord(run_id="d" * 32, caller="x", started="2024-01-01T00:00:00+00:00",
                                        ended="2024-01-01T00:00:00+00:00", reason="expired"))
        with pytest.raises(InvalidArgumentError, match="deletion"):
            replay(ctx, "d" * 32)
        run = retrieve("seal", ctx, scope="legal", fusion=lambda rankings: []).run_id
        with pytest.raises(InvalidArgumentError, match="cannot be called again"):
            replay(ctx, run)


def cli(kb, *args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, ["--db", str(kb), *args], env=env)


def test_the_command_line_lists_shows_and_replays(kb):
    (kb.parent / "since.rq").write_text(SINCE)
    query = cli(kb, "query", "pump seal failed", "--scope", "legal", "--caller", "alice",
                "--sparql", str(kb.parent / "since.rq"), "--bind", "since=2023-01-01", "--why",
                env={"COLUMNS": "400"})
    assert query.exit_code == 0, query.output
    assert "?d=2024-01-05" in query.output
    listed = cli(kb, "audit", "--json", "--caller", "alice")
    assert listed.exit_code == 0, listed.output
    (run,) = json.loads(listed.output)
    assert run["query"] == "pump seal failed" and run["caller"] == "alice"
    assert cli(kb, "audit", "--caller", "nobody").output.startswith("no recorded runs")
    shown = cli(kb, "audit", "show", run["run_id"], "--json")
    assert json.loads(shown.output)["hits"] == run["hits"]
    replayed = cli(kb, "replay", run["run_id"], "--json")
    assert replayed.exit_code == 0, replayed.output
    report = json.loads(replayed.output)
    assert report["identical"] and report["changed"] == {
        "graph": False, "store": False, "embedder": False}
    assert report["same"] == [h["iri"] for h in run["hits"]]
    # The new answer whole: its scores and how its filter ran, as `trails query --json`.
    again = report["result"]
    assert again["run_id"] == report["replay"] != run["run_id"]
    assert [h["iri"] for h in again["hits"]] == report["same"]
    assert [h["score"] for h in again["hits"]] == [h["score"] for h in run["hits"]]
    assert again["filter_path"] and again["mode"] == "hybrid"
    human = cli(kb, "replay", run["run_id"])
    assert "the same answer" in human.output
    missing = cli(kb, "audit", "show", "0" * 32)
    assert missing.exit_code == 1 and f"no recorded run '{'0' * 32}'" in missing.output
    malformed = cli(kb, "audit", "show", "nope")
    assert malformed.exit_code == 1 and "'nope' is no run id" in malformed.output
    bad_date = cli(kb, "audit", "--since", "last tuesday")
    assert bad_date.exit_code == 1 and "ISO 8601" in bad_date.output


def test_a_search_as_of_a_given_moment_is_recorded_and_replayed_as_of_it(tmp_path):
    # retrieve(now=...) judges expiries at that moment. The record did not keep it: it showed
    # a document past its expiry in the answer with nothing to say why, and a replay judged
    # at the clock's time reported the document gone as if the corpus had changed.
    notice = Document(id="notice", source="n.md", text="Interim notice: the pump seal failed.",
                      metadata={"date": "2024-01-02", "expires": "2024-06-30"})
    as_of = dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all([*docs(), notice], ctx=ctx, scope="legal")
        first = retrieve("interim notice pump seal failed", ctx, scope="legal", k=3, now=as_of)
        assert "/doc/notice/" in first[0].iri
        now = retrieve("interim notice pump seal failed", ctx, scope="legal", k=3)
        assert all("/doc/notice/" not in h.iri for h in now)  # expired by the clock
        report = replay(ctx, first.run_id)
        assert report.identical and report.same == [h.iri for h in first]
        ctx.audit.fold()
        recorded = ctx.audit.get(first.run_id)
        assert dt.datetime.fromisoformat(recorded.as_of) == as_of
        assert ctx.audit.get(report.result.run_id).as_of == recorded.as_of
        assert ctx.audit.get(now.run_id).as_of is None  # the clock's time: nothing to say
        rows = ctx.kg.query("SELECT ?t WHERE { GRAPH <urn:trails:audit> { ?run audit:asOf ?t } }",
                            {"run": IRI(f"urn:trails:run:{first.run_id}")})
        assert [row["t"] for row in rows] == [as_of]


def test_a_replay_answered_degraded_or_of_a_degraded_run_says_so(kb, monkeypatch):
    # The report listed other hits, "graph, store and embedder unchanged", and nothing
    # saying that one of the two answers was the keyword fallback of a failed embedder.
    from trails.errors import EmbeddingError

    with open_kb(kb) as ctx:
        healthy = retrieve("pump seal failed", ctx, scope="legal", k=3)

        def down(*_args, **_kwargs):
            raise EmbeddingError("the embedding service is down")

        for method in ("embed", "embed_many", "embed_array", "embed_batch"):
            monkeypatch.setattr(ctx.embedder, method, down)
        degraded = retrieve("pump seal failed", ctx, scope="legal", k=3)
        assert degraded.degraded
        report = replay(ctx, healthy.run_id)
        assert report.result.degraded
        assert any(n.startswith("this replay's answer is degraded: ") for n in report.notes)
        monkeypatch.undo()
        later = replay(ctx, degraded.run_id)
        assert not later.result.degraded
        assert [n for n in later.notes if "degraded" in n] == [
            f"the run's answer was degraded: {why}" for why in degraded.degraded]
    result = runner.invoke(app, ["--db", str(kb), "replay", degraded.run_id])
    assert "note: the run's answer was degraded: " in result.output


@pytest.mark.parametrize("filtered", [False, True])
def test_a_run_whose_scope_was_emptied_since_replays_with_every_hit_gone(tmp_path, filtered):
    # The replay was refused as a typo: "unknown scope 'legal'; the scopes that exist: ...".
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all(docs()[:2], ctx=ctx, scope="legal")
        ingest_all([Document(id="other", source="o.md", text="Other things.")], ctx=ctx,
                   scope="misc")
        first = retrieve("pump seal", ctx, scope="legal", k=5,
                         **({"sparql_filter": SINCE, "bindings": {"since": dt.date(2019, 1, 1)}}
                            if filtered else {}))
        assert len(first) == 2
        for document in {h.document for h in first}:
            ctx.delete_document(document)
        report = replay(ctx, first.run_id)
        assert list(report.result) == [] and not report.identical
        assert report.gone == [(h.iri, rank) for rank, h in enumerate(first, 1)]
        assert ("the scope(s) legal hold nothing now (their documents were deleted or pruned "
                "since the run)") in report.notes
        assert ctx.audit.get(report.result.run_id).scopes == ["legal"]
        with pytest.raises(UnknownScopeError, match="unknown scope 'legal'"):
            retrieve("pump seal", ctx, scope="legal")  # a search of its own still refuses it


class _Rewriter:
    """A rewriter whose answer a replay could not ask again (a chat model's may differ)."""

    def rewrite(self, query, messages):
        return "pump seal failed again"


CONVERSATION = [{"role": "user", "content": "What about the pump seal reports?"}]


def test_a_rewritten_query_is_recorded_and_replayed_as_it_was_searched(kb):
    # The record kept only "did it fail?", not what the search ranked by, and the replay
    # searched "did it fail?": other hits, with nothing changed and nothing said.
    with open_kb(kb) as ctx:
        first = retrieve("did it fail?", ctx, scope="legal", k=3, messages=CONVERSATION,
                         rewriter=_Rewriter())
        record = ctx.audit.get(first.run_id)
        assert record.query == "did it fail?"
        assert record.rewritten == "pump seal failed again"
        assert record.rewritten_sha256 == hashlib.sha256(b"pump seal failed again").hexdigest()
        plain = retrieve("did it fail?", ctx, scope="legal", k=3)
        assert [h.iri for h in plain] != [h.iri for h in first]  # the text matters here
        report = replay(ctx, first.run_id)
        assert report.identical and report.same == [h.iri for h in first]
        assert any("rewriter" in note for note in report.notes)
        assert ctx.audit.get(plain.run_id).rewritten_sha256 is None
        ctx.audit.fold()
        rows = ctx.kg.query("SELECT ?t WHERE { GRAPH <urn:trails:audit> { "
                            "?run audit:rewrittenText ?t } }",
                            {"run": IRI(f"urn:trails:run:{first.run_id}")})
        assert [row["t"] for row in rows] == ["pump seal failed again"]


def test_a_digest_only_rewritten_run_needs_the_rewritten_text(kb):
    with open_kb(kb, audit=AuditConfig(query_text="sha256")) as ctx:
        run = retrieve("did it fail?", ctx, scope="legal", k=3, messages=CONVERSATION,
                       rewriter=_Rewriter()).run_id
        assert ctx.audit.get(run).rewritten is None
        with pytest.raises(InvalidArgumentError, match="SHA-256 of the query its rewriter made"):
            replay(ctx, run)
        with pytest.raises(InvalidArgumentError, match="not the query its rewriter made"):
            replay(ctx, run, query="did it fail?")
        assert replay(ctx, run, query="pump seal failed again").identical


def test_the_replay_of_a_refused_search_says_it_was_refused(kb):
    # The service records a search it refused (a scope its key does not grant) with no hits;
    # replayed from the command line, every hit read as new, as if the corpus had grown.
    from trails.audit.records import started_now
    from trails.errors import PermissionDeniedError
    from trails.retrieval.recording import SearchCall, record_refusal
    from trails.retrieval.request import SearchRequest

    with open_kb(kb) as ctx:
        call = SearchCall.asked(SearchRequest(query="pump seal failed", scopes=["legal"]),
                                "public-key", scopes=["legal"], started=started_now())
        run = record_refusal(ctx, call, PermissionDeniedError("the key does not grant 'legal'"))
        report = replay(ctx, run)
    assert report.new and not report.identical
    assert report.notes[0] == ("the run was refused, not answered (refused: "
                               "PermissionDeniedError: the key does not grant 'legal')")


def test_a_run_with_an_empty_query_from_before_the_rule_replays_as_it_ran(kb, monkeypatch):
    # A hybrid search for "" ran before ADR 52 refused one; its record must still replay
    # (an audit is defended by replaying what ran), saying the query would now be refused.
    import importlib

    retrieve_module = importlib.import_module("trails.retrieval.retrieve")
    with open_kb(kb) as ctx:
        with monkeypatch.context() as old_engine:
            old_engine.setattr(retrieve_module, "check_rankable", lambda *a, **k: None)
            first = retrieve("", ctx, scope="legal", k=3)
        with pytest.raises(InvalidArgumentError, match="query is empty"):
            retrieve("", ctx, scope="legal", k=3)  # a new search is still refused
        report = replay(ctx, first.run_id)
    assert report.identical and len(report.same) == 3
    assert any("query was empty" in note and "refused" in note for note in report.notes)


def test_a_query_of_another_type_given_to_replay_is_refused_by_name(kb):
    # replay(ctx, run, query=5) failed inside: 'int' object has no attribute 'encode'.
    with open_kb(kb) as ctx:
        run = retrieve("pump seal failed", ctx, scope="legal").run_id
        with pytest.raises(InvalidArgumentError, match="^query must be a str"):
            replay(ctx, run, query=5)


def test_a_replay_report_reads_as_its_verdict_in_a_repl(kb):
    # Its repr was the dataclass's: the whole original record and result, thousands of
    # characters, before any word of whether the answer changed.
    with open_kb(kb) as ctx:
        first = retrieve("pump seal failed", ctx, scope="legal", k=3)
        report = replay(ctx, first.run_id)
        ingest_all(docs(revision=1), ctx=ctx, scope="legal")
        changed = replay(ctx, first.run_id)
    assert repr(report) == (f"<ReplayReport of {first.run_id} as {report.result.run_id}: "
                            f"the same answer (3 hits)>")
    said = repr(changed)
    assert said.startswith(f"<ReplayReport of {first.run_id} as {changed.result.run_id}: "
                           f"the answer changed ({len(changed.new)} new, {len(changed.gone)} "
                           f"gone, {len(changed.moved)} moved); graph changed")
    assert len(said) < 400
