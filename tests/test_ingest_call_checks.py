"""ingest() and aingest() check their arguments at the call, not at the first event.

Written as a generator function, ingest() ran none of its checks until it was first
iterated: a run made and never iterated said nothing of a wrong scope or a read-only
context, and one iterated elsewhere raised there, far from the mistake.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from trails.context import Context
from trails.errors import ConfigurationError, InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest import Document, aingest, ingest, ingest_all
from trails.ingest.linking import LabelLinker
from trails.testing import fresh_context

DOCS = [Document("a", "mem", "Rails is a web framework.")]


@pytest.fixture
def mem():
    ctx = fresh_context(dim=32)
    yield ctx
    ctx.close()


BAD_CALLS = [
    (lambda ctx: {"ctx": ctx, "scop": "x"}, InvalidArgumentTypeError, "did you mean scope"),
    (lambda ctx: {"ctx": object()}, InvalidArgumentTypeError, "ctx must be a trails Context"),
    (lambda ctx: {"ctx": ctx, "scope": "no spaces allowed"}, InvalidArgumentError, "^scope: "),
    (lambda ctx: {"ctx": ctx, "batch_size": 0}, InvalidArgumentError,
     "batch_size must be a positive int, got 0"),
    (lambda ctx: {"ctx": ctx, "prepare_ahead": "yes"}, InvalidArgumentTypeError,
     "prepare_ahead must be True or False, got str"),
    (lambda ctx: {"ctx": ctx, "linker": object()}, InvalidArgumentTypeError,
     "linker must be a Linker"),
    (lambda ctx: {"ctx": ctx, "prune": True}, InvalidArgumentError,
     "prune=True needs the ingested files or folders as paths"),
]


@pytest.mark.parametrize(("keywords", "error", "message"), BAD_CALLS)
@pytest.mark.parametrize("call", [ingest, aingest])
def test_a_bad_argument_is_refused_at_the_call_without_iterating(mem, call, keywords, error,
                                                                 message):
    with pytest.raises(error, match=message):
        call(DOCS, **keywords(mem))  # neither iterated nor awaited
    assert mem.vectors.count() == 0


@pytest.mark.parametrize("call", [ingest, aingest])
def test_a_read_only_context_is_refused_at_the_call(tmp_path, call):
    Context.open(tmp_path / "kb").close()
    with (Context.open(tmp_path / "kb", read_only=True) as reader,
          pytest.raises(ConfigurationError,
                        match="this context was opened read-only; reopen it writable")):
        call(DOCS, ctx=reader)


def test_a_snapshot_of_the_store_is_refused_at_the_call(tmp_path):
    with (Context.open(tmp_path / "kb") as ctx, ctx.vectors.snapshot(),
          pytest.raises(ConfigurationError, match="inside a read snapshot")):
        ingest(DOCS, ctx=ctx)


def test_a_missing_path_to_prune_is_refused_at_the_call(mem, tmp_path):
    with pytest.raises(InvalidArgumentError, match="cannot prune: .*nowhere does not exist"):
        ingest(tmp_path / "nowhere", ctx=mem, prune=True)


def test_a_run_never_iterated_writes_nothing_and_a_later_run_works(tmp_path):
    with Context.open(tmp_path / "kb") as ctx:
        config = (tmp_path / "kb" / "trails.json").read_text()
        events = ingest(DOCS, ctx=ctx, linker=LabelLinker(min_length=5))
        # The linker's settings are remembered when the run starts, not when it is made.
        assert (tmp_path / "kb" / "trails.json").read_text() == config
        events.close()  # closing a run that never started is no error
        assert ctx.vectors.count() == 0
        assert ingest_all(DOCS, ctx=ctx).ingested == 1
        assert json.loads((tmp_path / "kb" / "trails.json").read_text())["linker"] is None


def test_the_events_of_a_checked_run_are_those_of_a_run(mem):
    names = [type(event).__name__ for event in ingest(DOCS, ctx=mem)]
    assert names == ["DocumentStarted", "BatchEmbedded", "DocumentIngested"]

    async def drain():
        return [type(event).__name__
                async for event in aingest([Document("b", "mem", "More text.")], ctx=mem)]

    assert asyncio.run(drain()) == ["DocumentStarted", "BatchEmbedded", "DocumentIngested"]
