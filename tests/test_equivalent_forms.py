"""A filter written in another form of the same question (kg/equivalent_forms.py) selects the
candidates the filter as written selects, and reaches the planner's fast paths: sequence and
inverse paths, VALUES, a UNION of values, MINUS, FILTER EXISTS, a filter returning
documents itself, tests joined by ``&&`` or ``||`` in one FILTER, a BIND of a computed value,
NOT EXISTS of two patterns and an ORDER BY. Random documents, user triples that break the shapes, scopes and deletions
come from the columns' own property (tests/test_filter_index.py)."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_filter_index import (
    DATES,
    PLACES,
    TOPICS,
    USER_TRIPLES,
    build,
    deleted_strategy,
    documents_strategy,
    ranked_among,
    user_triples_strategy,
)
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.kg.base import select
from trails.kg.bindings import check_bindings
from trails.kg.equivalent_forms import equivalent_form
from trails.kg.planning import parse_filter
from trails.kg.terms import IRI
from trails.retrieval.candidates import chunk_links_intact, filter_candidates
from trails.retrieval.retrieve import retrieve
from trails.testing import fresh_context
from trails.vector import MockEmbedder

# A binding named as a rewrite's first fresh variable would be (a variable written only inside
# a longer name, ``?trails_via0·z``, is another variable: such a binding is refused as unused).
VIA = "trails_via0"
# What each bound variable of the forms may be, and one value the small corpus answers.
DRAWN = {"since": st.sampled_from(DATES), "j": st.sampled_from(PLACES),
         "broad": st.sampled_from([IRI(TOPICS + n) for n in ("A", "B", "A1", "root", "none")]),
         "c": st.sampled_from(["x", "y"]), VIA: st.sampled_from(["x", "EU"])}
EXAMPLE = {"since": dt.date(2020, 6, 1), "broad": IRI(TOPICS + "A"), "j": "EU", "c": "x",
           VIA: "x"}
SINCE, BROAD, LABEL, NONE = "since", "broad", "c", ""

LINK = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc ."
# name -> (whole filter, the variables bound, the path a filter of this form must take when the
# chunk links are trails' own: None when it may be handed back to the graph)
FORMS = {
    "sequence path": (("SELECT ?iri WHERE { ?iri schema:isPartOf/schema:dateCreated ?d . "
                      "FILTER(?d >= ?since) }"), SINCE, "documents-columns"),
    "inverse link": ("SELECT ?iri WHERE { ?doc ^schema:isPartOf ?iri . ?doc meta:place ?j }",
                     "j", "documents-columns"),
    "path into a taxonomy": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                             "?doc meta:topic/rdfs:subClassOf* ?broad }"), BROAD,
                             "documents-columns"),
    "one path all the way": (("SELECT ?iri WHERE { ?iri schema:isPartOf/meta:topic/"
                             "rdfs:subClassOf+ ?broad }"), BROAD, "documents-columns"),
    "inverse step in a sequence": (("SELECT ?iri WHERE { ?iri schema:isPartOf/^schema:isPartOf/"
                                   "schema:isPartOf ?doc . ?doc meta:place \"EU\" }"), NONE, None),
    "inverse to a literal": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . '
                             '?doc meta:place/^meta:place "EU" }'), NONE, None),
    "values": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:place ?j . '
               'VALUES ?j { "EU" "UK" } }'), NONE, "documents-columns"),
    "values first": (('SELECT ?iri WHERE { VALUES ?j { "US" "eu" } ?iri schema:isPartOf ?doc . '
                     '?doc meta:place ?j }'), NONE, "documents-columns"),
    "values with undef": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:place ?j . '
                          'VALUES ?j { "EU" UNDEF } }'), NONE, None),
    "union of values": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . '
                        '{ ?doc meta:place "EU" } UNION { ?doc meta:place "UK" } }'), NONE,
                        "documents-columns"),
    "union of two properties": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . '
                                '{ ?doc meta:place "EU" } UNION { ?doc meta:label "x" } }'), NONE,
                                None),
    "minus": ('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . MINUS { ?doc meta:label "x" } }',
              NONE, "documents-columns"),
    "minus bound": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:place ?j . "
                    "MINUS { ?doc meta:label ?c } }"),
                    "c", "documents-columns"),
    "minus sharing nothing": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . '
                              'MINUS { ?x meta:label "x" } }'), NONE, None),
    "minus reading an outer variable": (
        ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
        "MINUS { ?doc meta:label ?c FILTER(?d > ?since) } }"), SINCE, None),
    "minus before its document": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?x . '
                                  'MINUS { ?doc meta:label "x" } ?iri schema:isPartOf ?doc }'),
                                  NONE, None),
    "exists": (('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . '
               'FILTER EXISTS { ?doc meta:label "x" } }'), NONE, "documents-columns"),
    "exists any value": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                         "FILTER EXISTS { ?doc meta:label ?c } }"), NONE, "documents-columns"),
    "exists sharing a value": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                               "?doc meta:place ?j . FILTER EXISTS { ?doc meta:label ?j } }"),
                               NONE, None),
    "exists and an outer filter": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                                   "?doc meta:place ?j . FILTER(!BOUND(?c)) "
                                   "FILTER EXISTS { ?doc meta:label ?c } }"), NONE, None),
    "optional unbound": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                          "OPTIONAL { ?doc meta:label ?c } FILTER(!BOUND(?c)) }"), NONE,
                         "documents-columns"),
    "optional unbound, bound value": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                                       "?doc meta:place ?j . OPTIONAL { ?doc meta:label ?c . } "
                                       "FILTER (! bound(?c)) }"), "c", None),
    "optional with a test": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . OPTIONAL { "
                              "?doc meta:label ?k FILTER(?k = ?c) } FILTER(!BOUND(?k)) }"), LABEL,
                             "documents-columns"),
    "optional testing an outer value": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                                         "?doc meta:place ?j . OPTIONAL { ?doc meta:label ?k "
                                         "FILTER(?k != ?j) } FILTER(!BOUND(?k)) }"), NONE, None),
    "not exists with a test": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . FILTER NOT "
                                "EXISTS { ?doc meta:label ?k FILTER(?k = ?c) } }"), LABEL,
                               "documents-columns"),
    "not exists testing a date": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . FILTER NOT "
                                   "EXISTS { ?doc schema:dateCreated ?k FILTER(?k >= ?since) } }"),
                                  SINCE, "documents-columns"),
    "not exists testing an outer value": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                                           "?doc meta:place ?j . FILTER NOT EXISTS { ?doc "
                                           "meta:label ?k FILTER(?k != ?j) } }"), NONE, None),
    "optional before its document": (("SELECT ?iri WHERE { OPTIONAL { ?doc meta:label ?c } "
                                      "?iri schema:isPartOf ?doc FILTER(!BOUND(?c)) }"), NONE,
                                     None),
    "optional value used elsewhere": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                                       "?doc meta:place ?c . OPTIONAL { ?doc meta:label ?c } "
                                       "FILTER(!BOUND(?c)) }"), NONE, None),
    "optional of two patterns": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                                  "OPTIONAL { ?doc meta:label ?c . ?doc meta:place ?x } "
                                  "FILTER(!BOUND(?x)) }"), NONE, None),
    "optional tested for bound": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                                   "OPTIONAL { ?doc meta:label ?c } FILTER(BOUND(?c)) }"), NONE,
                                  None),
    "documents returned": (("SELECT ?doc WHERE { ?doc schema:dateCreated ?d . "
                           "FILTER(?d >= ?since) }"), SINCE, "columns"),
    # EXISTS binds nothing: a variable only its group binds stays unbound, even the projected one
    "exists naming the projected variable": (
        ('SELECT ?iri WHERE { ?doc meta:place "EU" . '
         'FILTER EXISTS { ?iri schema:isPartOf ?doc } }'), NONE, None),
    # a fresh variable must not take a binding's name: its VALUES would join the path's middle
    "path beside a binding's name": (
        ("SELECT ?iri WHERE { ?iri schema:isPartOf/meta:place ?j . "
         "OPTIONAL { ?iri meta:label ?trails_via0 } }"), VIA, None),
    # VALUES pairing the documents with their values is no list of values alone
    "values pairing documents and values": (
        ('SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:place ?j . '
         'VALUES (?doc ?j) { (<https://example.org/other> "EU") '
         '(<https://example.org/other> "UK") } }'), NONE, None),
    "documents returned, paired in VALUES": (
        ('SELECT ?doc WHERE { ?doc meta:place ?j . VALUES (?doc ?j) { '
         '(<https://example.org/other> "EU") (<https://example.org/other> "UK") } }'), NONE,
        None),
    "anything returned": ('SELECT ?x WHERE { ?x meta:place "EU" }', NONE, "columns"),
    "documents returned, negated": (("SELECT ?doc WHERE { ?doc a trails:Document . "
                                    "FILTER NOT EXISTS { ?doc meta:label ?c } }"), LABEL, "columns"),
    # two tests in one FILTER are two FILTERs
    "and in one filter": ((f"{LINK} ?doc meta:place ?j ; schema:dateCreated ?d . "
                           'FILTER(?j = "EU" && ?d >= ?since) }'), SINCE, "documents-columns"),
    "and, bracketed": ((f"{LINK} ?doc meta:place ?j ; schema:dateCreated ?d . "
                        'FILTER(((?d >= ?since)) && (!(?j = "US") && ?j != "eu")) }'), SINCE,
                       "documents-columns"),
    # && binds tighter than ||: ``A && B || C`` is ``(A && B) || C``, no conjunction
    "and, then or": ((f"{LINK} ?doc meta:place ?j ; schema:dateCreated ?d . "
                      'FILTER(?j = "EU" && ?d >= ?since || ?j = "UK") }'), SINCE, None),
    "or, then and": ((f"{LINK} ?doc meta:place ?j ; schema:dateCreated ?d . "
                      'FILTER(?j = "US" || ?j = "EU" && ?d >= ?since) }'), SINCE, None),
    # a test of either of two values: the union of the documents passing each
    "or across two properties": ((f"{LINK} ?doc meta:place ?j ; schema:dateCreated ?d . "
                                  'FILTER(?j = "UK" || ?d >= ?since) }'), SINCE,
                                 "documents-columns"),
    "or of three parts on two properties": (
        (f"{LINK} ?doc meta:place ?j . ?doc meta:label ?k . "
         'FILTER(?j = "UK" || (?k = ?c) || LCASE(?j) = "eu") }'), LABEL, "documents-columns"),
    "or reading two values in one part": ((f"{LINK} ?doc meta:place ?j ; meta:label ?k . "
                                           'FILTER(?j = "UK" || ?k = "y" || STR(?k) = ?j) }'), NONE,
                                          None),
    "or with a value tested again": ((f"{LINK} ?doc meta:label ?k ; schema:dateCreated ?d . "
                                      'FILTER(?k = "x" || ?d < ?since) FILTER(?k != "x") }'),
                                     SINCE, None),
    "or with a value joined again": ((f"{LINK} ?doc meta:place ?j ; meta:label ?k . "
                                      '?x meta:label ?j . FILTER(?j = "UK" || ?k = "x") }'),
                                     NONE, None),
    "or reading the document": ((f"{LINK} ?doc meta:place ?j ; meta:label ?k . "
                                 'FILTER(?j = "UK" || ?doc = ?k) }'), NONE, None),
    "or with an exists": ((f"{LINK} ?doc meta:place ?j ; meta:topic ?t . FILTER(?j = \"UK\" "
                           f"|| NOT EXISTS {{ ?t rdfs:subClassOf <{TOPICS}A> }}) }}"), NONE, None),
    # a value computed from a value is the expression itself
    "bind of a value": ((f"{LINK} ?doc schema:dateCreated ?d . BIND(YEAR(?d) AS ?y) "
                         "FILTER(?y >= 2021 && ?y != 2022) }"), NONE, "documents-columns"),
    "bind of a string": ((f"{LINK} ?doc meta:place ?j . BIND(LCASE(STR(?j)) AS ?k) "
                          'FILTER(?k = "eu") }'), NONE, "documents-columns"),
    "bind before its value": ((f"{LINK} BIND(YEAR(?d) AS ?y) ?doc schema:dateCreated ?d . "
                               "FILTER(?y >= 2021) }"), NONE, None),
    "bind tested for bound": ((f"{LINK} ?doc schema:dateCreated ?d . BIND(YEAR(?d) AS ?y) "
                               "FILTER(!BOUND(?y) || ?y > 2021) }"), NONE, None),
    "bind of a fresh value": ((f"{LINK} ?doc meta:place ?j . BIND(STRUUID() AS ?u) "
                               "FILTER(?u = ?u) }"), NONE, None),
    "bind joined": ((f"{LINK} ?doc meta:place ?j . BIND(STR(?j) AS ?k) ?doc meta:label ?k }}"),
                    NONE, None),
    # a comment ends at its line's end: a part or an expression ending in one keeps that end
    "and, a comment ending a part": ((f"{LINK} ?doc meta:place ?j ; schema:dateCreated ?d . "
                                      'FILTER(?j = "EU" # the place\n && ?d >= ?since) }'),
                                     SINCE, "documents-columns"),
    "or, a comment ending the last part": ((f"{LINK} ?doc meta:place ?j ; schema:dateCreated ?d . "
                                            'FILTER(?j = "UK" || ?d >= ?since # the date\n) }'),
                                           SINCE, "documents-columns"),
    "bind, a comment ending its expression": (
        (f"{LINK} ?doc schema:dateCreated ?d . BIND(YEAR(?d) # the year\n AS ?y) "
         "FILTER(?y >= 2021) }"), NONE, "documents-columns"),
    # a BIND nothing reads is no test: gone from the planned form, with the binding it read
    "bind read by nothing": ((f"{LINK} ?doc meta:place ?j ; meta:label ?k . FILTER(?j != ?k) "
                              "BIND(?j = ?c AS ?y) }"), LABEL, None),
    # NOT EXISTS of two patterns on the document: less the documents matching both
    "not exists of two patterns": ((f'{LINK} FILTER NOT EXISTS {{ ?doc meta:label "x" ; '
                                    'meta:place "EU" } }'), NONE, "documents-columns"),
    "not exists of two patterns with a test": (
        (f"{LINK} FILTER NOT EXISTS {{ ?doc meta:label ?c . ?doc schema:dateCreated ?k "
         "FILTER(?k >= ?since) } }"), "since c", "documents-columns"),
    "not exists of two patterns sharing a value": (
        f"{LINK} FILTER NOT EXISTS {{ ?doc meta:label ?v . ?doc meta:place ?v }} }}", NONE, None),
    # IRIs listed for a taxonomy's class: VALUES, to start its walk
    "taxonomy under listed classes": ((f"{LINK} ?doc meta:topic ?t . ?t rdfs:subClassOf* ?b . "
                                       f"FILTER(?b IN (<{TOPICS}B>, <{TOPICS}A>)) }}"), NONE,
                                      "documents-columns"),
    "taxonomy under a class by equality": ((f"{LINK} ?doc meta:topic/rdfs:subClassOf+ ?b . "
                                            f"FILTER((<{TOPICS}A> = ?b)) }}"), NONE,
                                           "documents-columns"),
    "taxonomy with a listed number": ((f"{LINK} ?doc meta:topic ?t . ?t rdfs:subClassOf* ?b . "
                                       "?b meta:rank ?r . FILTER(?r IN (1)) }"), NONE, None),
    # ORDER BY orders the candidates, a set; LIMIT chooses among them
    "ordered": ((f"{LINK} ?doc schema:dateCreated ?d . FILTER(?d >= ?since) }} "
                 "ORDER BY DESC(?d) ?iri"), SINCE, "documents-columns"),
    "ordered and limited": ((f"{LINK} ?doc schema:dateCreated ?d . }} ORDER BY ?d ?iri LIMIT 3"),
                            NONE, None),
    "ordered by a binding": ((f"{LINK} ?doc meta:place ?j OPTIONAL {{ ?doc meta:label ?k }} }} "
                              "ORDER BY (?j = ?c) ?iri"), LABEL, None),
    # "undated, or dated after D": the documents with no value, or a value passing the test
    "optional or a test": ((f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} "
                            "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, "documents-columns"),
    "optional or, the test first, three parts": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d . }} "
         "FILTER(?d >= ?since && YEAR(?d) < 2022 || (! bound ( ?d )) || STR(?d) = \"x\") }"),
        SINCE, "documents-columns"),
    "optional or beside other shapes": (
        (f"{LINK} ?doc meta:place ?j . OPTIONAL {{ ?doc meta:label ?k }} FILTER(?j != \"US\") "
         "FILTER NOT EXISTS { ?doc meta:place \"UK\" } FILTER(?k = ?c || !BOUND(?k)) }"), LABEL,
        "documents-columns"),
    "two optionals or a test": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} OPTIONAL {{ ?doc meta:label ?k }} "
         "FILTER(!BOUND(?k) || ?k != ?c) FILTER(!BOUND(?d) || ?d >= ?since) }"), "since c",
        "documents-columns"),
    "optional or, documents returned": (
        ("SELECT ?doc WHERE { ?doc a trails:Document . OPTIONAL { ?doc schema:dateCreated ?d } "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, "columns"),
    # what must stay as written: the shape's rule does not hold
    "optional or, the value read again": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} FILTER(!BOUND(?d) || ?d >= ?since) "
         'FILTER(?d != "2020-01-01"^^xsd:date) }'), SINCE, None),
    "optional or, the value joined": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} ?x schema:dateCreated ?d . "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "optional or of two patterns": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d . ?doc meta:label ?k }} "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "optional or, a filter inside": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d FILTER(?d < ?since) }} "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "not bound and a test": ((f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} "
                              "FILTER(!BOUND(?d) && ?d >= ?since) }"), SINCE, None),
    "bound or a test": ((f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} "
                         "FILTER(BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "optional or a test of another value": (
        (f"{LINK} ?doc meta:place ?j . OPTIONAL {{ ?doc schema:dateCreated ?d }} "
         'FILTER(!BOUND(?d) || ?j = "EU") }'), NONE, None),
    "optional or before its document": (
        ("SELECT ?iri WHERE { OPTIONAL { ?doc schema:dateCreated ?d } ?iri schema:isPartOf ?doc "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "optional or, the value in a not exists": (
        (f"{LINK} OPTIONAL {{ ?doc meta:place ?k }} FILTER(!BOUND(?k) || ?k != \"US\") "
         "FILTER NOT EXISTS { ?doc meta:label ?k } }"), NONE, None),
    "optional or of the type": ((f"{LINK} OPTIONAL {{ ?doc a ?k }} "
                                 "FILTER(!BOUND(?k) || ?k = trails:Document) }"), NONE, None),
    "optional or not bound of another": (
        (f"{LINK} ?doc meta:place ?j . OPTIONAL {{ ?doc schema:dateCreated ?d }} "
         "FILTER(!BOUND(?j) || ?d >= ?since) }"), SINCE, None),
    "optional or an exists": (
        (f"{LINK} OPTIONAL {{ ?doc meta:topic ?k }} FILTER(!BOUND(?k) || "
         f"EXISTS {{ ?k rdfs:subClassOf <{TOPICS}A> }}) }}"), NONE, None),
    # the same question written so that SPARQL's scoping and three-valued logic decide it: the
    # FILTER before the OPTIONAL (a group's FILTER reads it all), tests of the term itself, a
    # constant test, the property also joined; and forms the rule leaves as written (the
    # negation, COALESCE, IF, a subgroup on either side, the value bound by two OPTIONALs, a
    # GRAPH, a MINUS or another pattern's value)
    "optional or, the filter written first": (
        (f"{LINK} FILTER(!BOUND(?d) || ?d >= ?since) OPTIONAL {{ ?doc schema:dateCreated ?d }} "
         "}"), SINCE, "documents-columns"),
    "optional or, tests of the term": (
        (f"{LINK} OPTIONAL {{ ?doc meta:place ?k }} FILTER(!BOUND(?k) || isLiteral(?k) && "
         'DATATYPE(?k) = xsd:string || LANG(?k) != "" || sameTerm(?k, "UK")) }'), NONE,
        "documents-columns"),
    "optional or, a constant": ((f"{LINK} OPTIONAL {{ ?doc meta:label ?k }} "
                                 "FILTER(!BOUND(?k) || false) }"), NONE, "documents-columns"),
    "optional or, the property joined too": (
        (f"{LINK} ?doc schema:dateCreated ?x . OPTIONAL {{ ?doc schema:dateCreated ?d }} "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, "documents-columns"),
    "optional or, the link's predicate": ((f"{LINK} OPTIONAL {{ ?doc schema:isPartOf ?k }} "
                                           "FILTER(!BOUND(?k) || isIRI(?k)) }"), NONE,
                                          "documents-columns"),
    "optional or, negated and": ((f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} "
                                  "FILTER(!(BOUND(?d) && ?d < ?since)) }"), SINCE, None),
    "optional or, coalesce": ((f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} "
                               "FILTER(COALESCE(?d >= ?since, !BOUND(?d))) }"), SINCE, None),
    "optional or, if": ((f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} "
                         "FILTER(IF(BOUND(?d), ?d >= ?since, true)) }"), SINCE, None),
    "optional or in a subgroup": (
        (f"{LINK} {{ OPTIONAL {{ ?doc schema:dateCreated ?d }} }} "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "optional or, the filter in a subgroup": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} "
         "{ FILTER(!BOUND(?d) || ?d >= ?since) } }"), SINCE, None),
    "optional or, the value bound twice": (
        (f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }} OPTIONAL {{ ?doc meta:label ?d }} "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "optional or in a graph": (
        (f"{LINK} OPTIONAL {{ GRAPH ?g {{ ?doc schema:dateCreated ?d }} }} "
         "FILTER(!BOUND(?d) || ?d >= ?since) }"), SINCE, None),
    "optional or, a minus of the value": (
        (f"{LINK} OPTIONAL {{ ?doc meta:label ?k }} MINUS {{ ?doc meta:place ?k }} "
         "FILTER(!BOUND(?k) || ?k != \"y\") }"), NONE, None),
    "optional or, compared with a pattern's value": (
        (f"{LINK} ?doc schema:dateCreated ?x . OPTIONAL {{ ?doc schema:dateCreated ?d }} "
         "FILTER(!BOUND(?d) || ?d > ?x) }"), NONE, None),
}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(documents_strategy, user_triples_strategy, deleted_strategy, st.data())
def test_every_form_selects_what_the_filter_as_written_selects(docs, extra, deleted, data):
    ctx = fresh_context(embedder=MockEmbedder(dim=8))
    build(ctx, docs, extra, deleted)
    for name in data.draw(st.lists(st.sampled_from(sorted(FORMS)), min_size=1, max_size=5)):
        text, bound, _ = FORMS[name]
        bindings = data.draw(st.fixed_dictionaries({n: DRAWN[n] for n in bound.split()}))
        scopes = data.draw(st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]]))
        with ctx.vectors.snapshot():
            planned = ranked_among(ctx, filter_candidates(ctx.kg, text, bindings, scopes), scopes)
        written = ranked_among(ctx, ctx.kg.select_iris(text, bindings, scopes=scopes), scopes)
        assert planned == written, (name, bindings, scopes)


# "undated, or dated after D" (OPTIONAL { ?doc P ?d } FILTER(!BOUND(?d) || test)) and the
# forms beside it that must stay as written
ABSENT_OR = sorted(n for n in FORMS if "optional or" in n or n in (
    "not bound and a test", "bound or a test", "optional unbound"))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(documents_strategy,
       st.lists(st.tuples(st.integers(0, len(USER_TRIPLES) - 1), st.integers(0, 9)), max_size=6),
       st.lists(st.integers(0, 9), max_size=2), st.data())
def test_absent_or_passing_selects_what_the_filter_as_written_selects(docs, extra, deleted, data):
    """Documents with no date, one, or several (a second date, a string, a dateTime, a date in
    the other scope's graph, on a chunk, on no document), deleted ones, two scopes."""
    ctx = fresh_context(embedder=MockEmbedder(dim=8))
    build(ctx, docs, extra, deleted)
    for name in data.draw(st.lists(st.sampled_from(ABSENT_OR), min_size=1, max_size=6)):
        text, bound, _ = FORMS[name]
        bindings = data.draw(st.fixed_dictionaries({n: DRAWN[n] for n in bound.split()}))
        scopes = data.draw(st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]]))
        with ctx.vectors.snapshot():
            planned = ranked_among(ctx, filter_candidates(ctx.kg, text, bindings, scopes), scopes)
        written = ranked_among(ctx, ctx.kg.select_iris(text, bindings, scopes=scopes), scopes)
        assert planned == written, (name, bindings, scopes)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(documents_strategy,
       st.lists(st.tuples(st.integers(0, len(USER_TRIPLES) - 1), st.integers(0, 9)), max_size=6),
       st.lists(st.integers(0, 9), max_size=2), st.data())
def test_absent_or_passing_on_a_context_on_disk_read_only_and_writable(docs, extra, deleted,
                                                                       data):
    """The same forms on a context on disk, asked by a fresh read-only process and a writable
    one (kept columns read back), each path the expected one where the links are trails' own."""
    queries = [(name, data.draw(st.fixed_dictionaries({n: DRAWN[n] for n in
                                                       FORMS[name][1].split()})),
                data.draw(st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]])))
               for name in data.draw(st.lists(st.sampled_from(ABSENT_OR), min_size=2,
                                              max_size=6))]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kb"
        with Context.open(path, embedder=MockEmbedder(dim=8)) as writer:
            build(writer, docs, extra, deleted)
            intact = chunk_links_intact(writer.kg)
        for read_only in (True, False):
            with Context.open(path, embedder=MockEmbedder(dim=8), read_only=read_only) as ctx:
                for name, bindings, scopes in queries:
                    text, _, expected = FORMS[name]
                    found: list[str] = []
                    with ctx.vectors.snapshot():
                        planned = ranked_among(ctx, filter_candidates(
                            ctx.kg, text, bindings, scopes, path=found), scopes)
                    written = ranked_among(ctx, ctx.kg.select_iris(text, bindings, scopes=scopes),
                                           scopes)
                    assert planned == written, (name, bindings, scopes, read_only)
                    if expected == "documents-columns" and intact:
                        assert found == [expected], (name, found, read_only)


def test_undated_or_dated_after_on_documents_with_none_one_or_several_dates(ctx):
    """A document passes with no date, or with one date at least passing the test; a date the
    test cannot compare (a string) fails for that value alone."""
    dates = {0: [], 1: ['"2019-01-01"^^xsd:date'], 2: ['"2023-01-01"^^xsd:date'],
             3: ['"2019-01-01"^^xsd:date', '"2023-01-01"^^xsd:date'], 4: ['"not a date"'],
             5: ['"not a date"', '"2023-06-01"^^xsd:date'], 6: [],
             7: ['"2023-01-01T00:00:00Z"^^xsd:dateTime']}
    ingest_all([Document(id=f"d{n}", source=f"d{n}.md", text=f"rails document {n}.")
                for n in dates], ctx=ctx)
    body = " ".join(f"<{ctx.base_iri}doc/d{n}> schema:dateCreated {value} ."
                    for n, values in dates.items() for value in values)
    chunk = next(i for i, m in ctx.vectors.metadata(ctx.vectors.all_ids()).items()
                 if m["doc_iri"].endswith("/d6"))
    ctx.kg.update(f'INSERT DATA {{ {body} <{chunk}> schema:dateCreated "2019-01-01"^^xsd:date }}')
    since = {"since": dt.date(2022, 1, 1)}
    passing = ["d0", "d2", "d3", "d5", "d6"]  # a date compared with a dateTime: an error
    optional = f"{LINK} OPTIONAL {{ ?doc schema:dateCreated ?d }}"
    for text, expected in ((FORMS["optional or a test"][0], passing),
                           (f"{optional} FILTER(?d >= ?since || !BOUND(?d)) }}", passing),
                           ((f"{optional} FILTER(!BOUND(?d) || YEAR(?d) >= YEAR(?since) || "
                             '?d = "x") }'), [*passing, "d7"])):
        path: list[str] = []
        planned = ranked_among(ctx, filter_candidates(ctx.kg, text, since, None, path=path), None)
        written = ranked_among(ctx, ctx.kg.select_iris(text, since), None)
        assert planned == written, text
        assert path == ["documents-columns"], text
        metadata = ctx.vectors.metadata(list(planned))
        assert sorted({m["doc_iri"].rsplit("/", 1)[-1] for m in metadata.values()}) == \
            expected, text
    result = retrieve("rails", ctx, k=20, bindings=since,
                      sparql_filter=FORMS["optional or a test"][0])
    assert result.filter_path == "documents-columns" and len(result) == 5
    assert "filter=documents-columns" in result.explain()


def _corpus(ctx):
    docs = [Document(id=f"d{n}", source=f"d{n}.md", text=f"rails document number {n}.",
                     metadata={"date": DATES[n % 12].isoformat(), "place": PLACES[n % 3],
                               "topic": f"<{TOPICS}A1>", **({"label": "x"} if n % 2 else {})})
            for n in range(12)]
    ingest_all(docs, ctx=ctx)
    ctx.kg.load(f"<{TOPICS}A1> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{TOPICS}A> ."
                .encode(), format="ntriples")


def test_each_form_reaches_the_planners_fast_path(ctx):
    _corpus(ctx)
    for name, (text, bound, expected) in FORMS.items():
        if expected is None:
            continue
        path: list[str] = []
        found = filter_candidates(ctx.kg, text, {n: EXAMPLE[n] for n in bound.split()}, None,
                                  path=path)
        assert path == [expected], (name, path)
        assert found, name  # the corpus holds an answer to each


def test_each_form_selects_on_a_fixed_corpus_what_the_filter_as_written_selects(ctx):
    """Every form, including those that must stay as written, on documents that tell each
    rewrite's mistake apart (labelled and unlabelled, dates on both sides of the binding)."""
    _corpus(ctx)
    ctx.kg.update(f'INSERT DATA {{ <{ctx.base_iri}doc/d3> meta:label "EU" . '
                  f'<{TOPICS}A> meta:rank "1.0"^^xsd:decimal }}')
    for name, (text, bound, _) in FORMS.items():
        bindings = {n: EXAMPLE[n] for n in bound.split()}
        planned = ranked_among(ctx, filter_candidates(ctx.kg, text, bindings, None), None)
        written = ranked_among(ctx, ctx.kg.select_iris(text, bindings), None)
        assert planned == written, name


def test_the_rewritten_text_is_the_planners_form(ctx):
    shape = parse_filter("SELECT ?iri WHERE { ?iri schema:isPartOf/schema:dateCreated ?d . "
                         "FILTER(?d >= ?since) }", ctx.kg.prefixes)
    text = equivalent_form(shape, {"since"}).text()
    assert "?iri schema:isPartOf ?trails_via0 ." in text
    assert "?trails_via0 schema:dateCreated ?d ." in text
    shape = parse_filter("SELECT ?iri WHERE { ?doc ^schema:isPartOf ?iri . "
                         "MINUS { ?doc meta:label \"x\" } }", ctx.kg.prefixes)
    text = equivalent_form(shape).text()
    assert "?iri schema:isPartOf ?doc ." in text
    assert 'FILTER NOT EXISTS {  ?doc meta:label "x"  }' in text or \
        'FILTER NOT EXISTS { ?doc meta:label "x" }' in text
    assert "MINUS" not in text
    # a fresh variable never takes a name the filter uses
    shape = parse_filter("SELECT ?iri WHERE { ?iri schema:isPartOf/schema:name ?trails_via0 }",
                         ctx.kg.prefixes)
    assert "?trails_via1 schema:name ?trails_via0" in equivalent_form(shape).text()


def test_graph_mode_keeps_the_filter_as_written(ctx):
    """Graph mode lists the filter's own IRIs in the order the graph answers them: no rewrite
    that keeps only the set, and no join order of the planner's (which answers in another
    order); a search that cannot check documents still gets the set's forms."""
    _corpus(ctx)
    for text in ('SELECT ?doc WHERE { { ?doc meta:place "EU" } UNION { ?doc meta:place "US" } }',
                 ("SELECT ?doc WHERE { ?doc meta:place ?j . ?doc meta:topic ?t . FILTER NOT "
                 'EXISTS { ?doc meta:label "x" ; meta:place "EU" } }')):
        path: list[str] = []
        found = filter_candidates(ctx.kg, text, None, None, documents=False, ordered=True,
                                  path=path)
        assert path == ["as-written"]
        assert list(found) == ctx.kg.select_iris(text)
        result = retrieve("rails", ctx, mode="graph", k=50, sparql_filter=text)
        assert result.filter_path == "as-written"
        shown = list(dict.fromkeys(h.document or h.iri for h in result))
        assert len(shown) >= 2 and shown == [d for d in ctx.kg.select_iris(text) if d in shown]
        path = []
        filter_candidates(ctx.kg, text, None, None, documents=False, path=path)
        assert path != ["as-written"], text  # a set: planned, though not over documents


def test_a_search_with_a_sequence_path_ranks_what_the_written_link_ranks(ctx):
    _corpus(ctx)
    since = {"since": dt.date(2020, 6, 1)}
    natural = retrieve("rails", ctx, k=20, bindings=since, sparql_filter=(
        "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
        "FILTER(?d >= ?since) }"))
    path = retrieve("rails", ctx, k=20, bindings=since, sparql_filter=(
        "SELECT ?iri WHERE { ?iri schema:isPartOf/schema:dateCreated ?d . FILTER(?d >= ?since) }"))
    assert [h.iri for h in path] == [h.iri for h in natural] and len(path) == 10
    assert path.filter_path == "documents-columns"


def test_a_class_as_a_value_is_answered_class_by_class(ctx):
    """``?doc a ?class`` as a column would read every type triple (a row per chunk): a class
    variable listed or joined to a taxonomy is answered from the members of each class it
    names (a UNION of classes is read as such a list); tested alone, the graph joins it. The
    same answer."""
    _corpus(ctx)
    for text, planned in (
            ("SELECT ?doc WHERE { ?doc a ?c . VALUES ?c { trails:Document meta:Other } }",
             ("columns",)),
            (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . { ?doc a trails:Document } "
             "UNION { ?doc a meta:Other } }"), ("documents-columns",)),
            ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc a ?c }",
             ("documents-query", "chunks-reordered"))):
        path: list[str] = []
        found = filter_candidates(ctx.kg, text, None, None, path=path)
        assert path[0] in planned, (text, path)
        assert ranked_among(ctx, found, None) == ranked_among(ctx, ctx.kg.select_iris(text), None)
        assert len(ranked_among(ctx, found, None)) == 12


def _written_solution(ctx, text, bindings, iri, document):
    """The filter as written, every variable projected, on one hit: its first solution in
    term order (what ``admitted_by`` shows), computed here from Oxigraph's answer."""
    shape = parse_filter(text, ctx.kg.prefixes)
    terms = {n: str(t) for n, t in check_bindings(bindings).items()}
    names = " ".join(f"?{n}" for n in (shape.variable, *terms))
    rows = " ".join(f"(<{i}> {' '.join(terms.values())})" for i in (iri, document) if i)
    found = select(ctx.kg, shape.solutions_text(f"VALUES ({names}) {{ {rows} }}")).raw
    solutions = sorted(({k: str(v) for k, v in row.items() if v is not None} for row in found
                        if str(row[shape.variable]) == f"<{iri}>"),
                       key=lambda r: sorted(r.items()))
    by_document = sorted(({k: str(v) for k, v in row.items() if v is not None} for row in found
                          if str(row[shape.variable]) == f"<{document}>"),
                         key=lambda r: sorted(r.items()))
    return (solutions or by_document or [{}])[0]


def test_why_shows_the_solution_of_the_filter_as_written(ctx):
    """``admitted_by`` runs its forms that keep every solution (MINUS, VALUES, a UNION, a path,
    the OPTIONAL idiom) and shows no variable they add."""
    _corpus(ctx)
    for name in ("sequence path", "one path all the way", "values", "values first",
                 "union of values", "minus", "minus bound", "optional unbound", "exists",
                 "documents returned", "inverse link", "and in one filter",
                 "or across two properties", "bind of a value", "not exists of two patterns",
                 "optional or a test", "two optionals or a test"):
        text, bound, _ = FORMS[name]
        bindings = {n: EXAMPLE[n] for n in bound.split()}
        result = retrieve("rails", ctx, k=5, sparql_filter=text, bindings=bindings, why=True)
        assert len(result), name
        for hit in result:
            assert hit.admitted_by == _written_solution(ctx, text, bindings, hit.iri,
                                                        hit.document), name
            assert not any(n.startswith("trails_via") for n in hit.admitted_by), name


def test_why_keeps_a_values_list_before_what_reads_the_group_so_far(ctx):
    """A VALUES list becomes a test at the group's end only where nothing after it reads the
    solutions so far: an OPTIONAL after it matches only the listed values (a document with
    another value leaves the OPTIONAL's variable unbound), which a test at the end would not."""
    _corpus(ctx)
    ctx.kg.update(f'INSERT DATA {{ <{ctx.base_iri}doc/d1> meta:q "b" }}')
    for text in (('SELECT ?iri WHERE { VALUES ?v { "x" } OPTIONAL { ?doc meta:q ?v } '
                  "?iri schema:isPartOf ?doc . ?doc meta:label ?v }"),
                 ('SELECT ?iri WHERE { VALUES ?v { "x" } ?iri schema:isPartOf ?doc . '
                  "?doc meta:label ?v . BIND(STR(?v) AS ?s) }")):
        result = retrieve("rails", ctx, k=5, sparql_filter=text, why=True)
        assert len(result), text
        for hit in result:
            assert hit.admitted_by == _written_solution(ctx, text, {}, hit.iri, hit.document)
            assert hit.admitted_by, text
