"""A run is recorded once: a log line that claims a recorded run's id with other content (a
hand-edited copy, say) neither replaces the run's record in `show` or a replay, nor is merged
into it by a fold; it is kept aside, named, and nothing is lost."""

from __future__ import annotations

import dataclasses
import json

import pyoxigraph as ox
import pytest

from trails import retrieve
from trails.context import Context
from trails.errors import ContextDamagedError
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder


@pytest.fixture()
def recorded(tmp_path):
    ctx = Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16))
    ingest_all([Document(f"d{i}", f"d{i}.md", f"pump seal report {i}") for i in range(3)],
               ctx=ctx, scope="legal")
    run = retrieve("pump seal", ctx, scope="legal", caller="analyst").run_id
    ctx.audit.fold()
    yield ctx, run, tmp_path / "kb" / "audit"
    ctx.close()


def _forge(ctx, run, folder):
    forged = ctx.audit.get(run).to_json()
    forged["caller"] = "someone-else"
    forged["hits"] = forged["hits"][:1]
    (folder / "9-forged.jsonl").write_text(json.dumps(forged) + "\n")


def _callers(ctx, run):
    rows = ctx.kg.query("SELECT ?who WHERE { GRAPH <urn:trails:audit> { "
                        "?run prov:wasAssociatedWith/rdfs:label ?who } }",
                        {"run": ox.NamedNode(f"urn:trails:run:{run}")})
    return sorted(str(row["who"]) for row in rows)


def test_a_pending_line_claiming_a_recorded_run_does_not_replace_its_record(recorded):
    ctx, run, folder = recorded
    hits = len(ctx.audit.get(run).hits)
    _forge(ctx, run, folder)
    shown = ctx.audit.get(run)
    assert (shown.caller, len(shown.hits)) == ("analyst", hits)
    [listed] = [r for r in ctx.audit.activities(limit=None) if r.run_id == run]
    assert listed.caller == "analyst"


def test_a_fold_keeps_the_conflicting_copy_aside_and_the_graph_records_the_run_once(recorded):
    ctx, run, folder = recorded
    failures = ctx.audit.failures
    _forge(ctx, run, folder)
    ctx.audit.fold()
    assert _callers(ctx, run) == ["analyst"]
    assert ctx.audit.get(run).caller == "analyst"
    assert ctx.audit.failures == failures + 1
    [aside] = (folder / "rejected.txt").read_text().splitlines()
    assert json.loads(aside)["caller"] == "someone-else"  # kept, not lost


def test_folding_the_same_record_again_is_no_conflict(recorded):
    ctx, run, folder = recorded  # a fold that crashed before deleting its file folds again
    failures = ctx.audit.failures
    (folder / "9-again.jsonl").write_text(json.dumps(ctx.audit.get(run).to_json()) + "\n")
    ctx.audit.fold()
    assert _callers(ctx, run) == ["analyst"]
    assert ctx.audit.failures == failures
    assert not (folder / "rejected.txt").exists()


def test_a_run_the_graph_holds_two_records_of_is_refused_naming_it(recorded):
    ctx, run, _ = recorded
    record = ctx.audit.get(run)
    other = dataclasses.replace(record, caller="someone-else")
    literal = ox.Literal(json.dumps(other.to_json()),
                         datatype=ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"))
    # written past trails' guard, as only the raw store can
    ctx.kg.store.add(ox.Quad(ox.NamedNode(record.iri), ox.NamedNode("https://trails.dev/ns/audit#record"),
                             literal, ox.NamedNode("urn:trails:audit")))
    with pytest.raises(ContextDamagedError, match=run):
        ctx.audit.get(run)
