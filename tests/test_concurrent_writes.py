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

    thread = threading.Thread(target=body, name=name)
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

    threads = [threading.Thread(target=worker, args=(tag,)) for tag in "ABC"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    report = ctx.verify()
    assert report.ok, report
    live = ctx.vectors.current_versions()
    for doc_iri, record in live.items():
        rows = select(ctx.kg, "SELECT ?v (COUNT(?c) AS ?n) WHERE { ?c schema:isPartOf ?d ; "
                              "trails:version ?v } GROUP BY ?v", {"d": IRI(doc_iri)})
        assert {str(r["v"]): int(r["n"]) for r in rows} == {record.version: record.chunks}
