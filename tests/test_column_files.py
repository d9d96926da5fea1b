"""Columns kept on disk per graph revision (kg/column_files.py, ADR 0029): a fresh process
reads them back instead of the graph, and never uses them unless they describe exactly the
graph it reads (another revision, a torn or foreign file, a write cut short by a crash, writes
through the raw store)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_filter_index import LINK, SHAPES, USER_TRIPLES, build, documents_strategy, ranked_among
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.kg.column_files import FOLDER
from trails.kg.opening import read_revision, settled
from trails.retrieval.candidates import filter_candidates
from trails.vector import MockEmbedder

DATE_FILTER = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
               "FILTER(?d >= ?since) }")
SINCE = {"since": dt.date(2021, 1, 1)}


def open_context(path: Path, *, read_only: bool = False) -> Context:
    return Context.open(path, embedder=MockEmbedder(dim=8), read_only=read_only)


def corpus(path: Path, n: int = 12) -> None:
    docs = [Document(id=f"d{i}", source=f"d{i}.md", text=f"rails document {i}.",
                     metadata={"date": f"{2019 + i % 4}-06-01"}) for i in range(n)]
    with open_context(path) as writer:
        ingest_all(docs, ctx=writer)
        filter_candidates(writer.kg, DATE_FILTER, SINCE, None)  # builds and keeps the columns


def planned(ctx: Context, text: str = DATE_FILTER, bindings: dict | None = None,
            scopes: list[str] | None = None) -> set[str]:
    bindings = SINCE if bindings is None else bindings
    with ctx.vectors.snapshot():
        return ranked_among(ctx, filter_candidates(ctx.kg, text, bindings, scopes), scopes)


def written(ctx: Context, text: str = DATE_FILTER, bindings: dict | None = None,
            scopes: list[str] | None = None) -> set[str]:
    bindings = SINCE if bindings is None else bindings
    return ranked_among(ctx, ctx.kg.select_iris(text, bindings, scopes=scopes), scopes)


def column_reads(ctx: Context) -> list[str]:
    """Records the graph queries that read a whole column (``SELECT ?s ?o WHERE { ?s <P> ?o }``)
    or count the chunk links (the checks before a filter is lifted to documents)."""
    reads: list[str] = []
    select_tsv, query = ctx.kg.select_tsv, ctx.kg.query

    def read_column(text, scopes=None):
        if text.startswith("SELECT ?s ?o WHERE"):
            reads.append(text)
        return select_tsv(text, scopes)

    def read_count(text, *args, **kwargs):
        if "COUNT(*)" in text:
            reads.append(text)
        return query(text, *args, **kwargs)

    ctx.kg.select_tsv, ctx.kg.query = read_column, read_count
    return reads


def kept_files(path: Path) -> list[Path]:
    return sorted((path / "graph").glob(f"{FOLDER}/*/*.npz"))


def test_a_fresh_process_reads_the_kept_columns_instead_of_the_graph(tmp_path):
    corpus(tmp_path / "kb")
    for read_only in (True, False):
        with open_context(tmp_path / "kb", read_only=read_only) as ctx:
            reads = column_reads(ctx)
            assert planned(ctx) == written(ctx) and len(written(ctx)) == 6
            assert reads == [], read_only


def test_kept_columns_of_the_same_documents_are_coded_once_and_alike(tmp_path):
    """Two properties of every document, kept and read back by a fresh process: both files
    list the documents alike (read_rows lists subjects by name), the second column is coded
    by the first's codes without reading its names, and each row's code still names the row's
    own subject, as the first read from the graph does."""
    from trails.kg.column_files import ColumnFiles, SubjectCodes, Terms, read_rows
    from trails.kg.opening import read_revision

    docs = [Document(id=f"d{i}", source=f"d{i}.md", text=f"rails document {i}.",
                     metadata={"date": f"{2019 + i % 4}-06-01", "place": ["EU", "US"][i % 2],
                               **({"label": "x"} if i % 3 == 0 else {})})
            for i in reversed(range(9))]
    with open_context(tmp_path / "kb") as writer:
        ingest_all(docs, ctx=writer)
        text = (f"SELECT ?iri WHERE {{ {LINK} ?doc schema:dateCreated ?d . ?doc meta:place ?p "
                "FILTER(?d >= ?since && ?p = \"EU\") FILTER NOT EXISTS { ?doc meta:label ?l } }")
        filter_candidates(writer.kg, text, SINCE, None)  # reads and keeps both columns
        predicates = ["https://schema.org/dateCreated", "https://trails.dev/meta#place",
                      "https://trails.dev/meta#label"]
        from_graph = {p: read_rows(writer.kg.select_tsv, f"?s <{p}> ?o", True, None)
                      for p in predicates}
    files = ColumnFiles(str(tmp_path / "kb" / "graph"), read_revision(str(tmp_path / "kb" /
                                                                         "graph")), None)
    kept = {p: files.load("column", p) for p in predicates}
    assert all(k is not None and k.names_key for k in kept.values())
    first, second, some = (kept[p] for p in predicates)
    assert first.names_key == second.names_key != some.names_key
    assert list(first.names) == sorted(first.names)
    codes = SubjectCodes()
    coded = [codes.coded(first), codes.coded(second), codes.coded(some)]
    assert isinstance(second.names, Terms) and second.names._terms is None  # never read
    assert len(codes.names) == len(set(codes.names)) == 9
    for (p, graph), rows in zip(from_graph.items(), coded):
        pairs = sorted(zip([codes.names[c] for c in rows],
                           [kept[p].values[o] for o in kept[p].objects]))
        assert pairs == sorted(zip([graph.names[s] for s in graph.subjects],
                                   [graph.values[o] for o in graph.objects])), p


def test_a_column_is_kept_once_per_revision_and_the_old_ones_go(tmp_path):
    corpus(tmp_path / "kb")
    first = kept_files(tmp_path / "kb")
    assert first
    with open_context(tmp_path / "kb") as writer:
        ingest_all([Document(id="late", source="late.md", text="rails, late.",
                             metadata={"date": "2024-01-01"})], ctx=writer)
        assert planned(writer) == written(writer) and len(written(writer)) == 7
    later = kept_files(tmp_path / "kb")
    assert later and not set(first) & set(later)


def test_columns_of_another_revision_are_never_used(tmp_path):
    """Another process changes the graph: a reader open before and a fresh one both answer the
    new graph; files of the old revision copied under the new one are refused too."""
    corpus(tmp_path / "kb")
    old = kept_files(tmp_path / "kb")
    reader = open_context(tmp_path / "kb", read_only=True)
    try:
        assert len(planned(reader)) == 6
        with open_context(tmp_path / "kb") as writer:
            doc = f"{writer.base_iri}doc/d0"  # dated 2019: now also 2023
            writer.kg.update(f'INSERT DATA {{ <{doc}> schema:dateCreated "2023-01-01"^^xsd:date }}')
        revision = read_revision(str(tmp_path / "kb" / "graph"))
        assert settled(revision)
        foreign = tmp_path / "kb" / "graph" / FOLDER / revision
        foreign.mkdir(parents=True, exist_ok=True)
        for file in old:
            (foreign / file.name).write_bytes(file.read_bytes())
        assert planned(reader) == written(reader) and len(written(reader)) == 6  # its view
        reader.kg.refresh()  # as a search does once the stamp on disk moved
        assert planned(reader) == written(reader) and len(written(reader)) == 7
        with open_context(tmp_path / "kb", read_only=True) as fresh:
            assert planned(fresh) == written(fresh) and len(written(fresh)) == 7
    finally:
        reader.close()


def test_a_torn_or_damaged_column_file_is_ignored_and_written_again(tmp_path):
    corpus(tmp_path / "kb")
    file = max(kept_files(tmp_path / "kb"), key=lambda f: f.stat().st_size)  # the column
    data = bytearray(file.read_bytes())
    for damage in (lambda b: b[: len(b) // 2], lambda b: b[:-40] + bytes(40),
                   lambda b: b[:200] + bytes(x ^ 0xFF for x in b[200:260]) + b[260:]):
        file.write_bytes(bytes(damage(bytearray(data))))
        with open_context(tmp_path / "kb", read_only=True) as ctx:
            assert planned(ctx) == written(ctx) and len(written(ctx)) == 6
        with open_context(tmp_path / "kb", read_only=True) as ctx:
            reads = column_reads(ctx)
            assert planned(ctx) == written(ctx)
            assert reads == []  # the damaged file was replaced by a whole one


CRASH = textwrap.dedent("""
    import os, sys
    from trails.context import Context
    from trails.vector import MockEmbedder

    class Crashing:
        def __init__(self, store):
            self.store = store
        def update(self, *args, **kwargs):
            self.store.update(*args, **kwargs)
            self.store.flush()
            os._exit(3)  # the write is in the graph; the process dies before it returns
        def __getattr__(self, name):
            return getattr(self.store, name)

    ctx = Context.open(sys.argv[1], embedder=MockEmbedder(dim=8))
    ctx.kg._store = Crashing(ctx.kg._s)
    doc = ctx.base_iri + "doc/d0"
    ctx.kg.update(f'INSERT DATA {{ <{doc}> schema:dateCreated "2023-01-01"^^xsd:date }}')
""")


def test_a_write_cut_short_by_a_crash_leaves_no_kept_column_in_use(tmp_path):
    corpus(tmp_path / "kb")
    crashed = subprocess.run([sys.executable, "-c", CRASH, str(tmp_path / "kb")],
                             check=False, capture_output=True, text=True, env=os.environ.copy())
    assert crashed.returncode == 3, crashed.stderr
    assert not settled(read_revision(str(tmp_path / "kb" / "graph")))
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 7


def test_writes_through_the_raw_store_are_never_hidden_by_kept_columns(tmp_path):
    corpus(tmp_path / "kb")
    with open_context(tmp_path / "kb") as writer:
        doc = f"{writer.base_iri}doc/d0"
        writer.kg.store.update(
            f'INSERT DATA {{ <{doc}> <https://schema.org/dateCreated> '
            f'"2023-01-01"^^<http://www.w3.org/2001/XMLSchema#date> }}')
        assert planned(writer) == written(writer) and len(written(writer)) == 7
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 7


def drawn_queries(data: st.DataObject) -> list[tuple[str, dict, list[str] | None]]:
    """One to three filter shapes, each with its bindings and the scopes it is asked in."""
    shapes = data.draw(st.lists(st.sampled_from(sorted(SHAPES)), min_size=1, max_size=3))
    return [(f"SELECT ?iri WHERE {{ {LINK} {SHAPES[name][0]} }}", data.draw(SHAPES[name][1]),
             data.draw(st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]])))
            for name in shapes]


def built_and_asked(writer: Context, docs, extra, deleted, queries) -> None:
    """The documents and user triples built, then each query asked (its columns kept)."""
    build(writer, docs, extra, deleted)
    for text, bindings, scopes in queries:
        assert planned(writer, text, bindings, scopes) == written(writer, text, bindings, scopes)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(documents_strategy,
       st.lists(st.tuples(st.integers(0, len(USER_TRIPLES) - 1), st.integers(0, 9)), max_size=3),
       st.lists(st.integers(0, 9), max_size=2),
       st.tuples(st.integers(0, len(USER_TRIPLES) - 1), st.integers(0, 9)), st.data())
def test_kept_columns_select_exactly_what_the_graph_does(docs, extra, deleted, change, data):
    """The property of test_filter_index.py on contexts on disk: columns built and kept by a
    writer, read back by fresh read-only and writable processes, and again after another
    process changed the graph (a user triple, a deletion)."""
    queries = drawn_queries(data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kb"
        with open_context(path) as writer:
            built_and_asked(writer, docs, extra, deleted, queries)
        reader = open_context(path, read_only=True)
        try:
            for read_only in (True, False):
                with open_context(path, read_only=read_only) as fresh:
                    for text, bindings, scopes in queries:
                        assert planned(fresh, text, bindings, scopes) == written(
                            fresh, text, bindings, scopes), (text, bindings, scopes, read_only)
            with open_context(path) as other:
                chunks = {m["doc_iri"]: i for i, m in other.vectors.metadata(
                    other.vectors.all_ids()).items()}
                doc_iris = sorted(chunks)
                if doc_iris:
                    doc = doc_iris[change[1] % len(doc_iris)]
                    triple = USER_TRIPLES[change[0]].format(doc=doc, chunk=chunks[doc])
                    other.kg.update(f"INSERT DATA {{ {triple} }}")
                    if change[1] % 2:
                        other.delete_document(doc_iris[0])
            for ctx in (reader, reader, open_context(path, read_only=True)):
                try:
                    for text, bindings, scopes in queries:
                        assert planned(ctx, text, bindings, scopes) == written(
                            ctx, text, bindings, scopes), (text, bindings, scopes)
                    ctx.kg.refresh()  # the second time: the view after the change
                finally:
                    if ctx is not reader:
                        ctx.close()
        finally:
            reader.close()


def test_a_view_opened_across_a_write_reads_the_graph(tmp_path, monkeypatch):
    """The stamp changed while the view opened: the view may show the write, so it names no
    revision and its filters read the graph as written, not the old revision's columns."""
    from trails.kg import oxigraph
    from trails.kg.opening import new_revision

    corpus(tmp_path / "kb")
    opening = oxigraph.open_store

    def across_a_write(path, *, read_only):
        opened = opening(path, read_only=read_only)
        new_revision(path)  # a writer's write completed meanwhile
        return opened

    monkeypatch.setattr(oxigraph, "open_store", across_a_write)
    with open_context(tmp_path / "kb", read_only=True) as ctx:
        assert ctx.kg.settled_revision is None
        reads = column_reads(ctx)
        assert planned(ctx) == written(ctx) and len(written(ctx)) == 6
        # Not the old revision's columns: a view whose stamp is not the one on disk is not
        # lifted to documents at all (ADR 13), so it reads no column and no kept file.
        assert not any(r.startswith("SELECT ?s ?o WHERE") for r in reads)
