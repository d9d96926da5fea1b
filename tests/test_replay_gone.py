"""A replay says why a hit is gone when the trail or the graph can tell: its document was
deleted (the deletion's record is named), has expired, or holds a new version whose chunk is
found instead; a hit merely ranked out gets no such note."""

from __future__ import annotations

import pytest

from trails import replay, retrieve
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder

DOC = "trails://local/scope/legal/doc/"


def _docs(**changed):
    return [Document(f"d{i}", f"d{i}.md", changed.get(f"d{i}", f"pump seal failure {i}"),
                     metadata=changed.get(f"meta{i}", {}))
            for i in range(3)]


def _searched(tmp_path):
    ctx = Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16))
    ingest_all(_docs(), ctx=ctx, scope="legal")
    result = retrieve("pump seal failure", ctx, scope="legal", k=3)
    assert len(result) == 3
    return ctx, result.run_id


def _gone_note(report, document):
    [note] = [n for n in report.notes if f"{DOC}{document}/" in n]
    return note


@pytest.mark.parametrize("folded", [True, False])
def test_a_deleted_document_is_named_with_its_deletion(tmp_path, folded):
    ctx, run = _searched(tmp_path)
    with ctx:
        ctx.delete_document(f"{DOC}d1")
        [deletion] = [r for r in ctx.audit.pending() if r.kind == "deletion"]
        if folded:
            ctx.audit.fold()
        report = replay(ctx, run)
    assert [iri for iri, _ in report.gone if "/doc/d1/" in iri]
    note = _gone_note(report, "d1")
    assert "deleted since the run" in note and deletion.run_id in note


def test_an_expired_document_is_named(tmp_path):
    ctx, run = _searched(tmp_path)
    with ctx:
        ingest_all(_docs(meta2={"expires": "2020-01-01"}), ctx=ctx, scope="legal")
        report = replay(ctx, run)
    assert "has expired" in _gone_note(report, "d2")


def test_a_new_version_of_a_document_is_named(tmp_path):
    ctx, run = _searched(tmp_path)
    with ctx:
        ingest_all(_docs(d0="pump seal failure 0, revised"), ctx=ctx, scope="legal")
        report = replay(ctx, run)
    [(new, rank)] = report.new
    assert "/doc/d0/" in new
    note = [n for n in report.notes if "new version" in n]
    assert len(note) == 1 and f"{DOC}d0" in note[0] and f"rank {rank} now" in note[0]


def test_an_unchanged_replay_has_no_note(tmp_path):
    ctx, run = _searched(tmp_path)
    with ctx:
        report = replay(ctx, run)
    assert report.identical and report.notes == []
