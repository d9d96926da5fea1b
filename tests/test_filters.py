"""Retrieval filters: only a read-only, local SELECT of one variable gets through."""

from __future__ import annotations

import pytest

from trails import retrieve
from trails.errors import SparqlError, UnsafeFilterError
from trails.kg import check_filter


@pytest.mark.parametrize("query, variable", [
    ("SELECT ?iri WHERE { ?iri a schema:CreativeWork }", "iri"),
    ("select distinct ?chunk where { ?chunk schema:isPartOf ?doc }", "chunk"),
    ("SELECT * WHERE { ?iri a schema:Thing }", "iri"),
    ("PREFIX ex: <https://example.org/>\nSELECT ?x { ?x ex:p 1 } LIMIT 5", "x"),
    ('SELECT ?iri WHERE { ?iri schema:name "SERVICE <https://evil/> { ?a ?b ?c }" }', "iri"),
    ("SELECT ?iri WHERE { ?iri schema:name '''service''' }", "iri"),
    ('SELECT ?iri WHERE { ?iri schema:text """INSERT DATA { <a:b> <a:c> <a:d> }""" }', "iri"),
    ("SELECT ?iri WHERE { ?iri a <https://x/SERVICE> } # SERVICE <https://evil/>", "iri"),
    ("SELECT ?iri WHERE { ?iri schema:copy ?delete }", "iri"),
])
def test_a_one_variable_select_is_accepted_and_its_variable_returned(query, variable):
    assert check_filter(query) == variable


@pytest.mark.parametrize("update", [
    "INSERT DATA { <https://x/a> <https://x/b> <https://x/c> }",
    "DELETE DATA { <https://x/a> <https://x/b> <https://x/c> }",
    "DELETE WHERE { ?s ?p ?o }",
    "delete { ?s ?p ?o } insert { ?s ?p 1 } where { ?s ?p ?o }",
    "WITH <https://x/g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "CLEAR ALL",
    "DROP GRAPH <https://x/g>",
    "LOAD <https://x/data.ttl>",
    "SELECT ?iri WHERE { ?iri ?p ?o } ; DELETE WHERE { ?s ?p ?o }",
])
def test_updates_are_refused(update):
    with pytest.raises(UnsafeFilterError, match="read-only"):
        check_filter(update)


@pytest.mark.parametrize("query", [
    "SELECT ?iri WHERE { SERVICE <https://evil.example/sparql> { ?iri ?p ?o } }",
    "select ?iri where { service <https://evil.example/sparql> { ?iri ?p ?o } }",
    "SELECT ?iri WHERE { SeRvIcE SILENT <https://evil.example/sparql> { ?iri ?p ?o } }",
    'SELECT ?iri WHERE { ?iri schema:name "x" . SERVICE ?endpoint { ?iri ?p ?o } }',
])
def test_service_is_refused_in_any_case(query):
    with pytest.raises(UnsafeFilterError, match="SERVICE"):
        check_filter(query)


@pytest.mark.parametrize("query, why", [
    ("ASK { ?s ?p ?o }", "ASK"),
    ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "CONSTRUCT"),
    ("DESCRIBE <https://x/a>", "DESCRIBE"),
    ("SELECT ?iri ?doc WHERE { ?iri schema:isPartOf ?doc }", "2 variables"),
    ("SELECT * WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name ?n }", "3 variables"),
    ("", "empty"),
    ("   \n ", "empty"),
])
def test_other_forms_and_projections_are_refused_with_the_reason(query, why):
    with pytest.raises(UnsafeFilterError, match=why) as error:
        check_filter(query)
    if "variables" in why:
        assert "exactly one" in str(error.value)


@pytest.mark.parametrize("query", [
    "SELECT ?iri WHERE { ?iri schema:name }",
    "SELECT ?iri WHERE { ?iri a schema:Thing",
    "SELECT ?iri WHERE { ?iri unknownprefix:p ?o }",
    "SELECT ?add WHERE { ?add a }",  # looks like the ADD keyword, is only a variable
])
def test_malformed_text_is_a_sparql_error_saying_it_does_not_parse(query):
    with pytest.raises(SparqlError, match="does not parse") as error:
        check_filter(query)
    assert type(error.value) is SparqlError
    assert "line 1" in str(error.value)  # where the mistake is


def test_custom_prefixes_are_used_for_parsing():
    query = "SELECT ?iri WHERE { ?iri ex:p 1 }"
    with pytest.raises(SparqlError):
        check_filter(query)
    assert check_filter(query, {"ex": "https://example.org/"}) == "iri"


BAD_FILTERS = [
    ("INSERT DATA { <https://x/a> <https://x/b> <https://x/c> }", UnsafeFilterError),
    ("SELECT ?iri WHERE { SERVICE <https://evil/> { ?iri ?p ?o } }", UnsafeFilterError),
    ("SELECT ?iri ?p WHERE { ?iri ?p ?o }", UnsafeFilterError),
    ("ASK { ?s ?p ?o }", UnsafeFilterError),
    ("SELECT ?iri WHERE { ?iri schema:name }", SparqlError),
]


@pytest.mark.parametrize("mode", ["hybrid", "graph"])
@pytest.mark.parametrize("query, error", BAD_FILTERS)
def test_retrieve_checks_the_filter_before_embedding_anything(ctx, mode, query, error):
    ctx.vectors.add("trails://c/1", ctx.embedder.embed("rails"), {"snippet": "rails"})
    batches = ctx.embedder.batches
    with pytest.raises(error):
        retrieve("rails", ctx, mode=mode, sparql_filter=query)
    assert ctx.embedder.batches == batches
    assert ctx.vectors.count() == 1


def test_retrieve_checks_bindings_before_embedding_anything(ctx):
    batches = ctx.embedder.batches
    with pytest.raises(ValueError, match="nosuch"):
        retrieve("rails", ctx, sparql_filter="SELECT ?iri WHERE { ?iri ?p ?o }",
                 bindings={"nosuch": 1})
    assert ctx.embedder.batches == batches


def test_a_valid_filter_does_embed_the_query(ctx):
    ctx.vectors.add("trails://c/1", ctx.embedder.embed("rails"), {"snippet": "rails"})
    ctx.kg.update("INSERT DATA { <trails://c/1> a trails:Chunk }")
    batches = ctx.embedder.batches
    result = retrieve("rails", ctx, sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }")
    assert [h.iri for h in result] == ["trails://c/1"]
    assert ctx.embedder.batches == batches + 1
