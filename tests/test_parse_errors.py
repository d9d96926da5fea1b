"""Every SPARQL text that does not parse gets one line naming the mistake: an unknown prefix
(with the closest declared one), an update where a query belongs, a relative IRI with no
BASE, or the parser's position and expectation with its Unicode ranges shortened."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _cli import run_trails
from trails import Context
from trails.errors import SparqlError
from trails.kg import OxigraphGraph
from trails.kg.sparql import check_filter
from trails.vector.embedders.mock import MockEmbedder

KG = OxigraphGraph()


def _message(query: str) -> str:
    with pytest.raises(SparqlError) as caught:
        KG.query(query)
    message = str(caught.value)
    assert "\n" not in message and "\\u{" not in message and len(message) < 400, message
    return message


@pytest.mark.parametrize(("query", "prefix", "suggestion"), [
    ("SELECT ?n WHERE { ?x schem:name ?n }", "schem:", "schema:"),
    ("SELECT ?n WHERE {\n ?x a schema:Thing .\n ?x rdfss:label ?n }", "rdfss:", "rdfs:"),
    ("PREFIX ex: <urn:ex#>\nASK { ?x ex:a ?y ; exx:b ?z }", "exx:", "ex:"),
    ("CONSTRUCT { ?s foo:p ?o } WHERE { ?s ?p ?o }", "foo:", None),
])
def test_an_unknown_prefix_is_named(query, prefix, suggestion):
    message = _message(query)
    assert f"unknown prefix `{prefix}`" in message
    if suggestion:
        assert f"did you mean `{suggestion}`" in message


@pytest.mark.parametrize("update", [
    "INSERT DATA { <urn:a> <urn:b> <urn:c> }", "DELETE WHERE { ?s ?p ?o }",
    "PREFIX x: <urn:x#> CLEAR ALL", "  drop graph <urn:g>",
    "WITH <urn:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", "LOAD <http://example.org/x>"])
def test_an_update_sent_as_a_query_says_so(update):
    message = _message(update)
    assert "this is a SPARQL update" in message and "read-only" in message


def test_other_mistakes_keep_the_position_without_the_unicode_ranges():
    message = _message("SELECT ?x WHERE { ?x")
    assert "at line 1, column 21" in message


@pytest.mark.parametrize(("query", "word", "meant"), [
    ("SELECT ?iri WHERE { ?iri a trails:Chunk } LIMT 5", "LIMT", "LIMIT"),
    ("SELECT ?t (COUNT(*) AS ?n) WHERE { ?s a ?t } GROPU BY ?t", "GROPU", "GROUP"),
    ("SELECT ?s WHERE { ?s ?p ?o OPTINAL { ?s a ?t } }", "OPTINAL", "OPTIONAL"),
    ("SELECT ?s WHERE { ?s ?p ?o FILTR(?o > 1) }", "FILTR", "FILTER"),
    ("SELECT DISTICT ?s WHERE { ?s ?p ?o }", "DISTICT", "DISTINCT"),
    ("select ?s where { ?s ?p ?o } limt 5", "limt", "LIMIT"),
])
def test_a_misspelt_keyword_is_named_with_the_one_meant(query, word, meant):
    message = _message(query)
    assert f"`{word}` is no SPARQL keyword: did you mean {meant}?" in message


@pytest.mark.parametrize("query", [
    "SELECT ?x WHERE { ?x",  # nothing misspelt: no guess
    "SELECT ?s WHERE { ?s ?p ?o FILTER(STRSTARTS(STR(?s), 'a') && ?o > 1 }",
])
def test_no_keyword_is_guessed_where_none_is_misspelt(query):
    assert "is no SPARQL keyword" not in _message(query)


@pytest.mark.parametrize(("query", "relative", "where"), [
    ("SELECT ?iri WHERE { ?iri <isPartOf> ?d }", "isPartOf", "line 1"),
    ("SELECT ?s WHERE {\n ?s <https://schema.org/name> ?n .\n ?s <x> ?y }", "x", "line 3"),
    ("SELECT ?s WHERE { ?s ?p ?o FILTER(?o = <doc/a.md>) }", "doc/a.md", "line 1"),
])
def test_a_relative_iri_without_a_base_is_named(query, relative, where):
    message = _message(query)
    assert f"{where}, column" in message
    assert f"<{relative}> is a relative IRI, and the query declares no BASE" in message


@pytest.mark.parametrize("query", [
    'SELECT ?s WHERE { ?s ?p ?o FILTER(?o = "<b>") ) }',  # in a string: not the mistake
    "SELECT ?s WHERE { ?s ?p ?o } # <c>\n }",  # in a comment
    "SELECT ?s WHERE { ?s ?p <a b> }",  # a space in an IRI with a scheme-less look
])
def test_what_only_looks_like_a_relative_iri_is_not_named_one(query):
    assert "relative IRI" not in _message(query)


def test_a_relative_iri_under_a_base_still_parses():
    assert KG.query("BASE <https://example.org/> ASK { ?s <x> ?o }") is False


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8))
def test_any_undeclared_prefix_is_named(prefix):
    if prefix in KG.prefixes:
        return
    assert f"unknown prefix `{prefix}:`" in _message(f"SELECT * WHERE {{ ?s {prefix}:p ?o }}")


@pytest.mark.parametrize(("query", "expected"), [
    ("SELECT ?n WHERE { ?x schem:name ?n }", "unknown prefix `schem:`"),
    ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", "this is a SPARQL update (INSERT)"),
])
def test_the_cli_prints_the_one_line(tmp_path, query, expected):
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    done = run_trails("--db", tmp_path / "kb", "sparql", query)
    assert done.returncode != 0
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("query", "expected"), [
    ("SELECT ?iri WHERE { ?iri schem:name ?n }",
     "unknown prefix `schem:` (line 1); did you mean `schema:`?"),
    ("SELECT ?iri WHERE { ?iri ?p ?o . SERVICE <http://x/> { ?iri exx:p ?o } }",
     "unknown prefix `exx:`"),
    ("SELECT ?iri WHERE { ?iri", "at line 1, column 25"),
])
def test_a_filter_that_does_not_parse_says_why_as_a_query_does(query, expected):
    """A retrieval filter is SPARQL too: its mistake is named, not listed as the parser's
    Unicode ranges."""
    with pytest.raises(SparqlError) as caught:
        check_filter(query, KG.prefixes)
    message = str(caught.value)
    assert message.startswith("the SPARQL filter does not parse: "), message
    assert expected in message
    assert "\\u{" not in message and len(message) < 400, message


def test_the_cli_names_an_unknown_prefix_in_a_filter(tmp_path):
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    done = run_trails("--db", tmp_path / "kb", "query", "rails", "--sparql",
                      "SELECT ?iri WHERE { ?iri schem:name ?n }")
    assert done.returncode == 1
    assert "unknown prefix `schem:`" in done.stderr and "\\u{" not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("query", ["", "   \n", "# only a comment\n"])
def test_an_empty_query_is_called_empty(query):
    """Not "expected [_]" at line 1, column 1: there is no query to expect anything in."""
    message = _message(query)
    assert "is empty" in message and "SELECT, ASK, CONSTRUCT or DESCRIBE" in message
    assert "expected" not in message


def test_the_cli_calls_an_empty_query_empty(tmp_path):
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    done = run_trails("--db", tmp_path / "kb", "sparql", "-", input="")
    assert done.returncode == 1
    assert "is empty" in done.stderr and "Traceback" not in done.stderr
