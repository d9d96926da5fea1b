"""No silent empty answers: a constant written in a filter's comparison (not bound) whose type
never compares with the values of the compared variable (a dateTime against dates, a string
against numbers or dates, a language-tagged string against plain strings) says so in a note,
with the constant to write instead; a constant of the values' type gets none, even when
nothing matches."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.testing import fresh_context

UTC = dt.UTC
ON = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc %s ?v . FILTER(%s) }"


@pytest.fixture(scope="module")
def ctx():
    context = fresh_context()
    ingest_all([Document("a", "mem", "Rails routing.", metadata={
        "date": dt.date(2024, 5, 1), "signed": dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
        "code": "4983", "pages": 12, "jurisdiction": "EU"})], ctx=context)
    yield context
    context.close()


def _noted(result):
    return [n for n in result.notes if "nothing could" in n]


@pytest.mark.parametrize(("predicate", "test", "held", "written", "instead"), [
    ("schema:dateCreated", '?v >= "2024-01-01T00:00:00Z"^^xsd:dateTime', "xsd:date",
     '"2024-01-01T00:00:00Z"^^xsd:dateTime, an xsd:dateTime', '"2024-01-01"^^xsd:date'),
    ("schema:dateCreated", '"2024-01-01T00:00:00Z"^^xsd:dateTime <= ?v', "xsd:date",
     '"2024-01-01T00:00:00Z"^^xsd:dateTime, an xsd:dateTime', '"2024-01-01"^^xsd:date'),
    ("meta:signed", '?v >= "2024-01-01"', "xsd:dateTime", '"2024-01-01", a string',
     '"2024-01-01T00:00:00Z"^^xsd:dateTime'),
    ("meta:signed", '?v = "2024-05-01"^^xsd:date', "xsd:dateTime",
     '"2024-05-01"^^xsd:date, an xsd:date', '"2024-05-01T00:00:00Z"^^xsd:dateTime'),
    ("meta:pages", '?v > "5"', "number", '"5", a string', "5 in its place"),
    ("meta:code", "?v > 5000", "string", "5000, a number", '"5000" in its place'),
    ("meta:jurisdiction", '?v = "EU"@en', "string", '"EU"@en, a language-tagged string',
     '"EU" in its place'),
    ("meta:jurisdiction", "?v = <https://ex.org/EU>", "string", "<https://ex.org/EU>, an IRI",
     "a constant of the type ?v holds"),
    ("schema:dateCreated", '?v < xsd:dateTime("2025-01-01T00:00:00")', "xsd:date",
     'xsd:dateTime("2025-01-01T00:00:00"), an xsd:dateTime', '"2025-01-01"^^xsd:date'),
    ("schema:dateCreated", '?v >= "2024-01-01T00:00:00Z"^^xsd:dateTime && ?v < ?until',
     "xsd:date", '"2024-01-01T00:00:00Z"^^xsd:dateTime', '"2024-01-01"^^xsd:date'),
    # NOW() is a dateTime: a date compared with it is never less, nor more
    ("schema:dateCreated", "?v < NOW()", "xsd:date", "NOW(), an xsd:dateTime",
     "write xsd:date(NOW()) in its place"),
    ("schema:dateCreated", "now() > ?v", "xsd:date", "now(), an xsd:dateTime",
     "write xsd:date(NOW()) in its place"),
    ("meta:pages", "?v < NOW()", "number", "NOW(), an xsd:dateTime",
     "a constant of the type ?v holds"),
])
@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_a_constant_of_a_type_the_values_never_take_is_named(ctx, predicate, test, held,
                                                             written, instead, mode):
    result = retrieve("rails", ctx, mode=mode, sparql_filter=ON % (predicate, test),
                      bindings={"until": dt.date(2030, 1, 1)} if "?until" in test else None)
    assert len(result) == 0
    (note,) = _noted(result)
    assert note.startswith(f"nothing matched, and nothing could: ?v holds {held} values")
    assert f"the filter compares it with {written}" in note and instead in note
    assert note in result.explain()


@pytest.mark.parametrize("test", [
    '?v >= "2031-01-01"^^xsd:date',  # the right type, and nothing that late
    '?v = "2024-05-02"^^xsd:date',
    'xsd:date("2031-01-01") < ?v',
    '!(?v >= "2024-01-01T00:00:00Z"^^xsd:dateTime) && ?doc = <https://ex.org/none>',
    '?v >= "2024-01-01T00:00:00Z"^^xsd:dateTime || ?doc = <https://ex.org/none>',
    'IF(?v >= "2024-01-01"^^xsd:dateTime, false, false)',
    '?v != "2024-01-01"^^xsd:dateTime && ?doc = <https://ex.org/none>',
    'YEAR(?v) > "2030"',  # no comparison of ?v itself
    '?v + "P1D"^^xsd:duration > "2031-01-01"^^xsd:date',
    'STR(?v) = "2024-05-01T00:00:00"',
    '"?v >= \\"2024\\"" = "x"',  # a comparison only inside a string
    '?v > xsd:date(NOW())',  # today's date, a date: nothing after it, and no note
])
def test_constants_the_values_compare_with_or_not_read_give_no_note(ctx, test):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % ("schema:dateCreated", test))
    assert len(result) == 0 and _noted(result) == []


@pytest.mark.parametrize("text", [
    # the comparison that can never hold sits where it need not hold: the filter is empty
    # because of the document no triple names, not because of it
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:code \"none\" OPTIONAL { "
    "?doc schema:dateCreated ?v FILTER(?v >= \"2024-01-01\") } }"),
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:code \"none\" FILTER NOT EXISTS { "
    "?doc schema:dateCreated ?v FILTER(?v >= \"2024-01-01\") } }"),
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:code \"none\" MINUS { "
    "?doc schema:dateCreated ?v FILTER(?v >= ?since) } }"),
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . { ?doc meta:code \"none\" } UNION { "
    "?doc schema:dateCreated ?v FILTER(?v >= ?since) } }"),
])
def test_a_comparison_in_a_group_that_need_not_match_gives_no_note(ctx, text):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=text,
                      bindings={"since": "2024-01-01"} if "?since" in text else None)
    assert len(result) == 0 and _noted(result) == []


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([
    ("schema:dateCreated", st.dates().map(lambda d: f'"{d.isoformat()}"^^xsd:date')),
    ("meta:signed", st.datetimes(timezones=st.just(UTC)).map(
        lambda d: f'"{d.isoformat().replace("+00:00", "Z")}"^^xsd:dateTime')),
    ("meta:code", st.text(alphabet="0123456789", max_size=6).map(lambda s: f'"{s}"')),
    ("meta:pages", st.integers(-10**6, 10**6).map(str)),
    ("meta:jurisdiction", st.sampled_from(['"EU"', '"eu"', '"US"', "'EU'"]))]).flatmap(
        lambda pair: st.tuples(st.just(pair[0]), pair[1])),
       st.sampled_from([">=", "<", "=", ">"]), st.booleans())
def test_a_constant_of_the_values_type_never_raises_the_note(ctx, case, operator, flipped):
    predicate, constant = case
    test = f"{constant} {operator} ?v" if flipped else f"?v {operator} {constant}"
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % (predicate, test))
    assert _noted(result) == []


# -- literals a triple pattern asks for -----------------------------------------------------

PATTERN = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc %s }"


@pytest.mark.parametrize(("pattern", "held", "instead"), [
    ('meta:jurisdiction "EU"@en', "meta:jurisdiction holds string values", '"EU" in its place'),
    ('schema:dateCreated "2024-05-01"', "schema:dateCreated holds xsd:date values",
     '"2024-05-01"^^xsd:date in its place'),
    ('meta:pages "12" .', "meta:pages holds xsd:integer values", "12 in its place"),
])
def test_a_pattern_literal_of_a_type_the_predicate_never_holds_is_named(ctx, pattern, held,
                                                                       instead):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=PATTERN % pattern)
    assert len(result) == 0
    (note,) = _noted(result)
    assert note.startswith(f"nothing matched, and nothing could: {held}") and instead in note


@pytest.mark.parametrize("pattern", [
    'meta:jurisdiction "US"',  # a string, as the values are: merely none
    'schema:dateCreated "2031-01-01"^^xsd:date',
    'meta:code "none" OPTIONAL { ?doc meta:pages "12" }',
    'meta:code "none" MINUS { ?doc schema:dateCreated "2024-05-01" }',
    'schema:name "meta:pages \\"12\\""',
])
def test_a_pattern_literal_of_the_predicates_type_or_not_required_gives_no_note(ctx, pattern):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=PATTERN % pattern)
    assert len(result) == 0 and _noted(result) == []
