"""A context's two halves belong together: a graph or vector store that is missing, empty or
another context's is a ``ContextDamagedError`` on open (CLI exit 3), never quietly rebuilt
empty for a repair to reconcile by deleting the surviving half. Corrupt files, full disks and
read-only mounts: tests/test_storage_faults.py."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.context import Context
from trails.errors import ContextDamagedError
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


def test_a_torn_graph_marker_says_so_and_how_to_mend_it(context):
    """The graph's copy of the context id cut short by an interrupted write: not "another
    context", but the marker torn, and removing it mends the context."""
    marker = context / "graph" / GRAPH_MARKER
    whole = marker.read_text()
    marker.write_text(whole[: len(whole) // 2])
    with pytest.raises(ContextDamagedError, match="cut short") as caught:
        Context.open(context, embedder=MockEmbedder(dim=16))
    assert "another context" not in str(caught.value) and "remove" in str(caught.value)
    marker.unlink()
    with Context.open(context, embedder=MockEmbedder(dim=16)) as ctx:
        assert len(retrieve("harbour", ctx, mode="vector")) == 3
    assert marker.read_text() == whole
    assert not list(marker.parent.glob(f"{GRAPH_MARKER}.*"))  # no temporary file left
