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


def test_documents_whose_source_label_looks_like_a_path_are_never_pruned(tree, monkeypatch):
    docs, _ = tree
    monkeypatch.chdir(docs)
    from trails.ingest import Document
    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        # Given from Python (or the service) with labels that resolve under the folder and
        # name no existing file: they came from no file, so no file's absence removes them.
        given = [Document("runbook", "runbook.md", "Rails runbook."),
                 Document("c-note", "notes/c.md", "Rails note."),
                 Document("absolute", str(docs / "gone.md"), "Rails absolute label.")]
        ingest_all(given, ctx=ctx)
        (docs / "a.md").unlink()
        events = list(ingest(docs, ctx=ctx, prune=True))
        assert [e.source.rsplit("/", 1)[-1] for e in events
                if isinstance(e, DocumentPruned)] == ["a.md"]
        assert {"runbook.md", "c.md", "gone.md"} <= set(sources(ctx))
        assert ingest_all(".", ctx=ctx, prune=True).pruned == 0


def test_documents_ingested_before_files_were_recorded_are_kept_until_ingested_again(tree):
    docs, _ = tree
    from trails.ingest import Document
    from trails.ingest.events import DocumentMetadataUpdated
    with fresh_context() as ctx:
        # What an older ingest wrote: the file's path as the label, no recorded file.
        old = [Document(name, str(docs / name), (docs / name).read_text())
               for name in ("a.md", "b.md")]
        ingest_all(old, ctx=ctx)
        (docs / "a.md").unlink()
        events = list(ingest(docs, ctx=ctx, prune=True))
        assert not [e for e in events if isinstance(e, DocumentPruned)]  # no guessing
        assert "a.md" in sources(ctx)
        # Ingesting the folder recorded b.md's file (a metadata update, no re-embedding).
        assert [e.doc_iri for e in events if isinstance(e, DocumentMetadataUpdated)] == [
            "trails://local/doc/b.md"]
        (docs / "b.md").unlink()
        assert ingest_all(docs, ctx=ctx, prune=True).pruned == 1
        assert "b.md" not in sources(ctx) and "a.md" in sources(ctx)


def test_prune_judges_recorded_files_whatever_the_working_directory(tree, tmp_path,
                                                                    monkeypatch):
    docs, other = tree
    (other / "docs").mkdir()  # the same relative name, somewhere else
    monkeypatch.chdir(tmp_path)
    with fresh_context() as ctx:
        ingest_all("docs", ctx=ctx)
        monkeypatch.chdir(other)  # "docs" now names other/docs, which holds nothing
        assert ingest_all("docs", ctx=ctx, prune=True).pruned == 0
        assert sources(ctx) == ["a.md", "b.md", "c.md"]
        (docs / "b.md").unlink()
        assert ingest_all(docs, ctx=ctx, prune=True).pruned == 1
        assert sources(ctx) == ["a.md", "c.md"]


def test_a_file_restored_while_the_prune_runs_keeps_its_document(tree, monkeypatch):
    """The prune found b.md gone; before it deletes, the user puts the file back. It checks
    again once no other write runs, and the document stays."""
    import threading

    from trails.ingest import prune

    docs, _ = tree
    there, go = threading.Event(), threading.Event()
    under = prune._under

    def paused(file, roots):
        if threading.current_thread().name == "prune" and not there.is_set():
            there.set()
            assert go.wait(10)
        return under(file, roots)

    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        text = (docs / "b.md").read_text()
        (docs / "b.md").unlink()
        monkeypatch.setattr(prune, "_under", paused)
        results: list[object] = []
        pruning = threading.Thread(name="prune", daemon=True, target=lambda: results.append(
            ingest_all(docs, ctx=ctx, prune=True)))
        pruning.start()
        assert there.wait(10)
        (docs / "b.md").write_text(text)  # restored
        go.set()
        pruning.join(30)
        assert not pruning.is_alive() and results and results[0].pruned == 0
        assert "b.md" in sources(ctx) and ctx.verify().ok
