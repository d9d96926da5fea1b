"""Metadata is part of what a document is, and trails removes only what it wrote (ADR 0012).

- A front-matter edit re-ingests as a metadata update: the graph and the vectors' document
  fields change, nothing is embedded again, and an event says so.
- A user's triples about documents and chunks, in any graph and position, survive every
  re-ingest, metadata update and delete (unless the delete is asked to take them).
"""

from __future__ import annotations

import re

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.context import Context
from trails.ingest import Document, DocumentMetadataUpdated, graph_updates, ingest, ingest_all
from trails.ingest import writer as writer_module
from trails.kg import IRI
from trails.testing import fresh_context
from trails.vector import MockEmbedder

EX = "https://example.org/"
DATED = """SELECT ?c WHERE {{ ?c schema:isPartOf ?doc . ?doc schema:dateCreated ?d .
                               FILTER(?d >= "{since}"^^xsd:date) }}"""
UNRESTRICTED = f"""SELECT ?c WHERE {{ ?c schema:isPartOf ?doc .
    FILTER NOT EXISTS {{ ?doc <{EX}classification> "restricted" }} }}"""


class CountingEmbedder(MockEmbedder):
    """Counts the texts it embeds: a metadata update must embed none."""

    embedded = 0

    def embed_batch(self, texts):
        CountingEmbedder.embedded += len(texts)
        return super().embed_batch(texts)


def memo(date: str, body: str = "Rails routing memo. It explains resources.") -> str:
    return f"---\ntitle: Memo\ndate: {date}\nauthor: ann\n---\n{body}\n"


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text(memo("2024-01-01"))
    (root / "b.md").write_text("Elephants and rails, a second document.\n")
    return root


def doc_of(ctx, name: str) -> str:
    return ctx.kg.query("SELECT ?d WHERE { ?d trails:documentId ?id FILTER(?id = ?n) }",
                        {"n": name}).column("d")[0]


def test_a_metadata_edit_updates_graph_and_vectors_without_embedding(folder):
    with fresh_context(embedder=CountingEmbedder(dim=32)) as ctx:
        ingest_all(folder, ctx=ctx)
        before = sorted(ctx.vectors.all_ids())
        CountingEmbedder.embedded = 0
        (folder / "a.md").write_text(memo("2025-06-01"))
        events = list(ingest(folder, ctx=ctx))
        stats = ingest_all(folder, ctx=ctx)  # and a third run: nothing left to do
        assert [e for e in events if isinstance(e, DocumentMetadataUpdated)]
        assert CountingEmbedder.embedded == 0
        assert sorted(ctx.vectors.all_ids()) == before  # the same vectors, not re-embedded
        assert (stats.metadata_updated, stats.skipped, stats.ingested) == (0, 2, 0)
        doc = doc_of(ctx, "a.md")
        dates = ctx.kg.query("SELECT ?d WHERE { ?doc schema:dateCreated ?d }",
                             {"doc": IRI(doc)}).column("d")
        assert [str(d) for d in dates] == ["2025-06-01"]  # the stale date is gone
        hits = retrieve("rails routing", ctx, mode="hybrid", k=5,
                        sparql_filter=DATED.format(since="2025-01-01"))
        assert hits and {h.document for h in hits} == {doc}
        assert {str(h.date) for h in hits} == {"2025-06-01"}  # the vectors' copy too


def test_the_summary_says_metadata_updated(folder):
    with fresh_context() as ctx:
        ingest_all(folder, ctx=ctx)
        (folder / "a.md").write_text(memo("2023-02-02"))
        stats = ingest_all(folder, ctx=ctx)
        assert stats.metadata_updated == 1 and "1 metadata updated" in stats.summary()


def test_fields_in_another_order_are_no_metadata_change(folder):
    # The same front matter with its lines reordered writes the same triples.
    with fresh_context() as ctx:
        ingest_all(folder, ctx=ctx)
        (folder / "a.md").write_text("---\nauthor: ann\ndate: 2024-01-01\ntitle: Memo\n---\n"
                                     "Rails routing memo. It explains resources.\n")
        stats = ingest_all(folder, ctx=ctx)
        assert (stats.skipped, stats.metadata_updated, stats.ingested) == (2, 0, 0)
        (folder / "a.md").write_text(memo("2024-01-02"))  # a real change is still one
        assert ingest_all(folder, ctx=ctx).metadata_updated == 1


def add_user_triples(ctx, doc: str) -> str:
    chunk = ctx.kg.query("SELECT ?c WHERE { ?c schema:isPartOf ?d }", {"d": IRI(doc)}).column(
        "c")[0]
    ctx.kg.update(f"""INSERT DATA {{
        <{doc}> <{EX}classification> "restricted" .
        <{doc}> <https://trails.dev/meta#reviewer> "bob" .
        <{EX}report> <{EX}cites> <{doc}> .
        <{chunk}> <{EX}note> "checked" .
        GRAPH <{EX}mine> {{ <{doc}> <{EX}owner> "legal" }} }}""")
    return chunk


def user_triples(ctx, doc: str) -> set[str]:
    rows = ctx.kg.query(f"""SELECT ?p WHERE {{
        {{ <{doc}> ?p ?o FILTER(?p IN (<{EX}classification>, <https://trails.dev/meta#reviewer>)) }}
        UNION {{ ?s ?p <{doc}> FILTER(?p = <{EX}cites>) }}
        UNION {{ GRAPH <{EX}mine> {{ <{doc}> ?p ?o }} }} }}""")
    return {str(p).rsplit("/", 1)[-1].rsplit("#", 1)[-1] for p in rows.column("p")}


ALL_USER = {"classification", "reviewer", "cites", "owner"}


@pytest.mark.parametrize("change", ["text", "metadata"])
def test_user_triples_survive_a_new_version_and_a_metadata_update(folder, change):
    with fresh_context() as ctx:
        ingest_all(folder, ctx=ctx)
        doc = doc_of(ctx, "a.md")
        add_user_triples(ctx, doc)
        assert not {h.document for h in retrieve("rails", ctx, k=10, sparql_filter=UNRESTRICTED)
                    } & {doc}
        if change == "text":
            (folder / "a.md").write_text(memo("2024-01-01", "A new text about Rails engines."))
        else:
            (folder / "a.md").write_text(memo("2024-03-03"))
        stats = ingest_all(folder, ctx=ctx)
        assert (stats.ingested, stats.metadata_updated) == ((1, 0) if change == "text" else (0, 1))
        assert user_triples(ctx, doc) == ALL_USER
        # The restricted document stays out of the filtered search.
        assert doc not in {h.document for h in retrieve("rails", ctx, k=10,
                                                        sparql_filter=UNRESTRICTED)}
        assert ctx.verify().ok


def test_delete_keeps_user_triples_unless_asked(folder):
    with fresh_context() as ctx:
        ingest_all(folder, ctx=ctx)
        a, b = doc_of(ctx, "a.md"), doc_of(ctx, "b.md")
        chunk_a = add_user_triples(ctx, a)
        chunk_b = add_user_triples(ctx, b)
        assert ctx.delete_document(a)
        assert user_triples(ctx, a) == ALL_USER
        assert ctx.kg.query(f"ASK {{ <{chunk_a}> <{EX}note> ?n }}")
        assert not ctx.kg.query(f"ASK {{ <{a}> trails:documentId ?i }}")
        assert not ctx.kg.query(f"ASK {{ <{chunk_a}> schema:text ?t }}")
        assert ctx.delete_document(b, include_user_triples=True)
        assert not ctx.kg.query(f"ASK {{ <{b}> <{EX}classification> ?o }}")
        assert not ctx.kg.query(f"ASK {{ <{chunk_b}> ?p ?o }}")
        assert ctx.verify().ok


def test_a_crash_inside_a_metadata_update_is_finished_by_the_next_run(folder, monkeypatch):
    with fresh_context() as ctx:
        ingest_all(folder, ctx=ctx)
        doc = doc_of(ctx, "a.md")
        add_user_triples(ctx, doc)
        (folder / "a.md").write_text(memo("2026-01-01"))

        def killed(self, documents):
            raise KeyboardInterrupt  # after the store's transaction, before the graph's

        monkeypatch.setattr(writer_module.VersionWriter, "clean_graph", killed)
        with pytest.raises(KeyboardInterrupt):
            ingest_all(folder, ctx=ctx)
        monkeypatch.undo()
        assert ingest_all(folder, ctx=ctx).metadata_updated == 1
        dates = ctx.kg.query("SELECT ?d WHERE { ?doc schema:dateCreated ?d }",
                             {"doc": IRI(doc)}).column("d")
        assert [str(d) for d in dates] == ["2026-01-01"]
        assert user_triples(ctx, doc) == ALL_USER
        assert ctx.verify().ok


def test_a_context_without_manifests_updates_once_and_keeps_user_triples(folder):
    """Documents ingested before manifests were kept: the first run rewrites their triples
    (trails' own predicates only), without embedding."""
    with fresh_context(embedder=CountingEmbedder(dim=32)) as ctx:
        ingest_all(folder, ctx=ctx)
        doc = doc_of(ctx, "a.md")
        ctx.kg.update("DELETE WHERE { GRAPH <urn:trails:minted> { ?d ?p ?m } }")
        ctx.kg.update(f'INSERT DATA {{ <{doc}> <{EX}classification> "restricted" }}')
        CountingEmbedder.embedded = 0
        stats = ingest_all(folder, ctx=ctx)
        assert (stats.metadata_updated, CountingEmbedder.embedded) == (2, 0)
        assert ctx.kg.query(f'ASK {{ <{doc}> <{EX}classification> "restricted" }}')
        assert ingest_all(folder, ctx=ctx).skipped == 2


runner = CliRunner()


def cli(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_two_scenarios_through_the_command_line(folder, tmp_path):
    db = tmp_path / "kb"
    cli("--db", db, "init", "--model", "mock:32")
    cli("--db", db, "ingest", folder)
    (folder / "a.md").write_text(memo("2025-06-01"))
    assert "1 metadata updated" in cli("--db", db, "ingest", folder)
    query = DATED.format(since="2025-01-01")
    (tmp_path / "dated.rq").write_text(query)
    found = cli("--db", db, "query", "rails routing", "--sparql", tmp_path / "dated.rq", "--json")
    assert "a.md" in found and "b.md" not in found
    with Context.open(db) as ctx:
        ctx.kg.update(f'INSERT DATA {{ <{doc_of(ctx, "a.md")}> <{EX}classification> "restricted" }}')
    (folder / "a.md").write_text(memo("2025-06-01", "Rails engines, a different text now."))
    cli("--db", db, "ingest", folder)
    (tmp_path / "open.rq").write_text(UNRESTRICTED)
    found = cli("--db", db, "query", "rails", "--sparql", tmp_path / "open.rq", "--json")
    assert "b.md" in found and "a.md" not in found


def test_a_kill_between_the_graph_delete_and_load_keeps_user_metadata(folder, monkeypatch):
    """A graph where the delete removed trails' triples and the manifest and the load never
    ran (a store written before step 4 was one transaction). The next run must not take the
    user's meta: triple for one of trails' own."""
    with fresh_context() as ctx:
        ingest_all(folder, ctx=ctx)
        doc = doc_of(ctx, "a.md")
        ctx.kg.update(f'INSERT DATA {{ <{doc}> <https://trails.dev/meta#reviewer> "ann" }}')
        (folder / "a.md").write_text(memo("2026-02-02"))
        real_update, real_clean = graph_updates.finish_update, writer_module.VersionWriter.clean_graph

        def deletes_only(*args):
            return real_update(*args).rsplit(" ;\n", 1)[0]  # without the INSERT DATA

        def killed(self, documents):
            real_clean(self, documents)
            raise KeyboardInterrupt

        monkeypatch.setattr(graph_updates, "finish_update", deletes_only)
        monkeypatch.setattr(writer_module.VersionWriter, "clean_graph", killed)
        with pytest.raises(KeyboardInterrupt):
            ingest_all(folder, ctx=ctx)
        monkeypatch.undo()
        ingest_all(folder, ctx=ctx)
        assert ctx.kg.query(f'ASK {{ <{doc}> <https://trails.dev/meta#reviewer> "ann" }}')
        assert ctx.verify().ok


def test_an_id_shaped_like_a_chunk_of_another_document_mints_its_own_iri():
    """A document whose id reads like another's chunk path (``a.md/v/<version>/c/0``) gets an
    IRI of its own: ingesting it leaves every triple of the other document's chunk, and
    deleting it deletes nothing of the other's."""
    from trails.ingest import Document

    def chunk_triples(ctx, chunk: str) -> set[tuple[str, str]]:
        return {(str(r["p"]), str(r["o"])) for r in ctx.kg.query(
            "SELECT ?p ?o WHERE { ?c ?p ?o }", {"c": IRI(chunk)})}

    with fresh_context(dim=16) as ctx:
        ingest_all([Document(id="a.md", source="a.md", text="Rails routing. Resources.")],
                   ctx=ctx)
        chunk = ctx.kg.query("SELECT ?c WHERE { ?c schema:isPartOf ?d }",
                             {"d": IRI(doc_of(ctx, "a.md"))}).column("c")[0]
        before = chunk_triples(ctx, chunk)
        assert ("https://schema.org/text", "Rails routing. Resources.") in before
        twin = chunk.split("/doc/", 1)[1]
        ingest_all([Document(id=twin, source="twin.md", text="Another text about rails.")],
                   ctx=ctx)
        assert doc_of(ctx, twin) != chunk
        assert chunk_triples(ctx, chunk) == before
        assert ctx.verify().ok
        ctx.delete_document(doc_of(ctx, twin))
        assert chunk_triples(ctx, chunk) == before
        assert {h.iri for h in retrieve("rails routing", ctx, mode="vector", k=10)} == {chunk}


def test_a_document_id_with_a_chunk_like_path_reads_untorn():
    """``a/v/zz/c/1`` is no chunk of ``a`` (a version is 16 hex digits): a filter selecting
    it answers at once, with no note of a document changing during the read."""
    from trails.ingest import Document

    with fresh_context(dim=16) as ctx:
        ingest_all([Document(id="a", source="a", text=""),
                    Document(id="a/v/zz/c/1", source="b", text="rails routing memo")], ctx=ctx)
        only = ('SELECT ?iri WHERE { ?iri a trails:Document ; trails:documentId ?id '
                'FILTER(STRSTARTS(?id, "a/")) }')
        for mode in ("graph", "hybrid"):
            result = retrieve("rails", ctx, mode=mode, sparql_filter=only, k=5)
            assert len(result) == 1 and "/doc/a/v/zz/c/1" in result[0].iri, mode
            assert not any("changed in the graph" in note for note in result.notes), mode


def test_a_metadata_literal_strict_parsing_refuses_is_still_trails_own_to_replace(tmp_path):
    """A literal typed rdf:langString without a language is taken by the graph as given;
    its manifest, read back, must still say it is trails' to delete (strict N-Triples
    parsing refuses it): a new version replaces it and a user's own triple stays."""
    from trails.ingest import Document
    from trails.kg.base import select

    odd = ox.Literal("Ada", datatype=ox.NamedNode(
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"))
    iri = "trails://local/doc/d"
    about = (f"SELECT ?p ?o WHERE {{ <{iri}> ?p ?o FILTER(?p IN (dcterms:creator, "
             "<https://trails.dev/meta#reviewed>)) }")
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16),
                      metadata_predicates={"author": "dcterms:creator"}) as ctx:
        ingest_all([Document("d", "s", "First text.", metadata={"author": odd})], ctx=ctx)
        ctx.kg.update(f'INSERT DATA {{ <{iri}> <https://trails.dev/meta#reviewed> "by me" }}')
        ingest_all([Document("d", "s", "Second text.", metadata={"author": "Grace"})], ctx=ctx)
        assert sorted(str(r["o"]) for r in select(ctx.kg, about)) == ["Grace", "by me"]
        assert ctx.delete_document(iri)
        assert [str(r["o"]) for r in select(ctx.kg, about)] == ["by me"]


@pytest.mark.parametrize("junk", [
    '<trails://local/doc/d> trails:scope "not a scope name"',
    "[] a trails:Document ; trails:expires \"2020-01-01T00:00:00Z\"^^xsd:dateTime",
    "[] a trails:Chunk ; schema:isPartOf <trails://local/doc/d> ; trails:version \"x\"",
])
def test_a_users_odd_triples_never_stall_a_delete_a_prune_or_a_repair(tmp_path, junk):
    """Triples anyone may write about trails' terms (a scope value that is no scope name, a
    blank node typed as a document or a chunk) are not trails' to act on: deleting, pruning
    and repairing go on around them, and never stop half-way (vectors gone, triples left)."""
    from trails.ingest import Document

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("d", "s", "Expired text.", metadata={"expires": "2021-01-01"}),
                    Document("e", "s", "Kept text.")], ctx=ctx)
        ctx.kg.update(f"INSERT DATA {{ {junk} }}")
        assert [e.iri for e in ctx.prune_expired()] == ["trails://local/doc/d"]
        assert ctx.vectors.current_versions().keys() == {"trails://local/doc/e"}
        ctx.verify(repair=True)
        assert ctx.delete_document("trails://local/doc/e")
        assert ctx.vectors.current_versions() == {}
        report = ctx.verify()
        assert not report.orphan_documents and not report.graph_behind, report


def test_step_four_names_the_predicates_it_deletes_in_the_minted_graph():
    """Step 4 deleted the staged manifests as ``?vv ?sp ?so`` (any predicate): Virtuoso 7 plans
    that as a scan of the graph, and an ingest of 16,000 one-chunk documents took 293 s there
    (22 s with the predicates named). Every pattern of the update names its predicate, and
    a staged manifest whose ``trails:minted`` never arrived (the two triples can go in two
    requests to a server) is still removed with its ``trails:stagedFor``."""
    doc = "trails://local/doc/a"
    text = graph_updates.finish_update(Context.memory(MockEmbedder(dim=8)).kg, [
        (doc, "v1", f"<{doc}> <https://schema.org/name> \"A\" .\n")], "default")
    minted = re.findall(r"GRAPH <urn:trails:minted> \{([^{}]*)", text)
    assert len(minted) >= 4
    assert not [b for b in minted if re.search(r"(^|[;.])\s*\?\w+\s+\?\w+", b)]
    with fresh_context(dim=8) as ctx:
        ingest_all([Document(id="a.md", source="a.md", text="Rails routing.")], ctx=ctx)
        iri = doc_of(ctx, "a.md")
        ctx.kg.update(f"INSERT DATA {{ GRAPH <urn:trails:minted> {{ <{iri}/v/old> "
                      f"<https://trails.dev/ns#stagedFor> <{iri}> }} }}")
        ingest_all([Document(id="a.md", source="a.md", text="Rails routing, changed.")],
                   ctx=ctx)
        assert not ctx.kg.query(f"ASK {{ GRAPH <urn:trails:minted> {{ ?n "
                                f"<https://trails.dev/ns#stagedFor> <{iri}> }} }}")
        assert ctx.verify().ok
