"""When an ingest run commits: finished documents go together once they hold COMMIT_CHUNKS
chunks or once COMMIT_SECONDS have passed since the run's last commit, and at the end
(``trails.ingest.pipeline``; ADR 0036, third amendment).

Each commit is observed by wrapping ``VersionWriter.commit``: the documents and chunks it was
given and when it started."""

from __future__ import annotations

import time

import pytest

from trails.context import Context
from trails.ingest import Document, DocumentIngested, ingest, ingest_all, pipeline
from trails.ingest.writer import VersionWriter
from trails.testing import MockEmbedder


@pytest.fixture
def commits(monkeypatch):
    """(documents, chunks, monotonic start) of every commit made while the test runs."""
    seen: list[tuple[int, int, float]] = []
    original = VersionWriter.commit

    def commit(self, documents):
        seen.append((len(documents), sum(len(d.chunks) for d in documents), time.monotonic()))
        return original(self, documents)

    monkeypatch.setattr(VersionWriter, "commit", commit)
    return seen


def _documents(count: int, sentences: int = 1) -> list[Document]:
    return [Document(id=f"d{i}", source=f"d{i}",
                     text=" ".join(f"Record {i} sentence {j} about rails." for j in range(sentences)))
            for i in range(count)]


class _SlowEmbedder(MockEmbedder):
    """The mock, taking ``pause`` seconds per batch (a remote model's latency)."""

    def __init__(self, pause: float) -> None:
        super().__init__(dim=8)
        self.pause = pause

    def embed_batch(self, texts):
        time.sleep(self.pause)
        return super().embed_batch(texts)


def test_a_small_run_commits_once_at_the_end(tmp_path, commits):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        stats = ingest_all(_documents(40), ctx=ctx, batch_size=4)
        assert stats.ingested == 40 == ctx.stats()["documents"]
    assert [(d, c) for d, c, _ in commits] == [(40, 40)]


def test_a_run_commits_each_time_its_finished_documents_hold_commit_chunks(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(pipeline, "COMMIT_CHUNKS", 50)
    reported: list[int] = []  # documents reported ingested when each commit began
    events: list[object] = []
    original = VersionWriter.commit

    def commit(self, documents):
        reported.append(sum(isinstance(e, DocumentIngested) for e in events))
        return original(self, documents)

    monkeypatch.setattr(VersionWriter, "commit", commit)
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        for event in ingest(_documents(230), ctx=ctx, batch_size=8):
            events.append(event)  # noqa: PERF402 - the commit wrapper reads them as they come
        assert ctx.stats()["documents"] == 230
    # Seven batches of 8 one-chunk documents reach 50: four commits of 56, then the rest.
    assert reported == [0, 56, 112, 168, 224]  # each reported only after its commit
    assert sum(isinstance(e, DocumentIngested) for e in events) == 230


def test_a_slow_embedder_commits_every_commit_seconds_not_only_at_the_end(tmp_path, commits,
                                                                          monkeypatch):
    monkeypatch.setattr(pipeline, "COMMIT_SECONDS", 0.3)
    started = time.monotonic()
    with Context.open(tmp_path / "kb", embedder=_SlowEmbedder(pause=0.05)) as ctx:
        stats = ingest_all(_documents(48), ctx=ctx, batch_size=2)  # 24 batches, >= 1.2 s
        assert stats.ingested == 48 == ctx.stats()["documents"]
    assert sum(c for _, c, _ in commits) == 48
    assert len(commits) >= 3  # at least 1.2 s of embedding: three 0.3 s bounds passed
    # No commit before the bound has passed since the run began or since the last commit
    # (the final one, at the end of the run, excepted).
    starts = [started] + [t for _, _, t in commits[:-1]]
    assert all(b - a >= 0.3 for a, b in zip(starts, [t for _, _, t in commits[:-1]]))
