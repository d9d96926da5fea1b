"""``verify(repair=True)`` finishes committed work and removes only what was never committed.

Each test interrupts a write at a chosen step (an exception where a SIGKILL would land:
nothing after it runs), repairs, and compares the whole graph and vector store with those of
a context where the same write ran uninterrupted. ``tests/test_crash_safety.py`` does the same
with real SIGKILLs at random moments.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trails import retrieve
from trails.context import Context
from trails.ingest import ingest_all
from trails.ingest import maintenance as maintenance_module
from trails.ingest import writer as writer_module
from trails.testing import fresh_context

USER_TRIPLE = '<{doc}> <https://example.org/reviewedBy> "ann"'


class Interrupted(BaseException):
    """Stands for a kill: nothing after it runs (not an Exception, so nothing catches it)."""


def write(folder: Path, edition: int) -> None:
    folder.mkdir(exist_ok=True)
    for i in range(4):
        (folder / f"doc{i}.md").write_text(
            f"---\ntitle: Memo {i}\ndate: 2024-0{i + 1}-01\nowner: team{i}\n---\n"
            f"Memo {i} edition {edition} talks about rails routing. " * (2 + i))


def nquads(ctx: Context) -> list[str]:
    return sorted(line for line in str(ctx.kg.dump(format="nquads")).splitlines() if line)


def vectors(ctx: Context) -> dict[str, tuple[float, ...]]:
    ids = [row[0] for row in ctx.vectors.managed_rows()]
    return {v.id: tuple(round(x, 5) for x in v.vector) for v in ctx.vectors.get(ids)}


def reference(*editions: Path, scope: str = "default") -> Context:
    ctx = fresh_context(dim=32)
    for folder in editions:
        assert ingest_all(folder, ctx=ctx, scope=scope).failed == 0
    return ctx


def interrupt(monkeypatch: pytest.MonkeyPatch, target: object, name: str, *,
              after: bool = True) -> None:
    """Make ``target.name`` stop the process just after (or before) it does its work."""
    real = getattr(target, name)

    def stopped(*args: object, **kwargs: object) -> object:
        if after:
            real(*args, **kwargs)
        raise Interrupted

    monkeypatch.setattr(target, name, stopped)


@pytest.fixture
def editions(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    write(one, 1)
    write(two, 2)
    return one, two


@pytest.mark.parametrize("scope", ["default", "legal"])
@pytest.mark.parametrize("first_ingest", [True, False])
def test_a_version_cut_off_after_its_commit_point_is_finished(editions, monkeypatch, scope,
                                                                first_ingest):
    one, two = editions
    expected = reference(*([two] if first_ingest else [one, two]), scope=scope)
    with fresh_context(dim=32) as ctx:
        if not first_ingest:
            ingest_all(one, ctx=ctx, scope=scope)
        interrupt(monkeypatch, writer_module.VersionWriter, "clean_graph", after=False)
        with pytest.raises(Interrupted):
            ingest_all(two, ctx=ctx, scope=scope)
        monkeypatch.undo()
        shown = {h.iri for h in retrieve("rails routing", ctx, mode="vector", k=100, scope=scope)}
        report = ctx.verify()
        assert report.graph_behind and not report.ok
        repaired = ctx.verify(repair=True)
        assert repaired.removed == [] and sorted(repaired.finished) == report.graph_behind
        assert ctx.verify().ok
        assert nquads(ctx) == nquads(expected)
        assert vectors(ctx) == vectors(expected)
        assert {h.iri for h in retrieve("rails routing", ctx, mode="vector", k=100,
                                        scope=scope)} == shown


def test_a_repair_keeps_what_users_said_about_a_document_it_finishes(editions, monkeypatch):
    one, two = editions
    with fresh_context(dim=32) as ctx:
        ingest_all(one, ctx=ctx)
        docs = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")
        ctx.kg.update("INSERT DATA { " + " . ".join(USER_TRIPLE.format(doc=d) for d in docs) + " }")
        interrupt(monkeypatch, writer_module.VersionWriter, "clean_graph", after=False)
        with pytest.raises(Interrupted):
            ingest_all(two, ctx=ctx)
        monkeypatch.undo()
        assert ctx.verify(repair=True).removed == []
        for doc in docs:
            assert ctx.kg.query(f"ASK {{ {USER_TRIPLE.format(doc=doc)} }}")
            assert ctx.kg.query(f'ASK {{ <{doc}> <https://trails.dev/meta#owner> ?o }}')


def test_chunk_triples_lost_from_the_graph_are_written_again_from_the_vectors(editions):
    one, _ = editions
    expected = reference(one)
    with fresh_context(dim=32) as ctx:
        ingest_all(one, ctx=ctx)
        ctx.kg.update("DELETE WHERE { ?c a trails:Chunk ; schema:position 0 ; ?p ?o }")
        report = ctx.verify()
        assert report.count_mismatches and not report.ok
        repaired = ctx.verify(repair=True)
        assert repaired.removed == [] and len(repaired.finished) == 4
        assert nquads(ctx) == nquads(expected)
        assert vectors(ctx) == vectors(expected)


@pytest.mark.parametrize("step", ["_stage_vectors", "_add_chunk_triples"])
def test_what_was_never_committed_is_removed_and_the_previous_version_stays(editions,
                                                                         monkeypatch, step):
    one, two = editions
    expected = reference(one)
    with fresh_context(dim=32) as ctx:
        ingest_all(one, ctx=ctx)
        interrupt(monkeypatch, writer_module.VersionWriter, step)
        with pytest.raises(Interrupted):
            ingest_all(two, ctx=ctx)
        monkeypatch.undo()
        assert not ctx.verify().ok
        repaired = ctx.verify(repair=True)
        assert repaired.removed == [] and repaired.finished == []
        assert ctx.verify().ok
        assert nquads(ctx) == nquads(expected)
        assert vectors(ctx) == vectors(expected)


@pytest.mark.parametrize("scope", ["default", "legal"])
@pytest.mark.parametrize(("step", "after"), [("_add_chunk_triples", True),
                                             ("clean_graph", False)])
def test_the_next_ingest_removes_the_chunks_of_a_first_version_cut_off(editions, monkeypatch,
                                                                       scope, step, after):
    """No repair between: a first version cut off before step 4 has no manifest and no
    ``trails:currentVersion``, only its staged manifest says its chunks are there."""
    one, two = editions
    expected = reference(two, scope=scope)
    with fresh_context(dim=32) as ctx:
        interrupt(monkeypatch, writer_module.VersionWriter, step, after=after)
        with pytest.raises(Interrupted):
            ingest_all(one, ctx=ctx, scope=scope)
        monkeypatch.undo()
        assert ingest_all(two, ctx=ctx, scope=scope).failed == 0
        assert nquads(ctx) == nquads(expected)
        assert ctx.verify().ok


def test_the_next_ingest_removes_the_chunks_of_a_version_written_before_manifests(editions):
    """A context whose documents were written before manifests were kept (no minted graph):
    only ``trails:currentVersion`` says another version's chunks are there."""
    one, two = editions
    with fresh_context(dim=32) as ctx:
        ingest_all(one, ctx=ctx)
        ctx.kg.update("DELETE WHERE { GRAPH <urn:trails:minted> { ?d ?p ?m } }")
        assert ingest_all(two, ctx=ctx).failed == 0
        chunks = ctx.kg.query("SELECT ?c ?v ?current WHERE { ?c a trails:Chunk ; "
                              "schema:isPartOf ?doc ; trails:version ?v . "
                              "?doc trails:currentVersion ?current }")
        assert len(chunks) == len(reference(two).kg.query("SELECT ?c WHERE { ?c a trails:Chunk }"))
        assert all(row["v"] == row["current"] for row in chunks)


def test_a_first_ingest_cut_off_before_its_commit_point_leaves_nothing(editions, monkeypatch):
    _, two = editions
    with fresh_context(dim=32) as ctx:
        interrupt(monkeypatch, writer_module.VersionWriter, "_add_chunk_triples")
        with pytest.raises(Interrupted):
            ingest_all(two, ctx=ctx)
        monkeypatch.undo()
        ctx.verify(repair=True)
        assert nquads(ctx) == [] and vectors(ctx) == {}


@pytest.mark.parametrize("stop_at", [1, 2, 3])  # 3 writes; 3 = not stopped
def test_a_delete_cut_off_at_any_step_is_gone_after_repair(editions, monkeypatch, stop_at):
    """Stop delete_document at its n-th write (graph update or store delete); repair must
    leave no trace of the document but the triples users wrote about it."""
    one, _ = editions
    with fresh_context(dim=32) as ctx:
        ingest_all(one, ctx=ctx)
        doc = ctx.kg.query('SELECT ?d WHERE { ?d trails:documentId "doc2.md" }').column("d")[0]
        ctx.kg.update(f"INSERT DATA {{ {USER_TRIPLE.format(doc=doc)} }}")
        writes = {"n": 0}

        def counted(real):
            def call(*args, **kwargs):
                if writes["n"] == stop_at:
                    raise Interrupted
                writes["n"] += 1
                return real(*args, **kwargs)
            return call

        monkeypatch.setattr(ctx.kg, "update", counted(ctx.kg.update))
        monkeypatch.setattr(ctx.vectors, "delete_document", counted(ctx.vectors.delete_document))
        try:
            maintenance_module.delete_document(ctx, doc)
        except Interrupted:
            pass
        monkeypatch.undo()
        assert writes["n"] == stop_at  # it stopped where asked (or ran all 3 writes)
        ctx.verify(repair=True)
        assert ctx.verify().ok
        left = ctx.kg.query(f"SELECT ?p ?o WHERE {{ <{doc}> ?p ?o }}")
        assert [(r["p"], r["o"]) for r in left] == [("https://example.org/reviewedBy", "ann")]
        assert not ctx.kg.query(f"ASK {{ ?c schema:isPartOf <{doc}> }}")
        assert all(h.metadata["doc_iri"] != doc
                   for h in retrieve("rails routing memo", ctx, mode="vector", k=100))
        assert doc not in ctx.vectors.current_versions([doc])


def test_a_record_left_without_its_vectors_is_removed_whole(editions):
    """A delete cut off between the store's two statements: the record, no vectors."""
    one, _ = editions
    with fresh_context(dim=32) as ctx:
        ingest_all(one, ctx=ctx)
        doc = ctx.kg.query('SELECT ?d WHERE { ?d trails:documentId "doc1.md" }').column("d")[0]
        ctx.vectors.delete_many([row[0] for row in ctx.vectors.managed_rows() if row[1] == doc])
        repaired = ctx.verify(repair=True)
        assert repaired.removed == [doc]
        assert ctx.verify().ok
        assert not ctx.kg.query(f"ASK {{ <{doc}> ?p ?o }}")


@pytest.mark.parametrize("scope", ["default", "legal"])
@pytest.mark.parametrize("lost", ["document", "scope graph"])
def test_a_committed_document_whose_graph_lost_its_triples_is_finished_not_removed(
        editions, scope, lost):
    """Its vectors are live and its kept manifest names the version: everything it needs is
    stored, so repair writes it again instead of deleting it (its source may be gone)."""
    one, _ = editions
    expected = reference(one, scope=scope)
    with fresh_context(dim=32) as ctx:
        ingest_all(one, ctx=ctx, scope=scope)
        pattern = "?s ?p ?o"
        if lost == "document":
            doc = ctx.kg.query('SELECT ?d WHERE { ?d trails:documentId "doc1.md" }').column("d")[0]
            pattern = f"<{doc}> ?p ?o"
        if scope != "default":
            pattern = f"GRAPH <urn:trails:scope:{scope}> {{ {pattern} }}"
        ctx.kg.update(f"DELETE WHERE {{ {pattern} }}")  # by hand, or a restore that lost it
        report = ctx.verify()
        assert report.graph_behind and not report.ok
        repaired = ctx.verify(repair=True)
        assert repaired.removed == [] and repaired.finished == report.graph_behind
        assert ctx.verify().ok
        assert nquads(ctx) == nquads(expected)
        assert vectors(ctx) == vectors(expected)
