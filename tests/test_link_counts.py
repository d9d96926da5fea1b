"""The link checks' counts on a set of subjects (kg/link_counts.py): what a writer adds to a
kept count after a commit must be exactly the change of the graph's own COUNT, so the part
of a count on some subjects is checked against Oxigraph's COUNT with the subjects as a
FILTER, over random graphs (links and types in several graphs, the default one among them)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from trails.kg.base import select
from trails.kg.link_counts import (
    COUNT_CHUNKS,
    COUNT_LINKS,
    COUNT_TYPED_TARGETS,
    LINK_COUNTS,
    LinkCount,
    Lookups,
)
from trails.kg.oxigraph import OxigraphGraph

NODES = [f"<https://example.org/n{i}>" for i in range(4)]
PREDICATES = ["<https://schema.org/isPartOf>", "a", "<https://example.org/other>"]
OBJECTS = [*NODES, "<https://trails.dev/ns#Chunk>", "<https://trails.dev/ns#Document>",
           '"text"']
GRAPHS = ["", "<urn:trails:scope:legal>", "<urn:trails:scope:other>"]

# not one of the link checks: a join back to a bound variable, which the counting also handles
CYCLE = LinkCount((("?c", PREDICATES[0], "?d"), ("?d", PREDICATES[0], "?c")))

triples = st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(PREDICATES),
                             st.sampled_from(OBJECTS), st.sampled_from(GRAPHS)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(triples, st.sets(st.sampled_from(NODES)),
       st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]]))
# a link on a subject left out, to a document among the subjects (counted at ?d); the same
# link in two graphs, and a class written in another scope
@example([(NODES[1], PREDICATES[0], NODES[2], ""), (NODES[2], "a", OBJECTS[5], "")],
         {NODES[2]}, None)
@example([(NODES[1], PREDICATES[0], NODES[2], GRAPHS[1]), (NODES[1], PREDICATES[0], NODES[2], ""),
          (NODES[2], "a", OBJECTS[5], GRAPHS[2]), (NODES[2], "a", OBJECTS[5], "")],
         {NODES[1], NODES[2]}, None)
def test_the_count_on_some_subjects_is_the_graphs_count_of_solutions_binding_one(
        data, subjects, scopes):
    kg = OxigraphGraph()
    for s, p, o, g in data:
        body = f"{s} {p} {o}"
        kg.update(f"INSERT DATA {{ GRAPH {g} {{ {body} }} }}" if g else
                  f"INSERT DATA {{ {body} }}")
    listed = ", ".join(sorted(subjects)) or "<urn:none>"
    some, every = Lookups(kg.select_tsv, scopes), Lookups(kg.select_tsv, scopes)  # shared
    for count in (COUNT_LINKS, COUNT_CHUNKS, COUNT_TYPED_TARGETS, CYCLE):
        variables = sorted({s for s, _, _ in count.patterns})  # ?c, and ?d for the typed one
        test = " || ".join(f"{v} IN ({listed})" for v in variables)
        oracle = count.flat.replace(" }", f" FILTER({test}) }}")
        expected = int(select(kg, oracle, scopes=scopes).rows[0]["n"])
        assert count.on(some, set(subjects)) == expected, (count.query, oracle)
        # and the whole count: all subjects, as a reader asks it and as it is defined
        everything = int(select(kg, count.query, scopes=scopes).rows[0]["n"])
        assert everything == int(select(kg, count.flat, scopes=scopes).rows[0]["n"])
        assert count.on(every, set(NODES)) == everything


def test_the_counts_are_known_by_the_text_a_reader_asks():
    assert LINK_COUNTS[COUNT_LINKS.query] is COUNT_LINKS
    assert COUNT_TYPED_TARGETS.flat == (
        "SELECT (COUNT(*) AS ?n) WHERE { ?c <https://schema.org/isPartOf> ?d . "
        "?d a <https://trails.dev/ns#Document> }")
    # asked per document, then joined with the class (the same number: the property above)
    assert COUNT_TYPED_TARGETS.query == (
        "SELECT (SUM(?k) AS ?n) WHERE { { SELECT ?d (COUNT(*) AS ?k) WHERE { ?c "
        "<https://schema.org/isPartOf> ?d } GROUP BY ?d } ?d a <https://trails.dev/ns#Document> }")
    assert CYCLE.query == CYCLE.flat  # a join on two variables stays one join
    assert COUNT_LINKS.query == COUNT_LINKS.flat
    assert COUNT_TYPED_TARGETS.texts == ["?c <https://schema.org/isPartOf> ?d",
                                         "?d a <https://trails.dev/ns#Document>"]


@settings(max_examples=200, deadline=None)
@given(triples, st.sets(st.sampled_from(NODES)), st.sets(st.sampled_from(NODES)),
       st.sampled_from([None, ["default"], ["legal"], ["default", "legal"]]))
def test_reading_several_predicates_at_once_finds_what_one_at_a_time_finds(
        data, asked_before, subjects, scopes):
    """``prefetch`` fills the same answers ``of`` reads alone, each triple once, whatever
    was asked before it (the carry reads a scopes' columns this way)."""
    kg = OxigraphGraph()
    for s, p, o, g in data:
        p = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>" if p == "a" else p
        kg.update(f"INSERT DATA {{ GRAPH {g} {{ {s} {p} {o} }} }}" if g else
                  f"INSERT DATA {{ {s} {p} {o} }}")
    predicates = ["<https://schema.org/isPartOf>", "<https://example.org/other>",
                  "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"]
    together, alone = Lookups(kg.select_tsv, scopes), Lookups(kg.select_tsv, scopes)
    together.of(predicates[0], True, asked_before)
    together.prefetch(predicates, subjects)
    for predicate in predicates:
        expected = alone.of(predicate, True, subjects | asked_before)
        got = together.of(predicate, True, subjects | asked_before)
        assert {v: sorted(got[v]) for v in subjects | asked_before} == {
            v: sorted(expected[v]) for v in subjects | asked_before}, predicate
