"""The SPARQL text rewrites of ``trails.kg.remote.rewrite``, without any server.

The end-to-end checks (the rewritten query confined on a real ``oxigraph serve``) are in
tests/test_kg_contract.py and tests/test_remote_endpoint.py; these pin the texts themselves.
"""

from __future__ import annotations

import subprocess
import sys

import pyoxigraph as ox
import pytest

from trails.errors import SparqlError, UnsafeFilterError
from trails.kg.remote.rewrite import (
    PROLOGUE_MARK,
    caller_positions,
    default_scope_only,
    refuse_service,
    refuse_similarity,
    with_prefixes,
)
from trails.kg.sparql import PREFIXES

EX = {"ex": "http://example.org/", "schema": "http://schema.org/"}


def _parses(text: str) -> bool:
    try:
        ox.Store().query(text)
    except SyntaxError:
        return False
    return True


def test_with_prefixes_declares_only_what_the_text_does_not():
    text = "PREFIX ex: <http://other/> SELECT ?n WHERE { ?s ex:p ?n ; schema:name ?n }"
    sent = with_prefixes(text, EX)
    assert sent == PROLOGUE_MARK + "PREFIX schema: <http://schema.org/>\n" + text
    assert with_prefixes("PREFIX ex: <a:> PREFIX schema: <b:> ASK {}", EX).startswith("PREFIX")


def test_a_prefix_named_in_a_string_iri_or_comment_is_not_declared():
    text = 'SELECT * WHERE { ?s <urn:PREFIX ex:> "PREFIX ex:" } # PREFIX ex: <x:>'
    assert with_prefixes(text, EX) == (
        PROLOGUE_MARK + "PREFIX ex: <http://example.org/> PREFIX schema: <http://schema.org/>\n"
        + text)


def test_caller_positions_counts_lines_from_the_callers_text():
    assert caller_positions("error at 5:3 and error at 2:9") == "error at 3:3 and error at 1:9"
    assert caller_positions("no position") == "no position"


def test_default_scope_only_removes_dataset_clauses_and_empties_graph_groups():
    text = ("SELECT ?s ?n FROM <urn:a> FROM NAMED <urn:b> WHERE { ?s <urn:p> ?k "
            "OPTIONAL { GRAPH ?g { ?s <urn:name> ?n } } }")
    rewritten = default_scope_only(text)
    assert "FROM" not in rewritten and "GRAPH" not in rewritten
    assert "{ VALUES (?g ?s ?n) { } }" in rewritten
    assert rewritten.startswith("SELECT ?s ?n ") and _parses(rewritten)


def test_a_graph_group_without_variables_becomes_a_group_with_no_solution():
    assert default_scope_only("ASK { GRAPH <urn:b> { <urn:s> <urn:p> 1 } }") == (
        "ASK { { FILTER(false) } }")


def test_nested_graph_groups_are_replaced_once_from_the_outside():
    rewritten = default_scope_only(
        "SELECT * WHERE { GRAPH ?g { GRAPH <urn:b> { ?s ?p ?o } } }")
    assert rewritten == "SELECT * WHERE { { VALUES (?g ?s ?p ?o) { } } }"


@pytest.mark.parametrize("text", [
    'SELECT ?s WHERE { ?s ?p "GRAPH ?g { } FROM <urn:x>" } # GRAPH ?h { }',
    "SELECT ?graph ?from WHERE { ?graph ?from ?service }",
    "SELECT ?s WHERE { ?s <urn:graph/from/service> ?o }",
    "PREFIX graph: <urn:g:> SELECT ?s WHERE { ?s graph:from ?o }",
])
def test_keywords_inside_strings_iris_comments_and_names_are_left_alone(text):
    assert default_scope_only(text) == text


def test_a_graph_form_the_rewrite_cannot_read_is_refused_not_sent():
    # "·" may continue a SPARQL variable name but is not a regex word character.
    with pytest.raises(UnsafeFilterError, match="cannot confine"):
        default_scope_only("SELECT * WHERE { GRAPH ?a\u00b7b { ?s ?p ?o } }")


def test_a_query_that_does_not_parse_is_a_sparql_error_in_the_callers_lines():
    text = with_prefixes("SELECT * WHERE { GRAPH ?g { ?s ?p ?o }", PREFIXES)
    with pytest.raises(SparqlError, match="does not parse: error at 1:") as error:
        default_scope_only(text)
    assert not isinstance(error.value, UnsafeFilterError)


@pytest.mark.parametrize("text", [
    "SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }",
    "SELECT * WHERE { service silent <http://127.0.0.1:9/> { ?s ?p ?o } }",
])
def test_service_is_refused(text):
    with pytest.raises(UnsafeFilterError, match="cannot use SERVICE"):
        refuse_service(text)


def test_service_as_a_word_in_data_is_allowed():
    refuse_service('SELECT ?service WHERE { ?service <urn:p> "SERVICE <x> {}" }')


def test_similarity_is_refused_with_what_to_do_instead():
    with pytest.raises(SparqlError, match="mode='hybrid'"):
        refuse_similarity('SELECT ?c WHERE { BIND(trails:similarity(?c, "x") AS ?s) }', PREFIXES)
    refuse_similarity("SELECT ?c WHERE { ?c ?p ?o }", PREFIXES)


def test_the_rewriter_and_the_package_work_without_httpx():
    code = ("import sys; sys.modules['httpx'] = None\n"
            "import trails.kg.remote\n"
            "from trails.kg.remote.rewrite import default_scope_only\n"
            "print(default_scope_only('ASK { GRAPH <urn:b> { ?s ?p ?o } }'))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ASK { { VALUES (?s ?p ?o) { } } }"
