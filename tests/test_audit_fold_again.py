"""A fold that failed leaves its files taken aside; the records appended after it (by the same
process, to a new file of the same name) never replace them.

The fold takes each log file out of the appenders' way by renaming ``<name>.jsonl`` to
``<name>.jsonl.folding``. A fold whose graph write failed keeps that file for the next one;
meanwhile the same appender writes a new ``<name>.jsonl``. The next fold renamed that onto
the kept file when it listed it first (the file system stamps both with the same time within
its clock's tick, and the names then decide): the kept records were gone unread.
"""

from __future__ import annotations

import os

import pytest

from trails.audit import SearchRecord
from trails.audit.records import started_now
from trails.audit.trail import AUDIT_DIRECTORY
from trails.context import Context
from trails.testing import MockEmbedder

COUNT = ("SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE { GRAPH <urn:trails:audit> { "
         "?r a prov:Activity } }")


def record(n: int) -> SearchRecord:
    now = started_now()
    return SearchRecord(run_id=f"{n:032d}", caller="t", started=now, ended=now,
                        query_sha256="0" * 64, query=f"q{n}", scopes=["default"])


def test_records_kept_by_a_failed_fold_survive_the_next_fold(tmp_path, monkeypatch):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        for n in range(3):
            ctx.audit.record(record(n))

        def full_disk(quads) -> None:
            raise OSError("IO error: No space left on device")

        monkeypatch.setattr(ctx.kg, "extend", full_disk)
        with pytest.raises(OSError):
            ctx.audit.fold()
        monkeypatch.undo()
        ctx.audit.record(record(3))  # a new file, under the name the kept one had
        log = tmp_path / "kb" / AUDIT_DIRECTORY
        files = sorted(log.iterdir())
        assert len(files) == 2
        for path in files:  # one tick of the file system's clock
            os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
        assert ctx.audit.fold() == 4
        assert ctx.kg.query(COUNT).rows[0]["n"] == 4
        assert ctx.audit.pending() == []
