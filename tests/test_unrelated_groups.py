"""A filter's groups that share no variable with its candidates are asked once, not joined.

``?iri schema:isPartOf ?doc . ?rule ?p ?o . ?x ?q ?y`` has as many solutions as chunks times
triples times triples: as written it runs for hours on a graph of a few thousand triples. The
reference here is always the filter as written (Oxigraph's ``select_iris``), on graphs small
enough for it; the hang is bounded by a timeout on a graph where the join never ends.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_filter_planning import CONDITIONS, documents, expanded, world
from trails import Document, ingest_all, retrieve
from trails.kg.planning import parse_filter
from trails.kg.unrelated import split_unrelated
from trails.retrieval.candidates import filter_candidates
from trails.testing import fresh_context

# Groups that share no variable with ?iri or ?doc: some with solutions, some without, some
# that read a binding (?since, which the date condition reads too: then they are joined).
UNRELATED = {
    "any-triple": ["?s1 ?p1 ?o1 ."],
    "another-any-triple": ["?s2 ?p2 ?o2 ."],
    "eu-documents": ['?other meta:jurisdiction "eu" .'],
    "nowhere": ['?gone meta:jurisdiction "nowhere" .'],
    "dated-after": ["?late schema:dateCreated ?ld .", "FILTER(?ld >= ?since)"],
    "broad-topic": ["?tt rdfs:subClassOf* <https://example.org/topic/b> ."],
    "false": ["FILTER(false)"],
    "true": ["FILTER(1 < 2)"],
    "filtered-empty": ["?e1 schema:position ?e2 .", "FILTER(?e2 > 100)"],
    "two-chained": ["?c1 meta:topic ?c2 .", "?c2 rdfs:subClassOf ?c3 ."],
}


@st.composite
def filters_with_unrelated_groups(draw):
    chosen = draw(st.lists(st.sampled_from(sorted(CONDITIONS)), max_size=2, unique=True))
    unrelated = draw(st.lists(st.sampled_from(sorted(UNRELATED)), min_size=1, max_size=2,
                              unique=True))
    parts = (["?iri schema:isPartOf ?doc ."] + [p for name in chosen for p in CONDITIONS[name]]
             + [p for name in unrelated for p in UNRELATED[name]])
    parts = draw(st.permutations(parts))
    return "SELECT ?iri WHERE { " + " ".join(parts) + " }"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=documents, text=filters_with_unrelated_groups(),
       foreign=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 7)), max_size=2),
       since=st.dates(dt.date(2019, 1, 1), dt.date(2025, 1, 1)), typed=st.booleans())
def test_candidates_equal_the_filter_as_written_with_unrelated_groups(docs, text, foreign,
                                                                      since, typed):
    kg, chunks_of = world(docs, foreign, typed)
    bindings = {"since": since} if "?since" in text else None
    written = set(kg.select_iris(text, bindings))
    path: list[str] = []
    planned = filter_candidates(kg, text, bindings, None, path=path)
    assert expanded(planned, chunks_of) == written
    listed = filter_candidates(kg, text, bindings, None, documents=False)
    assert set(listed) == written


@pytest.mark.parametrize("text,groups", [
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x ?p ?y }", 1),
    ("SELECT ?iri WHERE { ?x ?p ?y . ?iri schema:isPartOf ?doc . ?a ?b ?c . FILTER(true) }", 3),
    # joined through a FILTER, a path's end or a name in EXISTS: one group, as written
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc ?q ?v . ?x ?p ?y FILTER(?v != ?y) }",
     0),
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x schema:isPartOf* ?doc }", 0),
    (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x ?p ?y "
     "FILTER NOT EXISTS { ?doc ?p ?z } }"), 0),
    # an order that is part of the meaning: never taken apart
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . OPTIONAL { ?x ?p ?y } }", 0),
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . MINUS { ?x ?p ?y } }", 0),
    ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . BIND(1 AS ?one) ?x ?p ?one }", 0),
])
def test_only_groups_sharing_no_variable_are_taken_apart(text, groups):
    shape = parse_filter(text)
    assert shape is not None
    split = split_unrelated(shape)
    assert (0 if split is None else len(split[1])) == groups
    if split is not None:
        assert all("?iri" not in item.text for group in split[1] for item in group)


def _context(docs: int):
    ctx = fresh_context()
    ingest_all([Document(id=f"d{i}", source=f"s{i}", text=f"word{i} alpha beta. " * 40)
                for i in range(docs)], ctx=ctx)
    return ctx


@pytest.mark.timeout(120, method="thread")  # native code: a signal would wait for it
def test_a_join_of_unrelated_groups_that_never_ends_as_written_is_answered():
    # ~3,400 triples: as written, triples cubed (~4 x 10^10) before the first candidate.
    ctx = _context(200)
    text = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x ?p ?y . ?a ?b ?c . ?e ?f ?g }"
    result = retrieve("alpha", ctx, sparql_filter=text, k=3)
    assert len(result) == 3
    assert result.candidates == 200
    assert result.filter_path.endswith("(3 unrelated groups asked once)")


def test_an_unrelated_group_without_a_solution_empties_the_answer_and_says_so():
    ctx = _context(5)
    text = 'SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x schema:name "nothing" }'
    assert ctx.kg.select_iris(text) == []  # the reference: as written
    result = retrieve("alpha", ctx, sparql_filter=text, k=3)
    assert len(result) == 0 and result.filter_path == "unrelated-empty"


def test_an_unrelated_group_is_asked_in_the_searched_scopes_only():
    ctx = fresh_context()
    ingest_all([Document(id="a", source="a", text="alpha in scope a")], ctx=ctx, scope="a")
    ingest_all([Document(id="b", source="b", text="alpha in scope b")], ctx=ctx, scope="b")
    marker = "?x ?p 'alpha in scope b'"  # a triple of scope b's graph only
    text = f"SELECT ?iri WHERE {{ ?iri schema:isPartOf ?doc . {marker} }}"
    for scopes, expected in ((["a"], 0), (["b"], 1), (["a", "b"], 2)):
        assert len(ctx.kg.select_iris(text, scopes=scopes)) == expected  # as written
        result = retrieve("alpha", ctx, sparql_filter=text, k=5, scope=scopes)
        assert len(result) == expected, scopes


def test_a_binding_read_only_by_an_unrelated_group_is_bound_there():
    ctx = _context(5)
    text = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x schema:position ?n }"
    for n, expected in ((0, 5), (10_000, 0)):
        assert len(ctx.kg.select_iris(text, {"n": n})) == expected  # as written
        result = retrieve("alpha", ctx, sparql_filter=text, bindings={"n": n}, k=10)
        assert result.candidates == expected


def _first_in_term_order(ctx, text: str) -> dict[str, dict[str, str]]:
    """The reference: every solution as written, the first in term order per chunk."""
    body = text[text.index("{"):]
    first: dict[str, dict[str, str]] = {}
    rows = ctx.kg.query(f"SELECT * WHERE {body}").raw
    for row in sorted(rows, key=lambda r: sorted((k, str(v)) for k, v in r.items())):
        first.setdefault(row["iri"].value, {k: str(v) for k, v in sorted(row.items())})
    return first


@pytest.mark.parametrize("text", [
    "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x schema:position ?n FILTER(?n >= 0) }",
    "SELECT ?iri WHERE { ?c1 schema:isPartOf ?c2 . ?iri schema:isPartOf ?doc . ?t a ?class }",
])
def test_why_gives_the_first_solution_in_term_order_as_the_filter_as_written_has_it(text):
    ctx = _context(4)
    expected = _first_in_term_order(ctx, text)
    result = retrieve("alpha", ctx, sparql_filter=text, k=4, why=True)
    assert len(result) == 4
    for hit in result:
        assert hit.admitted_by == expected[hit.iri]


@pytest.mark.timeout(120, method="thread")  # native code: a signal would wait for it
def test_why_over_unrelated_groups_that_never_end_as_written_is_answered():
    ctx = _context(200)
    text = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?x ?p ?y . ?a ?b ?c . ?e ?f ?g }"
    result = retrieve("alpha", ctx, sparql_filter=text, k=2, why=True)
    assert len(result) == 2
    assert all({"x", "p", "y", "a", "b", "c", "e", "f", "g", "iri", "doc"} <= set(h.admitted_by)
               for h in result)
