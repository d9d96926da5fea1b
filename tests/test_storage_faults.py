"""Damaged, missing, mismatched and full: a context's files fail with a StorageError, never
with a raw database error, and never by quietly rebuilding a lost half.

``ContextDamagedError`` (a ``StorageError``) for corrupt files and for a graph or vector store
that is missing or belongs to another context; ``StorageError`` for a full disk or a read-only
mount. The CLI exits 3 for both, with one line and no traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.context import Context
from trails.errors import ContextDamagedError, StorageError
from trails.ingest import Document, ingest_all
from trails.integrity import GRAPH_MARKER
from trails.vector import MockEmbedder

runner = CliRunner()


def make(path: Path, docs: int = 3) -> Path:
    with Context.open(path, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(f"d{i}.md", f"d{i}.md", f"memo {i} about harbour boats")
                    for i in range(docs)], ctx=ctx)
    return path


def fingerprint(path: Path) -> dict[str, object]:
    """What must not change: each file's hash, and a graph directory's quads (RocksDB rewrites
    its own bookkeeping files on every open)."""
    if path.name == "graph" or (path / "graph").is_dir():
        graph = path if path.name == "graph" else path / "graph"
        store = ox.Store.read_only(str(graph))
        quads = sorted(map(str, store))
        del store
        rest = {} if path.name == "graph" else fingerprint(path / "vectors.db") | fingerprint(
            path / "trails.json")
        return {"quads": quads, **rest}
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}


def cli(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def assert_one_line_exit_3(db: Path) -> None:
    for command in (["query", "harbour"], ["stats"], ["verify"], ["ingest", db]):
        code, output = cli("--db", db, *command)
        assert code == 3, (command, output)
        assert "Traceback" not in output and output.count("\n") == 1, output


@pytest.fixture
def context(tmp_path: Path) -> Path:
    return make(tmp_path / "kb")


# -- corrupt files ---------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_corrupt_vector_store_is_a_damaged_context(context, damage):
    db = context / "vectors.db"
    data = db.read_bytes()
    db.write_bytes(os.urandom(8192) if damage == "garbage" else data[: len(data) // 3])
    for read_only in (False, True):
        with pytest.raises(ContextDamagedError, match="vectors.db"):
            Context.open(context, read_only=read_only).close()
    assert_one_line_exit_3(context)


def test_a_corrupt_graph_is_a_damaged_context(context):
    for name in os.listdir(context / "graph"):
        if name.startswith(("MANIFEST", "CURRENT")):
            (context / "graph" / name).write_bytes(os.urandom(200))
    with pytest.raises(ContextDamagedError, match="graph"):
        Context.open(context).close()
    assert_one_line_exit_3(context)


@pytest.mark.parametrize("text", [b"{not json", b"\xff\xfe\x00garbage", b""])
def test_a_corrupt_configuration_is_a_damaged_context(context, text):
    (context / "trails.json").write_bytes(text)
    with pytest.raises(ContextDamagedError, match="trails.json"):
        Context.open(context).close()
    assert_one_line_exit_3(context)


# -- a missing or mismatched half -------------------------------------------------------------

@pytest.mark.parametrize("loss", ["deleted", "empty"])
@pytest.mark.parametrize("half", ["vectors.db", "graph"])
def test_a_missing_half_is_refused_and_the_other_half_untouched(context, half, loss):
    target, other = context / half, context / ("graph" if half == "vectors.db" else "vectors.db")
    if target.is_dir():
        shutil.rmtree(target)
        if loss == "empty":
            target.mkdir()
    else:
        target.unlink()
        if loss == "empty":
            target.touch()
    kept = fingerprint(other)
    for read_only in (False, True):
        with pytest.raises(ContextDamagedError, match="missing or empty"):
            Context.open(context, read_only=read_only).close()
    assert_one_line_exit_3(context)
    code, _ = cli("--db", context, "verify", "--repair")
    assert code == 3
    assert fingerprint(other) == kept
    assert target.exists() == (loss == "empty")  # nothing was created in its place
    if loss == "empty":
        assert not any(target.iterdir()) if target.is_dir() else target.stat().st_size == 0


@pytest.mark.parametrize("half", ["vectors.db", "graph"])
def test_a_half_of_another_context_is_refused(tmp_path, context, half):
    other = make(tmp_path / "other", docs=1)
    if half == "graph":
        shutil.rmtree(context / "graph")
        shutil.copytree(other / "graph", context / "graph")
    else:
        shutil.copy(other / "vectors.db", context / "vectors.db")
    kept = fingerprint(context)
    with pytest.raises(ContextDamagedError, match="another context"):
        Context.open(context).close()
    code, output = cli("--db", context, "verify", "--repair")
    assert code == 3 and "another context" in output
    assert fingerprint(context) == kept


def test_a_context_made_before_ids_adopts_one_and_then_refuses_strangers(tmp_path, context):
    """Strip every id (as a context of an earlier release has none): it opens, its parts get
    one id, and from then on a stranger's half is refused."""
    (context / "graph" / GRAPH_MARKER).unlink()
    with sqlite3.connect(context / "vectors.db") as raw:
        raw.execute("DELETE FROM meta WHERE key = 'context'")
    config = (context / "trails.json").read_text()
    (context / "trails.json").write_text(_without_id(config))
    with Context.open(context) as ctx:
        assert len(retrieve("harbour", ctx, k=10)) == 3
    marker = (context / "graph" / GRAPH_MARKER).read_text().strip()
    with sqlite3.connect(context / "vectors.db") as raw:
        assert raw.execute("SELECT value FROM meta WHERE key = 'context'").fetchone()[0] == marker
    other = make(tmp_path / "other", docs=1)
    shutil.copy(other / "vectors.db", context / "vectors.db")
    with pytest.raises(ContextDamagedError, match="another context"):
        Context.open(context).close()


def _without_id(config: str) -> str:
    raw = json.loads(config)
    raw.pop("id")
    return json.dumps(raw)


# -- a full disk and a read-only mount --------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 3 MiB tmpfs (root only); the test is skipped where mounting is not allowed."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          check=False, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_a_storage_error_and_the_context_recovers_in_the_same_process(tiny_disk):
    kb = make(tiny_disk / "kb", docs=2)
    filler = tiny_disk / "filler"
    big = [Document(f"big{i}.md", f"big{i}.md", f"word{i} " * 40_000) for i in range(40)]
    with (pytest.raises(StorageError) as caught,
          Context.open(kb, embedder=MockEmbedder(dim=16)) as ctx):
        with filler.open("wb") as out:  # leave almost nothing free
            free = shutil.disk_usage(tiny_disk).free
            out.write(b"\0" * max(0, free - 64 * 1024))
        ingest_all(big, ctx=ctx, batch_size=4)
    assert not isinstance(caught.value, ContextDamagedError), caught.value
    filler.unlink()
    with Context.open(kb, embedder=MockEmbedder(dim=16)) as ctx:  # same process: not locked
        ctx.verify(repair=True)
        assert ctx.verify().ok
        stats = ingest_all([Document("after.md", "after.md", "a short memo")], ctx=ctx)
        assert stats.ingested == 1 and ctx.verify().ok


def test_a_read_only_mount_is_a_storage_error(tiny_disk):
    kb = make(tiny_disk / "kb", docs=2)
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_disk)], check=True)
    try:
        try:  # a reader works where SQLite can read the file, else it is told why
            with Context.open(kb, read_only=True) as ctx:
                assert len(retrieve("harbour", ctx, k=10)) == 2
        except StorageError as exc:
            assert "vectors.db" in str(exc)
        with pytest.raises(StorageError):
            Context.open(kb).close()
        code, output = cli("--db", kb, "ingest", kb)
        assert code == 3 and "Traceback" not in output
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(tiny_disk)], check=True)
