"""``prune_expired`` / ``trails prune --expired``: exactly the expired documents leave both
stores, the rest stays retrievable, and every deletion passes through ``record_deletion``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.context import Context
from trails.errors import ConfigurationError
from trails.ingest import Document, ingest_all, maintenance
from trails.kg import IRI
from trails.kg.oxigraph import OxigraphGraph
from trails.vector.embedders.mock import MockEmbedder

UTC = dt.UTC
BASE = "trails://local/"
runner = CliRunner()


def doc(name: str, scope: str = "default") -> str:
    return f"{BASE}doc/{name}" if scope == "default" else f"{BASE}scope/{scope}/doc/{name}"


def triples_about(ctx: Context, iri: str) -> int:
    """Triples whose subject is the document or one of its chunks, in any graph."""
    rows = ctx.kg.query("SELECT (COUNT(*) AS ?n) WHERE { { ?d ?p ?o } UNION "
                        "{ ?c <https://schema.org/isPartOf> ?d ; ?p ?o } }", {"d": IRI(iri)})
    return int(rows.rows[0]["n"])


def vectors_of(ctx: Context, iri: str) -> list[str]:
    return [i for i in ctx.vectors.all_ids() if i.startswith(iri + "/v/")]


@pytest.fixture
def recorded(monkeypatch):
    """What reaches record_deletion, the one call site for auditing deletions."""
    calls: list[list[tuple[str, dt.datetime]]] = []
    monkeypatch.setattr(maintenance, "record_deletion",
                        lambda ctx, documents, reason, expired_at, caller: calls.append(
                            [(iri, expired_at[iri]) for iri in documents]))
    return calls


@pytest.fixture
def corpus(store_factory):
    embedder = MockEmbedder(dim=64)
    ctx = Context(OxigraphGraph(), store_factory.new(64, embedder.identity), embedder,
                  retention={"tmp": "P30D"})
    ingest_all([Document("gone", "gone", "Payroll export of March.",
                         metadata={"expires": "2020-03-31"}),
                Document("kept", "kept", "Payroll export of April.",
                         metadata={"expires": "2030-04-30"}),
                Document("plain", "plain", "Payroll policy.")], ctx=ctx)
    ingest_all([Document("draft", "draft", "Payroll draft.", metadata={"date": "2020-01-01"}),
                Document("fresh", "fresh", "Payroll fresh draft.",
                         metadata={"date": "2029-12-31"})], ctx=ctx, scope="tmp")
    # A triple a user added about an expired document: theirs, so it survives (ADR 0012).
    ctx.kg.update(f"INSERT DATA {{ <{doc('gone')}> <urn:x:reviewedBy> <urn:x:alice> }}")
    yield ctx
    ctx.close()


NOW = dt.datetime(2025, 1, 1, tzinfo=UTC)
EXPIRED = [(doc("gone"), dt.datetime(2020, 3, 31, tzinfo=UTC)),
           (doc("draft", "tmp"), dt.datetime(2020, 1, 31, tzinfo=UTC))]


def test_prune_removes_exactly_the_expired_documents_from_both_stores(corpus, recorded):
    ctx = corpus
    removed = ctx.prune_expired(now=NOW)
    assert sorted(tuple(r) for r in removed) == sorted(EXPIRED)
    assert recorded == [[tuple(r)] for r in removed]  # each before its deletion
    for iri, _ in EXPIRED:
        assert vectors_of(ctx, iri) == []
        assert triples_about(ctx, iri) == (1 if iri == doc("gone") else 0)  # the user's triple
    for iri in (doc("kept"), doc("plain"), doc("fresh", "tmp")):
        assert vectors_of(ctx, iri) and triples_about(ctx, iri) > 5
    assert ctx.verify().ok
    hits = retrieve("payroll", ctx, mode="vector", k=20, scope=["default", "tmp"], now=NOW)
    assert {h.iri.rsplit("/v/", 1)[0] for h in hits} == {doc("kept"), doc("plain"),
                                                         doc("fresh", "tmp")}
    assert ctx.prune_expired(now=NOW) == [] and len(recorded) == 2  # nothing left to record


def test_a_dry_run_lists_the_same_documents_and_deletes_nothing(corpus, recorded):
    ctx = corpus
    before = len(ctx.kg), ctx.vectors.count()
    assert sorted(tuple(r) for r in ctx.prune_expired(now=NOW, dry_run=True)) == sorted(EXPIRED)
    assert (len(ctx.kg), ctx.vectors.count()) == before and recorded == []


def test_later_moments_prune_later_expiries(corpus):
    later = dt.datetime(2031, 1, 1, tzinfo=UTC)
    assert {r.iri for r in corpus.prune_expired(now=later)} == {
        doc("gone"), doc("kept"), doc("draft", "tmp"), doc("fresh", "tmp")}
    assert corpus.verify().ok


def test_prune_needs_a_writable_context_unless_it_is_a_dry_run(tmp_path):
    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all([Document("a", "a", "x", metadata={"expires": "2001-01-01"})], ctx=ctx)
    with Context.open(root, read_only=True) as reader:
        assert [r.iri for r in reader.prune_expired(dry_run=True)] == [doc("a")]
        with pytest.raises(ConfigurationError, match="read-only"):
            reader.prune_expired()


# -- the command line --------------------------------------------------------------------------

def trails(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "old.md").write_text("---\nexpires: 2001-05-01\n---\nOld minutes.\n")
    (notes / "new.md").write_text("---\nexpires: 2999-05-01\n---\nNew minutes.\n")
    (notes / "plain.md").write_text("Plain minutes.\n")
    db = tmp_path / "kb"
    assert trails("--db", db, "init", "--model", "mock:32").exit_code == 0
    result = trails("--db", db, "ingest", notes, "-q")
    assert result.exit_code == 0, result.output
    return db


def test_cli_prune_expired_dry_run_then_prune(kb):
    dry = trails("--db", kb, "prune", "--expired", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout) == {"dry_run": True, "documents": [
        {"iri": doc("old.md"), "expires": "2001-05-01T00:00:00+00:00"}]}
    done = trails("--db", kb, "prune", "--expired")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        f"deleted {doc('old.md')} (expired 2001-05-01T00:00:00+00:00)",
        "1 expired document deleted"]
    again = trails("--db", kb, "prune", "--expired", "--json")
    assert json.loads(again.stdout) == {"dry_run": False, "documents": []}
    assert trails("--db", kb, "verify").exit_code == 0
    with Context.open(kb, read_only=True) as ctx:
        assert sorted(ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")) == [
            doc("new.md"), doc("plain.md")]


def test_cli_prune_without_what_to_prune_is_a_user_error(kb):
    result = trails("--db", kb, "prune")
    assert result.exit_code == 1
    assert "--expired" in result.stderr and "Traceback" not in result.stderr


def test_cli_a_bad_expires_in_front_matter_fails_that_file(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "bad.md").write_text("---\nexpires: end of quarter\n---\nText.\n")
    (notes / "good.md").write_text("Text.\n")
    db = tmp_path / "kb"
    trails("--db", db, "init", "--model", "mock:32")
    result = trails("--db", db, "ingest", notes, "-q")
    assert result.exit_code == 2
    assert "bad.md" in result.stderr and "expires" in result.stderr
    assert "2025-01-31" in result.stderr  # the format expected


def test_cli_init_records_retention_rules_beside_those_recorded(tmp_path):
    db = tmp_path / "kb"
    assert trails("--db", db, "init", "--model", "mock:32", "--retention", "tmp=P30D"
                  ).exit_code == 0
    assert trails("--db", db, "init", "--retention", "logs=P7D").exit_code == 0
    with Context.open(db, read_only=True) as ctx:
        assert dict(ctx.retention) == {"tmp": "P30D", "logs": "P7D"}
    bad = trails("--db", db, "init", "--retention", "tmp=30")
    assert bad.exit_code == 1 and "P30D" in bad.stderr
    bad = trails("--db", db, "init", "--retention", "tmp")
    assert bad.exit_code == 1 and "SCOPE=PERIOD" in bad.stderr


def test_a_retention_rule_lengthened_or_dropped_since_ingest_prunes_nothing_it_now_keeps(
        tmp_path, caplog):
    """A scope's rule went from 30 days to ten years (a legal hold), or away: the documents'
    recorded expiry still followed the old rule, and prune --expired deleted them."""
    now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    held, own = "trails://local/scope/tmp/doc/held", "trails://local/scope/tmp/doc/own"
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16),
                      retention={"tmp": "P30D", "gone": "P30D"}) as ctx:
        ingest_all([Document("held", "held", "Kept for a legal hold.",
                             metadata={"date": "2026-10-01"}),
                    Document("own", "own", "Expires by its own date.",
                             metadata={"date": "2026-10-01", "expires": "2026-11-15"})],
                   ctx=ctx, scope="tmp")
        ingest_all([Document("free", "free", "No rule any more.",
                             metadata={"date": "2026-10-01"})], ctx=ctx, scope="gone")
        assert len(ctx.prune_expired(now=now, dry_run=True)) == 3
    with Context.open(tmp_path / "kb", retention={"tmp": "P3650D"}) as ctx:
        assert [d.iri for d in ctx.prune_expired(now=now, dry_run=True)] == [own]
        assert "2 document(s) expired by a retention rule since lengthened" in caplog.text
        assert held in caplog.text
        assert [(d.iri, d.expires) for d in ctx.prune_expired(now=now)] == [
            (own, dt.datetime(2026, 11, 15, tzinfo=dt.UTC))]
        kept = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")
        assert sorted(kept) == sorted([held, "trails://local/scope/gone/doc/free"])
        assert ctx.verify().ok
    with Context.open(tmp_path / "kb", retention={"tmp": "P10D"}) as ctx:  # shorter again
        assert [d.iri for d in ctx.prune_expired(now=now)] == [held]
