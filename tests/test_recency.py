"""RecencyDecay: hand-computed factors with a fixed ``now``, dates read from a real graph."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.ingest import ingest_all
from trails.ingest.document import Document
from trails.kg import IRI
from trails.rank import RecencyDecay
from trails.rank.recency import decay_factor, decayed
from trails.records import RetrievalHit

NOW = dt.date(2026, 3, 1)
# document id -> (text, metadata); ages on NOW: 0, 15, 30, 45 days, undated, 10 days ahead
DOCS = {
    "today": ("alpha report on rails", {"date": "2026-03-01"}),
    "d15": ("beta report on rails", {"date": "2026-02-14"}),
    "d30": ("gamma report on rails", {"date": "2026-01-30"}),
    "d45": ("delta report on rails", {"date": "2026-01-15"}),
    "undated": ("epsilon report on rails", {}),
    "future": ("zeta report on rails", {"date": "2026-03-11"}),
}
# max(0.5, 1 - age/60)
FACTORS = {"today": 1.0, "d15": 0.75, "d30": 0.5, "d45": 0.5, "undated": 0.5, "future": 1.0}


@pytest.fixture
def corpus(ctx):
    ingest_all([Document(i, "mem", t, metadata=m) for i, (t, m) in DOCS.items()], ctx=ctx)
    return ctx


def chunk(ctx, doc_id, scope=None):
    base = "trails://local/" + ("" if scope is None else f"scope/{scope}/")
    rows = ctx.kg.query("SELECT ?c WHERE { ?c schema:isPartOf ?d }",
                        {"d": IRI(f"{base}doc/{doc_id}")})
    (iri,) = rows.column("c")
    return iri


def hit(ctx, doc_id, score, scope="default"):
    iri = chunk(ctx, doc_id, None if scope == "default" else scope)
    return RetrievalHit(iri, score, doc_id, {"scope": scope, "doc": doc_id}, {"vector": score})


def test_factor_and_decay_by_hand():
    assert decay_factor(0, 60, 0.5) == 1.0
    assert decay_factor(15, 60, 0.5) == 0.75
    assert decay_factor(45, 60, 0.5) == 0.5  # 0.25 is below the floor
    assert decay_factor(45, 60, 0.0) == 0.25
    assert decay_factor(-10, 60, 0.5) == 1.0  # the future counts as today
    assert decay_factor(None, 60, 0.2) == 0.2  # undated: the floor
    assert decayed(0.8, 0.75) == pytest.approx(0.6)
    assert decayed(-2.0, 0.75) == pytest.approx(-2.5)  # a negative score moves down too
    assert decayed(0.0, 0.5) == 0.0


def test_scores_are_decayed_by_document_age(corpus):
    hits = [hit(corpus, d, 1.0) for d in DOCS]
    out = RecencyDecay(now=NOW)("rails", hits, corpus)
    got = {h.metadata["doc"]: (h.score, h.components["recency"]) for h in out}
    assert got == {d: (pytest.approx(f), pytest.approx(f)) for d, f in FACTORS.items()}
    assert all(h.components["vector"] == 1.0 for h in out)
    # sorted by decayed score; equal scores keep their input order
    assert [h.metadata["doc"] for h in out] == ["today", "future", "d15", "d30", "d45", "undated"]


def test_a_newer_hit_overtakes_an_older_better_one(corpus):
    old, new = hit(corpus, "d45", 0.9), hit(corpus, "d15", 0.7)
    out = RecencyDecay(now=NOW)("rails", [old, new], corpus)
    assert [h.metadata["doc"] for h in out] == ["d15", "d45"]
    assert [h.score for h in out] == pytest.approx([0.7 * 0.75, 0.9 * 0.5])
    # a longer horizon keeps the older one ahead: 0.9*(1-45/180)=0.675 > 0.7*(1-15/180)=0.642
    out = RecencyDecay(horizon_days=180, now=NOW)("rails", [old, new], corpus)
    assert [h.metadata["doc"] for h in out] == ["d45", "d15"]
    assert [h.score for h in out] == pytest.approx([0.675, 0.7 * (1 - 15 / 180)])


def test_now_may_be_an_aware_datetime_and_floor_configurable(corpus):
    noon = dt.datetime(2026, 3, 16, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))  # 10:00 UTC
    step = RecencyDecay(horizon_days=60, floor=0.0, now=noon)
    out = step("rails", [hit(corpus, "today", 2.0)], corpus)
    age = 15 + 10 / 24
    assert out[0].components["recency"] == pytest.approx(1 - age / 60)
    assert out[0].score == pytest.approx(2.0 * (1 - age / 60))


def test_negative_scores_decay_downwards(corpus):
    out = RecencyDecay(now=NOW)("rails", [hit(corpus, "d45", -1.0), hit(corpus, "today", -1.2)],
                                corpus)
    assert [(h.metadata["doc"], h.score) for h in out] == [
        ("today", pytest.approx(-1.2)), ("d45", pytest.approx(-1.5))]


def test_another_predicate_with_string_dates(ctx):
    ingest_all([Document("p", "mem", "text one", metadata={"published": "2026-02-14"}),
                Document("q", "mem", "text two", metadata={"published": "not a date"})], ctx=ctx)
    for predicate in ("meta:published", "https://trails.dev/meta#published"):
        step = RecencyDecay(now=NOW, predicate=predicate)
        out = step("x", [hit(ctx, "q", 1.0), hit(ctx, "p", 1.0)], ctx)
        assert [(h.metadata["doc"], h.score) for h in out] == [("p", 0.75), ("q", 0.5)]


def test_newest_of_several_dates_counts(ctx):
    dates = {"published": ["2025-01-01", "2026-02-14"]}
    ingest_all([Document("m", "mem", "many dates", metadata=dates)], ctx=ctx)
    out = RecencyDecay(now=NOW, predicate="meta:published")("x", [hit(ctx, "m", 1.0)], ctx)
    assert out[0].score == pytest.approx(0.75)


def test_one_query_per_scope_confined_to_that_scope(corpus, monkeypatch):
    ingest_all([Document("today", "mem", "legal note", metadata={"date": "2026-02-14"})],
               ctx=corpus, scope="legal")
    legal = RetrievalHit(chunk(corpus, "today", "legal"), 1.0, "",
                         {"scope": "legal", "doc": "legal"})
    # the legal chunk's IRI claimed by a default-scope hit: its date is not visible there
    smuggled = RetrievalHit(legal.iri, 1.0, "", {"scope": "default", "doc": "smuggled"})
    hits = [hit(corpus, d, 1.0) for d in DOCS] + [legal, smuggled]
    calls = []
    query = corpus.kg.query
    monkeypatch.setattr(corpus.kg, "query",
                        lambda *a, **kw: calls.append(kw.get("scopes")) or query(*a, **kw))
    out = RecencyDecay(now=NOW)("rails", hits, corpus)
    assert calls == [["default"], ["legal"]]
    got = {h.metadata["doc"]: h.components["recency"] for h in out}
    assert got == {**FACTORS, "legal": 0.75, "smuggled": 0.5}


def test_as_a_retrieve_step(corpus):
    before = (corpus.vectors.count(), len(corpus.kg))
    plain = retrieve("report on rails", corpus, mode="vector", k=6)
    out = retrieve("report on rails", corpus, mode="vector", k=3, steps=[RecencyDecay(now=NOW)])
    assert len(out) == 3
    factor = {h.iri: FACTORS[h.metadata["doc_iri"].rsplit("/", 1)[1]] for h in plain}
    expected = sorted(((h.score * factor[h.iri], h.iri) for h in plain),
                      key=lambda pair: -pair[0])[:3]
    assert [(h.score, h.iri) for h in out] == [(pytest.approx(s), i) for s, i in expected]
    assert (corpus.vectors.count(), len(corpus.kg)) == before


def test_a_retrieve_step_judges_age_at_the_calls_now(corpus):
    """retrieve(now=...) is the moment the answer is judged at: expiry's, and recency's."""
    asked = dt.datetime(2026, 3, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    out = retrieve("report on rails", corpus, mode="vector", k=6, now=asked,
                   steps=[RecencyDecay()])
    # 2026-03-01T10:00Z: each age is 10 hours more than at midnight, below every kink.
    late = {"today": 1 - (10 / 24) / 60, "d15": 1 - (15 + 10 / 24) / 60, "d30": 0.5, "d45": 0.5,
            "undated": 0.5, "future": 1.0}
    got = {h.metadata["doc_iri"].rsplit("/", 1)[1]: h.components["recency"] for h in out}
    assert got == pytest.approx(late)
    # The step's own now, when it has one, is its reference time whatever the call's.
    fixed = retrieve("report on rails", corpus, mode="vector", k=6, now=asked,
                     steps=[RecencyDecay(now=NOW)])
    assert {h.metadata["doc_iri"].rsplit("/", 1)[1]: h.components["recency"]
            for h in fixed} == pytest.approx(FACTORS)


def test_a_retrieve_step_at_two_moments_decays_as_of_each(corpus):
    """The same search repeated as of an earlier moment decays as it did then."""
    def factors(now):
        return {h.metadata["doc_iri"].rsplit("/", 1)[1]: h.components["recency"]
                for h in retrieve("report on rails", corpus, mode="vector", k=6, now=now,
                                  steps=[RecencyDecay(horizon_days=30, floor=0.0)])}
    # max(0, 1 - age/30); a document not yet written counts as age 0.
    early = {"today": 1.0, "d15": 1.0, "d30": 1.0, "d45": 29 / 30, "undated": 0.0,
             "future": 1.0}
    later = {"today": 1.0, "d15": 0.5, "d30": 0.0, "d45": 0.0, "undated": 0.0, "future": 1.0}
    assert factors(dt.datetime(2026, 1, 16, tzinfo=dt.UTC)) == pytest.approx(early)
    assert factors(dt.datetime(2026, 3, 1, tzinfo=dt.UTC)) == pytest.approx(later)


def test_bad_arguments(corpus):
    with pytest.raises(ValueError, match="horizon_days"):
        RecencyDecay(horizon_days=0)
    with pytest.raises(ValueError, match="floor"):
        RecencyDecay(floor=1.5)
    with pytest.raises(ValueError, match="prefix"):
        RecencyDecay(predicate="nope:date")
    with pytest.raises(ValueError, match="score=None"):
        RecencyDecay(now=NOW)("q", [RetrievalHit(chunk(corpus, "today"), None, "")], corpus)
    with pytest.raises(Exception, match="ctx"):
        RecencyDecay(now=NOW)("q", [], None)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(sorted(DOCS)), st.floats(-10, 10)), max_size=6,
                unique_by=lambda pair: pair[0]),
       st.floats(1, 400), st.floats(0, 1))
def test_permutation_sorted_and_never_raised(corpus, drawn, horizon, floor):
    hits = [hit(corpus, d, s) for d, s in drawn]
    out = RecencyDecay(horizon_days=horizon, floor=floor, now=NOW)("q", hits, corpus)
    assert sorted(h.iri for h in out) == sorted(h.iri for h in hits)
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))
    before = {h.iri: h.score for h in hits}
    for h in out:
        factor = h.components["recency"]
        assert floor <= factor <= 1.0
        assert h.score == pytest.approx(before[h.iri] - abs(before[h.iri]) * (1 - factor))
        assert h.score <= before[h.iri] + 1e-12
