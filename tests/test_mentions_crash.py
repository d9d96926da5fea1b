"""Killing a linking ingest (SIGKILL) never shows a mention of a version that is not live,
and repair or the next ingest leaves exactly the current chunks' mentions (ADR 5, ADR 0031).

In the style of ``tests/test_crash_safety.py``: a real subprocess re-ingests a changed corpus
with a linker and is killed at random moments; expected links are found by hand in the live
chunks' texts.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import killing
from trails import retrieve
from trails.context import Context
from trails.ingest import ingest_all
from trails.ingest.linking import LabelLinker
from trails.kg.base import select
from trails.vector import MockEmbedder

KILLS = int(os.environ.get("TRAILS_CRASH_KILLS", "6"))
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
ONTOLOGY = "INSERT DATA { " + " ".join(
    f'<https://ex.org/{w}> <http://www.w3.org/2000/01/rdf-schema#label> "{w.title()}" .'
    for w in WORDS) + " }"
WORKER = """
import sys
from trails.context import Context
from trails.ingest import ingest_all
from trails.ingest.linking import LabelLinker
ctx = Context.open(sys.argv[1])
print("ready", flush=True)
ingest_all(sys.argv[2], ctx=ctx, batch_size=8, linker=LabelLinker())
ctx.close()
print("done", flush=True)
"""


def _write_corpus(folder: Path, edition: int, docs: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(edition)
    for i in range(docs):
        words = WORDS if edition == 1 or i % 2 else list(reversed(WORDS))
        body = " ".join(f"Note {i} edition {edition} names {rng.choice(words[:3 + edition])} "
                        f"here." for _ in range(6 + i % 3))
        (folder / f"doc{i:03d}.md").write_text(body + "\n")


def _live_chunks(ctx: Context) -> dict[str, str]:
    """chunk IRI -> text, for the chunks retrieval can show (the live ones)."""
    ids = [h.iri for h in retrieve("note", ctx, mode="vector", k=100_000)]
    return {v.id: str(v.metadata["text"]) for v in ctx.vectors.get(ids)}


def _by_hand(chunks: dict[str, str]) -> set[tuple[str, str]]:
    return {(c, f"https://ex.org/{w}") for c, text in chunks.items() for w in WORDS
            if f" {w} " in f" {text.lower().replace('.', ' ')} "}


def _links(ctx: Context) -> set[tuple[str, str]]:
    return {(r["c"], r["e"]) for r in select(ctx.kg, "SELECT ?c ?e WHERE { ?c trails:mentions ?e }")}


def _check_readers(ctx: Context) -> None:
    """Every mention a filter shows is of a live chunk, and exactly the live chunks' ones."""
    live = _live_chunks(ctx)
    hits = retrieve("note", ctx, mode="hybrid", k=100_000, sparql_filter=(
        "SELECT ?iri WHERE { ?iri trails:mentions <https://ex.org/alpha> }"))
    assert {h.iri for h in hits} == {c for c, e in _by_hand(live) if e.endswith("/alpha")}


def _check_settled(ctx: Context) -> None:
    assert ctx.verify().ok, ctx.verify().summary()
    assert _links(ctx) == _by_hand(_live_chunks(ctx))
    nodes = set(select(ctx.kg, "SELECT ?m WHERE { ?m a trails:Mention }").column("m"))
    linked = set(select(ctx.kg, "SELECT ?m WHERE { ?c a trails:Chunk ; trails:hasMention ?m }"
                        ).column("m"))
    assert nodes == linked  # no mention outlived its chunk


def test_kill_a_linking_ingest_at_random_moments(tmp_path):
    v1, v2, base = tmp_path / "v1", tmp_path / "v2", tmp_path / "base"
    _write_corpus(v1, 1, 60)
    _write_corpus(v2, 2, 60)
    with Context.open(base, embedder=MockEmbedder(dim=32, seed=3)) as ctx:
        ctx.kg.update(ONTOLOGY)
        assert ingest_all(v1, ctx=ctx, batch_size=8, linker=LabelLinker()).failed == 0
        _check_settled(ctx)
    for state, untouched in killing.killed_copies(WORKER, base, [v2], tmp_path, KILLS, 20261128):
        with Context.open(state) as ctx:
            _check_readers(ctx)
            ctx.verify(repair=True)
            _check_settled(ctx)
            _check_readers(ctx)
            assert ingest_all(v2, ctx=ctx, batch_size=8, linker=LabelLinker()).failed == 0
            _check_settled(ctx)
        with Context.open(untouched) as ctx:  # the next ingest alone finishes the work
            assert ingest_all(v2, ctx=ctx, batch_size=8, linker=LabelLinker()).failed == 0
            _check_settled(ctx)
