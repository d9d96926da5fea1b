"""No deletion without its record: every path that deletes documents for a user (``trails
delete``, ``prune --expired``, ``ingest --prune``, the service, which calls
``ctx.delete_document``) writes the audit record of a document before removing anything of
it, so a kill at any moment leaves no deleted document unrecorded, and a record that cannot
be written stops the deletion."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from trails.audit import AUDIT_DIRECTORY
from trails.context import Context
from trails.errors import InvalidArgumentError, StorageError
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder, fresh_context

NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
NAMES = ["a.md", "b.md", "c.md", "d.md"]


class Killed(BaseException):
    """A kill in the middle of a deletion (nothing catches it)."""


def build(ctx: Context, folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    for name in NAMES:
        (folder / name).write_text(f"---\nexpires: 2020-01-01\n---\nNote {name} on rails.\n")
    ingest_all(folder, ctx=ctx)


def documents(ctx: Context) -> set[str]:
    return set(ctx.vectors.current_versions())


def recorded(ctx: Context) -> set[str]:
    return {doc for r in ctx.audit.pending() if r.kind == "deletion" for doc in r.documents}


def delete_all(ctx: Context, folder: Path, how: str) -> None:
    if how == "expired":
        ctx.prune_expired(now=NOW)
    elif how == "pruned":
        for name in NAMES:
            (folder / name).unlink(missing_ok=True)
        (folder / "kept").mkdir(exist_ok=True)  # an empty folder, as unmounted, prunes nothing
        ingest_all(folder, ctx=ctx, prune=True)
    else:
        for iri in sorted(documents(ctx)):
            ctx.delete_document(iri)


@pytest.mark.parametrize("how", ["expired", "pruned", "requested"])
@pytest.mark.parametrize("kill_at", [1, 2, 4])
def test_a_deletion_killed_at_any_document_leaves_every_deleted_one_recorded(
        tmp_path, how, kill_at):
    ctx = fresh_context()
    ctx.audit.enabled = True
    build(ctx, tmp_path / "notes")
    before = documents(ctx)
    store_delete = ctx.vectors.delete_document
    calls = []

    def killed_after_the_store(iri: str) -> int:  # the document half gone, then the kill
        calls.append(iri)
        removed = store_delete(iri)
        if len(calls) == kill_at:
            raise Killed
        return removed

    ctx.vectors.delete_document = killed_after_the_store
    with pytest.raises(Killed):
        delete_all(ctx, tmp_path / "notes", how)
    touched = before - documents(ctx)
    assert len(touched) == kill_at
    assert touched <= recorded(ctx)


@pytest.mark.parametrize("how", ["expired", "pruned", "requested"])
def test_a_record_that_cannot_be_written_stops_the_deletion(tmp_path, how):
    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        build(ctx, tmp_path / "notes")
        before = documents(ctx)
        assert not (root / AUDIT_DIRECTORY).exists()  # nothing recorded yet
        (root / AUDIT_DIRECTORY).write_text("a file where the audit log goes")
        with pytest.raises(StorageError, match="audit log"):
            delete_all(ctx, tmp_path / "notes", how)
        assert documents(ctx) == before  # nothing deleted without its record
        assert ctx.verify().ok


def test_a_context_that_does_not_audit_deletes_without_records(tmp_path):
    with fresh_context() as ctx:
        build(ctx, tmp_path / "notes")
        assert [d.iri for d in ctx.prune_expired(now=NOW)] == sorted(
            f"trails://local/doc/{name}" for name in NAMES)
        assert documents(ctx) == set() and ctx.audit.pending() == []


PRUNING_WORKER = """
import sys, time
from trails.context import Context

ctx = Context.open(sys.argv[1])
original = ctx.vectors.delete_document

def slowed(iri):  # a document half deleted for a while: the widest window for a kill
    removed = original(iri)
    time.sleep(0.01)
    return removed

ctx.vectors.delete_document = slowed
print("ready", flush=True)
ctx.prune_expired()
ctx.close()
"""


@pytest.mark.parametrize("kill_after", [0.05, 0.3])
def test_a_prune_killed_with_sigkill_leaves_every_deleted_document_recorded(tmp_path,
                                                                            kill_after):
    from killing import run_worker

    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(f"d{i}", f"d{i}", f"Note {i} on rails.",
                             metadata={"expires": "2020-01-01"}) for i in range(40)], ctx=ctx)
        before = documents(ctx)
    run_worker(PRUNING_WORKER, [root], kill_after)
    with Context.open(root) as ctx:
        gone = before - documents(ctx)
        recorded_there = {doc for r in ctx.audit.activities(limit=None)
                          if r.kind == "deletion" for doc in r.documents}
        assert gone <= recorded_there
        ctx.prune_expired()  # the next prune finishes, and records what it deletes
        assert documents(ctx) == set()
        assert before <= {doc for r in ctx.audit.activities(limit=None)
                           if r.kind == "deletion" for doc in r.documents}


@pytest.mark.parametrize("damage", ["orphan", "unfinished"])
def test_every_document_repair_removes_is_recorded_first(tmp_path, damage):
    """verify --repair deletes through the one recorded path: each document it removes (an
    orphan the graph still describes, or a version that cannot be made whole) has its
    deletion record, naming the caller, and no record names a document still there."""
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(id=n, source=n, text=f"Note {n} on rails.") for n in NAMES],
                   ctx=ctx)
        victim = min(documents(ctx))
        if damage == "orphan":  # the vectors gone, the graph still describing it
            ctx.vectors.delete_document(victim)
        else:  # a vector of the current version lost: the version cannot be made whole
            row = next(r[0] for r in ctx.vectors.managed_rows() if r[1] == victim)
            ctx.vectors.delete_many([row])
        report = ctx.verify(repair=True, caller="repairer")
        assert report.removed == [victim]
        deletions = [r for r in ctx.audit.pending() if r.kind == "deletion"]
        assert [(r.documents, r.caller) for r in deletions] == [([victim], "repairer")]
        assert deletions[0].reason.startswith("repair")
        assert victim not in documents(ctx) and ctx.verify().ok


def test_a_document_id_given_for_its_iri_is_refused_naming_the_iri():
    # The designs pass a document's id; the message was about a SPARQL variable ('binding
    # doc = ...: not an absolute IRI'), naming nothing a caller wrote.
    from trails.testing import fresh_context

    with fresh_context() as ctx:
        with pytest.raises(InvalidArgumentError, match=(
                "named by its IRI, and 'notes/a.txt' is none; the document of id 'notes/a.txt'"
                " in the default scope is 'trails://local/doc/notes/a.txt'")):
            ctx.delete_document("notes/a.txt")
        with pytest.raises(InvalidArgumentError, match="named by its IRI, and '' is none"):
            ctx.delete_document("")
        assert ctx.delete_document("trails://local/doc/nothing") is False
