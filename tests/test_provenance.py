"""Every hit says where it comes from, without a second query: its document IRI, source,
title, date and the chunk's character span, in every mode and on both stores."""

from __future__ import annotations

import datetime as dt

import pytest

from trails import retrieve
from trails.context import Context
from trails.ingest import ingest_all
from trails.kg import OxigraphGraph
from trails.records import RetrievalHit
from trails.testing import fresh_context
from trails.vector import MockEmbedder, QdrantStore

MEMO = """---
title: Licensing memo
date: 2024-03-05
---
Rails is released under the MIT licence. The memo explains what that allows.

Ruby gems carry their own licences, which the memo lists one by one.
"""
NOTE = "Elephants are large mammals. Rails are birds too, in a way.\n"


CONTEXTS = {
    "sqlite-vec": lambda: fresh_context(dim=32),
    "qdrant": lambda: Context(OxigraphGraph(), QdrantStore(dim=32), MockEmbedder(dim=32, seed=0)),
}


@pytest.fixture(params=["sqlite-vec", "qdrant"])
def corpus(request, tmp_path):
    (tmp_path / "memo.md").write_text(MEMO)
    (tmp_path / "note.txt").write_text(NOTE)
    ctx = CONTEXTS[request.param]()
    ingest_all(tmp_path, ctx=ctx)
    yield ctx, tmp_path
    ctx.close()


def check_provenance(hit: RetrievalHit, root) -> None:
    if hit.title == "Licensing memo":
        assert hit.source.endswith("memo.md") and hit.date == dt.date(2024, 3, 5)
        text = MEMO.split("---\n", 2)[2]
    else:
        assert (hit.title, hit.date) == ("note.txt", None)
        assert hit.source.endswith("note.txt")
        text = NOTE
    assert hit.document and hit.iri.startswith(hit.document + "/")
    start, end = hit.span
    assert 0 <= start < end <= len(text)
    # The span points into the document's text: the chunk's own words are there.
    assert hit.snippet.split()[0] in text[start:end]


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_ranked_hits_carry_their_provenance(corpus, mode):
    ctx, root = corpus
    hits = retrieve("rails licence", ctx, mode=mode, k=10)
    assert {h.title for h in hits} == {"Licensing memo", "note.txt"}
    for hit in hits:
        check_provenance(hit, root)


def test_graph_mode_hits_carry_it_too(corpus):
    ctx, root = corpus
    hits = retrieve("", ctx, mode="graph", k=10,
                    sparql_filter="SELECT ?c WHERE { ?c a trails:Chunk }")
    assert len(hits) >= 2
    for hit in hits:
        check_provenance(hit, root)


def test_a_hit_without_recorded_provenance_gives_none():
    bare = RetrievalHit("trails://x/c/0", 0.5, "text", {"iri": "trails://x/c/0"})
    assert (bare.document, bare.source, bare.title, bare.date, bare.span) == (
        None, None, None, None, None)
    odd = RetrievalHit("c", 0.5, "", {"date": "not a date", "start": "3", "end": 9})
    assert (odd.date, odd.span) == (None, None)
