"""``trails sparql --json`` prints the SPARQL 1.1 Query Results JSON Format: each term says
whether it is an IRI, a literal (with its datatype or language) or a blank node, where the
rows were plain strings before ("2024-01-01" the date and the string alike). ASK is
``{"head": {}, "boolean": ...}``; CONSTRUCT and DESCRIBE triples are the rows of ``subject``,
``predicate`` and ``object``. It is the document the HTTP endpoint answers with."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from _cli import run_trails
from trails.service.sparql_protocol import RESULTS_JSON, render_answer

XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    db = tmp_path / "kb"
    assert run_trails("--db", db, "init", "--model", "mock:16").returncode == 0
    facts = tmp_path / "facts.ttl"
    facts.write_text('<urn:a> <urn:n> 3 ; <urn:label> "chat"@fr ; <urn:name> "plain" ;\n'
                     '  <urn:when> "2024-01-01"^^<http://www.w3.org/2001/XMLSchema#date> ;\n'
                     '  <urn:knows> _:b .\n')
    assert run_trails("--db", db, "load", facts).returncode == 0
    return db


def sparql_json(db: Path, query: str) -> dict:
    result = run_trails("--db", db, "sparql", query, "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    # What a SPARQL client reads: pyoxigraph's own parser of the format takes it.
    ox.parse_query_results(result.stdout.encode(), format=ox.QueryResultsFormat.JSON)
    return printed


def test_select_types_every_term(kb):
    printed = sparql_json(kb, ("SELECT ?p ?o ?none WHERE { <urn:a> ?p ?o OPTIONAL { ?o <urn:no> ?none } } "
                                 "ORDER BY ?p"))
    assert printed["head"] == {"vars": ["p", "o", "none"]}
    rows = {row["p"]["value"]: row for row in printed["results"]["bindings"]}
    assert rows["urn:n"]["o"] == {"type": "literal", "value": "3", "datatype": XSD + "integer"}
    assert rows["urn:label"]["o"] == {"type": "literal", "value": "chat", "xml:lang": "fr"}
    assert rows["urn:name"]["o"] == {"type": "literal", "value": "plain"}
    assert rows["urn:when"]["o"] == {"type": "literal", "value": "2024-01-01",
                                     "datatype": XSD + "date"}
    assert rows["urn:knows"]["o"]["type"] == "bnode"
    assert rows["urn:n"]["p"] == {"type": "uri", "value": "urn:n"}
    assert all("none" not in row for row in rows.values())  # unbound: left out of its row
    assert len(rows) == 5


def test_ask(kb):
    assert sparql_json(kb, "ASK { <urn:a> <urn:n> 3 }") == {"head": {}, "boolean": True}
    assert sparql_json(kb, "ASK { <urn:a> <urn:n> 4 }") == {"head": {}, "boolean": False}


def test_ask_without_json_still_prints_true_or_false(kb):
    assert run_trails("--db", kb, "sparql", "ASK { <urn:a> <urn:n> 3 }").stdout == "true\n"


def test_construct_is_rows_of_subject_predicate_object(kb):
    printed = sparql_json(kb, "CONSTRUCT { ?s <urn:n> ?o } WHERE { ?s <urn:n> ?o }")
    assert printed == {"head": {"vars": ["subject", "predicate", "object"]},
                       "results": {"bindings": [{
                           "subject": {"type": "uri", "value": "urn:a"},
                           "predicate": {"type": "uri", "value": "urn:n"},
                           "object": {"type": "literal", "value": "3",
                                      "datatype": XSD + "integer"}}]}}


def test_the_command_and_the_endpoint_write_the_same_document(kb):
    query = "SELECT ?p ?o WHERE { <urn:a> ?p ?o FILTER(!isBlank(?o)) } ORDER BY ?p"
    printed = sparql_json(kb, query)
    from trails.context import Context
    with Context.open(kb, read_only=True) as ctx:
        answered, media = render_answer(ctx.kg.query(query), RESULTS_JSON)
    assert media == RESULTS_JSON and json.loads(answered) == printed
