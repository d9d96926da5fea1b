"""No silent empty answers: a filter variable that nothing binds, and an unknown scope, are
errors that name the mistake; a correct filter never raises a false alarm."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.errors import UnboundVariableError, UnknownScopeError
from trails.ingest import Document, ingest_all
from trails.kg.variables import unbound_variables
from trails.retrieval import HybridRetriever
from trails.testing import fresh_context

SEED = """SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?created .
                               FILTER(?created >= ?since && ?created < ?until) }"""


@pytest.fixture(scope="module")
def ctx():
    context = fresh_context()
    ingest_all([Document("a", "mem", "Rails routing.", metadata={"date": dt.date(2024, 5, 1)}),
                Document("b", "mem", "Rails caching.", metadata={"date": dt.date(2023, 5, 1)})],
               ctx=context)
    ingest_all([Document("c", "mem", "Legal rails.")], ctx=context, scope="legal")
    yield context
    context.close()


def test_a_forgotten_binding_is_an_error_naming_it(ctx):
    with pytest.raises(UnboundVariableError, match=r"\?until is used .* never bound.*since"):
        retrieve("rails", ctx, sparql_filter=SEED, bindings={"since": dt.date(2024, 1, 1)})
    with pytest.raises(UnboundVariableError, match=r"\?since, \?until are used"):
        retrieve("rails", ctx, mode="graph", sparql_filter=SEED)
    hits = retrieve("rails", ctx, sparql_filter=SEED,
                    bindings={"since": dt.date(2024, 1, 1), "until": dt.date(2025, 1, 1)})
    assert [h.document for h in hits] == ["trails://local/doc/a"]


def test_retrievers_check_at_construction(ctx):
    with pytest.raises(UnboundVariableError, match=r"\?until"):
        HybridRetriever(ctx, sparql_filter=SEED, bindings={"since": dt.date(2024, 1, 1)})


@pytest.mark.parametrize("query", [
    ("SELECT ?c WHERE { ?c schema:isPartOf ?d OPTIONAL { ?d schema:dateCreated ?x } "
    "FILTER(!BOUND(?x) || ?x > '2020') }"),
    "SELECT ?c WHERE { { ?c a trails:Chunk } UNION { ?c schema:text ?t } FILTER(STRLEN(?t) > 3) }",
    ("SELECT ?c WHERE { ?c a trails:Chunk FILTER NOT EXISTS { ?c schema:isPartOf ?d . "
    "?d meta:hidden ?h } }"),
    "SELECT ?c WHERE { ?c a trails:Chunk FILTER(NOT EXISTS { ?c schema:isPartOf ?d }) }",
    "SELECT ?c WHERE { ?c schema:position ?p BIND(?p * 2 AS ?q) FILTER(?q > 1) }",
    "SELECT ?c WHERE { VALUES ?k { 1 2 } ?c schema:position ?k }",
    "SELECT ?c WHERE { GRAPH ?g { ?c a trails:Chunk } FILTER(?g != <urn:x>) }",
    "SELECT ?c WHERE { ?c schema:isPartOf/schema:dateCreated ?d FILTER(YEAR(?d) > 2000) }",
    ("SELECT ?c WHERE { { SELECT ?c (COUNT(?x) AS ?n) WHERE { ?c ?p ?x } GROUP BY ?c } "
    "FILTER(?n > 1) }"),
    'SELECT ?c WHERE { ?c schema:text ?t FILTER(CONTAINS(?t, "?nothing")) } # ?comment',
    "SELECT $c WHERE { $c a trails:Chunk } ORDER BY ?c",
])
def test_correct_filters_raise_no_false_alarm(ctx, query):
    assert unbound_variables(query) == []
    retrieve("rails", ctx, mode="graph", sparql_filter=query, k=3)


@pytest.mark.parametrize("query, missing", [
    ("SELECT ?c WHERE { ?c a trails:Chunk FILTER(?c != ?other) }", ["other"]),
    ("SELECT ?c WHERE { ?c a trails:Chunk } ORDER BY ?score", ["score"]),
    ("SELECT ?x WHERE { ?c a trails:Chunk }", ["x"]),
    ("SELECT ?c WHERE { ?c schema:position ?p BIND(?p + ?offset AS ?q) }", ["offset"]),
    ("SELECT ?c WHERE { ?c a trails:Chunk FILTER(EXISTS { ?c ?p ?o } && ?flag) }", ["flag"]),
])
def test_each_unbound_variable_is_named(query, missing):
    assert unbound_variables(query) == missing


names = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@settings(max_examples=150, deadline=None)
@given(patterns=st.lists(names, min_size=1, max_size=4, unique=True),
       used=st.lists(names, max_size=4, unique=True),
       bound=st.lists(names, max_size=3, unique=True),
       shape=st.sampled_from(["filter", "optional", "union", "bind", "order"]))
def test_the_rule_both_ways(patterns, used, bound, shape):
    triples = " . ".join(f"?s <urn:p{i}> ?{v}" for i, v in enumerate(patterns))
    if shape == "optional":
        triples = f"?s <urn:q> ?z OPTIONAL {{ {triples} }}"
    elif shape == "union":
        half = len(patterns) // 2
        left = " . ".join(f"?s <urn:p> ?{v}" for v in patterns[:half]) or "?s <urn:p> ?z"
        right = " . ".join(f"?s <urn:q> ?{v}" for v in patterns[half:])
        triples = f"{{ {left} }} UNION {{ {right} }}"
    expression = " && ".join(f"BOUND(?{v})" for v in used) or "true"
    if shape == "bind":
        body, tail = f"{triples} BIND(({expression}) AS ?made)", ""
    elif shape == "order":
        body, tail = triples, " ORDER BY " + (" ".join(f"?{v}" for v in used) or "?s")
    else:
        body, tail = f"{triples} FILTER({expression})", ""
    query = f"SELECT ?s WHERE {{ {body} }}{tail}"
    expected = [v for v in used if v not in patterns and v not in bound]
    assert unbound_variables(query, bound) == expected


def test_an_unknown_scope_lists_the_scopes_that_exist(ctx):
    with pytest.raises(UnknownScopeError, match=r"'legl' \(did you mean 'legal'\?\).*default, legal"):
        retrieve("rails", ctx, scope="legl")
    with pytest.raises(UnknownScopeError):
        retrieve("rails", ctx, mode="hybrid", scope=["default", "secret"], sparql_filter=SEED,
                 bindings={"since": dt.date(2020, 1, 1), "until": dt.date(2030, 1, 1)})
    assert retrieve("rails", ctx, scope="legal", mode="vector")  # a real scope works


def test_the_command_line_says_what_is_wrong(tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "kb")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("---\ndate: 2024-05-01\n---\nRails memo.\n")
    (tmp_path / "seed.rq").write_text(SEED)
    assert runner.invoke(app, ["--db", db, "init", "--model", "mock:8"]).exit_code == 0
    assert runner.invoke(app, ["--db", db, "ingest", str(tmp_path / "docs")]).exit_code == 0
    forgot = runner.invoke(app, ["--db", db, "query", "rails", "--sparql",
                                 str(tmp_path / "seed.rq"), "--bind", "since=2024-01-01"])
    assert forgot.exit_code == 1 and "?until" in forgot.output + str(forgot.stderr)
    assert "Traceback" not in forgot.output
    typo = runner.invoke(app, ["--db", db, "query", "rails", "--scope", "defualt"])
    assert typo.exit_code == 1 and "did you mean 'default'" in typo.output + str(typo.stderr)


def test_a_string_that_looks_like_an_iri_gets_a_note(ctx):
    query = "SELECT ?c WHERE { ?c schema:isPartOf ?doc . ?doc a ?cls }"
    as_string = retrieve("rails", ctx, sparql_filter=query,
                         bindings={"cls": "https://trails.dev/ns#Document"})
    assert len(as_string) == 0
    assert any("binding 'cls' is the string" in n and "IRI(" in n for n in as_string.notes)
    from trails.kg import IRI
    as_iri = retrieve("rails", ctx, sparql_filter=query,
                      bindings={"cls": IRI("https://trails.dev/ns#Document")})
    assert len(as_iri) == 2 and not any("binding 'cls'" in n for n in as_iri.notes)
    plain = retrieve("rails", ctx, sparql_filter="SELECT ?c WHERE { ?c schema:text ?t "
                     "FILTER(CONTAINS(?t, ?w)) }", bindings={"w": "Rails"})
    assert not any("binding 'w'" in n for n in plain.notes)  # an ordinary string: no note


@pytest.mark.parametrize("text", ["2024-01-01", "2024-01-01T00:00:00", "2024-01-01T00:00:00Z",
                                  "2024-01-01 09:30+02:00"])
def test_a_string_that_looks_like_a_date_gets_a_note(ctx, text):
    """Bound as a string, "2024-01-01" compares with no xsd:date: the filter selects nothing,
    which reads as "no document since then" unless the answer says why."""
    query = ("SELECT ?c WHERE { ?c schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
             "FILTER(?d >= ?since) }")
    as_string = retrieve("rails", ctx, sparql_filter=query, bindings={"since": text})
    assert len(as_string) == 0
    assert any("binding 'since' is the string" in n and "datetime.date" in n
               for n in as_string.notes)
    as_date = retrieve("rails", ctx, sparql_filter=query,
                       bindings={"since": dt.date(2024, 1, 1)})
    assert len(as_date) > 0 and not any("binding 'since'" in n for n in as_date.notes)
    code = retrieve("rails", ctx, sparql_filter="SELECT ?c WHERE { ?c schema:text ?t "
                    "FILTER(CONTAINS(?t, ?w)) }", bindings={"w": "2024-99"})
    assert not any("binding 'w'" in n for n in code.notes)  # no date: no note
