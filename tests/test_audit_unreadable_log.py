"""A log file the writer cannot read (another user's, written 0600 by a reader running under
its own account; a bad sector) is kept for a later fold, and every other file is folded: one
such file made each fold fail, so no record of anyone reached the audit graph again, and
listing the trail failed with it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from trails.audit import SearchRecord
from trails.audit.log import AuditLog
from trails.audit.records import started_now
from trails.audit.trail import AUDIT_DIRECTORY
from trails.context import Context
from trails.testing import MockEmbedder

COUNT = ("SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE { GRAPH <urn:trails:audit> { "
         "?r a prov:Activity } }")


def record(n: int, caller: str) -> SearchRecord:
    now = started_now()
    return SearchRecord(run_id=f"{n:032d}", caller=caller, started=now, ended=now,
                        query_sha256="0" * 64, query=f"q{n}", scopes=["default"])


def refuse(monkeypatch, stem: str) -> None:
    """Reading any file whose name starts with ``stem`` is refused, as the permissions of a
    file of another account refuse it (this suite may run as root, which chmod cannot stop)."""
    opened, read_bytes = os.open, Path.read_bytes

    def denied(path: object) -> OSError:
        return PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    def checked_open(path, flags, *args, **kwargs):
        if os.path.basename(path).startswith(stem) and not flags & (os.O_WRONLY | os.O_RDWR):
            raise denied(path)
        return opened(path, flags, *args, **kwargs)

    def checked_read(self: Path) -> bytes:
        if self.name.startswith(stem):
            raise denied(self)
        return read_bytes(self)

    monkeypatch.setattr(os, "open", checked_open)
    monkeypatch.setattr(Path, "read_bytes", checked_read)


def test_a_log_file_the_writer_cannot_read_is_kept_and_the_others_are_folded(tmp_path,
                                                                             monkeypatch):
    directory = tmp_path / "kb"
    with Context.open(directory, embedder=MockEmbedder(dim=8)) as ctx:
        other = AuditLog(directory / AUDIT_DIRECTORY)  # a reader process under another account
        other.append(record(1, "analyst"))
        refuse(monkeypatch, other._name.removesuffix(".jsonl"))
        for n in (2, 3):
            assert ctx.audit.record(record(n, "writer"))
        assert ctx.audit.fold() == 2
        assert ctx.kg.query(COUNT).rows[0]["n"] == 2
        listed = ctx.audit.activities()
        assert sorted(r.run_id for r in listed) == [f"{n:032d}" for n in (2, 3)]
        other.append(record(4, "analyst"))  # still appending to the file kept aside
        monkeypatch.undo()  # readable again (the permissions mended)
        assert ctx.audit.fold() == 2
        assert ctx.kg.query(COUNT).rows[0]["n"] == 4
        assert ctx.audit.pending() == []
        other.close()
