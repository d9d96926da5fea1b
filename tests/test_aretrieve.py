"""``aretrieve`` inside a running event loop: the same answers as ``retrieve``, many at once on
one on-disk context, each recorded in the audit trail, without blocking the loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from trails import HybridRetriever, aretrieve, retrieve
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder

TOPICS = ["rail safety", "road works", "river ferries", "airport noise", "bus lanes",
          "tram tracks", "canal locks", "cycle paths"]
DOCS = [Document(id=f"d{i}", source=f"d{i}.md",
                 text=f"Report {i} on {TOPICS[i % len(TOPICS)]}. It cites evidence {i * 7}. "
                      f"The {TOPICS[(i * 3) % len(TOPICS)]} budget rose.",
                 metadata={"date": f"20{10 + i % 15}-03-0{1 + i % 9}"})
        for i in range(40)]
SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . "
         "FILTER(?d >= ?since) }")
# A mix of what retrieve() does: plain vector, hybrid with and without a filter, graph order,
# each fusion.
CALLS = [{"mode": "vector", "k": 5}, {"mode": "hybrid", "k": 7},
         {"mode": "hybrid", "k": 4, "sparql_filter": SINCE, "bindings": {"since": "2018-01-01"}},
         {"mode": "hybrid", "k": 6, "fusion": "rrf"}, {"mode": "hybrid", "k": 6, "fusion": None},
         {"mode": "graph", "k": 5, "sparql_filter": SINCE + " ORDER BY ?iri",
              "bindings": {"since": "2020-01-01"}}]


def answer(result):
    return ([(h.iri, h.score, h.components, h.snippet) for h in result],
            result.plan, result.candidates, result.exhaustive, result.rankings, result.notes)


@pytest.fixture
def ctx(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=32)) as opened:
        assert ingest_all(DOCS, ctx=opened).ingested == len(DOCS)
        yield opened


def test_many_concurrent_aretrieve_calls_answer_as_sequential_retrieve(ctx):
    calls = [(topic, options) for topic in TOPICS for options in CALLS] * 2
    expected = [answer(retrieve(topic, ctx, **options)) for topic, options in calls]
    recorded_before = len(ctx.audit.pending())

    async def all_at_once():
        return await asyncio.gather(*(aretrieve(topic, ctx, **options)
                                      for topic, options in calls))

    results = asyncio.run(all_at_once())
    assert [answer(r) for r in results] == expected
    assert any(r for r in results)  # the corpus answers something
    # every awaited search is recorded once, under its own run id
    run_ids = [r.run_id for r in results]
    assert None not in run_ids and len(set(run_ids)) == len(calls)
    assert len(ctx.audit.pending()) == recorded_before + len(calls)


def test_the_loop_keeps_running_while_a_search_runs(ctx):
    """A step blocks the search until a coroutine on the same loop lets it go: were the
    search run on the loop's own thread, that coroutine could never run."""
    released = threading.Event()
    seen: list[bool] = []

    def wait_for_the_loop(query, hits, context):
        seen.append(released.wait(timeout=30))
        return hits

    retriever = HybridRetriever(ctx, k=3, steps=[wait_for_the_loop])

    async def search_and_release():
        search = asyncio.ensure_future(retriever.aretrieve("rail safety"))
        await asyncio.sleep(0)  # the search starts in its worker thread
        released.set()  # only reachable while the loop is free
        return await search

    hits = asyncio.run(search_and_release())
    assert seen == [True]
    assert [h.iri for h in hits] == [h.iri for h in retriever.retrieve("rail safety")]


def test_aretrieve_raises_what_retrieve_raises_from_the_await(ctx):
    async def bad():
        return await aretrieve("rail", ctx, mode="graph")  # graph needs a filter

    with pytest.raises(ValueError) as awaited:
        asyncio.run(bad())
    with pytest.raises(ValueError) as blocking:
        retrieve("rail", ctx, mode="graph")
    assert type(awaited.value) is type(blocking.value)
    assert str(awaited.value) == str(blocking.value)


@pytest.mark.timeout(60)
def test_a_cancelled_aretrieve_leaves_the_context_usable_in_the_same_loop(ctx):
    """Cancelled while its search runs in the worker thread: the await raises CancelledError,
    the loop goes on, and the next searches on the same context answer as before. (The
    cancelled search's thread still runs to its end, holding the store's snapshot: a search
    started meanwhile waits for it, so the hold is released first.)"""
    entered, released = threading.Event(), threading.Event()

    def hold(query, hits, context):
        entered.set()
        released.wait(timeout=30)
        return hits

    held = HybridRetriever(ctx, k=3, steps=[hold])
    expected = answer(retrieve("rail safety", ctx, mode="hybrid", k=3))

    async def cancel_then_search_again():
        search = asyncio.ensure_future(held.aretrieve("rail safety"))
        assert await asyncio.to_thread(entered.wait, 30)  # the search is under way
        search.cancel()
        with pytest.raises(asyncio.CancelledError):
            await search
        released.set()
        again = await aretrieve("rail safety", ctx, mode="hybrid", k=3)
        after = await asyncio.gather(*(aretrieve("rail safety", ctx, mode="hybrid", k=3)
                                       for _ in range(3)))
        return again, after

    again, after = asyncio.run(cancel_then_search_again())
    assert answer(again) == expected
    assert [answer(r) for r in after] == [expected] * 3
    assert answer(retrieve("rail safety", ctx, mode="hybrid", k=3)) == expected
