"""A replay asks what the run asked of a failed vector side: the run's ``fallback`` is kept
in its record (``audit:fallback``) and replayed. A record from before it was kept (no
``fallback`` in its JSON) still reads, folds and replays: with the default, and a note."""

from __future__ import annotations

import json

import pyoxigraph as ox
import pytest
import rdflib
from pyshacl import validate

from conftest import ROOT
from trails import replay, retrieve
from trails.audit import SearchRecord
from trails.audit.records import from_json
from trails.context import Context
from trails.errors import EmbeddingError
from trails.ingest import Document, ingest_all
from trails.kg import IRI
from trails.testing import MockEmbedder

SHAPES = rdflib.Graph().parse(ROOT / "ontologies" / "trails-audit-shapes.ttl", format="turtle")
NOT_RECORDED = ("the run's fallback was not recorded (a record from before it was kept): "
                "replayed with the default, fallback='auto'")


@pytest.fixture
def kb(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all([Document(id=f"d{i}", source=f"d{i}.md", text=f"Pump seal report {i}.")
                    for i in range(4)], ctx=ctx)
    return tmp_path / "kb"


def open_kb(kb) -> Context:
    return Context.open(kb, embedder=MockEmbedder(dim=32))


def embedder_down(ctx: Context, monkeypatch) -> None:
    def down(*_args, **_kwargs):
        raise EmbeddingError("the embedding service is down")

    for method in ("embed", "embed_many", "embed_array", "embed_batch"):
        monkeypatch.setattr(ctx.embedder, method, down)


def fallbacks(ctx: Context, run: str) -> list[str]:
    ctx.audit.fold()
    rows = ctx.kg.query("SELECT ?f WHERE { GRAPH <urn:trails:audit> { ?run audit:fallback ?f } }",
                        {"run": IRI(f"urn:trails:run:{run}")})
    return [str(row["f"]) for row in rows]


@pytest.mark.parametrize(("fallback", "kept"), [
    ("auto", "auto"), ("keyword", "keyword"), ("skip", "skip"), (None, "none")])
def test_the_fallback_is_recorded_in_the_record_and_its_prov(kb, fallback, kept):
    with open_kb(kb) as ctx:
        run = retrieve("pump seal", ctx, fallback=fallback).run_id
        assert ctx.audit.get(run).fallback == kept
        assert fallbacks(ctx, run) == [kept]


def test_a_search_given_no_fallback_records_the_default(kb):
    with open_kb(kb) as ctx:
        run = retrieve("pump seal", ctx).run_id
        assert ctx.audit.get(run).fallback == "auto"


def test_a_replay_skips_as_the_run_asked_when_the_embedder_fails(kb, monkeypatch):
    # The replay ran with fallback="auto": a keyword answer the run would never have given.
    with open_kb(kb) as ctx:
        run = retrieve("pump seal", ctx, fallback="skip").run_id
        embedder_down(ctx, monkeypatch)
        report = replay(ctx, run)
        assert report.result.plan == "skipped" and len(report.result) == 0
        assert "skipped: the embedder failed (fallback='skip')" in report.result.notes
        assert ctx.audit.get(report.result.run_id).fallback == "skip"


def test_a_replay_raises_as_the_run_asked_when_the_embedder_fails(kb, monkeypatch):
    with open_kb(kb) as ctx:
        run = retrieve("pump seal", ctx, fallback=None).run_id
        embedder_down(ctx, monkeypatch)
        with pytest.raises(EmbeddingError, match=r"fallback=None"):
            replay(ctx, run)


def test_the_command_line_replays_the_recorded_fallback(kb, monkeypatch):
    from typer.testing import CliRunner

    from trails.cli import app

    with open_kb(kb) as ctx:
        run = retrieve("pump seal", ctx, fallback="skip").run_id
    monkeypatch.setattr(MockEmbedder, "embed", lambda *_a, **_k: (_ for _ in ()).throw(
        EmbeddingError("the embedding service is down")))
    shown = CliRunner().invoke(app, ["--db", str(kb), "replay", run])
    assert shown.exit_code == 0, shown.output
    with open_kb(kb) as ctx:
        [replayed] = [r for r in ctx.audit.activities()
                      if isinstance(r, SearchRecord) and r.replay_of == f"urn:trails:run:{run}"]
    assert (replayed.plan, replayed.fallback, replayed.hits) == ("skipped", "skip", [])


def old_record(kb, ctx: Context) -> SearchRecord:
    """A search recorded as it was before the fallback was kept: its JSON line without it,
    in a log file of its own."""
    made = ctx.audit.get(retrieve("pump seal", ctx).run_id)
    line = made.to_json()
    del line["fallback"]
    line["run_id"] = "0123456789abcdef0123456789abcdef"
    (kb / "audit" / "1-old.jsonl").write_text(json.dumps(line) + "\n")
    return from_json(line)  # type: ignore[return-value]


def test_an_old_record_without_the_fallback_reads_folds_and_replays_with_the_default(kb):
    with open_kb(kb) as ctx:
        old = old_record(kb, ctx)
        assert old.fallback is None
        ctx.audit.fold()
        assert ctx.audit.get(old.run_id) == old
        assert fallbacks(ctx, old.run_id) == []
        report = replay(ctx, old.run_id)
        assert report.identical and NOT_RECORDED in report.notes
        assert ctx.audit.get(report.result.run_id).fallback == "auto"
        kept = ctx.kg.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <urn:trails:audit> "
                            "{ ?s ?p ?o } }")
    graph = rdflib.Graph().parse(data="".join(f"{t.subject} {t.predicate} {t.object} .\n"
                                              for t in kept), format="nt")
    ok, _, text = validate(graph, shacl_graph=SHAPES, inference="none")
    assert ok, text  # the old record and the new ones hold to the shapes alike


def test_a_replay_of_a_recorded_fallback_adds_no_note(kb):
    with open_kb(kb) as ctx:
        run = retrieve("pump seal", ctx, fallback="keyword").run_id
        assert NOT_RECORDED not in replay(ctx, run).notes


def test_the_shapes_refuse_a_fallback_that_is_none_of_the_choices(kb):
    with open_kb(kb) as ctx:
        run = retrieve("pump seal", ctx).run_id
        ctx.audit.fold()
        kept = list(ctx.kg.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <urn:trails:audit> "
                                 "{ ?s ?p ?o } }"))
    iri = f"urn:trails:run:{run}"
    text = "".join(f"{t.subject} {t.predicate} "
                   f"{ox.Literal('retry') if str(t.predicate).endswith('#fallback>') else t.object}"
                   f" .\n" for t in kept)
    assert f"<{iri}> <https://trails.dev/ns/audit#fallback> \"retry\"" in text
    ok, _, _ = validate(rdflib.Graph().parse(data=text, format="nt"), shacl_graph=SHAPES,
                        inference="none")
    assert not ok
