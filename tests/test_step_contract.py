"""The contract every post-ranking step keeps, checked on each of them: whatever ``k`` and
``top_n``, ``retrieve(..., steps=[step])`` returns hits in score order, and a
``HybridRetriever`` with the step does not raise. A step that re-scores only part of the list
(``top_n``, hits without a stored vector) must not leave a hit of the other part above it.
"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.kg import IRI
from trails.rank import (
    MMR,
    CrossEncoderReranker,
    EntityBoost,
    Neighbourhood,
    ParentDocument,
    RecencyDecay,
)
from trails.records import RetrievalHit
from trails.retrieval import HybridRetriever, RerankedRetriever, VectorRetriever
from trails.service.steps import build_steps
from trails.testing import fresh_context

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
WORDS = ["rails", "routing", "controllers", "views", "models", "migrations", "assets", "tests",
         "caching", "jobs", "mailers", "sessions", "cookies", "helpers", "layouts", "partials",
         "engines", "generators", "console", "server"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from trails.testing import tiny_cross_encoder

    return tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="module")
def corpus():
    ctx = fresh_context(dim=32)
    documents = [
        Document(f"doc-{i}", "mem", f"{WORDS[i]} and {WORDS[(i * 7) % len(WORDS)]} in rails. "
                 f"The {WORDS[(i * 3) % len(WORDS)]} chapter.",
                 metadata={"date": dt.date(2020 + i % 5, 1 + i % 12, 1)})
        for i in range(len(WORDS))
    ]
    ingest_all(documents, ctx=ctx)
    yield ctx
    ctx.close()


STEPS = {
    "mmr-top3": lambda model: MMR(lambda_=0.3, top_n=3),
    "mmr-score-top5": lambda model: MMR(lambda_=0.5, top_n=5, relevance="score"),
    "mmr-all": lambda model: MMR(lambda_=0.5),
    "cross-encoder-top3": lambda model: CrossEncoderReranker(model, top_n=3),
    "cross-encoder-top8": lambda model: CrossEncoderReranker(model, top_n=8),
    "recency": lambda model: RecencyDecay(horizon_days=365, now=dt.datetime(2026, 1, 1)),
    "parent": lambda model: ParentDocument(),
    "neighbourhood": lambda model: Neighbourhood(),
    "entities": lambda model: EntityBoost(),
}


def in_score_order(hits):
    scores = [h.score for h in hits]
    return all(a >= b for a, b in itertools.pairwise(scores))


@pytest.mark.parametrize("k", [1, 2, 4, 7, 12, 30])
@pytest.mark.parametrize("name", sorted(STEPS))
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_retrieve_with_a_step_returns_hits_in_score_order(corpus, model_dir, name, k, mode):
    step = STEPS[name](model_dir)
    hits = retrieve("rails routing and caching", corpus, mode=mode, k=k, steps=[step])
    assert len(hits) == min(k, len(WORDS))
    assert in_score_order(hits), [(h.iri, h.score) for h in hits]
    assert len({h.iri for h in hits}) == len(hits)


@pytest.mark.parametrize("k", [2, 5, 20])
@pytest.mark.parametrize("name", sorted(STEPS))
def test_retrievers_accept_every_step(corpus, model_dir, name, k):
    step = STEPS[name](model_dir)
    hybrid = HybridRetriever(corpus, k=k, steps=[step]).retrieve("rails controllers")
    assert in_score_order(hybrid)
    reranked = RerankedRetriever(VectorRetriever(corpus, k=k + 3), step, k=k)
    assert in_score_order(reranked.retrieve("rails controllers"))


def test_two_partial_steps_in_a_row_stay_in_order(corpus, model_dir):
    steps = [CrossEncoderReranker(model_dir, top_n=4), MMR(lambda_=0.5, top_n=2)]
    hits = retrieve("rails sessions", corpus, k=10, steps=steps)
    assert in_score_order(hits) and len(hits) == 10


BUILDERS = {"ParentDocument": ParentDocument, "Neighbourhood": Neighbourhood,
            "EntityBoost": EntityBoost,
            "RecencyDecay": RecencyDecay, "MMR": MMR,
            "CrossEncoderReranker": lambda **given: CrossEncoderReranker("no-model-here", **given)}


@pytest.mark.parametrize("step, arguments, named", [
    ("ParentDocument", {"min_score": float("inf")}, "min_score"),
    ("ParentDocument", {"min_score": -float("inf")}, "min_score"),
    ("ParentDocument", {"min_score": float("nan")}, "min_score"),
    ("ParentDocument", {"min_score": "0.8"}, "min_score"),
    ("ParentDocument", {"window": True}, "window"),
    ("ParentDocument", {"window": -1}, "window"),
    ("ParentDocument", {"mode": "parent"}, "mode"),
    ("Neighbourhood", {"depth": 0}, "depth"),
    ("Neighbourhood", {"depth": True}, "depth"),
    ("RecencyDecay", {"horizon_days": float("nan")}, "horizon_days"),
    ("RecencyDecay", {"horizon_days": "60"}, "horizon_days"),
    ("RecencyDecay", {"horizon_days": 0}, "horizon_days"),
    ("RecencyDecay", {"floor": float("nan")}, "floor"),
    ("RecencyDecay", {"floor": "0.5"}, "floor"),
    ("RecencyDecay", {"floor": 1.5}, "floor"),
    ("MMR", {"lambda_": float("nan")}, "lambda_"),
    ("MMR", {"lambda_": "0.5"}, "lambda_"),
    ("MMR", {"top_n": "3"}, "top_n"),
    ("MMR", {"top_n": 0}, "top_n"),
    ("MMR", {"relevance": "dot"}, "relevance"),
    ("CrossEncoderReranker", {"top_n": 0}, "top_n"),
    ("CrossEncoderReranker", {"top_n": "20"}, "top_n"),
    ("CrossEncoderReranker", {"batch_size": 0.5}, "batch_size"),
    ("RecencyDecay", {"predicate": "foaf:made"}, "prefix 'foaf'"),
    ("RecencyDecay", {"predicate": 5}, "predicate must be a string"),
    ("RecencyDecay", {"now": "2024-01-01"}, "now must be a date"),
    ("Neighbourhood", {"predicates": ["foaf:made"]}, "prefix 'foaf'"),
    ("Neighbourhood", {"predicates": [5]}, "predicate must be a string"),
    ("Neighbourhood", {"predicates": 5}, "predicates must be a list"),
    ("EntityBoost", {"neighbours": 5}, "neighbours must be a list"),
    ("EntityBoost", {"neighbours": [5]}, "neighbours: a predicate must be a string"),
])
def test_the_data_flows_steps_refuse_bad_settings_with_a_trails_error_naming_them(
        step, arguments, named):
    """Recency, MMR, rerank and parent-document steps are built from configuration: a wrong
    setting (NaN, infinity, a string for a number, a bool for a count) is an
    InvalidArgumentError naming it, when the step is made, not a bare ValueError or
    TypeError, nor a step that silently changes nothing."""
    with pytest.raises(InvalidArgumentError, match=named):
        BUILDERS[step](**arguments)


# -- a step returns some of the hits it was given, never another -----------------------------

RAILS = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:name ?t FILTER(?t = 'kept') }"


@pytest.fixture
def scoped():
    """Chunks a step must never bring back to a default-scope search filtered to the 'kept'
    document: another scope's, a document the filter leaves out, a superseded version's, a
    deleted document's, an expired document's."""
    ctx = fresh_context(dim=32)
    ingest_all([Document("kept", "kept", "rails routing guide", title="kept"),
                Document("other", "other", "rails routing notes", title="other"),
                Document("old", "old", "rails routing, first edition", title="kept"),
                Document("gone", "gone", "rails routing memo", title="kept"),
                Document("late", "late", "rails routing log", title="kept",
                         metadata={"expires": "2000-01-01"})], ctx=ctx)
    ingest_all([Document("kept", "kept", "rails routing secret", title="kept")], ctx=ctx,
               scope="legal")
    stale = set(ctx.vectors.all_ids())
    ingest_all([Document("old", "old", "rails routing, second edition", title="kept")], ctx=ctx)
    ctx.delete_document(IRI("trails://local/doc/gone"))
    # every chunk ever written, as (scope, iri): the rows of the store, live or not
    written = {(s.metadata["scope"], s.id) for s in ctx.vectors.get(stale)} | {
        (scope, i) for i in stale for scope in ("default", "legal")}
    yield ctx, written
    ctx.close()


def outside(written, scopes=("default",)):
    """The chunks written that are not the 'kept' document's chunk in one of ``scopes``."""
    kept = {"default": "trails://local/doc/kept/", "legal": "trails://local/scope/legal/doc/kept/"}
    return {(scope, iri) for scope, iri in written
            if not (scope in scopes and iri.startswith(kept[scope]))}


def adding(chunks):
    """A step (a user's graph expansion, say) that appends every chunk it can name."""
    def expand(query, hits, ctx):
        given = {(h.metadata["scope"], h.iri) for h in hits}
        floor = min((h.score for h in hits if h.score is not None), default=0.0)
        return [*hits, *(RetrievalHit(iri, floor - 1, "", {"scope": scope})
                         for scope, iri in sorted(chunks - given))]
    return expand


@pytest.mark.parametrize("options", [
    {"mode": "hybrid", "sparql_filter": RAILS},
    {"mode": "vector"},
    {"mode": "hybrid", "fusion": "rrf", "sparql_filter": RAILS},
])
def test_a_step_cannot_add_a_hit_the_ranking_did_not_give_it(scoped, options):
    ctx, written = scoped
    plain = retrieve("rails routing", ctx, k=20, now=NOW, **options)
    stepped = retrieve("rails routing", ctx, k=20, now=NOW, steps=[adding(outside(written))], **options)
    assert [h.iri for h in stepped] == [h.iri for h in plain]
    assert any("returned" in note and "not given" in note for note in stepped.notes)


def test_a_reranked_retriever_keeps_only_its_inner_hits(scoped):
    ctx, written = scoped
    inner = HybridRetriever(ctx, k=20, sparql_filter=RAILS)
    hits = RerankedRetriever(inner, adding(outside(written))).retrieve("rails routing")
    assert [h.iri for h in hits] == [h.iri for h in inner.retrieve("rails routing")]
    assert any("not given" in note for note in hits.notes)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=st.lists(st.sampled_from(sorted(set(STEPS) - {"cross-encoder-top3",
                                                            "cross-encoder-top8"})),
                       max_size=3),
       leak_at=st.integers(0, 3), k=st.integers(1, 12), scopes=st.sampled_from(
           [["default"], ["legal"], ["default", "legal"]]))
def test_every_hit_of_any_steps_is_a_live_candidate_of_the_scopes_asked(
        scoped, chosen, leak_at, k, scopes):
    ctx, written = scoped
    steps = [STEPS[name](None) for name in chosen]
    steps.insert(min(leak_at, len(steps)), adding(outside(written, scopes)))
    candidates = {(s, str(r["iri"])) for s in scopes
                  for r in ctx.kg.query(RAILS, scopes=[s])}
    live = {(s.metadata["scope"], s.id) for s in ctx.vectors.get(ctx.vectors.all_ids())}
    result = retrieve("rails routing", ctx, k=k, sparql_filter=RAILS, scope=scopes, steps=steps,
                      now=NOW)
    for hit in result:
        assert (hit.metadata["scope"], hit.iri) in candidates & live, hit.iri
        assert (hit.metadata["scope"], hit.iri) not in outside(written, scopes), hit.iri


@pytest.mark.parametrize("name, options", [
    ("mmr", {"top_n": 10**400}), ("parent_document", {"mode": "neighbours", "window": 10**400}),
    ("parent_document", {"min_score": 10**400}), ("neighbourhood", {"depth": 10**400}),
])
def test_a_huge_count_or_threshold_works_as_the_largest_one(corpus, name, options):
    """A JSON number past a float (an HTTP body's 1e400 written out) overflowed building the
    step, an OverflowError that no check caught; a count that large means "all"."""
    (step,) = build_steps([(name, options)])
    hits = retrieve("rails routing", corpus, k=3, steps=[step])
    assert len(hits) == 3
    if name == "parent_document" and "window" in options:  # every chunk of its document
        assert all(h.metadata["neighbours"] for h in hits)
