"""Sync with the source: ``prune=True`` / ``trails ingest --prune`` deletes the documents whose
source files are gone, only those, and refuses when the ingested path itself is missing;
``trails delete`` deletes named documents."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.ingest import DocumentPruned, ingest, ingest_all
from trails.testing import fresh_context

runner = CliRunner()


@pytest.fixture
def tree(tmp_path):
    docs, other = tmp_path / "docs", tmp_path / "other"
    docs.mkdir(), other.mkdir()
    for name, text in (("a.md", "Rails routing guide."), ("b.md", "Rails caching guide."),
                       ("sub/c.md", "Rails jobs guide.")):
        (docs / name).parent.mkdir(exist_ok=True)
        (docs / name).write_text(text)
    (other / "z.md").write_text("Elephants, not rails.")
    return docs, other


def sources(ctx):
    rows = ctx.kg.query("SELECT ?s WHERE { ?d a trails:Document ; trails:source ?s }")
    return sorted(str(s).rsplit("/", 1)[-1] for s in rows.column("s"))


def test_prune_deletes_only_documents_whose_source_is_gone(tree):
    docs, other = tree
    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        ingest_all(other, ctx=ctx, scope="zoo")
        (docs / "b.md").unlink()
        (docs / "sub" / "c.md").unlink()
        events = list(ingest(docs, ctx=ctx, prune=True))
        pruned = sorted(e.source.rsplit("/", 1)[-1] for e in events
                        if isinstance(e, DocumentPruned))
        assert pruned == ["b.md", "c.md"]
        assert sources(ctx) == ["a.md", "z.md"]  # the other root and scope are untouched
        assert {h.source.rsplit("/", 1)[-1] for h in retrieve("rails guide", ctx, k=10)} == {"a.md"}
        assert ctx.verify().ok
        assert ingest_all(docs, ctx=ctx, prune=True).pruned == 0


def test_without_prune_nothing_is_deleted_and_excluded_files_are_kept(tree):
    docs, _ = tree
    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        (docs / "a.md").unlink()
        assert ingest_all(docs, ctx=ctx).pruned == 0 and "a.md" in sources(ctx)
        # b.md still exists: excluded from this run, it is not gone, so it stays.
        stats = ingest_all(docs, ctx=ctx, prune=True, exclude=["b.md"])
        assert stats.pruned == 1 and "1 pruned" in stats.summary()
        assert sources(ctx) == ["b.md", "c.md"]


def test_prune_refuses_a_missing_path_or_documents(tree, tmp_path):
    docs, _ = tree
    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        with pytest.raises(ValueError, match="does not exist"):
            list(ingest(tmp_path / "dcos", ctx=ctx, prune=True))
        from trails.ingest import Document
        with pytest.raises(ValueError, match="paths"):
            list(ingest([Document("x", "mem", "text")], ctx=ctx, prune=True))
        assert sources(ctx) == ["a.md", "b.md", "c.md"]


def test_the_command_line_prunes_and_deletes(tree, tmp_path):
    docs, _ = tree
    db = tmp_path / "kb"
    assert runner.invoke(app, ["--db", str(db), "init", "--model", "mock:16"]).exit_code == 0
    assert runner.invoke(app, ["--db", str(db), "ingest", str(docs)]).exit_code == 0
    (docs / "b.md").unlink()
    result = runner.invoke(app, ["--db", str(db), "ingest", str(docs), "--prune"])
    assert result.exit_code == 0 and "1 pruned" in result.output
    iri = "trails://local/doc/a.md"
    result = runner.invoke(app, ["--db", str(db), "delete", iri, "trails://local/doc/nope"])
    assert result.exit_code == 1 and "not a document" in result.output + str(result.stderr)
    result = runner.invoke(app, ["--db", str(db), "delete", iri])
    assert result.exit_code == 0 and f"deleted {iri}" in result.output
    result = runner.invoke(app, ["--db", str(db), "sparql",
                                 "SELECT ?s WHERE { ?d a trails:Document ; trails:source ?s }"])
    assert "c.md" in result.output and "a.md" not in result.output and "b.md" not in result.output


def test_documents_given_from_python_are_never_pruned(tree, monkeypatch):
    docs, _ = tree
    monkeypatch.chdir(docs)
    with fresh_context() as ctx:
        from trails.ingest import Document
        ingest_all([Document("crm", "crm-export", "Rails customer export.")], ctx=ctx)
        ingest_all(".", ctx=ctx)
        assert ingest_all(".", ctx=ctx, prune=True).pruned == 0
        assert "crm-export" in sources(ctx)
