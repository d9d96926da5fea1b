"""The embedded knowledge graph: queries, prefixes, bindings, updates, errors, persistence."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyoxigraph as ox
import pytest

from trails.errors import ConfigurationError, SparqlError
from trails.kg import IRI, OxigraphGraph, QueryResult

DATA = """
INSERT DATA {
  <https://x/doc/1> a schema:CreativeWork ; schema:name "First" ;
      schema:dateCreated "2024-03-01"^^xsd:date ; trails:pages 12 ; trails:ratio 0.5 ;
      trails:public true .
  <https://x/doc/2> a schema:CreativeWork ; schema:name "Second" ;
      schema:dateCreated "2023-12-31"^^xsd:date ; trails:pages 3 .
  <https://x/doc/3> a schema:Person ; schema:name "2024-03-01" .
}
"""


@pytest.fixture
def kg():
    graph = OxigraphGraph()
    graph.update(DATA)
    return graph


def test_select_returns_python_values_and_raw_terms(kg):
    result = kg.query(
        "SELECT ?s ?name ?date ?pages ?ratio ?public WHERE { ?s schema:name ?name ; "
        "schema:dateCreated ?date . OPTIONAL { ?s trails:pages ?pages } "
        "OPTIONAL { ?s trails:ratio ?ratio } OPTIONAL { ?s trails:public ?public } } ORDER BY ?s"
    )
    assert isinstance(result, QueryResult)
    assert result.variables == ["s", "name", "date", "pages", "ratio", "public"]
    assert result.rows == [
        {"s": "https://x/doc/1", "name": "First", "date": dt.date(2024, 3, 1), "pages": 12,
         "ratio": Decimal("0.5"), "public": True},
        {"s": "https://x/doc/2", "name": "Second", "date": dt.date(2023, 12, 31), "pages": 3,
         "ratio": None, "public": None},
    ]
    assert list(result) == result.rows and len(result) == 2 and result[1]["name"] == "Second"
    assert result.column("pages") == [12, 3]
    raw = result.raw[0]
    assert raw["s"] == ox.NamedNode("https://x/doc/1")
    assert raw["date"] == ox.Literal("2024-03-01",
                                     datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#date"))
    assert result.raw[1]["ratio"] is None


def test_ask_returns_a_bool(kg):
    assert kg.query("ASK { ?s a schema:Person }") is True
    assert kg.query("ASK { ?s a schema:Event }") is False


def test_construct_returns_triples(kg):
    triples = kg.query(
        "CONSTRUCT { ?s rdfs:label ?n } WHERE { ?s a schema:CreativeWork ; schema:name ?n }"
    )
    label = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    assert all(isinstance(t, ox.Triple) for t in triples)
    assert set(triples) == {
        ox.Triple(ox.NamedNode("https://x/doc/1"), label, ox.Literal("First")),
        ox.Triple(ox.NamedNode("https://x/doc/2"), label, ox.Literal("Second")),
    }


@pytest.mark.parametrize("prefix, namespace", [
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
    ("schema", "https://schema.org/"),
    ("prov", "http://www.w3.org/ns/prov#"),
    ("dcterms", "http://purl.org/dc/terms/"),
    ("trails", "https://trails.dev/ns#"),
])
def test_predeclared_prefixes_need_no_prefix_lines(prefix, namespace):
    graph = OxigraphGraph()
    graph.update(f"INSERT DATA {{ <https://x/a> {prefix}:p {prefix}:o }}")
    assert graph.query("SELECT ?p ?o WHERE { <https://x/a> ?p ?o }").rows == [
        {"p": namespace + "p", "o": namespace + "o"}
    ]
    assert graph.query(f"ASK {{ ?s {prefix}:p {prefix}:o }}") is True


def test_a_date_binding_compares_as_xsd_date(kg):
    query = ("SELECT ?s WHERE { ?s schema:dateCreated ?d FILTER(?d >= ?since) } ORDER BY ?s")
    assert kg.query(query, {"since": dt.date(2024, 1, 1)}).column("s") == ["https://x/doc/1"]
    assert kg.query(query, {"since": dt.date(2023, 1, 1)}).column("s") == [
        "https://x/doc/1", "https://x/doc/2"]
    # The same text as a plain string is a string, which never equals a date.
    same_text = "SELECT ?s WHERE { ?s ?p ?v }"
    assert kg.query(same_text, {"v": dt.date(2024, 3, 1)}).column("s") == ["https://x/doc/1"]
    assert kg.query(same_text, {"v": "2024-03-01"}).column("s") == ["https://x/doc/3"]


def test_numbers_and_booleans_bind_as_typed_literals(kg):
    query = "SELECT ?s WHERE { ?s trails:pages ?n FILTER(?n > ?min) }"
    assert kg.query(query, {"min": 5}).column("s") == ["https://x/doc/1"]
    assert sorted(kg.query(query, {"min": 2.5}).column("s")) == [
        "https://x/doc/1", "https://x/doc/2"]
    assert kg.query(query, {"min": Decimal("1E+2")}).column("s") == []
    assert kg.query("SELECT ?s WHERE { ?s trails:public ?b }", {"b": True}).column("s") == [
        "https://x/doc/1"]


def test_an_iri_binding_is_a_named_node(kg):
    query = "SELECT ?n WHERE { ?doc schema:name ?n }"
    assert kg.query(query, {"doc": IRI("https://x/doc/2")}).column("n") == ["Second"]
    assert kg.query(query, {"doc": ox.NamedNode("https://x/doc/2")}).column("n") == ["Second"]
    assert kg.query(query, {"doc": "https://x/doc/2"}).column("n") == []  # a literal


def test_bindings_reach_construct_and_ask(kg):
    triples = kg.query("CONSTRUCT { ?s rdfs:label ?n } WHERE { ?s schema:name ?n }",
                       {"s": IRI("https://x/doc/1")})
    assert [t.object for t in triples] == [ox.Literal("First")]
    assert kg.query("ASK { ?s schema:name ?n }", {"n": "Second"}) is True
    assert kg.query("ASK { ?s schema:name ?n }", {"n": "Third"}) is False


@pytest.mark.parametrize("bindings, message", [
    ({"nosuch": 1}, "nosuch"),
    ({"name": "First", "extra": 2}, "extra"),
    ({"not a name": 1}, "variable name"),
])
def test_a_binding_that_names_no_variable_is_a_value_error(kg, bindings, message):
    with pytest.raises(ValueError, match=message):
        kg.query("SELECT ?s WHERE { ?s schema:name ?name }", bindings)


def test_a_variable_only_in_a_string_or_comment_is_not_a_variable(kg):
    with pytest.raises(ValueError, match="hidden"):
        kg.query('SELECT ?s WHERE { ?s schema:name "?hidden" } # ?hidden', {"hidden": 1})


def test_update_inserts_and_deletes_with_bindings(kg):
    kg.update("INSERT DATA { <https://x/doc/4> schema:name \"Fourth\" }")
    assert kg.query("ASK { <https://x/doc/4> schema:name \"Fourth\" }") is True
    before = len(kg)
    kg.update("DELETE { ?s schema:name ?n } WHERE { ?s schema:name ?n }", {"n": "Fourth"})
    assert len(kg) == before - 1
    kg.update("INSERT { ?s trails:checked true } WHERE { ?s trails:pages ?p FILTER(?p < ?max) }",
              {"max": 10})
    assert kg.query("SELECT ?s WHERE { ?s trails:checked true }").column("s") == [
        "https://x/doc/2"]


def test_delete_where_short_form_with_bindings_is_refused_clearly(kg):
    with pytest.raises(ValueError, match=r"DELETE \{\.\.\.\} WHERE \{\.\.\.\}"):
        kg.update("DELETE WHERE { ?s schema:name ?n }", {"n": "First"})


@pytest.mark.parametrize("query", [
    "SELECT ?s WHERE { ?s schema:name }",
    "SELEKT ?s WHERE { ?s ?p ?o }",
    "SELECT ?s WHERE { ?s nosuchprefix:p ?o }",
])
def test_a_malformed_query_is_a_sparql_error(kg, query):
    with pytest.raises(SparqlError, match="does not parse"):
        kg.query(query)


def test_a_malformed_update_is_a_sparql_error(kg):
    with pytest.raises(SparqlError, match="does not parse"):
        kg.update("INSERT DATA { <https://x/a> schema:name }")


def test_scopes_confine_a_query_to_their_graphs():
    from trails.scopes import scope_graph

    graph = OxigraphGraph()
    name = ox.NamedNode("https://schema.org/name")
    graph.extend([
        ox.Quad(ox.NamedNode("https://x/a"), name, ox.Literal("A"), scope_graph("legal")),
        ox.Quad(ox.NamedNode("https://x/b"), name, ox.Literal("B"), scope_graph("hr")),
    ])
    query = "SELECT ?s WHERE { ?s schema:name ?n } ORDER BY ?s"
    assert graph.query(query, scopes=["legal"]).column("s") == ["https://x/a"]
    assert graph.query(query, scopes=["legal", "hr"]).column("s") == ["https://x/a",
                                                                     "https://x/b"]
    assert graph.query("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }",
                       scopes=["hr"]).column("s") == ["https://x/b"]


def test_an_on_disk_graph_persists_across_reopen(tmp_path):
    graph = OxigraphGraph(tmp_path / "graph")
    graph.update(DATA)
    size = len(graph)
    graph.close()
    again = OxigraphGraph(tmp_path / "graph")
    assert len(again) == size
    assert again.query("SELECT ?n WHERE { <https://x/doc/2> schema:name ?n }").rows == [
        {"n": "Second"}]
    again.close()
    reader = OxigraphGraph(tmp_path / "graph", read_only=True)
    assert len(reader) == size
    with pytest.raises(ConfigurationError, match="read-only"):
        reader.update("INSERT DATA { <https://x/a> <https://x/b> <https://x/c> }")
    reader.close()


def test_an_in_memory_graph_cannot_be_read_only():
    with pytest.raises(ConfigurationError):
        OxigraphGraph(read_only=True)
