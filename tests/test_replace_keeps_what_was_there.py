"""A load with replace takes out only what its source brought (ADR 0051): a triple already in
the scope's graph when the source first held it (the user's own, another plain load's, or a
document's own triples that trails wrote at ingest) is not the source's, and stays when the
source drops it. Before, a file that once repeated a document's title and type deleted them
when it was edited: the document fell out of every filter on its type. Expected graphs are
written out by hand."""

from __future__ import annotations

from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph
from trails.kg.base import select
from trails.testing import fresh_context

EX = "https://ex.org/"
HEAD = "@prefix ex: <https://ex.org/> .\n"


def facts(kg, scope: str = "default") -> set[tuple[str, str, str]]:
    rows = select(kg, "SELECT ?s ?p ?o WHERE { ?s ?p ?o FILTER(STRSTARTS(STR(?s), 'https://ex.org/')) }",
                  scopes=[scope])
    return {(str(r["s"]).removeprefix(EX), str(r["p"]).removeprefix(EX), str(r["o"]).removeprefix(EX))
            for r in rows}


def test_a_triple_that_was_there_before_stays_when_the_file_drops_it(tmp_path):
    kg = OxigraphGraph()
    kg.update("INSERT DATA { <https://ex.org/bob> <https://ex.org/worksFor> <https://ex.org/acme> }")
    kg.load((HEAD + "ex:acme ex:label 'ACME' .").encode(), format="text/turtle")  # plain load
    onto = tmp_path / "onto.ttl"
    onto.write_text(HEAD + "ex:acme ex:label 'ACME' . ex:bob ex:worksFor ex:acme . ex:x ex:y ex:z .")
    kg.load(onto, replace=True)
    onto.write_text(HEAD + "ex:x ex:y ex:z .")
    kg.load(onto, replace=True)
    assert facts(kg) == {("acme", "label", "ACME"), ("bob", "worksFor", "acme"), ("x", "y", "z")}


def test_what_the_file_brought_still_goes_after_loads_that_kept_it(tmp_path):
    kg = OxigraphGraph()
    onto = tmp_path / "onto.ttl"
    onto.write_text(HEAD + "ex:a ex:p ex:b . ex:c ex:p ex:d .")
    kg.load(onto, replace=True)
    kg.load(onto, replace=True)  # the same file again: its triples are still its own
    onto.write_text(HEAD + "ex:c ex:p ex:d .")
    kg.load(onto, replace=True)
    assert facts(kg) == {("c", "p", "d")}
    onto.write_text(HEAD + "ex:e ex:p ex:f .")
    kg.load(onto, replace=True)
    assert facts(kg) == {("e", "p", "f")}


def test_a_documents_own_triples_repeated_by_a_file_survive_its_edit(tmp_path):
    ctx = fresh_context()
    ingest_all([Document("a", "a", "Alpha text.", metadata={"title": "Alpha"})], ctx=ctx)
    doc = "trails://local/doc/a"
    onto = tmp_path / "facts.ttl"
    onto.write_text(f'<{doc}> <https://schema.org/name> "Alpha" ; '
                    f'a <https://trails.dev/ns#Document> ; <{EX}reviewed> true .')
    ctx.kg.load(onto, replace=True)
    onto.write_text(f"<{doc}> <{EX}reviewed> false .")
    ctx.kg.load(onto, replace=True)
    hits = retrieve("alpha", ctx, mode="graph",
                    sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d a trails:Document }")
    assert [(hit.document, hit.title) for hit in hits] == [(doc, "Alpha")]
    reviewed = select(ctx.kg, f"SELECT ?r WHERE {{ <{doc}> <{EX}reviewed> ?r }}").column("r")
    assert reviewed == [False]
    assert ctx.verify().ok
    ctx.close()
