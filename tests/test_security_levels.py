"""A scope's security level in every audit record (the embeddings design's ``security_level``):
each search and SPARQL query names the levels of the scopes it read, the trail lists runs by
level, and a digest level keeps the query's text out of the trail, the log and the spans."""

from __future__ import annotations

import json
import logging

import pytest
import rdflib
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyshacl import validate

from conftest import ROOT
from service_support import bearer, keys, seeded_context
from test_cli import trails
from trails import retrieve
from trails.audit import AUDIT_GRAPH, SearchRecord
from trails.audit.records import query_digest
from trails.config import AuditConfig
from trails.context import Context
from trails.errors import InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.service.app import create_app
from trails.testing import MockEmbedder

LEVELS = {"hr": "protected", "default": "official"}  # "eng" has none
SCOPES = ("hr", "default", "eng")
AUDIT = rdflib.Namespace("https://trails.dev/ns/audit#")
SHAPES = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit-shapes.ttl", format="turtle")


def open_kb(directory, **audit) -> Context:
    """A context auditing with LEVELS, one document in each of SCOPES."""
    ctx = Context.open(directory, embedder=MockEmbedder(dim=16),
                       audit=AuditConfig(levels=LEVELS, **audit))
    for scope in SCOPES:
        ingest_all([Document(id=f"{scope}-doc", source=f"{scope}.md",
                             text=f"Salaries and budgets of {scope}.")], ctx=ctx, scope=scope)
    return ctx


def record_of(ctx: Context, run_id: str | None) -> SearchRecord:
    assert run_id is not None
    found = ctx.audit.get(run_id)
    assert isinstance(found, SearchRecord)
    return found


def graph_levels(ctx: Context) -> dict[str, set[str]]:
    """Run IRI -> its audit:securityLevel values, as the audit graph holds them."""
    rows = ctx.kg.query(f"SELECT ?run ?level WHERE {{ GRAPH {AUDIT_GRAPH} {{ "
                        f"?run <{AUDIT}securityLevel> ?level }} }}")
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(str(row["run"]), set()).add(str(row["level"]))
    return found


def test_each_search_record_names_the_levels_of_the_scopes_it_read(tmp_path):
    with open_kb(tmp_path / "kb") as ctx:
        hr = retrieve("salaries", ctx, scope="hr").run_id
        both = retrieve("salaries", ctx, scope=["hr", "default", "eng"]).run_id
        eng = retrieve("salaries", ctx, scope="eng").run_id
        assert record_of(ctx, hr).levels == {"hr": "protected"}
        assert record_of(ctx, both).levels == {"hr": "protected", "default": "official"}
        assert record_of(ctx, eng).levels == {}
        ctx.audit.fold()
        in_graph = graph_levels(ctx)
        assert record_of(ctx, both).levels == {"hr": "protected", "default": "official"}
        triples = ctx.kg.query(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH {AUDIT_GRAPH} "
                               "{ ?s ?p ?o } }")
        graph = rdflib.Graph().parse(data="".join(f"{t.subject} {t.predicate} {t.object} .\n"
                                                  for t in triples), format="nt")
    assert in_graph[f"urn:trails:run:{hr}"] == {"protected"}
    assert in_graph[f"urn:trails:run:{both}"] == {"protected", "official"}
    assert f"urn:trails:run:{eng}" not in in_graph
    ok, _, report = validate(graph, shacl_graph=SHAPES, inference="none")
    assert ok, report


def test_the_trail_lists_runs_by_level_pending_and_folded(tmp_path):
    with open_kb(tmp_path / "kb") as ctx:
        folded_hr = retrieve("salaries", ctx, scope="hr").run_id
        folded_default = retrieve("salaries", ctx).run_id
        ctx.audit.fold()
        pending_hr = retrieve("budgets", ctx, scope=["eng", "hr"]).run_id
        retrieve("budgets", ctx, scope="eng")
        assert ctx.audit.pending()  # the last two are not folded yet
        protected = {r.run_id for r in ctx.audit.activities(level="protected", limit=None)}
        official = {r.run_id for r in ctx.audit.activities(level="official", limit=None)}
        assert protected == {folded_hr, pending_hr}
        assert official == {folded_default}
        with pytest.raises(InvalidArgumentError, match=r"'secret' is no security level of "
                           r"this context's scopes now \(levels: official, protected\)"):
            ctx.audit.activities(level="secret")  # a typo never reads as "no run read it"
        assert ctx.audit.activities(level="official", caller="nobody") == []  # set: no error
        caller = ctx.audit.activities(limit=1)[0].caller  # a caller and a level together
        assert {r.run_id for r in ctx.audit.activities(level="protected", caller=caller,
                                                       limit=None)} == {folded_hr, pending_hr}
        assert len(ctx.audit.activities(limit=None)) == 4


def test_digest_levels_keep_the_text_out_of_the_trail_and_the_log(tmp_path, caplog,
                                                                     monkeypatch):
    monkeypatch.setenv("TRAILS_LOG_TEXT", "1")
    caplog.set_level(logging.INFO, logger="trails.retrieve")
    with open_kb(tmp_path / "kb", digest_levels=["protected"]) as ctx:
        secret = retrieve("who earns most in hr", ctx, scope=["eng", "hr"]).run_id
        open_ = retrieve("eng budgets this year", ctx, scope="eng").run_id
        hidden, shown = record_of(ctx, secret), record_of(ctx, open_)
        ctx.audit.fold()
        texts = [str(row["t"]) for row in ctx.kg.query(
            f"SELECT ?t WHERE {{ GRAPH {AUDIT_GRAPH} {{ ?r <{AUDIT}queryText> ?t }} }}")]
        stored = record_of(ctx, secret)
    assert hidden.query is None and hidden.query_sha256 == query_digest("who earns most in hr")
    assert stored.query is None
    assert shown.query == "eng budgets this year"
    assert texts == ["eng budgets this year"]
    logged = [getattr(r, "trails", {}) for r in caplog.records if r.name == "trails.retrieve"]
    assert [entry.get("query") for entry in logged] == [None, "eng budgets this year"]
    assert "who earns most" not in caplog.text


def test_levels_are_kept_in_trails_json_and_reopened(tmp_path):
    with open_kb(tmp_path / "kb", digest_levels=["protected"]):
        pass
    recorded = json.loads((tmp_path / "kb" / "trails.json").read_text())["audit"]
    assert recorded["levels"] == LEVELS and recorded["digest_levels"] == ["protected"]
    with Context.open(tmp_path / "kb", read_only=True) as reader:
        run = retrieve("salaries", reader, scope="hr").run_id
        assert reader.audit.settings.levels == LEVELS
        [record] = [r for r in reader.audit.pending() if r.run_id == run]
    assert isinstance(record, SearchRecord)
    assert record.levels == {"hr": "protected"} and record.query is None


@pytest.mark.parametrize("bad", [{"levels": {"hr": "top secret"}}, {"levels": {"h r": "x"}},
                                 {"levels": {"hr": ""}}, {"digest_levels": ["-x"]},
                                 {"levels": {"hr": "a\n"}}])
def test_a_level_or_scope_that_is_no_name_is_refused(bad):
    with pytest.raises(ValueError, match="levels"):
        AuditConfig(**bad)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.dictionaries(st.sampled_from(SCOPES), st.sampled_from(["a", "b", "c"])),
       searched=st.lists(st.sampled_from(SCOPES), min_size=1, max_size=3, unique=True))
def test_the_record_names_exactly_the_levels_of_the_scopes_searched(tmp_path_factory, levels,
                                                                    searched):
    directory = tmp_path_factory.mktemp("kb")
    ctx = Context.open(directory, embedder=MockEmbedder(dim=8),
                       audit=AuditConfig(levels=levels))
    with ctx:
        for scope in SCOPES:
            ingest_all([Document(id=scope, source=scope, text="a text")], ctx=ctx, scope=scope)
        record = record_of(ctx, retrieve("text", ctx, scope=searched).run_id)
    expected = {}
    for scope in searched:  # written out here, not asked of the code under test
        if scope in levels:
            expected[scope] = levels[scope]
    assert record.levels == expected


def test_each_sparql_query_and_refused_search_names_the_levels_it_read(tmp_path):
    seeded_context(tmp_path / "kb").close()
    ctx = Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32),
                       audit=AuditConfig(levels={"alpha": "protected"},
                                         digest_levels=["protected"]))
    query = "SELECT ?t WHERE { ?c schema:text ?t }"
    try:
        with TestClient(create_app(ctx, keys(), fold_seconds=3600)) as client:
            mine = client.get("/sparql", params={"query": query}, headers=bearer("alpha-reader"))
            every = client.post("/sparql", data={"query": "ASK { ?s ?p ?o }"},
                                headers=bearer("admin"))
            refused = client.post("/retrieve", json={
                "query": "q", "filter": "SELECT ?iri WHERE { broken"},
                headers=bearer("alpha-reader"))
            records = {r.run_id: r for r in ctx.audit.pending()}
    finally:
        ctx.close()
    alpha = records[mine.headers["trails-run-id"]]
    admin = records[every.headers["trails-run-id"]]
    assert alpha.levels == {"alpha": "protected"} and alpha.query is None
    assert admin.levels == {"alpha": "protected"}  # it read every scope, alpha among them
    assert admin.query is None
    assert refused.status_code == 400, refused.text
    [search] = [r for r in records.values() if isinstance(r, SearchRecord) and r.plan == "refused"]
    assert search.scopes == ["alpha"] and search.levels == {"alpha": "protected"}


def test_the_cli_records_levels_and_lists_runs_by_level(tmp_path):
    db = tmp_path / "kb"
    made = trails("--db", db, "init", "--model", "mock:16", "--security-level", "hr=protected",
                  "--json")
    assert made.exit_code == 0, made.stderr
    assert json.loads(made.stdout)["audit"]["levels"] == {"hr": "protected"}
    again = trails("--db", db, "init", "--security-level", "default=official",
                   "--digest-level", "protected")
    assert again.exit_code == 0, again.stderr
    recorded = json.loads((db / "trails.json").read_text())["audit"]
    assert recorded["levels"] == {"hr": "protected", "default": "official"}  # merged
    assert recorded["digest_levels"] == ["protected"]
    (tmp_path / "pay.txt").write_text("Salaries rose this year.\n")
    assert trails("--db", db, "ingest", tmp_path / "pay.txt", "--scope", "hr",
                  "--quiet").exit_code == 0
    assert trails("--db", db, "query", "salaries", "--scope", "hr").exit_code == 0
    assert trails("--db", db, "query", "salaries").exit_code == 0
    listed = trails("--db", db, "audit", "--level", "protected", "--json")
    assert listed.exit_code == 0, listed.stderr
    [run] = json.loads(listed.stdout)
    assert run["scopes"] == ["hr"] and run["levels"] == {"hr": "protected"}
    assert run["query"] is None
    for listing in (["--level", "protectd"], ["--level", "protectd", "--json"]):
        none = trails("--db", db, "audit", *listing)
        assert none.exit_code != 0
        if "--json" in listing:  # the error, as the one JSON object on stdout
            assert "'protectd' is no security level" in json.loads(none.stdout)["error"]["message"]
        else:
            assert none.stdout == ""
        assert "'protectd' is no security level" in none.stderr
        assert "official, protected" in none.stderr and "Traceback" not in none.stderr


@pytest.mark.parametrize("option", [["--security-level", "hr"], ["--security-level", "h r=x"],
                                    ["--digest-level", "top secret"]])
def test_the_cli_refuses_a_level_that_is_no_name_before_making_anything(tmp_path, option):
    result = trails("--db", tmp_path / "kb", "init", "--model", "mock:8", *option)
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "LEVEL" in result.stderr
    assert not (tmp_path / "kb").exists()
