"""Sync with the source: ``prune=True`` / ``trails ingest --prune`` deletes the documents whose
source files are gone, only those, and refuses when the ingested path itself is missing;
``trails delete`` deletes named documents."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.errors import InvalidArgumentError
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


# -- records taken out of a file that stays (JSONL) ---------------------------------------------

def _records(path, records):
    import json
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def two_records(tmp_path):
    """A folder holding r.jsonl with the records a and b."""
    notes = tmp_path / "notes"
    notes.mkdir()
    _records(notes / "r.jsonl", [{"id": "a", "text": "Rails apples."},
                                 {"id": "b", "text": "Rails bananas."}])
    return notes


def _ids(ctx):
    rows = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }")
    return sorted(str(d).rsplit("%23", 1)[-1] for d in rows.column("d"))


def test_a_record_taken_out_of_a_jsonl_file_is_pruned_and_recorded(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    _records(notes / "r.jsonl", [{"id": "a", "text": "Rails apples."},
                                 {"id": "b", "text": "Rails bananas."},
                                 {"id": "c", "text": "Rails cherries."}])
    from trails.context import Context
    from trails.vector import MockEmbedder

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all(notes, ctx=ctx)
        _records(notes / "r.jsonl", [{"id": "a", "text": "Rails apples."},
                                     {"id": "c", "text": "Rails cherries, ripe."}])
        assert ingest_all(notes, ctx=ctx).pruned == 0 and _ids(ctx) == ["a", "b", "c"]
        stats = ingest_all(notes, ctx=ctx, prune=True)
        assert stats.pruned == 1 and _ids(ctx) == ["a", "c"]
        assert "bananas" not in " ".join(h.snippet for h in retrieve("rails", ctx, k=10))
        (record,) = [r for r in ctx.audit.pending() if r.kind == "deletion"]
        assert record.documents == ["trails://local/doc/r.jsonl%23b"]
        assert record.reason.startswith("no longer in its source: ")
        assert ctx.verify().ok


def test_a_jsonl_file_with_a_failing_line_prunes_none_of_its_records(two_records):
    notes = two_records
    with fresh_context() as ctx:
        ingest_all(notes, ctx=ctx)
        # b's line broken in an edit: its record may still be meant; nothing of the file goes.
        (notes / "r.jsonl").write_text('{"id": "a", "text": "Rails apples."}\n{"id": "b", "te\n')
        stats = ingest_all(notes, ctx=ctx, prune=True)
        assert stats.failed == 1 and stats.pruned == 0 and _ids(ctx) == ["a", "b"]
        # a record without text, or an id met twice, is a failing line too
        _records(notes / "r.jsonl", [{"id": "a", "text": "Rails apples."}, {"id": "b"}])
        assert ingest_all(notes, ctx=ctx, prune=True).pruned == 0 and _ids(ctx) == ["a", "b"]
        _records(notes / "r.jsonl", [{"id": "a", "text": "Rails apples."},
                                     {"id": "a", "text": "Again."}])
        assert ingest_all(notes, ctx=ctx, prune=True).pruned == 0 and _ids(ctx) == ["a", "b"]


def test_an_emptied_jsonl_file_is_a_warning_and_prunes_its_records(tmp_path):
    notes, other = tmp_path / "notes", tmp_path / "other"
    notes.mkdir(), other.mkdir()
    _records(notes / "r.jsonl", [{"id": "a", "text": "Rails apples."}])
    _records(other / "s.jsonl", [{"id": "z", "text": "Rails zebras."}])
    with fresh_context() as ctx:
        ingest_all(notes, ctx=ctx)
        ingest_all(other, ctx=ctx)
        (notes / "r.jsonl").write_text("\n")
        stats = ingest_all(notes, ctx=ctx)
        assert stats.pruned == 0 and [m for _, m in stats.warnings] == [
            "a JSONL file with no record: nothing to ingest"]
        assert ingest_all(notes, ctx=ctx, prune=True).pruned == 1
        assert _ids(ctx) == ["z"]  # a file of another root is never read by this run


def test_records_of_a_jsonl_file_this_run_did_not_read_are_kept(two_records):
    notes = two_records
    with fresh_context() as ctx:
        ingest_all(notes, ctx=ctx)
        ingest_all(notes, ctx=ctx, scope="team")
        _records(notes / "r.jsonl", [{"id": "a", "text": "Rails apples."}])
        assert ingest_all(notes, ctx=ctx, prune=True, exclude=["*.jsonl"]).pruned == 0
        assert ingest_all(notes, ctx=ctx, prune=True).pruned == 1
        team = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }", scopes=["team"])
        assert len(team) == 2  # the same file ingested into another scope: pruned there alone


def test_the_command_line_names_a_jsonl_files_fields(tmp_path):
    db, data = tmp_path / "kb", tmp_path / "c.jsonl"
    _records(data, [{"_id": "4983", "contents": "Rails white matter."}])
    assert runner.invoke(app, ["--db", str(db), "init", "--model", "mock:16"]).exit_code == 0
    result = runner.invoke(app, ["--db", str(db), "ingest", str(data), "-q"])
    assert result.exit_code == 2 and "--jsonl-text-field" in result.output + str(result.stderr)
    result = runner.invoke(app, ["--db", str(db), "ingest", str(data), "-q",
                                 "--jsonl-text-field", "contents", "--jsonl-id-field", "_id"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["--db", str(db), "sparql",
                                 "SELECT ?d WHERE { ?d a trails:Document }"])
    assert "c.jsonl%234983" in result.output


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sets(st.sampled_from("abcdef")), st.booleans(), st.booleans()),
                min_size=1, max_size=5))
def test_after_a_prune_the_records_are_those_in_the_file_unless_a_line_failed(tmp_path_factory,
                                                                              runs):
    """Each run writes some records (a broken line when asked) and ingests, pruning or not:
    a pruning run over a file without a broken line leaves exactly its records; any other run
    only adds."""
    notes = tmp_path_factory.mktemp("notes")
    with fresh_context() as ctx:
        expected: set[str] = set()
        for ids, broken, prune in runs:
            _records(notes / "r.jsonl", [{"id": i, "text": f"Rails record {i}."}
                                         for i in sorted(ids)])
            if broken:
                with (notes / "r.jsonl").open("a") as file:
                    file.write("{not json\n")
            ingest_all(notes, ctx=ctx, prune=prune)
            expected = ids if prune and not broken else expected | ids
            assert _ids(ctx) == sorted(expected)


def test_a_file_read_under_another_id_prunes_none_of_its_documents(tmp_path):
    """The same files reached through their folder's parent, then through the folder itself or
    named alone: their ids differ ("sub/r.jsonl#a", "r.jsonl#a"), and what the earlier runs
    wrote is still in the files, so a pruning run keeps it."""
    kb = tmp_path / "kb"
    (kb / "sub").mkdir(parents=True)
    _records(kb / "sub" / "r.jsonl", [{"id": "a", "text": "Rails apples."},
                                      {"id": "b", "text": "Rails bananas."}])
    (kb / "sub" / "g.md").write_text("# Guide\n\nRails guide.\n")
    with fresh_context() as ctx:
        ingest_all(kb, ctx=ctx)
        assert ingest_all(kb / "sub", ctx=ctx, prune=True).pruned == 0
        assert ingest_all(kb / "sub" / "g.md", ctx=ctx, prune=True).pruned == 0
        docs = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")
        assert sorted(str(d).removeprefix("trails://local/doc/") for d in docs) == [
            "g.md", "r.jsonl%23a", "r.jsonl%23b", "sub/g.md", "sub/r.jsonl%23a",
            "sub/r.jsonl%23b"]
        # a record taken out is still pruned, under the id this run read the file with ...
        _records(kb / "sub" / "r.jsonl", [{"id": "a", "text": "Rails apples."}])
        assert ingest_all(kb / "sub", ctx=ctx, prune=True).pruned == 1
        # ... and under the other one, read through the parent folder
        assert ingest_all(kb, ctx=ctx, prune=True).pruned == 1
        docs = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")
        assert sorted(str(d).removeprefix("trails://local/doc/") for d in docs) == [
            "g.md", "r.jsonl%23a", "sub/g.md", "sub/r.jsonl%23a"]
        assert ctx.verify().ok


def test_an_emptied_jsonl_file_prunes_its_records_under_every_id(tmp_path):
    kb = tmp_path / "kb"
    (kb / "sub").mkdir(parents=True)
    _records(kb / "sub" / "r.jsonl", [{"id": "a", "text": "Rails apples."}])
    with fresh_context() as ctx:
        ingest_all(kb, ctx=ctx)
        ingest_all(kb / "sub", ctx=ctx)
        (kb / "sub" / "r.jsonl").write_text("")
        assert ingest_all(kb / "sub", ctx=ctx, prune=True).pruned == 2
        assert len(ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }")) == 0


def test_an_empty_folder_prunes_nothing_and_says_why(tree, tmp_path):
    """An empty folder is what a drive or share that is not mounted looks like: its files
    are not gone, and pruning it would delete every document read from it."""
    docs, other = tree
    (other / "y.md").write_text("Giraffes, not rails.")
    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        ingest_all(other, ctx=ctx)
        for path in sorted(docs.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        (other / "z.md").unlink()
        with pytest.raises(InvalidArgumentError, match="empty folder.*nothing was pruned"):
            list(ingest([other, docs], ctx=ctx, prune=True))
        assert sources(ctx) == ["a.md", "b.md", "c.md", "y.md", "z.md"]
        assert ctx.verify().ok
        (docs / "new.md").write_text("A note written since.")
        assert ingest_all(docs, ctx=ctx, prune=True).pruned == 3  # not empty: pruned as ever
    db = tmp_path / "kb"
    (docs / "new.md").unlink()
    (docs / "a.md").write_text("Rails routing guide.")
    assert runner.invoke(app, ["--db", str(db), "init", "--model", "mock:16"]).exit_code == 0
    assert runner.invoke(app, ["--db", str(db), "ingest", str(docs)]).exit_code == 0
    (docs / "a.md").unlink()
    result = runner.invoke(app, ["--db", str(db), "ingest", str(docs), "--prune"])
    assert result.exit_code == 1 and "empty folder" in result.output + result.stderr
    assert "Traceback" not in result.output + result.stderr
    result = runner.invoke(app, ["--db", str(db), "sparql",
                                 "SELECT ?s WHERE { ?d a trails:Document ; trails:source ?s }"])
    assert "a.md" in result.output


def test_an_empty_folder_without_documents_from_it_is_no_error(tmp_path):
    empty = tmp_path / "inbox"
    empty.mkdir()
    with fresh_context() as ctx:
        assert ingest_all(empty, ctx=ctx, prune=True).pruned == 0


@pytest.mark.parametrize("error", [errno.EACCES, errno.ESTALE, errno.EIO])
def test_a_file_that_cannot_be_looked_at_is_not_gone(tree, monkeypatch, error):
    """A folder this process may not enter, a network share whose handle went stale, a
    failing disk: its files are not known to be gone, so their documents stay (they were
    pruned, or the prune failed with a bare OSError, depending on the Python version)."""
    docs, _ = tree
    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        (docs / "b.md").unlink()
        stat = os.stat
        hidden = str(docs / "sub")

        def refused(path, *args, **kwargs):
            if os.fspath(path).startswith(hidden + os.sep):
                raise OSError(error, os.strerror(error), os.fspath(path))
            return stat(path, *args, **kwargs)

        monkeypatch.setattr(os, "stat", refused)
        events = list(ingest(docs, ctx=ctx, prune=True, exclude=["sub"]))
        monkeypatch.undo()
        assert [e.source.rsplit("/", 1)[-1] for e in events if isinstance(e, DocumentPruned)] \
            == ["b.md"]
        assert sources(ctx) == ["a.md", "c.md"]


def test_files_removed_from_a_folder_that_keeps_its_subfolders_are_pruned(tree):
    """Only a folder holding nothing at all reads as not mounted: one whose files were
    removed and whose subfolders stay is pruned as ever."""
    docs, _ = tree
    with fresh_context() as ctx:
        ingest_all(docs, ctx=ctx)
        for name in ("a.md", "b.md", "sub/c.md"):
            (docs / name).unlink()
        assert ingest_all(docs, ctx=ctx, prune=True).pruned == 3
        assert sources(ctx) == []
