"""The entity-aware ranking step (``EntityBoost``, ADR 0037): the query's own words linked to
the user's entities raise the hits that mention them or their neighbours, under a guard, and
never change which hits there are. Expected orders are read off the texts by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.ingest.linking import LabelLinker
from trails.rank import EntityBoost
from trails.rank.entities import raise_mentioning
from trails.records import RetrievalHit
from trails.service.steps import build_steps
from trails.testing import fresh_context

EX = "https://ex.org/"
ONTOLOGY = """PREFIX ex: <https://ex.org/> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
INSERT DATA {
  ex:acme rdfs:label "ACME" .
  ex:globex rdfs:label "Globex" ; ex:subOrganizationOf ex:acme .
  ex:initech rdfs:label "Initech" ; skos:altLabel "Initrode" ;
             ex:subOrganizationOf ex:globex .
  ex:hooli rdfs:label "Hooli" .
}"""
# The plain texts repeat the query's other words; the entity's chunk names it by another
# label, so no ranking but the entities' sees that it answers the query.
TEXTS = {
    "plain-1": "quarterly revenue report quarterly revenue report numbers",
    "plain-2": "quarterly revenue report quarterly revenue figures",
    "plain-3": "quarterly revenue report and outlook",
    "initech": "Initrode staff party photos",
    "globex": "Globex staff party photos",
    "hooli": "Hooli staff party photos",
}
QUERY = "quarterly revenue report of Initech"


@pytest.fixture(scope="module")
def ctx():
    with fresh_context(dim=64) as ctx:
        ctx.kg.update(ONTOLOGY)
        ingest_all([Document(id=i, source=i, text=t) for i, t in TEXTS.items()], ctx=ctx,
                   linker=LabelLinker())
        yield ctx


def which(result) -> list[str]:
    """The document each hit is a chunk of, by its text."""
    by_text = {t: i for i, t in TEXTS.items()}
    return [by_text[h.snippet] for h in result]


def test_a_chunk_naming_the_querys_entity_is_raised(ctx):
    plain = retrieve(QUERY, ctx, k=6)
    assert which(plain)[0] != "initech"
    boosted = retrieve(QUERY, ctx, k=6, steps=[EntityBoost(weight=0.9)])
    assert which(boosted)[0] == "initech"
    assert set(which(boosted)) == set(which(plain))
    assert "entities" in boosted[0].components
    assert "initech" in boosted.explain()  # which entities the query linked, in explain()


def test_neighbours_within_k_hops_over_the_configured_predicates(ctx):
    query = "quarterly revenue report of ACME"
    own = which(retrieve(query, ctx, k=6, steps=[EntityBoost(weight=0.9)]))
    assert {"globex", "initech"} & set(own[:1]) == set()
    one = which(retrieve(query, ctx, k=6, steps=[EntityBoost(
        neighbours=["https://ex.org/subOrganizationOf"], hops=1, weight=0.9)]))
    assert one[0] == "globex" and one.index("initech") > one.index("plain-1")
    two = which(retrieve(query, ctx, k=6, steps=[EntityBoost(
        neighbours=["https://ex.org/subOrganizationOf"], hops=2, weight=0.9)]))
    assert set(two[:2]) == {"globex", "initech"}
    assert "hooli" not in two[:3]  # not a neighbour at any depth


def test_a_query_naming_no_entity_leaves_the_answer_as_it_was(ctx):
    plain = retrieve("quarterly revenue report", ctx, k=6)
    boosted = retrieve("quarterly revenue report", ctx, k=6, steps=[EntityBoost(weight=0.9)])
    assert [(h.iri, h.score) for h in boosted] == [(h.iri, h.score) for h in plain]
    assert "no entity" in boosted.explain()


def test_entities_of_another_scope_raise_nothing():
    with fresh_context(dim=64) as ctx:
        ctx.kg.update(ONTOLOGY.replace("INSERT DATA {", "INSERT DATA { GRAPH <urn:trails:scope:b> {")
                      + "}")
        ingest_all([Document(id=i, source=i, text=t) for i, t in TEXTS.items()], ctx=ctx,
                   linker=LabelLinker())
        plain = retrieve(QUERY, ctx, k=6)
        boosted = retrieve(QUERY, ctx, k=6, steps=[EntityBoost(weight=0.9)])
        assert [h.iri for h in boosted] == [h.iri for h in plain]


def test_one_step_serving_one_fresh_context_after_another_links_each_one_s_own_entities():
    # A step a project builds once and uses in every test: each test's graph is new, and
    # CPython gives a new graph the address of one gone before, at the same generation after
    # the same writes. The step kept each graph's labels by that address and linked a query
    # with a gone graph's labels: a test's answer depended on which test ran before.
    step = EntityBoost(weight=0.9)
    for n in range(150):
        name = f"Zorg{n}x"  # the linker folds case; a new entity in every context
        with fresh_context(dim=64) as ctx:
            ctx.kg.update(f'PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> INSERT DATA '
                          f'{{ <{EX}e{n}> rdfs:label "{name}" }}')
            ingest_all([Document(id="plain", source="plain", text="report report of"),
                        Document(id="entity", source="entity", text=f"photos of {name}")],
                       ctx=ctx, linker=LabelLinker())
            boosted = retrieve(f"report of {name}", ctx, k=2, steps=[step])
            assert any(note.startswith(f"entities: {EX}e{n} linked") for note in boosted.notes), \
                (n, boosted.notes)
        del ctx, boosted  # the graph is gone before the next one is made


def test_the_service_names_the_step():
    step = build_steps([("entities", {"neighbours": [EX + "subOrganizationOf"], "hops": 2})])[0]
    assert isinstance(step, EntityBoost) and step.hops == 2


@pytest.mark.parametrize("options", [{"hops": -1}, {"hops": 1.5}, {"weight": 1.5},
                                     {"weight": float("nan")}, {"neighbours": ["nope:x"]},
                                     {"neighbours": "https://ex.org/p"}, {"decay": 0},
                                     {"linker": object()}])
def test_bad_options_are_refused_by_name(options):
    with pytest.raises(InvalidArgumentError, match=next(iter(options))):
        EntityBoost(**options)


def test_without_a_context_it_says_how_to_give_one():
    with pytest.raises(Exception, match="ctx"):
        EntityBoost()("q", [RetrievalHit("a", 1.0, "")], None)


scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(base=st.lists(scores, min_size=1, max_size=30),
       mentions=st.lists(st.one_of(st.none(), scores), min_size=30, max_size=30),
       weight=scores)
def test_only_the_order_changes_and_only_mentioning_hits_rise(base, mentions, weight):
    base = sorted(base, reverse=True)
    hits = [RetrievalHit(f"h{i}", s, "") for i, s in enumerate(base)]
    entity = {h.iri: m for h, m in zip(hits, mentions) if m}
    out, _ = raise_mentioning(hits, entity, weight=weight)
    assert sorted(h.iri for h in out) == sorted(h.iri for h in hits)  # same candidates
    scores_out = [h.score for h in out]
    assert scores_out == sorted(scores_out, reverse=True)
    old = {h.iri: i for i, h in enumerate(hits)}
    new = {h.iri: i for i, h in enumerate(out)}
    others = [h.iri for h in out if h.iri not in entity]
    assert others == sorted(others, key=old.__getitem__)  # the rest keep their order
    for iri in entity:
        assert new[iri] <= old[iri] or all(  # a mentioning hit never falls below one it beat
            o in entity for o in [h.iri for h in out[:new[iri]]] if old[o] > old[iri])


@settings(max_examples=100, deadline=None)
@given(base=st.lists(scores, min_size=1, max_size=30), weight=scores)
def test_the_guard_holds_when_the_entities_tell_nothing(base, weight):
    base = sorted(base, reverse=True)
    hits = [RetrievalHit(f"h{i}", s, "") for i, s in enumerate(base)]
    # Every hit mentions them alike, or none does: no evidence, the order and scores stay.
    for entity in ({h.iri: 1.0 for h in hits}, {}):
        out, _ = raise_mentioning(hits, entity, weight=weight)
        assert [(h.iri, h.score) for h in out] == [(h.iri, h.score) for h in hits]


def test_a_raised_hit_shows_the_entities_it_mentions(ctx):
    boosted = retrieve(QUERY, ctx, k=6, steps=[EntityBoost(weight=0.9)])
    assert boosted[0].metadata["mentions"] == [EX + "initech"]
    assert "mentions https://ex.org/initech" in str(boosted)
    assert 'href="https://ex.org/initech"' in boosted._repr_html_()
    plain = retrieve(QUERY, ctx, k=6)
    assert "mentions" not in str(plain)


# -- how far each mentioned entity is from the query's ---------------------------------------

_NODES = [f"{EX}n{i}" for i in range(8)]
_LINK, _OTHER = f"{EX}link", f"{EX}other"


def _distances(edges, named, hops):
    """Shortest distances from ``named`` over ``edges`` (either way round), step by step:
    the test's own walk, not the step's."""
    seen = dict.fromkeys(named, 0)
    frontier = list(named)
    for distance in range(1, hops + 1):
        frontier = [b for a in frontier for x, y in edges for b in ((y,) if x == a else
                    (x,) if y == a else ()) if b not in seen]
        for node in frontier:
            seen.setdefault(node, distance)
    return seen


@settings(max_examples=60, deadline=None)
@given(edges=st.lists(st.tuples(st.sampled_from(_NODES), st.sampled_from(_NODES),
                                st.sampled_from([_LINK, _OTHER])), max_size=14),
       named=st.lists(st.sampled_from(_NODES), min_size=1, max_size=2, unique=True),
       targets=st.sets(st.sampled_from(_NODES)), hops=st.integers(0, 3),
       kept=st.booleans())
def test_reach_is_the_shortest_distance_over_the_configured_predicate_only(
        edges, named, targets, hops, kept):
    """The walk in memory (edges kept per generation) and the graph's own distance queries
    (too many edges to keep) both give each target within ``hops`` of the named entities,
    over ex:link only, ``decay ** distance``; a hub's other edges count for nothing."""
    import trails.rank.entities as module

    step = EntityBoost(neighbours=[_LINK], hops=hops, decay=0.5)
    previous = module.MAX_KEPT_EDGES
    module.MAX_KEPT_EDGES = previous if kept else -1  # -1: never kept, always asked
    try:
        with fresh_context(dim=8) as ctx:
            if edges:
                ctx.kg.update("INSERT DATA { " + " ".join(
                    f"<{a}> <{p}> <{b}> ." for a, b, p in edges) + " }")
            reach = step._reach(ctx.kg, "default", named, set(targets))
    finally:
        module.MAX_KEPT_EDGES = previous
    linked = [(a, b) for a, b, p in edges if p == _LINK]
    expected = {node: 0.5 ** d for node, d in _distances(linked, named, hops).items()
                if node in targets}
    assert reach == expected


def test_the_kept_edges_follow_the_graph_when_it_changes():
    step = EntityBoost(neighbours=[_LINK], hops=2)
    with fresh_context(dim=8) as ctx:
        ctx.kg.update(f"INSERT DATA {{ <{EX}a> <{_LINK}> <{EX}b> }}")
        assert step._reach(ctx.kg, "default", [f"{EX}a"], {f"{EX}c"}) == {}
        ctx.kg.update(f"INSERT DATA {{ <{EX}c> <{_LINK}> <{EX}b> }}")
        assert step._reach(ctx.kg, "default", [f"{EX}a"], {f"{EX}c"}) == {f"{EX}c": 0.25}
        ctx.kg.update(f"DELETE DATA {{ <{EX}a> <{_LINK}> <{EX}b> }}")
        assert step._reach(ctx.kg, "default", [f"{EX}a"], {f"{EX}c"}) == {}


def test_edges_of_another_scope_are_not_walked():
    step = EntityBoost(neighbours=[_LINK], hops=1)
    with fresh_context(dim=8) as ctx:
        ctx.kg.update(f"INSERT DATA {{ GRAPH <urn:trails:scope:other> "
                      f"{{ <{EX}a> <{_LINK}> <{EX}b> }} }}")
        assert step._reach(ctx.kg, "default", [f"{EX}a"], {f"{EX}b"}) == {}
        assert step._reach(ctx.kg, "other", [f"{EX}a"], {f"{EX}b"}) == {f"{EX}b": 0.5}


def test_the_kept_edges_and_labels_follow_writes_through_a_held_raw_store():
    """A raw store handed out writes unseen, the generation unchanged: nothing is kept."""
    step = EntityBoost(neighbours=[_LINK], hops=2)
    with fresh_context(dim=8) as ctx:
        ctx.kg.update(f"INSERT DATA {{ <{EX}a> <{_LINK}> <{EX}b> }}")
        raw = ctx.kg.store
        assert step._reach(ctx.kg, "default", [f"{EX}a"], {f"{EX}c"}) == {}
        raw.update(f"INSERT DATA {{ <{EX}c> <{_LINK}> <{EX}b> }}")
        assert step._reach(ctx.kg, "default", [f"{EX}a"], {f"{EX}c"}) == {f"{EX}c": 0.25}
        assert step._query_entities(ctx.kg, "default", "about Umbrella") == []
        raw.update(f'INSERT DATA {{ <{EX}umbrella> <http://www.w3.org/2000/01/rdf-schema#label> '
                   f'"Umbrella" }}')
        assert step._query_entities(ctx.kg, "default", "about Umbrella") == [f"{EX}umbrella"]
