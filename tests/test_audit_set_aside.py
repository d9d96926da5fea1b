"""Lines the fold kept aside (a line a crash cut short, a hand-edited one) are not listed, so
every listing says how many there are and where: an auditor months later must not read the
listing as the whole trail."""

from __future__ import annotations

import json

from _cli import run_trails
from trails import retrieve
from trails.context import Context
from trails.ingest import Document, ingest_all
from trails.testing import MockEmbedder


def _torn(tmp_path):
    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("a", "a.md", "Rail safety evidence.")], ctx=ctx)
        kept = retrieve("rail safety", ctx).run_id
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        ctx.audit.fold()
        torn = json.dumps(ctx.audit.get(kept).to_json())[:-40]  # cut by a crash
    (root / "audit" / "1-torn.jsonl").write_text(torn)
    return root, kept


def test_a_listing_names_the_lines_kept_aside(tmp_path):
    root, kept = _torn(tmp_path)
    for attempt in range(2):  # the fold that kept it aside, and any listing after
        listed = run_trails("--db", root, "audit")
        assert listed.returncode == 0, listed.stderr
        assert kept in listed.stdout
        assert "1 line(s) of the audit log" in listed.stderr, (attempt, listed.stderr)
        assert "rejected.txt" in listed.stderr
    as_json = run_trails("--db", root, "audit", "--json")
    assert [r["run_id"] for r in json.loads(as_json.stdout)] == [kept]
    assert "1 line(s) of the audit log" in as_json.stderr


def test_a_trail_with_nothing_aside_says_nothing(tmp_path):
    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("a", "a.md", "Rail safety evidence.")], ctx=ctx)
        retrieve("rail safety", ctx)
    listed = run_trails("--db", root, "audit")
    assert listed.returncode == 0 and "rejected" not in listed.stderr
    with Context.open(root) as ctx:
        assert ctx.audit.set_aside() == 0


def test_a_line_cut_short_by_a_crash_is_told_from_one_edited(tmp_path, caplog):
    """A record is appended with its line end in one write: a last line without one was cut
    by a process that stopped while writing, a complete line that is no record was edited
    (or written by a newer version). The warning says which."""
    root, _kept = _torn(tmp_path)
    edited = json.dumps({"run_id": "x", "not": "a record"}) + "\n"
    (root / "audit" / "2-edited.jsonl").write_text(edited)
    with caplog.at_level("WARNING", logger="trails"), Context.open(root) as ctx:
        ctx.audit.fold()
    said = [r.getMessage() for r in caplog.records if "skipping line" in r.getMessage()]
    assert len(said) == 2, said
    torn_line = next(m for m in said if "1-torn" in m)
    edited_line = next(m for m in said if "2-edited" in m)
    assert "cut short" in torn_line and "no record this version reads" not in torn_line
    assert "no record this version reads" in edited_line and "cut short" not in edited_line
