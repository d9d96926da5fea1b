"""A replay says when a hit it finds again was let through by another value than it was: the
same chunk, admitted today by a date its document has since been given, is not the same
answer to defend."""

from __future__ import annotations

import datetime as dt

from trails import replay, retrieve
from trails.config import AuditConfig
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder

SINCE = """SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?created .
FILTER(?created >= ?since) }"""
DATE = "^^<http://www.w3.org/2001/XMLSchema#date>"


def _docs(date_of_d2):
    return [Document(f"d{i}", f"d{i}.md", f"pump seal failure number {i} report",
                     metadata={"date": date_of_d2 if i == 2 else f"2024-0{i + 1}-01"})
            for i in range(3)]


def test_a_hit_admitted_by_another_value_now_is_named_by_the_replay(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all(_docs("2024-03-01"), ctx=ctx, scope="legal")
        run = retrieve("pump seal", ctx, sparql_filter=SINCE, scope="legal",
                       bindings={"since": dt.date(2024, 2, 1)}).run_id
        ingest_all(_docs("2024-07-01"), ctx=ctx, scope="legal")  # d2 re-dated, same text
        report = replay(ctx, run)
    moved = [note for note in report.notes if "admitted" in note]
    assert report.identical  # the same chunks at the same ranks
    assert len(moved) == 1, report.notes
    assert "/doc/d2/" in moved[0]
    assert f'created "2024-03-01"{DATE} then, "2024-07-01"{DATE} now' in moved[0]


def test_a_replay_of_unchanged_documents_says_nothing_of_admission(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all(_docs("2024-03-01"), ctx=ctx, scope="legal")
        run = retrieve("pump seal", ctx, sparql_filter=SINCE, scope="legal",
                       bindings={"since": dt.date(2024, 2, 1)}).run_id
        ingest_all(_docs("2024-03-01"), ctx=ctx, scope="legal")
        report = replay(ctx, run)
    assert report.identical and report.notes == []


def test_a_run_that_asked_why_is_replayed_asking_why_whatever_the_trail_keeps(tmp_path):
    """A trail that does not keep admissions (audit why=False) still records them for a run
    that asked (why=True): its replay asks too, so it compares them, and its result says
    what the run's said."""
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16),
                      audit=AuditConfig(why=False)) as ctx:
        ingest_all(_docs("2024-03-01"), ctx=ctx, scope="legal")
        ran = retrieve("pump seal", ctx, sparql_filter=SINCE, scope="legal", why=True,
                       bindings={"since": dt.date(2024, 2, 1)})
        ingest_all(_docs("2024-07-01"), ctx=ctx, scope="legal")  # d2 re-dated, same text
        report = replay(ctx, ran.run_id)
    assert all(hit.admitted_by for hit in ran)
    assert [hit.admitted_by is not None for hit in report.result] == [True] * len(ran)
    moved = [note for note in report.notes if "admitted" in note]
    assert len(moved) == 1 and "/doc/d2/" in moved[0], report.notes
