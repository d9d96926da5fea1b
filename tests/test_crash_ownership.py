"""SIGKILL during a metadata update, a prune or a delete never costs a user's triples, and the
next run (with or without ``verify(repair=True)`` first) finishes the work (ADR 0012).

A real subprocess re-ingests a corpus whose front-matter dates all changed and some of whose
files were removed (``prune=True``), then deletes one document; it is killed at random
moments of that work.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import killing
from trails.context import Context
from trails.ingest import ingest_all
from trails.kg import IRI
from trails.vector import MockEmbedder

pytestmark = pytest.mark.slow  # kills a real writer at many random moments: not in `make test-fast`

KILLS = int(os.environ.get("TRAILS_CRASH_KILLS", "8"))
DOCS, GONE = 30, (3, 17)
EX = "https://example.org/"

WORKER = """
import sys
from trails.context import Context
from trails.ingest import ingest_all
ctx = Context.open(sys.argv[1])
print("ready", flush=True)
ingest_all(sys.argv[2], ctx=ctx, batch_size=4, prune=True)
ctx.delete_document("trails://local/doc/doc-00.md")
ctx.close()
print("done", flush=True)
"""


def write_corpus(folder: Path, year: int) -> None:
    folder.mkdir(exist_ok=True)
    for i in range(DOCS):
        (folder / f"doc-{i:02}.md").write_text(
            f"---\ndate: {year}-01-{1 + i % 28:02}\nauthor: a{i}\n---\nRails note {i} about "
            f"routing and caching, chapter {i}.\n")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("ownership")
    corpus = root / "corpus"
    write_corpus(corpus, 2024)
    base = root / "base"
    with Context.open(base, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all(corpus, ctx=ctx)
        for i in range(DOCS):
            doc = f"trails://local/doc/doc-{i:02}.md"
            ctx.kg.update(f'INSERT DATA {{ <{doc}> <{EX}label> "mine {i}" . '
                          f'<{EX}index> <{EX}lists> <{doc}> }}')
    write_corpus(corpus, 2025)  # every date changes: metadata updates, no new text
    for i in GONE:
        (corpus / f"doc-{i:02}.md").unlink()
    return root, base, corpus


def run_worker(context: Path, corpus: Path, kill_after: float | None) -> bool:
    """Run an ingest; kill it ``kill_after`` seconds after it is ready. True if it finished."""
    return killing.run_worker(WORKER, [context, corpus], kill_after)


def assert_user_triples(ctx: Context) -> None:
    for i in range(DOCS):
        doc = IRI(f"trails://local/doc/doc-{i:02}.md")
        assert ctx.kg.query(f"ASK {{ ?d <{EX}label> ?l }}", {"d": doc}), f"lost label of {doc}"
        assert ctx.kg.query(f"ASK {{ <{EX}index> <{EX}lists> ?d }}", {"d": doc})


def assert_finished(ctx: Context) -> None:
    assert ctx.verify().ok, ctx.verify().summary()
    years = ctx.kg.query("SELECT ?d (YEAR(?date) AS ?y) WHERE { ?d schema:dateCreated ?date }")
    by_doc = {row["d"]: row["y"] for row in years}
    gone = {f"trails://local/doc/doc-{i:02}.md" for i in (0, *GONE)}  # pruned, and deleted
    assert set(by_doc) == {f"trails://local/doc/doc-{i:02}.md" for i in range(DOCS)} - gone
    assert set(by_doc.values()) == {2025}
    assert_user_triples(ctx)


def test_kills_during_metadata_updates_prunes_and_deletes(prepared):
    root, base, corpus = prepared
    finished = root / "finished"
    shutil.copytree(base, finished)
    run_worker(finished, corpus, None)
    with Context.open(finished) as ctx:
        assert not ctx.kg.query("ASK { <trails://local/doc/doc-00.md> schema:dateCreated ?d }")
        assert_user_triples(ctx)
    for state, untouched in killing.killed_copies(WORKER, base, [corpus], root, KILLS, 20261123):
        with Context.open(state) as ctx:
            assert_user_triples(ctx)                     # a kill never takes a user's triple
            ctx.verify(repair=True)
            assert_user_triples(ctx)                     # nor does repair
        for folder in (state, untouched):                # the next run finishes the work
            run_worker(folder, corpus, None)
            with Context.open(folder) as ctx:
                assert_finished(ctx)
