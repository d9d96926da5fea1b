"""A read-only context reads every audit record, those the writer folds after it opened too.

``trails audit`` opens the context read-only when another process (the service, an ingest)
holds the writer's place. Its graph is a view of the moment it opened, and audit writes leave
the graph's revision alone, so nothing renewed that view: a record the writer folded after
the reader opened was no longer in the log files and not yet in the reader's graph, and the
reader said "no recorded run" of a run it had just listed.
"""

from __future__ import annotations

import threading

import pytest

from trails.audit import SearchRecord
from trails.audit.records import started_now
from trails.context import Context
from trails.testing import MockEmbedder


def record(n: int) -> SearchRecord:
    now = started_now()
    return SearchRecord(run_id=str(n) * 32, caller="t", started=now, ended=now,
                        query_sha256="0" * 64, query=f"q{n}", scopes=["default"])


@pytest.fixture
def writer_and_reader(tmp_path):
    writer = Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8))
    writer.audit.record(record(1))
    writer.audit.fold()
    reader = Context.open(tmp_path / "kb", read_only=True)
    yield writer, reader
    reader.close()
    writer.close()


def test_records_folded_after_a_reader_opened_are_still_listed_by_it(writer_and_reader):
    writer, reader = writer_and_reader
    writer.audit.record(record(2))
    reader.audit.record(record(3))
    assert sorted(r.query for r in reader.audit.activities()) == ["q1", "q2", "q3"]
    assert writer.audit.fold() == 2
    assert sorted(r.query for r in reader.audit.activities()) == ["q1", "q2", "q3"]


def test_a_run_folded_after_a_reader_opened_is_found_by_id_prefix_and_feedback(
        writer_and_reader):
    writer, reader = writer_and_reader
    writer.audit.record(record(2))
    writer.audit.fold()
    run = "2" * 32
    assert reader.audit.get(run).query == "q2"
    assert reader.audit.resolve("2222") == run
    assert reader.audit.feedback_on(run) == []


def test_a_file_the_writer_takes_aside_while_a_reader_lists_is_read_under_its_new_name(
        writer_and_reader, monkeypatch):
    """The reader lists the log, then the writer's fold renames the file and has not yet
    written the graph when the reader reads: the reader reads the renamed file."""
    writer, reader = writer_and_reader
    writer.audit.record(record(2))
    renamed, listed = threading.Event(), threading.Event()
    real_extend, real_files = writer.kg.extend, reader.audit._log._files
    first = []

    def extend(quads):  # the fold's graph write: the files are renamed by now
        renamed.set()
        assert listed.wait(10)
        real_extend(quads)

    def files():
        found = real_files()
        if not first:  # listed before the rename, read after it
            first.append(found)
            folding.start()
            assert renamed.wait(10)
        return found

    monkeypatch.setattr(writer.kg, "extend", extend)
    monkeypatch.setattr(reader.audit._log, "_files", files)
    folding = threading.Thread(target=writer.audit.fold)
    seen = sorted(r.query for r in reader.audit.activities())
    listed.set()
    folding.join(10)
    assert seen == ["q1", "q2"]
    assert sorted(r.query for r in reader.audit.activities()) == ["q1", "q2"]
