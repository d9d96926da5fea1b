"""notes_search, tested with trails' fixtures and strategies."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st
from notes_search import add_notes, search

from trails.context import Context
from trails.ingest import Document
from trails.testing import fresh_context
from trails.testing.strategies import TOPICS, corpora, dates

NOTES = [
    Document(id="a", source="a.md", text="River deltas and sediment.",
             metadata={"topic": "geo", "date": dt.date(2024, 3, 1)}),
    Document(id="b", source="b.md", text="Old river maps.",
             metadata={"topic": "geo", "date": dt.date(2019, 1, 1)}),
    Document(id="c", source="c.md", text="River cruises and tea.",
             metadata={"topic": "travel", "date": dt.date(2024, 6, 1)}),
]


def test_search_keeps_the_topic_and_the_date(trails_ctx):
    # trails_ctx: an in-memory context private to this test (deterministic MockEmbedder).
    add_notes(trails_ctx, NOTES)
    hits = search(trails_ctx, "river", topic="geo", since=dt.date(2024, 1, 1))
    assert [hit.source for hit in hits] == ["a.md"]


def test_notes_survive_reopening_their_directory(trails_dir):
    # trails_dir: a context in a temporary directory, closed after the test.
    add_notes(trails_dir, NOTES)
    directory, embedder = trails_dir.directory, trails_dir.embedder
    trails_dir.close()
    with Context.open(directory, embedder=embedder) as again:
        hits = search(again, "river", topic="travel", since=dt.date(2020, 1, 1))
        assert [hit.source for hit in hits] == ["c.md"]


def test_every_backend_finds_its_nearest_vector(trails_store):
    # trails_store: an empty 64-dimensional store; this test runs once per installed backend.
    trails_store.add(id="x", vector=[1.0] + [0.0] * 63, metadata={})
    trails_store.add(id="y", vector=[0.0, 1.0] + [0.0] * 62, metadata={})
    assert [hit.id for hit in trails_store.search([0.9, 0.1] + [0.0] * 62, k=1)] == ["x"]


@settings(max_examples=20, deadline=None)
@given(notes=corpora(max_size=8), topic=st.sampled_from(TOPICS),
       since=dates())
def test_search_returns_exactly_the_notes_on_the_topic_since_the_date(notes, topic, since):
    # The strategies' documents carry a topic (one of TOPICS) and mostly a date.
    expected = {note.source for note in notes if note.metadata["topic"] == topic
                and "date" in note.metadata and note.metadata["date"] >= since}
    with fresh_context() as ctx:
        add_notes(ctx, notes)
        found = {hit.source for hit in search(ctx, "graph", topic=topic, since=since, k=100)}
    assert found == expected
