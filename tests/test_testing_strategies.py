"""The kit's hypothesis strategies (trails.testing.strategies) are what they say, and the
engine selects exactly what a filter case says it selects."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.ingest import Document, ingest_all
from trails.ingest.dates import date_created
from trails.testing import fresh_context
from trails.testing.strategies import (
    FIRST_DATE,
    LAST_DATE,
    TOPICS,
    WORDS,
    FilterCase,
    chunked_documents,
    corpora,
    documents,
    filter_cases,
    texts,
)

SLOW = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@given(st.data(), st.integers(1, 40), st.integers(0, 40))
def test_texts_have_as_many_words_as_asked_in_short_sentences(data, least, extra):
    text = data.draw(texts(least, least + extra))
    sentences = text.split(". ")
    assert least <= len(text.split()) <= least + extra
    assert text.endswith(".") and all(1 <= len(s.split()) <= 8 for s in sentences)
    assert set(text.replace(".", "").split()) <= set(WORDS)


@pytest.mark.parametrize(("least", "most"), [(0, 5), (3, 2), (-1, 1)])
def test_texts_refuse_bounds_no_text_can_meet(least, most):
    with pytest.raises(InvalidArgumentError, match="min_words"):
        texts(least, most)


@given(documents())
def test_a_document_has_text_topic_rank_and_maybe_a_date(document):
    assert document.text.strip()
    assert document.metadata["topic"] in TOPICS and 0 <= document.metadata["rank"] <= 9
    if "date" in document.metadata:
        assert FIRST_DATE <= document.metadata["date"] <= LAST_DATE
        assert date_created(document.metadata) == document.metadata["date"]


@given(chunked_documents())
def test_chunks_cover_the_text_in_order_without_gaps(pair):
    document, chunks = pair
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert chunks[0].start == 0 and chunks[-1].end == len(document.text)
    for before, after in itertools.pairwise(chunks):
        assert before.end == after.start
    for chunk in chunks:
        assert chunk.text == document.text[chunk.start:chunk.end] and chunk.text


@given(corpora(min_size=2, max_size=6))
def test_a_corpus_has_distinct_ids(corpus):
    assert 2 <= len(corpus) <= 6
    assert len({d.id for d in corpus}) == len(corpus)


@pytest.mark.parametrize("share", [
    lambda s: s == 0, lambda s: 0 < s < 1, lambda s: s == 1,
], ids=["none", "some", "all"])
def test_filter_cases_reach_none_some_and_all_of_a_corpus(share):
    case = find(filter_cases(min_size=3), lambda case: share(case.selectivity),
                settings=settings(max_examples=500, database=None, phases=[Phase.generate]))
    assert share(len(case.expected) / len(case.documents))


def test_an_empty_corpus_has_a_case_that_selects_nothing():
    case = find(filter_cases(min_size=0), lambda case: not case.documents,
                settings=settings(database=None))
    assert case.expected == frozenset() and case.selectivity == 0


def _selected(case: FilterCase, mode: str) -> set[str]:
    with fresh_context() as ctx:
        stats = ingest_all(case.documents, ctx=ctx)
        assert stats.failed == 0, stats.summary()
        hits = retrieve("graph vector river", ctx, mode=mode, k=10_000,
                        sparql_filter=case.sparql_filter, bindings=dict(case.bindings))
        return {hit.iri for hit in hits} if mode == "graph" else {hit.document for hit in hits}


@SLOW
@given(filter_cases())
def test_graph_mode_selects_exactly_the_expected_documents(case):
    assert _selected(case, "graph") == case.expected, case.description


@SLOW
@given(filter_cases())
def test_hybrid_mode_ranks_only_and_all_of_the_selected_documents(case):
    assert _selected(case, "hybrid") == case.expected, case.description


def test_a_wrong_filter_is_caught_by_the_expected_set():
    # The check can fail: a filter that is off by one day selects another set.
    day = dt.date(2024, 5, 1)
    corpus = [Document(id=name, source=name, text="graph river.",
                              metadata={"topic": "legal", "rank": 1, "date": date})
              for name, date in (("a", day), ("b", day + dt.timedelta(days=1)))]
    right = FilterCase(corpus, "SELECT ?iri WHERE { ?iri schema:dateCreated ?d . "
                       "FILTER(?d <= ?day) }", {"day": day},
                       frozenset({"trails://local/doc/a"}), "dated on or before the day")
    wrong = FilterCase(corpus, "SELECT ?iri WHERE { ?iri schema:dateCreated ?d . "
                       "FILTER(?d >= ?day) }", {"day": day}, right.expected, "the wrong way")
    assert _selected(right, "graph") == right.expected
    assert _selected(wrong, "graph") != wrong.expected
