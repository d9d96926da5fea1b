"""Kept columns carried across a writer's own commits (kg/carried.py, ADR 0029): after an
ingest, the first filter of a fresh process reads the columns the writer brought to the new
revision, not the graph, and they select exactly what the graph does after any mix of new
documents, new versions, metadata changes, deletions and scopes; a write the writer did not
declare (a user's update) stops the carry instead of being hidden by it."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_column_files import (
    built_and_asked,
    column_reads,
    corpus,
    drawn_queries,
    kept_files,
    open_context,
    planned,
    written,
)
from test_filter_index import (
    DATES,
    LINK,
    PLACES,
    SHAPES,
    TOPICS,
    USER_TRIPLES,
    documents_strategy,
)
from trails.ingest import Document, ingest_all
from trails.kg import carried
from trails.kg.base import select
from trails.kg.column_files import ColumnFiles, read_rows
from trails.kg.link_counts import COUNT_CHUNKS, COUNT_LINKS, COUNT_TYPED_TARGETS
from trails.kg.opening import read_revision

TYPED = (f"SELECT ?iri WHERE {{ {LINK} ?doc a trails:Document . ?doc schema:dateCreated ?d . "
         "FILTER(?d >= ?since) }")


def late(n: int = 0, date: str = "2024-01-01") -> Document:
    return Document(id=f"late{n}", source=f"late{n}.md", text="rails, late.",
                    metadata={"date": date})


def test_an_ingest_carries_the_kept_columns_to_the_revision_it_leaves(tmp_path):
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        ingest_all([late()], ctx=writer)
        revision = read_revision(str(tmp_path / "kb" / "graph"))
    assert {f.parent.name for f in kept_files(tmp_path / "kb")} == {revision}
    for read_only in (True, False):
        with open_context(tmp_path / "kb", read_only=read_only) as ctx:
            reads = column_reads(ctx)
            assert planned(ctx) == written(ctx) and len(written(ctx)) == 7
            assert reads == [], read_only  # no column read again, no link counted again


def test_a_run_touching_more_subjects_than_a_column_has_rows_reads_it_whole(tmp_path):
    corpus(tmp_path / "kb")  # a date column of 12 rows
    with open_context(tmp_path / "kb") as writer:
        ingest_all([late(n) for n in range(40)], ctx=writer)  # ~80 subjects
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        reads = column_reads(ctx)
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 46
        assert reads == []
    assert kept_counts_hold(tmp_path / "kb")


def test_a_run_touching_more_subjects_than_its_links_leaves_the_counts_to_readers(
        tmp_path, monkeypatch):
    monkeypatch.setattr(carried, "RECOUNT_FLOOR", 20)  # past 20 subjects: 12 links here
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        ingest_all([late(n) for n in range(40)], ctx=writer)  # ~80 subjects
    assert kept_counts_hold(tmp_path / "kb") == set()
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        reads = column_reads(ctx)
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 46
        # no column read again; the link counts are counted again, once
        assert [r for r in reads if "COUNT" not in r] == [] and len(reads) == 2


def test_the_writer_itself_asks_from_carried_columns(tmp_path):
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        assert len(planned(writer)) == 6
        ingest_all([late()], ctx=writer)
        reads = column_reads(writer)
        assert planned(writer) == written(writer) and len(written(writer)) == 7
        assert [r for r in reads if r.startswith("SELECT ?s ?o")] == []
        ingest_all([late(1, "2018-01-01"), late(0, "2017-01-01")], ctx=writer)  # a new version
        assert planned(writer) == written(writer) and len(written(writer)) == 6


def test_a_write_the_writer_did_not_declare_stops_the_carry(tmp_path):
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        doc = f"{writer.base_iri}doc/d0"  # dated 2019: now also 2023
        writer.kg.update(f'INSERT DATA {{ <{doc}> schema:dateCreated "2023-01-01"^^xsd:date }}')
        ingest_all([late()], ctx=writer)
        revision = read_revision(str(tmp_path / "kb" / "graph"))
    assert revision not in {f.parent.name for f in kept_files(tmp_path / "kb")}
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        reads = column_reads(ctx)
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 8
        assert reads  # read from the graph, as before a carry existed


def test_a_user_write_between_two_ingests_is_never_carried_over(tmp_path):
    """The carry starts again from a settled revision after a void one, and the user's
    triple is in the columns a reader then builds."""
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        ingest_all([late()], ctx=writer)
        doc = f"{writer.base_iri}doc/d0"
        writer.kg.update(f'INSERT DATA {{ <{doc}> schema:dateCreated "2023-01-01"^^xsd:date }}')
        assert planned(writer) == written(writer) and len(written(writer)) == 8
        ingest_all([late(1)], ctx=writer)
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        reads = column_reads(ctx)
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 9
        # the writer's own filter kept them after the user's write
        assert [r for r in reads if "COUNT" not in r] == []


changes_strategy = st.lists(st.fixed_dictionaries({
    "doc": st.integers(0, 12),  # an id of the first build (up to 9) or a new one
    "date": st.one_of(st.none(), st.sampled_from(DATES)),
    "place": st.one_of(st.none(), st.sampled_from(PLACES)),
    "topic": st.one_of(st.none(), st.sampled_from(["A1", "A2", "B1", "C"])),
    "words": st.integers(1, 40),  # a new text: another version, often another chunk count
    "scope": st.sampled_from(["default", "legal"]),
}), min_size=1, max_size=6)


def changed(change: dict) -> Document:
    meta: dict = {}
    if change["date"] is not None:
        meta["date"] = change["date"].isoformat()
    if change["place"] is not None:
        meta["place"] = change["place"]
    if change["topic"] is not None:
        meta["topic"] = f"<{TOPICS}{change['topic']}>"
    text = " ".join(f"word{i} of a changed document." for i in range(change["words"]))
    return Document(id=f"d{change['doc']}", source=f"d{change['doc']}.md", text=text,
                    metadata=meta)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(documents_strategy,
       st.lists(st.tuples(st.integers(0, len(USER_TRIPLES) - 1), st.integers(0, 9)), max_size=3),
       st.lists(st.integers(0, 9), max_size=2), changes_strategy, st.data())
def test_carried_columns_select_exactly_what_the_graph_does(monkeypatch, docs, extra, deleted,
                                                           changes, data):
    """Columns kept by a writer (user triples that break the shapes among them), then
    ingests of new documents, new versions with other chunk counts and other metadata, in
    both scopes, in one or several runs: every file kept before is carried to the revision
    the runs leave, and every filter of a fresh process (read-only and writable) selects
    what the graph does (a class's members among the columns: ``?doc a trails:Document``)."""
    queries = drawn_queries(data)
    queries.append((TYPED, data.draw(SHAPES["date since"][1]), None))  # a class's members
    # the link counts carried however large the runs are next to these small graphs
    monkeypatch.setattr(carried, "RECOUNT_FLOOR", 10**9)
    runs = data.draw(st.integers(1, 3))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kb"
        with open_context(path) as writer:
            built_and_asked(writer, docs, extra, deleted, queries)
            before = kept_keys(path)
            for part in range(runs):
                for scope in ("default", "legal"):
                    batch = {c["doc"]: changed(c) for c in changes[part::runs]
                             if c["scope"] == scope}
                    ingest_all(list(batch.values()), ctx=writer, scope=scope)
        assert before <= kept_keys(path)  # every file of the revision before, carried
        assert kept_counts_hold(path) == {k for k in before if k[0] == "count"}
        for read_only in (True, False):
            with open_context(path, read_only=read_only) as fresh:
                for text, bindings, scopes in queries:
                    assert planned(fresh, text, bindings, scopes) == written(
                        fresh, text, bindings, scopes), (text, bindings, scopes, read_only)


def kept_keys(path: Path) -> set[tuple]:
    """The columns, classes and link counts kept for the graph's revision now: (kind, key,
    scopes) of each file."""
    graph = str(path / "graph")
    return {(kind, key, None if scopes is None else tuple(scopes))
            for kind, key, scopes in ColumnFiles.kept(graph, read_revision(graph))}


def kept_counts_hold(path: Path) -> set[tuple]:
    """The link counts kept for the graph's revision now, each checked against the graph's
    own COUNT of it (asked of a fresh read-only context, the way a reader asks it)."""
    graph = str(path / "graph")
    revision = read_revision(graph)
    counts = {k for k in kept_keys(path) if k[0] == "count"}
    with open_context(path, read_only=True) as ctx:
        for _, query, scopes in counts:
            kept = ColumnFiles(graph, revision, scopes and list(scopes)).load("count", query)
            assert kept is not None and len(kept.subjects) == 1
            asked = select(ctx.kg, query, scopes=scopes and list(scopes)).rows
            assert int(kept.subjects[0]) == int(asked[0]["n"]), (query, scopes)
    return counts


def test_filters_asked_while_the_writer_commits_never_wait_on_each_other(tmp_path):
    """A filter holds the vector store's snapshot while it asks for the columns (and so for
    a carry); a commit takes the store's locks inside its declared block: neither may wait
    for the other (the service's readers beside its ingest)."""
    corpus(tmp_path / "kb")
    docs = [Document(id=f"busy{n}", source=f"busy{n}.md", text=" ".join(
        f"Sentence {i} of a busy document." for i in range(120)),
        metadata={"date": "2024-01-01"}) for n in range(300)]  # commits of ~1,000 chunks
    with open_context(tmp_path / "kb") as writer:
        done, failures = threading.Event(), []

        def ask() -> None:
            try:
                while not done.is_set():
                    planned(writer)
            except Exception as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        reader = threading.Thread(target=ask, daemon=True)
        reader.start()
        ingesting = threading.Thread(target=lambda: ingest_all(docs, ctx=writer), daemon=True)
        ingesting.start()
        ingesting.join(timeout=90)
        done.set()
        reader.join(timeout=30)
        assert not ingesting.is_alive() and not reader.is_alive(), "a lock waits on another"
        assert failures == []
        assert planned(writer) == written(writer)
        assert {i.split("/doc/")[1].split("/")[0] for i in written(writer)} >= {
            f"busy{n}" for n in range(300)}


def test_link_counts_carried_beside_two_writing_threads_are_the_graphs(tmp_path, monkeypatch):
    """Two threads ingest into one context at once: whatever the carry keeps of the link
    counts is what the graph counts (blocks that overlap cannot tell their changes apart)."""
    monkeypatch.setattr(carried, "RECOUNT_FLOOR", 10**9)
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        assert len(planned(writer)) == 6  # the link counts kept
        threads = [threading.Thread(target=ingest_all, args=([
            Document(id=f"t{t}-{n}", source=f"t{t}-{n}.md", text=f"thread {t}, doc {n}.",
                     metadata={"date": "2024-01-01"}) for n in range(30)],),
            kwargs={"ctx": writer, "batch_size": 4}) for t in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert planned(writer) == written(writer) and len(written(writer)) == 66
    kept_counts_hold(tmp_path / "kb")


def test_a_link_to_a_document_not_yet_written_is_counted_when_it_is(tmp_path):
    """A user's chunk links to a document before it is ingested: the ingest changes no
    triple of that chunk, yet the typed count (links to a ``trails:Document``) grows by its
    link, which the writer counts on the document."""
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        other = "<https://example.org/other>"
        writer.kg.update(f"INSERT DATA {{ {other} schema:isPartOf <{writer.base_iri}doc/late0> "
                         f". {other} a trails:Chunk }}")
        assert writer.verify().hand_links == []  # no live chunk's link: plannable again
        unlabelled = f"SELECT ?iri WHERE {{ {LINK} FILTER NOT EXISTS {{ ?doc meta:label ?c }} }}"
        assert planned(writer, unlabelled, {}) == written(writer, unlabelled, {})  # 3 counts kept
        ingest_all([late()], ctx=writer)
    assert {key for _, key, _ in kept_counts_hold(tmp_path / "kb")} == {
        count.query for count in (COUNT_LINKS, COUNT_CHUNKS, COUNT_TYPED_TARGETS)}


POSITION, CHUNK_CLASS = "https://schema.org/position", "<https://trails.dev/ns#Chunk>"
PLACE = "https://trails.dev/meta#place"


def _rows(kept) -> set[tuple[str, str | None]]:
    return {(kept.names[s], kept.values[o] if len(kept.objects) else None)
            for s, o in zip(kept.subjects.tolist(),
                            kept.objects.tolist() if len(kept.objects) else [0] * len(kept.subjects))}


def test_columns_on_chunks_and_documents_are_carried_subject_by_subject(tmp_path):
    """A writer names, with each subject, what its writes there can change: a chunk's own
    properties and class (ADR 0012), anything on a document. Columns on a chunk property,
    on the chunk class and on a document property, kept by hand for the revision before, are
    carried to the revision after new documents and new versions, and hold what the graph
    holds then: the new chunks' rows, none of the old version's, and a user's triple of a
    document's property on an old chunk, which no write of the writer's touched."""
    corpus(tmp_path / "kb", n=4)
    graph = str(tmp_path / "kb" / "graph")
    keys = [("column", POSITION, f"?s <{POSITION}> ?o"), ("class", CHUNK_CLASS, f"?s a {CHUNK_CLASS}"),
            ("column", PLACE, f"?s <{PLACE}> ?o")]
    with open_context(tmp_path / "kb") as writer:
        old_chunk = writer.kg.query("SELECT ?c WHERE { ?c schema:isPartOf <trails://local/doc/d1> }"
                                    ).rows[0]["c"]
        writer.kg.update(f'INSERT DATA {{ <{old_chunk}> meta:place "EU" }}')
        revision = read_revision(graph)
        for kind, key, pattern in keys:
            ColumnFiles(graph, revision, None).save(kind, key, read_rows(
                writer.kg.select_tsv, pattern, kind == "column", None))
        ingest_all([late(1), Document(id="d1", source="d1.md", text="rails, rewritten. Twice.")],
                   ctx=writer)
        after = read_revision(graph)
        assert after != revision
        for kind, key, pattern in keys:
            carried_file = ColumnFiles(graph, after, None).load(kind, key)
            assert carried_file is not None, key  # carried, not left to readers
            assert _rows(carried_file) == _rows(read_rows(
                writer.kg.select_tsv, pattern, kind == "column", None)), key
        assert (f"<{old_chunk}>", '"EU"') in _rows(ColumnFiles(graph, after, None).load("column", PLACE))


def test_a_writer_that_began_before_any_column_was_kept_is_never_carried_over(
        tmp_path, monkeypatch):
    """Thread A begins a commit while nothing is kept (its subjects are not recorded); a
    filter keeps the columns between A's writes; thread B's ingest, started meanwhile, waits
    for A's commit to end (one write of versions at a time) and then commits whole. The carry
    must not start from that revision with B's subjects alone: A's document triples come
    after it."""
    from trails.ingest import writer as writer_module

    corpus(tmp_path / "kb")
    for path in kept_files(tmp_path / "kb"):
        path.unlink()  # nothing kept
    real = writer_module.VersionWriter.clean_graph
    paused, resume = threading.Event(), threading.Event()
    first: list[threading.Thread] = []

    def clean_graph(self, documents):
        if threading.current_thread() in first:
            paused.set()  # A, between its chunk triples and its document triples
            assert resume.wait(60)
        return real(self, documents)

    monkeypatch.setattr(writer_module.VersionWriter, "clean_graph", clean_graph)
    with open_context(tmp_path / "kb") as writer:
        first.append(threading.Thread(target=ingest_all, args=([late(1, "2024-01-01")],),
                                      kwargs={"ctx": writer}))
        first[0].start()
        assert paused.wait(60)
        assert len(planned(writer)) == 6  # kept now, for A's revision in between
        other = threading.Thread(target=ingest_all, args=([late(2, "2018-01-01")],),
                                 kwargs={"ctx": writer})
        other.start()
        other.join(0.5)
        assert other.is_alive()  # B waits for A's commit
        resume.set()
        first[0].join(60)
        other.join(60)
        assert planned(writer) == written(writer) and len(written(writer)) == 7
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 7


def test_a_predicate_written_with_an_escape_is_never_another_columns(tmp_path):
    """Oxigraph reads ``<…pl\\u0061ce>`` as ``meta:place``: a filter written either way,
    kept and carried beside the other, selects what the graph does."""
    escaped = "<https://trails.dev/meta#pl\\u0061ce>"
    with open_context(tmp_path / "kb") as writer:
        ingest_all([Document(id=f"p{i}", source=f"p{i}.md", text=f"rails {i}.",
                             metadata={"place": ["EU", "US"][i % 2]}) for i in range(6)],
                   ctx=writer)
        texts = [f'SELECT ?iri WHERE {{ {LINK} ?doc {verb} "EU" }}'
                 for verb in ("meta:place", escaped)]
        for text in texts:
            assert planned(writer, text, {}) == written(writer, text, {})
        ingest_all([Document(id="p9", source="p9.md", text="rails 9.",
                             metadata={"place": "EU"})], ctx=writer)
        for text in texts:
            assert planned(writer, text, {}) == written(writer, text, {})
            assert len(written(writer, text, {})) == 4
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        for text in texts:
            assert planned(ctx, text, {}) == written(ctx, text, {})


def test_a_relative_predicate_is_read_against_its_own_base(tmp_path):
    """``<#place>`` is a different IRI under each BASE: never one kept column for both."""
    with open_context(tmp_path / "kb") as writer:
        ingest_all([Document(id=f"p{i}", source=f"p{i}.md", text=f"rails {i}.",
                             metadata={"place": "EU"}) for i in range(3)], ctx=writer)
        for base, found in (("https://trails.dev/meta", 3), ("https://example.org/other", 0)):
            text = f'BASE <{base}> SELECT ?iri WHERE {{ {LINK} ?doc <#place> "EU" }}'
            assert planned(writer, text, {}) == written(writer, text, {})
            assert len(written(writer, text, {})) == found
