"""Killing an ingest (SIGKILL) at any moment never exposes half a document version.

A real subprocess re-ingests a changed corpus into a persisted context and is killed at random
moments. After each kill we check, on the state it left:
(a) retrieval (vector, hybrid and graph modes) shows every document as exactly one whole
    version, the old or the new, never a mixture and never part of one;
(b) ``verify()`` reports whatever the kill left, ``verify(repair=True)`` fixes it, and
(c) the next ingest of the same sources completes the work, with or without a repair first.
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from pathlib import Path

import pytest

import killing
from trails import retrieve
from trails.context import Context
from trails.ingest import ingest_all
from trails.vector import MockEmbedder

pytestmark = pytest.mark.slow  # kills a real writer at many random moments: not in `make test-fast`

KILLS = int(os.environ.get("TRAILS_CRASH_KILLS", "10"))
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "iota", "kappa", "lambda", "sigma", "omega"]

WORKER = """
import sys
from trails.context import Context
from trails.ingest import ingest_all
ctx = Context.open(sys.argv[1])
print("ready", flush=True)
ingest_all(sys.argv[2], ctx=ctx, batch_size=8)
ctx.close()
print("done", flush=True)
"""


def _write_corpus(folder: Path, edition: int, docs: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    for i in range(docs):
        changed = edition == 2 and i % 2 == 0
        tag = f"edition{edition}" if changed else "edition1"
        sentences = [f"Document {i} {tag} sentence {j} mentions {rng.choice(WORDS)} and "
                     f"{rng.choice(WORDS)}." for j in range(6 + (i % 4))]
        body = " ".join(sentences)
        (folder / f"doc{i:03d}.md").write_text(f"---\ndate: 2024-0{1 + i % 9}-01\n---\n{body}\n")


def _snapshot(ctx: Context) -> dict[str, set[str]]:
    """doc IRI -> the set of chunk snippets retrieval can show for it (vector mode, all k)."""
    hits = retrieve("alpha", ctx, mode="vector", k=100_000)
    seen: dict[str, set[str]] = defaultdict(set)
    for hit in hits:
        seen[hit.metadata["doc_iri"]].add(hit.snippet)
    return seen


def _graph_versions(ctx: Context) -> dict[str, str]:
    """doc IRI -> the version its own triples in the graph describe."""
    rows = ctx.kg.query("SELECT ?doc ?v WHERE { ?doc a trails:Document ; trails:currentVersion ?v }")
    return {row["doc"]: row["v"] for row in rows}


def _versions(ctx: Context) -> dict[str, set[str]]:
    return {doc: {h for h in snippets} for doc, snippets in _snapshot(ctx).items()}


@pytest.fixture(scope="module")
def editions(tmp_path_factory):
    """The context after ingesting edition 1, and the whole-version chunk sets of both."""
    root = tmp_path_factory.mktemp("crash")
    v1, v2 = root / "v1", root / "v2"
    _write_corpus(v1, 1, 120)
    _write_corpus(v2, 2, 120)
    wholes: dict[str, list[set[str]]] = defaultdict(list)
    for corpus in (v1, v2):
        scratch = root / f"scratch-{corpus.name}"
        with Context.open(scratch, embedder=MockEmbedder(dim=32, seed=3)) as ctx:
            stats = ingest_all(corpus, ctx=ctx, batch_size=8)
            assert stats.failed == 0
            for doc, snippets in _snapshot(ctx).items():
                wholes[doc].append(snippets)
    base = root / "base"
    with Context.open(base, embedder=MockEmbedder(dim=32, seed=3)) as ctx:
        ingest_all(v1, ctx=ctx, batch_size=8)
    return base, v2, wholes, root


def _assert_whole_versions(ctx: Context, wholes: dict[str, list[set[str]]]) -> None:
    for doc, snippets in _snapshot(ctx).items():
        assert snippets in wholes[doc], f"{doc} shows a partial or mixed version"
    everything = retrieve("alpha", ctx, mode="hybrid", k=100_000,
                          sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }")
    by_doc: dict[str, set[str]] = defaultdict(set)
    for hit in everything:
        by_doc[hit.metadata["doc_iri"]].add(hit.snippet)
    for doc, snippets in by_doc.items():
        assert snippets in wholes[doc], f"hybrid shows a partial or mixed version of {doc}"
    graph = retrieve("alpha", ctx, mode="graph", k=100_000,
                     sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }")
    live = {h.iri for h in retrieve("alpha", ctx, mode="vector", k=100_000)}
    assert {h.iri for h in graph} <= live, "graph mode shows chunks that are not live"


def _run_worker(context: Path, corpus: Path, kill_after: float | None) -> bool:
    """Run an ingest; kill it ``kill_after`` seconds after it is ready. True if it finished."""
    return killing.run_worker(WORKER, [context, corpus], kill_after)


def _all_current(ctx: Context, wholes: dict[str, list[set[str]]]) -> None:
    snapshot = _snapshot(ctx)
    assert set(snapshot) == set(wholes)
    for doc, snippets in snapshot.items():
        assert snippets == wholes[doc][-1], f"{doc} is not at the new edition"


def test_kill_at_random_moments_never_exposes_half_a_version(editions):
    base, v2, wholes, root = editions
    kills = dirty = 0
    for state, untouched in killing.killed_copies(WORKER, base, [v2], root, KILLS, 20261121):
        kills += 1
        with Context.open(state) as ctx:
            _assert_whole_versions(ctx, wholes)                            # (a)
            report = ctx.verify()
            if not report.ok:
                dirty += 1
                shown, committed = _snapshot(ctx), ctx.vectors.current_versions()
                repaired = ctx.verify(repair=True)                         # (b)
                assert repaired.repaired
                assert ctx.verify().ok, ctx.verify().summary()
                _assert_whole_versions(ctx, wholes)
                # Repair finishes committed versions, it never deletes one.
                assert repaired.removed == [], repaired.removed
                assert _snapshot(ctx) == shown
                assert _graph_versions(ctx) == {d: r.version for d, r in committed.items()}
            assert ingest_all(v2, ctx=ctx, batch_size=8).failed == 0       # (c)
            assert ctx.verify().ok
            _all_current(ctx, wholes)

        with Context.open(untouched) as ctx:                               # (c) without repair
            assert ingest_all(v2, ctx=ctx, batch_size=8).failed == 0
            assert ctx.verify().ok, ctx.verify().summary()
            _all_current(ctx, wholes)
    print(f"{kills} kills, {dirty} left repairs to do")
