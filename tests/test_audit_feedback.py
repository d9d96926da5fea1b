"""Feedback on a recorded run: a thumbs up or down with a note, recorded as its own audit
activity beside the run (written by the fold alone), listed with the run in Python, on the
command line and over HTTP; a run that is not there is refused, never recorded."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from service_support import bearer, seeded_client
from trails import retrieve
from trails.audit import FeedbackRecord
from trails.cli import app
from trails.context import Context
from trails.errors import InvalidArgumentError, UnknownRunError
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder, fresh_context

runner = CliRunner()
DOCS = [Document(id=f"d{i}", source=f"d{i}.md", text=f"Claim {i} on rail safety evidence.")
        for i in range(3)]
FEEDBACK = ("SELECT ?f ?rating ?note WHERE { GRAPH <urn:trails:audit> { ?f a audit:Feedback ; "
            "audit:feedbackOn ?run ; audit:rating ?rating . OPTIONAL { ?f rdfs:comment ?note } "
            "} }")


def make(directory) -> Context:
    ctx = Context.open(directory, embedder=MockEmbedder(dim=32))
    if not ctx.vectors.count():
        ingest_all(DOCS, ctx=ctx)
    return ctx


def test_feedback_is_recorded_beside_the_run_and_listed_with_it(tmp_path):
    with make(tmp_path / "kb") as ctx:
        run = retrieve("rail safety", ctx).run_id
        other = retrieve("evidence", ctx).run_id
        given_ = ctx.audit.feedback(run, "down", note="cites a withdrawn claim", caller="ana")
        assert isinstance(given_, FeedbackRecord)
        assert (given_.run, given_.rating, given_.note, given_.caller) == (
            run, "down", "cites a withdrawn claim", "ana")
        ctx.audit.feedback(run, "up")
        # listed with the run before and after the fold
        assert [(f.rating, f.note) for f in ctx.audit.feedback_on(run)] == [
            ("up", None), ("down", "cites a withdrawn claim")]
        assert ctx.audit.feedback_on(other) == []
    with make(tmp_path / "kb") as ctx:  # folded at close: read back from the graph
        assert [(f.rating, f.note, f.caller) for f in ctx.audit.feedback_on(run)][1] == (
            "down", "cites a withdrawn claim", "ana")
        rows = ctx.kg.query(FEEDBACK).rows
        assert sorted(str(r["rating"]) for r in rows) == ["down", "up"]
        assert all(str(r["run"]) == f"urn:trails:run:{run}" for r in
                   ctx.kg.query(FEEDBACK.replace("?f ?rating", "?f ?run ?rating")).rows)
        kinds = {a.kind for a in ctx.audit.activities()}
        assert "feedback" in kinds


def test_feedback_on_a_run_that_is_not_there_is_refused_and_not_recorded(tmp_path):
    with make(tmp_path / "kb") as ctx:
        run = retrieve("rail safety", ctx).run_id
        before = len(ctx.audit.pending())
        with pytest.raises(UnknownRunError, match="trails audit"):
            ctx.audit.feedback("0" * 32, "down")
        with pytest.raises(InvalidArgumentError, match="run id"):
            ctx.audit.feedback("not-a-run", "up")
        with pytest.raises(InvalidArgumentError, match="up.*down"):
            ctx.audit.feedback(run, "meh")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="note"):
            ctx.audit.feedback(run, "up", note=42)  # type: ignore[arg-type]
        assert len(ctx.audit.pending()) == before
        feedback = ctx.audit.feedback(run, "up")
        with pytest.raises(InvalidArgumentError, match="feedback"):
            ctx.audit.feedback(feedback.run_id, "down")  # feedback on feedback
        assert len(ctx.audit.pending()) == before + 1


def test_the_feedback_on_a_run_that_is_not_there_is_refused_not_empty(tmp_path):
    # A mistyped whole id listed no feedback, which reads as "nobody said anything".
    with make(tmp_path / "kb") as ctx:
        run = retrieve("rail safety", ctx).run_id
        assert ctx.audit.feedback_on(run) == []
        with pytest.raises(UnknownRunError, match="no recorded run"):
            ctx.audit.feedback_on("0" * 32)
        ctx.audit.fold()
        with pytest.raises(UnknownRunError, match="no recorded run"):
            ctx.audit.feedback_on(run[::-1])


def test_feedback_names_the_run_by_its_iri_too(tmp_path):
    with make(tmp_path / "kb") as ctx:
        run = retrieve("rail safety", ctx).run_id
        ctx.audit.feedback(f"urn:trails:run:{run}", "up")
        assert [f.run for f in ctx.audit.feedback_on(run.upper())] == [run]


@settings(max_examples=25, deadline=None)
@given(note=st.one_of(st.none(), st.text(max_size=200)), rating=st.sampled_from(["up", "down"]),
       caller=st.text(min_size=1, max_size=30).filter(str.strip))
def test_any_feedback_survives_json_and_the_graph(note, rating, caller):
    memory = fresh_context(dim=8)
    memory.audit.enabled = True
    with memory:
        ingest_all(DOCS[:1], ctx=memory)
        run = retrieve("rail", memory, mode="vector").run_id
        made = memory.audit.feedback(run, rating, note=note, caller=caller)
        memory.audit.fold()
        (back,) = memory.audit.feedback_on(run)
    assert back == made


# -- the command line --------------------------------------------------------------------------

def cli(*args):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "250"})


def searched(tmp_path):
    """A context made by `trails init` with DOCS, and the run id of one search on it."""
    db = tmp_path / "kb"
    assert cli("--db", db, "init", "--model", "mock:32").exit_code == 0
    with Context.open(db) as ctx:
        ingest_all(DOCS, ctx=ctx)
        return db, retrieve("rail safety", ctx).run_id


def test_the_cli_records_feedback_and_shows_it_with_the_run(tmp_path):
    db, run = searched(tmp_path)
    done = cli("--db", db, "audit", "feedback", run, "--down", "--note", "wrong year")
    assert done.exit_code == 0, done.output
    assert "down" in done.stdout and run in done.stdout
    shown = cli("--db", db, "audit", "show", run, "--json")
    assert shown.exit_code == 0, shown.output
    (entry,) = json.loads(shown.stdout)["feedback"]
    assert (entry["rating"], entry["note"], entry["run"]) == ("down", "wrong year", run)
    text = cli("--db", db, "audit", "show", run)
    assert "wrong year" in text.stdout
    listed = cli("--db", db, "audit", "--json")
    kinds = [r["kind"] for r in json.loads(listed.stdout)]
    assert "feedback" in kinds
    table = cli("--db", db, "audit")
    assert "wrong year" in table.stdout
    up = cli("--db", db, "audit", "feedback", run, "--up")
    assert up.exit_code == 0, up.output


def test_the_cli_refuses_an_unknown_run_both_ratings_or_none(tmp_path):
    db, run = searched(tmp_path)
    unknown = cli("--db", db, "audit", "feedback", "f" * 32, "--down")
    assert unknown.exit_code != 0 and "no recorded run" in unknown.output
    assert "Traceback" not in unknown.output
    both = cli("--db", db, "audit", "feedback", run, "--down", "--up")
    assert both.exit_code != 0 and "--up" in both.output
    neither = cli("--db", db, "audit", "feedback", run)
    assert neither.exit_code != 0 and "--up" in neither.output
    with Context.open(db) as ctx:
        assert ctx.audit.feedback_on(run) == []


# -- HTTP --------------------------------------------------------------------------------------

@pytest.fixture
def service(tmp_path):
    with seeded_client(tmp_path / "kb") as both:
        yield both


def _run(client, label, **body):
    response = client.post("/retrieve", json={"query": "glaciers", **body}, headers=bearer(label))
    assert response.status_code == 200, response.text
    return response.json()["run_id"]


def test_http_feedback_is_recorded_with_the_key_label_and_listed(service):
    client, ctx = service
    run = _run(client, "alpha-reader")
    response = client.post(f"/runs/{run}/feedback", json={"rating": "down", "note": "stale"},
                           headers=bearer("alpha-reader"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["run"], body["rating"], body["note"], body["caller"]) == (
        run, "down", "stale", "alpha-reader")
    listed = client.get(f"/runs/{run}/feedback", headers=bearer("alpha-reader"))
    assert listed.status_code == 200
    assert [(f["rating"], f["note"]) for f in listed.json()["feedback"]] == [("down", "stale")]
    assert [f.caller for f in ctx.audit.feedback_on(run)] == ["alpha-reader"]


def test_http_feedback_on_an_unknown_run_or_another_scope_is_not_found(service):
    client, ctx = service
    beta_run = _run(client, "beta-writer")
    missing = client.post(f"/runs/{'a' * 32}/feedback", json={"rating": "up"},
                          headers=bearer("admin"))
    assert missing.status_code == 404 and missing.json()["error"] == "UnknownRunError"
    # a key that may not read the run's scopes cannot learn it exists, nor rate it
    hidden = client.post(f"/runs/{beta_run}/feedback", json={"rating": "up"},
                         headers=bearer("alpha-reader"))
    assert hidden.status_code == 404
    assert client.get(f"/runs/{beta_run}/feedback", headers=bearer("alpha-reader")
                      ).status_code == 404
    bad = client.post(f"/runs/{beta_run}/feedback", json={"rating": "sideways"},
                      headers=bearer("admin"))
    assert bad.status_code in (400, 422)
    anonymous = client.post(f"/runs/{beta_run}/feedback", json={"rating": "up"})
    assert anonymous.status_code == 401
    assert ctx.audit.feedback_on(beta_run) == []
    assert client.post(f"/runs/{beta_run}/feedback", json={"rating": "up"},
                       headers=bearer("admin")).status_code == 200


def test_http_feedback_tells_a_scoped_key_nothing_about_other_scopes_runs(service):
    client, ctx = service
    beta_run = _run(client, "beta-writer")
    beta = ctx.audit.get(beta_run)
    # two more beta runs sharing a prefix, which a prefix lookup over every run would list
    twins = ["abcd" + "0" * 27 + "1", "abcd" + "0" * 27 + "2"]
    for twin in twins:
        assert ctx.audit.record(dataclasses.replace(beta, run_id=twin))

    def asked(run):
        response = client.get(f"/runs/{run}/feedback", headers=bearer("alpha-reader"))
        named = [r for r in (beta_run, *twins) if r != run and r in response.text]
        assert not named, response.text  # no run but the one asked about
        return response.status_code, response.json()["error"], response.json()["message"]

    # the start of a beta run, of two, of none: answered alike, naming no run
    prefixes = {asked(p)[:2] for p in (beta_run[:6], "abcd", "ef01")}
    assert prefixes == {(400, "InvalidArgumentError")}
    # a whole beta run id and an id of no run: the same answer but for the id echoed
    hidden, missing = asked(beta_run), asked("f" * 32)
    assert hidden[:2] == missing[:2] == (404, "UnknownRunError")
    assert hidden[2].replace(beta_run, "f" * 32) == missing[2]
    # a key with every scope sees every run, so a prefix still names one for it
    admin = client.get(f"/runs/{beta_run[:8]}/feedback", headers=bearer("admin"))
    assert admin.status_code == 200 and admin.json()["run"] == beta_run
