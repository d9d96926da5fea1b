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
from trails.kg.column_files import ColumnFiles
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
            # no column read again (the link checks' counts are counted once per revision)
            assert [r for r in reads if "COUNT" not in r] == [], read_only


def test_a_run_touching_more_subjects_than_a_column_has_rows_reads_it_whole(tmp_path):
    corpus(tmp_path / "kb")  # a date column of 12 rows
    with open_context(tmp_path / "kb") as writer:
        ingest_all([late(n) for n in range(40)], ctx=writer)  # ~80 subjects
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        reads = column_reads(ctx)
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 46
        assert [r for r in reads if "COUNT" not in r] == []


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
def test_carried_columns_select_exactly_what_the_graph_does(docs, extra, deleted, changes,
                                                           data):
    """Columns kept by a writer (user triples that break the shapes among them), then
    ingests of new documents, new versions with other chunk counts and other metadata, in
    both scopes, in one or several runs: every file kept before is carried to the revision
    the runs leave, and every filter of a fresh process (read-only and writable) selects
    what the graph does (a class's members among the columns: ``?doc a trails:Document``)."""
    queries = drawn_queries(data)
    queries.append((TYPED, data.draw(SHAPES["date since"][1]), None))  # a class's members
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
        assert before <= kept_keys(path)  # every column of the revision before, carried
        for read_only in (True, False):
            with open_context(path, read_only=read_only) as fresh:
                for text, bindings, scopes in queries:
                    assert planned(fresh, text, bindings, scopes) == written(
                        fresh, text, bindings, scopes), (text, bindings, scopes, read_only)


def kept_keys(path: Path) -> set[tuple]:
    """The columns and classes kept for the graph's revision now: (kind, key, scopes) of
    each file (the link checks' counts are counted again per revision, never carried)."""
    graph = str(path / "graph")
    return {(kind, key, None if scopes is None else tuple(scopes))
            for kind, key, scopes in ColumnFiles.kept(graph, read_revision(graph))
            if kind != "count"}


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
