"""No silent empty answers: a GRAPH clause that no graph of the searched scopes can match (any
GRAPH clause when only the default scope, the store's default graph, is searched; a graph
name that is another scope's or no scope's) says so in a note, with what to write instead; a
GRAPH clause that can match, or that need not, gets none."""

from __future__ import annotations

import datetime as dt

import pytest

from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.kg import IRI
from trails.testing import fresh_context

SINCE = ("SELECT ?iri WHERE { GRAPH %s { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d }"
         " FILTER(?d >= ?since) }")
DAY = {"since": dt.date(2024, 1, 1)}


@pytest.fixture(scope="module")
def ctx():
    context = fresh_context()
    ingest_all([Document("a", "mem", "Rails routing.", metadata={"date": dt.date(2024, 5, 1)})],
               ctx=context)
    ingest_all([Document("z", "mem", "Rails elsewhere.", metadata={"date": dt.date(2024, 5, 1)})],
               ctx=context, scope="legal")
    yield context
    context.close()


def _graph_notes(result):
    return [n for n in result.notes if n.startswith("nothing matched: GRAPH")]


@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_graph_of_a_variable_on_the_default_scope_alone_is_named(ctx, mode):
    result = retrieve("rails", ctx, mode=mode, sparql_filter=SINCE % "?g", bindings=DAY)
    assert len(result) == 0
    (note,) = _graph_notes(result)
    assert note.startswith("nothing matched: GRAPH ?g { ... } matches only named graphs, and "
                           "the scope default has none")
    assert "drop the GRAPH clause" in note and "scope=" in note
    assert note in result.explain()


def test_the_same_filter_without_graph_or_on_a_named_scope_finds_the_document(ctx):
    """The note's two ways out do find what the filter meant."""
    plain = SINCE.replace("GRAPH %s { ", "").replace(" }", " ", 1)
    assert len(retrieve("rails", ctx, mode="graph", sparql_filter=plain, bindings=DAY)) == 1
    legal = retrieve("rails", ctx, mode="graph", sparql_filter=SINCE % "?g", bindings=DAY,
                     scope="legal")
    assert len(legal) == 1 and _graph_notes(legal) == []


@pytest.mark.parametrize(("name", "said"), [
    ("<urn:trails:scope:default>", ("names no graph: the default scope's triples are in the "
                                   "default graph")),
    ("<urn:trails:scope:legal>", ("is the graph of the scope legal, and the filter reads only "
                                 "the scope default; pass scope='legal'")),
    ("<https://ex.org/g>", "is no graph of the scope default"),
    ("trails:g", "(<https://trails.dev/ns#g>) is no graph of the scope default"),
])
def test_a_graph_named_that_no_searched_scope_has_is_named(ctx, name, said):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=SINCE % name, bindings=DAY)
    assert len(result) == 0
    (note,) = _graph_notes(result)
    assert note.startswith(f"nothing matched: GRAPH {name} ") and said in note


def test_a_graph_variable_bound_to_another_scopes_graph_is_named(ctx):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=SINCE % "?g", scope="legal",
                      bindings={**DAY, "g": IRI("urn:trails:scope:hr")})
    (note,) = _graph_notes(result)
    assert "(<urn:trails:scope:hr>) is the graph of the scope hr" in note


@pytest.mark.parametrize(("text", "scope"), [
    # a named scope is searched: its graph can match, and the filter is merely empty
    (SINCE.replace("?since", '"2031-01-01"^^xsd:date') % "?g", "legal"),
    (SINCE.replace("?since", '"2031-01-01"^^xsd:date') % "<urn:trails:scope:legal>", "legal"),
    (SINCE.replace("?since", '"2031-01-01"^^xsd:date') % "?g", ["default", "legal"]),
    # the clause need not match for the filter to: it is empty for another reason
    (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name \"none\" "
     "OPTIONAL { GRAPH ?g { ?doc schema:dateCreated ?d } } }"), None),
    (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . { ?doc schema:name \"none\" } UNION "
     "{ GRAPH ?g { ?doc schema:dateCreated ?d } } }"), None),
    (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name \"none\" "
     "FILTER NOT EXISTS { GRAPH ?g { ?doc schema:dateCreated ?d } } }"), None),
    (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name \"none\" "
     "MINUS { GRAPH <urn:trails:scope:default> { ?doc schema:dateCreated ?d } } }"), None),
    ('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name "GRAPH ?g { }" }', None),
    (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name \"none\" }"
     " # GRAPH ?g { }"), None),
])
def test_a_graph_clause_that_can_match_or_need_not_gives_no_note(ctx, text, scope):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=text, scope=scope)
    assert len(result) == 0 and _graph_notes(result) == []
