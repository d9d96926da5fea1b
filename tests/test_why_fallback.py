"""``why=True`` when the engine joins the hits' VALUES rows to nothing (Virtuoso 7 does so for a
``*`` or ``+`` property path beside a VALUES list of several rows): each hit was admitted, so
its solution is asked for again with the hits tested by a FILTER, never shown empty."""

from __future__ import annotations

import pyoxigraph as ox

from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.kg.base import select
from trails.retrieval import why
from trails.vector import MockEmbedder, retrieve

EX = "https://ex.org/"
SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
TAXONOMY = ("SELECT ?doc WHERE { ?doc a ?type . "
            "?type rdfs:subClassOf* <https://ex.org/Record> }")


def _typed_context() -> Context:
    ctx = Context.memory(MockEmbedder(dim=16))
    docs = [Document(id=name, source=f"{name}.md", text=f"{name} about graph search.")
            for name in ("memo", "letter", "other")]
    assert ingest_all(docs, ctx=ctx).ingested == 3
    ctx.kg.extend([
        ox.Quad(ox.NamedNode(EX + "Memo"), ox.NamedNode(SUBCLASS), ox.NamedNode(EX + "Note")),
        ox.Quad(ox.NamedNode(EX + "Note"), ox.NamedNode(SUBCLASS), ox.NamedNode(EX + "Record")),
        ox.Quad(ox.NamedNode(EX + "Letter"), ox.NamedNode(SUBCLASS), ox.NamedNode(EX + "Record")),
        ox.Quad(ox.NamedNode("trails://local/doc/memo"), ox.NamedNode(TYPE), ox.NamedNode(EX + "Memo")),
        ox.Quad(ox.NamedNode("trails://local/doc/letter"), ox.NamedNode(TYPE),
                ox.NamedNode(EX + "Letter")),
    ])
    return ctx


def test_hits_the_values_rows_miss_get_their_solution_from_a_filter(monkeypatch):
    def rows_join_to_nothing(kg, text, **options):
        if "VALUES (?doc)" in text:  # what Virtuoso 7 answers for this shape
            return select(kg, "SELECT * WHERE { FILTER(false) }", **options)
        return select(kg, text, **options)

    monkeypatch.setattr(why, "select", rows_join_to_nothing)
    with _typed_context() as ctx:
        found = retrieve("graph search", ctx=ctx, mode="hybrid", k=5, sparql_filter=TAXONOMY,
                         why=True)
        assert sorted(h.document for h in found) == ["trails://local/doc/letter",
                                                     "trails://local/doc/memo"]
        by_document = {h.document: h.admitted_by for h in found}
        assert by_document == {
            "trails://local/doc/memo": {"doc": "<trails://local/doc/memo>",
                                        "type": "<https://ex.org/Memo>"},
            "trails://local/doc/letter": {"doc": "<trails://local/doc/letter>",
                                          "type": "<https://ex.org/Letter>"}}


def test_the_fallback_carries_the_bindings(monkeypatch):
    sent: list[str] = []

    def rows_join_to_nothing(kg, text, **options):
        sent.append(text)
        if "VALUES (?doc ?top)" in text:
            return select(kg, "SELECT * WHERE { FILTER(false) }", **options)
        return select(kg, text, **options)

    monkeypatch.setattr(why, "select", rows_join_to_nothing)
    with _typed_context() as ctx:
        bound = "SELECT ?doc WHERE { ?doc a ?type . ?type rdfs:subClassOf* ?top }"
        found = retrieve("graph search", ctx=ctx, mode="hybrid", k=5, sparql_filter=bound,
                         bindings={"top": ox.NamedNode(EX + "Note")}, why=True)
        assert [h.admitted_by for h in found] == [{"doc": "<trails://local/doc/memo>",
                                                   "top": "<https://ex.org/Note>",
                                                   "type": "<https://ex.org/Memo>"}]
        assert len(sent) == 2 and "FILTER(?doc IN (" in sent[1]


def test_why_asked_of_a_search_without_a_filter_says_there_is_nothing_to_give():
    # why=True without a filter was ignored without a word: every admitted_by None, no note,
    # on every surface (they all answer through retrieve()).
    ctx = _typed_context()
    for mode in ("hybrid", "vector"):
        asked = retrieve("graph search", ctx, mode=mode, why=True)
        assert asked and all(hit.admitted_by is None for hit in asked)
        assert any("this search has no filter" in note for note in asked.notes), asked.notes
    assert not any("no filter" in n for n in retrieve("graph search", ctx, why=False).notes)
    assert not any("no filter" in n for n in retrieve("graph search", ctx).notes)
    filtered = retrieve("graph search", ctx, why=True, sparql_filter=TAXONOMY)
    assert filtered and all(hit.admitted_by for hit in filtered)
    assert not any("no filter" in note for note in filtered.notes)
