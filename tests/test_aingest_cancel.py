"""``aingest`` cancelled while a step of its run is under way in the worker thread: the
caller gets ``CancelledError``, the run is closed in its thread once that step ends (no
thread left reading ahead, the writer free for the next run), and the context verifies."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import pytest

from trails.context import Context
from trails.ingest import Document, aingest, ingest_all
from trails.testing import MockEmbedder

DOCS = [Document(id=f"d{i}", source=f"d{i}.md", text=f"Report {i} on rail safety and tram tracks.")
        for i in range(12)]


class Gated(MockEmbedder):
    """Embeds freely until ``hold_at`` batches, then waits (in whatever thread embeds) until
    the test opens the gate; says when it started waiting."""

    def __init__(self, hold_at: int) -> None:
        super().__init__(dim=16)
        self.hold_at, self.batches = hold_at, 0
        self.waiting, self.gate = threading.Event(), threading.Event()

    def embed_batch(self, texts: Any) -> np.ndarray:
        self.batches += 1
        if self.batches == self.hold_at:
            self.waiting.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return super().embed_batch(texts)


def _reading_ahead() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("trails-ingest")]


@pytest.mark.parametrize("prepare_ahead", [True, False])
def test_cancelling_aingest_mid_step_raises_cancelled_and_leaves_the_context_whole(
        tmp_path, prepare_ahead):
    embedder = Gated(hold_at=3)
    seen: list[str] = []
    with Context.open(tmp_path / "kb", embedder=embedder) as ctx:
        async def consume() -> None:
            async for event in aingest(DOCS, ctx=ctx, batch_size=2,
                                       prepare_ahead=prepare_ahead):
                seen.append(type(event).__name__)

        async def main() -> BaseException | None:
            task = asyncio.create_task(consume())
            # The run's step is held in its thread, and the consumer has had an event: on a
            # loaded machine the thread reading ahead reaches the held batch first.
            deadline = asyncio.get_running_loop().time() + 10
            while not (embedder.waiting.is_set() and seen):
                if embedder.waiting.is_set() and asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.01)
            task.cancel()
            asyncio.get_running_loop().call_later(0.1, embedder.gate.set)
            try:
                await task
            except BaseException as exc:  # noqa: BLE001 - which one is the point
                return exc
            return None

        raised = asyncio.run(main())
        assert isinstance(raised, asyncio.CancelledError), repr(raised)
        assert seen  # it was cancelled mid-run, not before it began
        assert _reading_ahead() == []
        report = ctx.verify()
        assert report.ok, report
        # The writer is free and what the cancelled run left is whole: a new run completes.
        embedder.hold_at = 0
        stats = ingest_all(DOCS, ctx=ctx)
        assert stats.failed == 0
        assert stats.ingested + stats.skipped == len(DOCS)
        assert ctx.verify().ok
