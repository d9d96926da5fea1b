"""A read-only ``verify()`` beside the writer reads one committed state of the vector store.

``trails verify`` without ``--repair`` opens the context read-only so that it runs while
another process writes (docs/cli.md). It reads the store's versions, then the graph, then the
store's rows: a commit landing between those reads made it compare two states of the store
that never stood together, and report damage (a document recorded with a chunk and no live
vector) that was never on the disk. Here the writer deletes a document just between the reads.
"""

from __future__ import annotations

import pytest

from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.ingest import maintenance as maintenance_module
from trails.testing import MockEmbedder

DOC = "trails://local/doc/a"


@pytest.fixture
def writer(tmp_path):
    ctx = Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=8))
    docs = [Document(id=name, text=f"Rails note {name} about routing.", source=name)
            for name in ("a", "b")]
    assert ingest_all(docs, ctx=ctx).failed == 0
    yield ctx
    ctx.close()


def test_a_delete_between_verifys_reads_is_not_reported_as_damage(writer, monkeypatch):
    real = maintenance_module._graph_chunks
    deleted: list[bool] = []

    def graph_chunks(kg, *args):
        if not deleted and kg is not writer.kg:  # the writer's whole delete lands between
            deleted.append(False)                 # the reader's two reads of the store
            deleted[0] = writer.delete_document(DOC)
        return real(kg, *args)

    with Context.open(writer.directory, read_only=True) as reader:
        monkeypatch.setattr(maintenance_module, "_graph_chunks", graph_chunks)
        report = reader.verify()
    assert deleted == [True]
    assert report.ok, report
    assert report.count_mismatches == []
    assert report.chunks_without_vectors == []


def test_the_writers_own_verify_after_the_delete_is_clean(writer):
    assert writer.delete_document(DOC)
    report = writer.verify()
    assert report.ok, report


def test_trails_verify_beside_a_writer_says_the_writer_is_at_work(writer, tmp_path):
    """What a writer has not finished reads as damage to a read-only verify: the command says
    a writer holds the context, so nobody repairs a commit in progress; alone, it does not."""
    from _cli import run_trails

    db = tmp_path / "ctx"
    orphan = "INSERT DATA { <trails://local/doc/half> a trails:Document }"
    writer.kg.update(orphan)  # a document the writer is midway through, as verify sees it
    beside = run_trails("--db", db, "verify")
    assert beside.returncode == 2, beside
    assert "another process is writing this context" in beside.stderr
    assert "Traceback" not in beside.stderr
    as_json = run_trails("--db", db, "verify", "--json")
    assert '"being_written": true' in as_json.stdout
    writer.close()
    alone = run_trails("--db", db, "verify")
    assert alone.returncode == 2 and "another process" not in alone.stderr
