"""No silent empty answers: a filter that asks for a term the values never are says so.

An ``IN (...)`` list none of whose constants SPARQL finds equal to the values (``"EU"@en``
against plain strings, ``"5"`` against numbers); a triple pattern's object of another term
than the predicate's values, though it reads alike (``4983`` against ``"4983"``, ``12.0``
against ``12``, ``"EU"@de`` against ``"EU"@en``, ``ex:EU`` against ``"EU"``, ``"T1"`` against
``<https://example.org/T1>``); a binding of a string compared with or matched against IRIs.
Each gets a note naming the term to write; the right form, a right-typed value no document
has, and a test that need not hold get none."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.kg import IRI
from trails.testing import fresh_context

ON = ("PREFIX ex: <https://example.org/>\n"
      "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc %s }")


@pytest.fixture(scope="module")
def ctx():
    context = fresh_context()
    ingest_all([
        Document("a", "mem", "Rails routing.", metadata={
            "code": "4983", "pages": 12, "score": 2.5, "jurisdiction": "EU",
            "privileged": True, "topic": IRI("https://example.org/T1"), "ref": "A1"}),
        Document("b", "mem", "Rails views.", metadata={"pages": 13, "ref": 7}),
    ], ctx=context)
    context.kg.update(f'INSERT DATA {{ <{context.base_iri}doc/b> meta:region "EU"@en }}')
    yield context
    context.close()


def _noted(result):
    return [n for n in result.notes if "nothing could" in n]


@pytest.mark.parametrize(("pattern", "held", "asked", "instead"), [
    # IN lists: every constant of a type the values never equal
    ('meta:jurisdiction ?j . FILTER(?j IN ("EU"@en, "UK"@en))', "?j holds string values",
     'IN ("EU"@en, "UK"@en)', 'write ("EU", "UK") in its place'),
    ('meta:pages ?n . FILTER(?n IN ("5", "6"))', "?n holds number values", 'IN ("5", "6")',
     "write (5, 6) in its place"),
    ('meta:pages ?n . FILTER(?n IN ("5") && ?doc != ex:x)', "?n holds number values",
     'compares it with "5", a string',
     "write 5 in its place; or write a variable there and bind a number (--bind x=42)"),
    # a number or a boolean against strings, and a string against booleans
    ("meta:code 4983 .", "meta:code holds string values", "4983, an xsd:integer",
     'write "4983" in its place'),
    ('meta:code "4983"; meta:privileged "true" .', "meta:privileged holds boolean values",
     '"true", a string', "write true in its place"),
    # one family, another term: a pattern matches the very term
    ("meta:pages 12.0 .", "meta:pages holds xsd:integer values", "12.0, an xsd:decimal",
     "write 12 in its place"),
    ("meta:pages 12e0 .", "meta:pages holds xsd:integer values", "12e0, an xsd:double",
     "write 12 in its place"),
    ("meta:score 2.5 .", "meta:score holds xsd:double values", "2.5, an xsd:decimal",
     "write 2.5e0 in its place"),
    ('meta:region "EU"@de .', "meta:region holds language-tagged string (@en) values",
     '"EU"@de, a language-tagged string (@de)', 'write "EU"@en in its place'),
    # an IRI where the predicate holds strings, a string where it holds IRIs
    ("meta:jurisdiction ex:EU .", "meta:jurisdiction holds string values", "ex:EU, an IRI",
     'write "EU" in its place'),
    ('meta:topic "T1" .', "meta:topic holds IRI values", '"T1", a string',
     "write <https://example.org/T1> in its place"),
    ('meta:topic "T7" .', "meta:topic holds IRI values", '"T7", a string',
     "write an IRI value in its place"),
])
@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_a_term_the_values_never_are_is_named_with_the_one_to_write(ctx, pattern, held, asked,
                                                                     instead, mode):
    result = retrieve("rails", ctx, mode=mode, sparql_filter=ON % pattern)
    assert len(result) == 0
    (note,) = _noted(result)
    assert note.startswith(f"nothing matched, and nothing could: {held}")
    assert asked in note and note.endswith(instead)
    assert note in result.explain()


@pytest.mark.parametrize(("pattern", "bound", "instead"), [
    ("meta:topic ?topic .", "https://example.org/T1",
     "bind trails.kg.IRI('https://example.org/T1') to topic"),
    ("meta:topic ?topic .", "T1", "bind trails.kg.IRI('https://example.org/T1') to topic"),
    ("meta:topic ?t . FILTER(?t = ?topic)", "https://example.org/T1",
     "bind trails.kg.IRI('https://example.org/T1') (--bind topic=<https://example.org/T1>)"),
])
def test_a_string_bound_where_the_values_are_iris_names_the_iri_to_bind(ctx, pattern, bound,
                                                                       instead):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern,
                      bindings={"topic": bound})
    assert len(result) == 0
    (note,) = _noted(result)
    assert "holds IRI values" in note and "a string" in note and note.endswith(instead)


@pytest.mark.parametrize("pattern", [
    "meta:topic ?topic .", "meta:topic ?t . FILTER(?t = ?topic)"])
def test_an_iri_bound_where_the_values_are_iris_matches(ctx, pattern):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern,
                      bindings={"topic": IRI("https://example.org/T1")})
    assert len(result) > 0 and _noted(result) == []


@pytest.mark.parametrize("pattern", [
    'meta:jurisdiction ?j . FILTER(?j IN ("EU", "UK"))',
    "meta:pages ?n . FILTER(?n IN (12, 6))",
    'meta:code "4983" .', "meta:privileged true .", "meta:pages 12 .",
    'meta:pages "12"^^xsd:int .',  # Oxigraph stores an integer of any type as one
    "meta:score 2.5e0 .", 'meta:region "EU"@en .', 'meta:region "EU"@EN .',
    "meta:topic ex:T1 .", "meta:topic <https://example.org/T1> .",
])
def test_the_right_form_matches_without_a_note(ctx, pattern):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern)
    assert len(result) > 0 and _noted(result) == []


@pytest.mark.parametrize("pattern", [
    # the right type, and no document has that value
    'meta:jurisdiction ?j . FILTER(?j IN ("US", "UK"))',
    "meta:pages ?n . FILTER(?n IN (5, 6))",
    'meta:code "4984" .', "meta:privileged false .", "meta:pages 14 .",
    'meta:region "UK"@en .', "meta:topic ex:T9 .", "meta:score 3.5e0 .",
    # one constant of the values' type in the list
    'meta:jurisdiction ?j . FILTER(?j IN ("EU"@en, "US"))',
    # a value of the asked type among those read: ?ref holds "A1" and 7
    "meta:ref 4983 .", 'meta:ref "B2" .',
    # where the test need not hold
    'meta:jurisdiction ?j . FILTER(?j NOT IN ("EU"@en)) FILTER(?doc = ex:none)',
    'meta:jurisdiction ?j . FILTER(!(?j IN ("EU"@en)) && ?doc = ex:none)',
    'meta:jurisdiction ?j . FILTER(?j IN ("EU"@en) || ?doc = ex:none)',
    'meta:jurisdiction ?j . FILTER(IF(?j IN ("EU"@en), false, false))',
    'meta:jurisdiction ?j . FILTER(COALESCE(?j IN ("EU"@en), false))',
    'meta:code "none" OPTIONAL { ?doc meta:code 4983 }',
    'meta:code "none" MINUS { ?doc meta:jurisdiction ex:EU }',
    'meta:code "none" FILTER NOT EXISTS { ?doc meta:topic "T1" }',
    'meta:code "none" OPTIONAL { ?doc meta:jurisdiction ?j FILTER(?j IN ("EU"@en)) }',
    'meta:code ?c . { ?doc meta:code "none" } UNION { ?doc meta:pages 12.0 }',
    # not a pattern's object: an alternative or inverse path, a VALUES row, a string
    "meta:code|meta:pages 4983 .", "^meta:pages 12.0 .",
    'meta:code ?c VALUES ?p { meta:pages meta:code } FILTER(?doc = ex:none)',
    'schema:name "meta:pages 12.0 ."',
])
def test_an_empty_answer_that_is_no_mistake_gets_no_note(ctx, pattern):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern)
    assert len(result) == 0 and _noted(result) == []


TAGGED = 'compares it with "EU"@de, a language-tagged string (@de)'


# "EU"@de is never equal to "EU"@en: a comparison (= or IN) with another tag than the values'
# selects nothing, as a pattern of it does.
@pytest.mark.parametrize(("pattern", "asked", "instead"), [
    ('meta:region ?r . FILTER(?r = "EU"@de)', TAGGED, 'write "EU"@en in its place'),
    ('meta:region ?r . FILTER("EU"@de = ?r)', TAGGED, 'write "EU"@en in its place'),
    ('meta:region ?r . FILTER(?r IN ("EU"@de, "UK"@DE))', 'IN ("EU"@de, "UK"@DE)',
     'write ("EU"@en, "UK"@en) in its place'),
    ('meta:region ?r . FILTER(?r = "EU"@de && ?doc != ex:x)', '"EU"@de',
     'write "EU"@en in its place'),
])
def test_a_comparison_with_another_language_tag_is_named(ctx, pattern, asked, instead):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern)
    assert len(result) == 0
    (note,) = _noted(result)
    assert note.startswith("nothing matched, and nothing could: ?r holds language-tagged "
                           "string (@en) values")
    assert asked in note and note.endswith(instead)


def test_a_binding_of_another_language_tag_is_named():
    with fresh_context() as context:
        ingest_all([Document("a", "mem", "Rails.", metadata={"x": 1})], ctx=context)
        context.kg.update(f'INSERT DATA {{ <{context.base_iri}doc/a> meta:region "EU"@en }}')
        result = retrieve("rails", context, mode="graph",
                          sparql_filter=ON % "meta:region ?r . FILTER(?r = ?region)",
                          bindings={"region": ox.Literal("EU", language="de")})
    assert len(result) == 0
    (note,) = _noted(result)
    assert "?region is bound to a language-tagged string (@de)" in note
    assert note.endswith("bind pyoxigraph.Literal('EU', language='en')")


@pytest.mark.parametrize(("pattern", "asked", "instead"), [
    ('meta:region "EU"@en, "UK"@de .', '"UK"@de', 'write "UK"@en in its place'),
    ('meta:region ?r, "EU"@de .', '"EU"@de', 'write "EU"@en in its place'),
    ('meta:code "4983", 4983 .', "4983, an xsd:integer", 'write "4983" in its place'),
])
def test_each_object_of_an_object_list_is_checked(ctx, pattern, asked, instead):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern)
    assert len(result) == 0
    (note,) = _noted(result)
    assert f"the pattern asks for {asked}" in note and note.endswith(instead)


@pytest.mark.parametrize("pattern", [
    'meta:region ?r . FILTER(?r = "EU"@en)', 'meta:region ?r . FILTER(?r = "EU"@EN)',
    'meta:region ?r . FILTER(?r IN ("EU"@en, "UK"@de))', 'meta:region "EU"@en, "EU"@en .',
])
def test_a_comparison_or_object_list_with_the_values_tag_matches_without_a_note(ctx, pattern):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern)
    assert len(result) > 0 and _noted(result) == []


@pytest.mark.parametrize("pattern", [
    # the values' tag, and no document has that value
    'meta:region ?r . FILTER(?r = "UK"@en)', 'meta:region ?r . FILTER(?r IN ("UK"@en))',
    'meta:region "EU"@en, "UK"@en .',
    # where the comparison need not hold, or is no = or IN
    'meta:region ?r . FILTER(!(?r = "EU"@de) && ?doc = ex:none)',
    'meta:region ?r . FILTER(?r = "EU"@de || ?doc = ex:none)',
    'meta:region ?r . FILTER(IF(?r = "EU"@de, false, false))',
    'meta:region ?r . FILTER(COALESCE(?r = "EU"@de, false))',
    'meta:region ?r . FILTER(?r != "EU"@de) FILTER(?doc = ex:none)',
    'meta:code "none" OPTIONAL { ?doc meta:region ?r FILTER(?r = "EU"@de) }',
    'meta:code "none" MINUS { ?doc meta:region ?r FILTER(?r IN ("EU"@de)) }',
    'meta:code "none" FILTER NOT EXISTS { ?doc meta:region ?r FILTER(?r = "EU"@de) }',
    'meta:code "none" OPTIONAL { ?doc meta:region "EU"@en, "EU"@de }',
])
def test_an_empty_answer_with_a_language_tag_that_is_no_mistake_gets_no_note(ctx, pattern):
    result = retrieve("rails", ctx, mode="graph", sparql_filter=ON % pattern)
    assert len(result) == 0 and _noted(result) == []
