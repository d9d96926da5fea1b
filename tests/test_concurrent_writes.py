"""Writers beside writers in one process: two ingests, a delete, a repair or relinking on one
context from several threads (the service's requests, a notebook's background ingest) never
leave the two stores on different versions of a document.

Each write of versions holds the context's lock through all its steps (``writing_versions``).
Before it, two ingests of one document whose steps alternated each removed the other's chunks
in step 4: the vectors stayed on one version and the graph on none (``graph_behind``). The
interleavings are made to happen here deterministically (a write paused between two of its
steps), and a stress run mixes every kind of write.
"""

from __future__ import annotations

import threading

import pytest

from trails import retrieve
from trails.context import Context
from trails.errors import ConfigurationError
from trails.ingest import Document, ingest_all, writer
from trails.kg.base import select
from trails.kg.terms import IRI
from trails.testing import MockEmbedder

WAIT = 10.0  # seconds: a bound for each wait, never reached when the code is right
BLOCKED = 0.5  # seconds a blocked thread is watched to stay blocked


def doc(text: str, **metadata: object) -> Document:
    return Document("d", "mem:d", f"{text} first part lighthouse. {text} second part harbour.",
                    metadata=dict(metadata))


def graph_versions(ctx: Context) -> dict[str, int]:
    """Version -> number of chunks the graph links to the document, and its current version."""
    rows = select(ctx.kg, "SELECT ?v (COUNT(?c) AS ?n) WHERE { ?c schema:isPartOf "
                          "<trails://local/doc/d> ; trails:version ?v } GROUP BY ?v")
    return {str(r["v"]): int(r["n"]) for r in rows}


def assert_whole(ctx: Context) -> str:
    """The graph holds exactly the live version's chunks and says it is current; returns it."""
    live = ctx.vectors.current_versions(["trails://local/doc/d"])["trails://local/doc/d"]
    current = select(ctx.kg, "SELECT ?v WHERE { <trails://local/doc/d> trails:currentVersion ?v }")
    assert graph_versions(ctx) == {live.version: live.chunks}
    assert current.column("v") == [live.version]
    report = ctx.verify()
    assert report.ok, report
    return live.version


@pytest.fixture
def ctx(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as opened:
        yield opened


class Paused:
    """Makes the first call of ``owner.name`` in the thread named ``who`` stop until released,
    after telling that it got there."""

    def __init__(self, monkeypatch, owner: type, name: str, who: str) -> None:
        self.there, self.go = threading.Event(), threading.Event()
        real = getattr(owner, name)

        def paused(*args, **kwargs):
            if threading.current_thread().name == who and not self.there.is_set():
                self.there.set()
                assert self.go.wait(WAIT)
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, paused)


def run(name: str, target, *args) -> threading.Thread:
    errors: list[BaseException] = []

    def body():
        try:
            target(*args)
        except BaseException as exc:  # noqa: BLE001 - reported by the joining test
            errors.append(exc)

    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.errors = errors  # type: ignore[attr-defined]
    thread.start()
    return thread


def finish(*threads: threading.Thread) -> None:
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), f"{thread.name} did not finish"
        assert not thread.errors, thread.errors  # type: ignore[attr-defined]


def ingest(ctx: Context, document: Document) -> None:
    stats = ingest_all([document], ctx=ctx)
    assert not stats.failed, stats.failures


def test_a_second_ingest_of_a_document_waits_for_the_first_to_finish_all_its_steps(
        ctx, monkeypatch):
    """The first ingest stops between its commit point (step 3) and step 4; the second, of
    another version, must not write until the first is done, and ends as the live version."""
    ingest(ctx, doc("v0"))
    pause = Paused(monkeypatch, writer.VersionWriter, "clean_graph", "first")
    first = run("first", ingest, ctx, doc("v1"))
    assert pause.there.wait(WAIT)
    second = run("second", ingest, ctx, doc("v2"))
    second.join(BLOCKED)
    assert second.is_alive(), "the second ingest wrote while the first was between its steps"
    pause.go.set()
    finish(first, second)
    live = assert_whole(ctx)
    hits = retrieve("lighthouse", ctx, k=5)
    assert hits and all("v2" in hit.snippet for hit in hits), [hit.snippet for hit in hits]
    assert live == ctx.vectors.current_versions(["trails://local/doc/d"])[
        "trails://local/doc/d"].version


def test_a_repair_waits_for_an_ingest_between_its_steps_and_removes_none_of_it(
        ctx, monkeypatch):
    """Between steps 2 and 3 the new version's vectors are staged and its chunks written: a
    repair reading then would take them for a killed write's leftovers."""
    ingest(ctx, doc("v0"))
    pause = Paused(monkeypatch, type(ctx.vectors), "publish", "ingest")
    ingesting = run("ingest", ingest, ctx, doc("v1"))
    assert pause.there.wait(WAIT)
    reports = []
    repairing = run("repair", lambda: reports.append(ctx.verify(repair=True)))
    repairing.join(BLOCKED)
    assert repairing.is_alive(), "the repair read the stores while an ingest was between steps"
    pause.go.set()
    finish(ingesting, repairing)
    assert reports[0].ok and not reports[0].removed, reports[0]
    assert_whole(ctx)
    assert all("v1" in hit.snippet for hit in retrieve("lighthouse", ctx, k=5))


def test_a_metadata_change_read_before_a_new_version_landed_leaves_the_new_version_whole(
        ctx, monkeypatch):
    """An ingest finds only the metadata changed and decides so before it writes; a new
    version lands in between. Writing the metadata for the version it read would make the
    graph describe that version and drop the new one's chunks: the change is the earlier
    write instead (the new version's own metadata stands)."""
    ingest(ctx, doc("v1", topic="a"))
    pause = Paused(monkeypatch, writer.VersionWriter, "update_metadata", "metadata")
    changing = run("metadata", ingest, ctx, doc("v1", topic="b"))
    assert pause.there.wait(WAIT)
    ingest(ctx, doc("v2", topic="c"))
    pause.go.set()
    finish(changing)
    assert_whole(ctx)
    topics = select(ctx.kg, "SELECT ?t WHERE { <trails://local/doc/d> meta:topic ?t }")
    assert topics.column("t") == ["c"]


def test_writes_of_every_kind_from_several_threads_leave_whole_documents(ctx):
    """Three threads re-ingest, change metadata of, delete and repair the same documents at
    once; afterwards every document is whole in both stores (or gone from both)."""
    ids = [f"d{i}" for i in range(3)]
    errors: list[BaseException] = []

    def worker(tag: str) -> None:
        try:
            for round_ in range(12):
                texts = [Document(i, f"mem:{i}", f"{tag} {round_} of {i} lighthouse. "
                                  * (1 + round_ % 3), metadata={"r": round_ % 2}) for i in ids]
                stats = ingest_all(texts, ctx=ctx)
                assert not stats.failed, stats.failures
                if round_ % 4 == 3:
                    ctx.delete_document(f"trails://local/doc/{ids[round_ % 3]}")
                if round_ % 5 == 4:
                    ctx.verify(repair=True)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(tag,), daemon=True) for tag in "ABC"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
        assert not thread.is_alive(), "a writer did not finish"
    assert not errors, errors
    report = ctx.verify()
    assert report.ok, report
    live = ctx.vectors.current_versions()
    for doc_iri, record in live.items():
        rows = select(ctx.kg, "SELECT ?v (COUNT(?c) AS ?n) WHERE { ?c schema:isPartOf ?d ; "
                              "trails:version ?v } GROUP BY ?v", {"d": IRI(doc_iri)})
        assert {str(r["v"]): int(r["n"]) for r in rows} == {record.version: record.chunks}


def test_a_delete_waits_for_an_ingest_between_its_steps(ctx, monkeypatch):
    ingest(ctx, doc("v0"))
    pause = Paused(monkeypatch, writer.VersionWriter, "clean_graph", "ingest")
    ingesting = run("ingest", ingest, ctx, doc("v1"))
    assert pause.there.wait(WAIT)
    deleting = run("delete", ctx.delete_document, "trails://local/doc/d")
    deleting.join(BLOCKED)
    assert deleting.is_alive(), "the delete wrote while an ingest was between its steps"
    pause.go.set()
    finish(ingesting, deleting)
    assert ctx.vectors.current_versions() == {} and graph_versions(ctx) == {}
    assert ctx.verify().ok and len(ctx.kg) == 0


def test_an_ingest_of_the_same_text_as_one_committing_stages_nothing_again(ctx, monkeypatch):
    """Both runs find the document new and mint the same version; the second, once the first
    has committed it, must not stage its rows again (that takes the live rows out of search
    until publish, and a kill in between would lose the document)."""
    staged_by: list[str] = []
    add_many = type(ctx.vectors).add_many

    def watched(self, *args, **kwargs):
        staged_by.append(threading.current_thread().name)
        return add_many(self, *args, **kwargs)

    monkeypatch.setattr(type(ctx.vectors), "add_many", watched)
    pause = Paused(monkeypatch, type(ctx.vectors), "publish", "first")
    first = run("first", ingest, ctx, doc("same"))
    assert pause.there.wait(WAIT)
    second = run("second", ingest, ctx, doc("same"))
    second.join(BLOCKED)
    pause.go.set()
    finish(first, second)
    assert staged_by == ["first"]
    assert_whole(ctx)


@pytest.fixture(params=["sqlite-vec", "qdrant"])
def snapshotting(request, tmp_path):
    """A context on a store whose snapshot holds a lock other threads' writes wait for."""
    if request.param == "sqlite-vec":
        with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as opened:
            yield opened
        return
    from trails.kg.oxigraph import OxigraphGraph
    from trails.vector.stores.qdrant import QdrantStore

    with Context(OxigraphGraph(), QdrantStore(dim=16), MockEmbedder(dim=16)) as opened:
        yield opened


def test_writes_inside_a_read_snapshot_are_refused_and_verify_does_not_wait(snapshotting,
                                                                            monkeypatch):
    """A commit holding the write lock waits for the store's lock, which a snapshot holds:
    the snapshot's thread must not wait for the write lock in turn."""
    ctx = snapshotting
    ingest(ctx, doc("v0"))
    pause = Paused(monkeypatch, writer.VersionWriter, "_stage_vectors", "ingest")
    ingesting = run("ingest", ingest, ctx, doc("v1"))
    assert pause.there.wait(WAIT)  # it holds the write lock now
    outcome: list[object] = []

    def in_a_snapshot() -> None:
        with ctx.vectors.snapshot():
            outcome.append(ctx.verify().ok)
            for write in (lambda: ctx.delete_document("trails://local/doc/d"), ctx.link):
                with pytest.raises(ConfigurationError, match="snapshot"):
                    write()
            outcome.append("refused")

    reading = run("snapshot", in_a_snapshot)
    reading.join(WAIT)
    pause.go.set()
    finish(reading, ingesting)
    assert outcome == [True, "refused"]
    assert_whole(ctx)


def test_a_prune_of_expired_documents_and_a_renewing_ingest_take_turns(tmp_path, monkeypatch):
    """The prune reads which documents expired and deletes them under the lock: an ingest
    renewing one meanwhile comes after the delete, and the renewed document stays."""
    from trails.ingest import retention

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest(ctx, doc("old", expires="2020-01-01"))
        pause = Paused(monkeypatch, retention, "delete_recorded", "prune")
        pruning = run("prune", ctx.prune_expired)
        assert pause.there.wait(WAIT)
        renewing = run("renew", ingest, ctx, doc("new", expires="2999-01-01"))
        renewing.join(BLOCKED)
        assert renewing.is_alive(), "the ingest wrote between the prune's reading and delete"
        pause.go.set()
        finish(pruning, renewing)
        assert_whole(ctx)
        assert all("new" in hit.snippet for hit in retrieve("lighthouse", ctx, k=5))


def test_the_write_lock_of_a_graph_object_that_cannot_be_weakly_referenced():
    """A graph class of one's own need not be hashable: it still gets one lock of its own."""

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

    graph, other = Unhashable(), Unhashable()
    assert writer.versions_lock(graph) is writer.versions_lock(graph)
    assert writer.versions_lock(graph) is not writer.versions_lock(other)


def test_a_graph_finish_read_before_a_new_version_landed_is_dropped(ctx, monkeypatch):
    """A run finds the graph behind its committed version (a kill between steps 3 and 4)
    and decides to finish it; a new version lands before it writes. Finishing the old one
    then would drop the new one's chunks from the graph."""
    real = writer.VersionWriter.clean_graph

    def killed(self, documents):
        raise KeyboardInterrupt  # as a kill between the commit point and step 4 leaves it

    monkeypatch.setattr(writer.VersionWriter, "clean_graph", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest_all([doc("v1")], ctx=ctx)
    monkeypatch.setattr(writer.VersionWriter, "clean_graph", real)
    assert ctx.verify().graph_behind == ["trails://local/doc/d"]
    pause = Paused(monkeypatch, writer.VersionWriter, "finish_graph", "finish")
    finishing = run("finish", ingest, ctx, doc("v1"))
    assert pause.there.wait(WAIT)
    ingest(ctx, doc("v2"))
    pause.go.set()
    finish(finishing)
    assert_whole(ctx)
    assert all("v2" in hit.snippet for hit in retrieve("lighthouse", ctx, k=5))


def test_closing_the_context_waits_for_a_commit_under_way(tmp_path, monkeypatch):
    """A notebook closes the context while a background ingest is between its steps: the
    commit ends whole before the stores close, and the next open finds nothing to repair."""
    root = tmp_path / "kb"
    ctx = Context.open(root, embedder=MockEmbedder(dim=16))
    ingest(ctx, doc("v0"))
    pause = Paused(monkeypatch, writer.VersionWriter, "clean_graph", "ingest")
    ingesting = run("ingest", ingest, ctx, doc("v1"))
    assert pause.there.wait(WAIT)
    closing = run("close", ctx.close)
    closing.join(BLOCKED)
    assert closing.is_alive(), "the context closed while a commit was between its steps"
    pause.go.set()
    finish(ingesting, closing)
    monkeypatch.undo()
    with Context.open(root, embedder=MockEmbedder(dim=16)) as again:
        assert_whole(again)
        assert all("v1" in hit.snippet for hit in retrieve("lighthouse", again, k=5))


@pytest.mark.parametrize("first_fails", [False, True])
def test_a_second_ingest_of_the_same_text_still_writes_what_differs(ctx, monkeypatch,
                                                                     first_fails):
    """The second run waits while the first commits the same version; it then finds the
    version live but its own metadata other (it wins: it came later), or, when the first
    run's step 4 failed after its commit point, the graph behind (it finishes it)."""
    real = writer.VersionWriter.clean_graph

    def failing(self, documents):
        if first_fails and threading.current_thread().name == "first":
            raise OSError("No space left on device (as a disk filling up in step 4)")
        return real(self, documents)

    monkeypatch.setattr(writer.VersionWriter, "clean_graph", failing)
    pause = Paused(monkeypatch, type(ctx.vectors), "publish", "first")
    first = run("first", lambda: ingest_all([doc("same", author="Old")], ctx=ctx))
    assert pause.there.wait(WAIT)
    second = run("second", ingest, ctx, doc("same", author="New"))
    second.join(BLOCKED)
    pause.go.set()
    first.join(WAIT)
    finish(second)
    assert_whole(ctx)
    authors = select(ctx.kg, "SELECT ?a WHERE { <trails://local/doc/d> meta:author ?a }")
    assert authors.column("a") == ["New"]
