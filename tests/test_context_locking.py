"""One writer per context directory: a second writer gets ContextLockedError, readers open
``read_only=True`` alongside, and closing (or leaving the ``with`` block) releases the lock.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trails import retrieve
from trails.cli import app
from trails.context import Context
from trails.errors import (
    ConfigurationError,
    ContextLockedError,
    DimensionMismatchError,
    TrailsError,
)
from trails.ingest import Document, ingest, ingest_all
from trails.testing import MockEmbedder

TEXT = "Lighthouses guide ships past the rocks at night."
HOLDER = """
import sys, time
from trails.context import Context
ctx = Context.open(sys.argv[1])
print("ready", flush=True)
time.sleep(120)
"""


def _make(directory: Path) -> str:
    """A persisted context with one document; returns the document IRI."""
    with Context.open(directory, embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all([Document(id="light", source="mem:light", text=TEXT)], ctx=ctx)
    return "trails://local/doc/light"


@pytest.fixture
def held(tmp_path):
    """A context directory that another process holds open for writing."""
    directory = tmp_path / "ctx"
    doc = _make(directory)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().strip()
        assert line == "ready", holder.stderr.read() if holder.poll() is not None else line
        yield directory, doc, holder
    finally:
        holder.kill()
        holder.communicate(timeout=30)


def test_a_second_writer_gets_context_locked_error(held):
    directory, _, _ = held
    with pytest.raises(ContextLockedError) as caught:
        Context.open(directory)
    error = caught.value
    assert isinstance(error, TrailsError) and isinstance(error, ConfigurationError)
    assert not isinstance(error, OSError)
    message = str(error)
    assert "another process" in message and "writing" in message  # the cause
    assert "read_only=True" in message  # the way out
    with pytest.raises(ContextLockedError):  # also with an explicit (matching) embedder
        Context.open(directory, embedder=MockEmbedder(dim=32))


def test_a_reader_opens_alongside_the_writer(held):
    directory, doc, _ = held
    with Context.open(directory, read_only=True) as ro:
        assert ro.read_only
        vector = retrieve(TEXT, ro, mode="vector", k=5)
        assert [h.metadata["doc_iri"] for h in vector] == [doc]
        assert vector[0].snippet == TEXT
        hybrid = retrieve("ships", ro, mode="hybrid",
                          sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?d }")
        assert [h.iri for h in hybrid] == [h.iri for h in vector]
        graph = retrieve("ships", ro, mode="graph",
                         sparql_filter="SELECT ?iri WHERE { ?iri a trails:Document }")
        assert [h.iri for h in graph] == [doc]
        assert ro.kg.query("SELECT ?t WHERE { ?c schema:text ?t }").column("t") == [TEXT]
        assert ro.verify().ok  # checking is reading
        assert ro.stats()["documents"] == 1
    with Context.open(directory, read_only=True) as one, \
            Context.open(directory, read_only=True) as two:  # readers do not lock each other
        assert len(retrieve(TEXT, one, mode="vector")) == len(retrieve(TEXT, two, mode="vector")) == 1


def test_a_reader_refuses_to_write(held):
    directory, doc, _ = held
    with Context.open(directory, read_only=True) as ro:
        with pytest.raises(ConfigurationError, match="read-only"):
            ingest_all([Document(id="new", source="mem:new", text="New text.")], ctx=ro)
        with pytest.raises(ConfigurationError, match="read-only"):
            list(ingest([Document(id="new", source="mem:new", text="New text.")], ctx=ro))
        with pytest.raises(ConfigurationError, match="read-only"):
            ro.verify(repair=True)
        with pytest.raises(ConfigurationError, match="read-only"):
            ro.delete_document(doc)
        assert [h.metadata["doc_iri"] for h in retrieve(TEXT, ro, mode="vector")] == [doc]
        assert ro.stats()["documents"] == 1


def test_the_lock_goes_with_the_holder(held):
    directory, doc, holder = held
    holder.kill()
    holder.communicate(timeout=30)
    with Context.open(directory) as ctx:  # a killed writer leaves no lock behind
        assert ctx.verify().ok
        assert [h.metadata["doc_iri"] for h in retrieve(TEXT, ctx, mode="vector")] == [doc]


def test_close_is_idempotent_and_releases_the_lock(tmp_path):
    directory = tmp_path / "ctx"
    _make(directory)
    ctx = Context.open(directory)
    with pytest.raises(ContextLockedError):
        Context.open(directory)
    ctx.close()
    ctx.close()
    again = Context.open(directory)
    again.close()
    again.close()


def test_a_second_writer_in_this_process_is_told_it_is_this_process(tmp_path):
    """Not "another process": the message names this process and how to close the handle,
    the first handle keeps working, and closing it lets the directory open again."""
    directory = tmp_path / "ctx"
    doc = _make(directory)
    first = Context.open(directory)
    with pytest.raises(ContextLockedError) as caught:
        Context.open(directory)
    message = str(caught.value)
    assert "this process" in message and "another process" not in message
    assert "ctx.close()" in message and "with Context.open" in message
    assert retrieve(TEXT, first, mode="vector", k=1)[0].metadata["doc_iri"] == doc
    with Context.open(directory, read_only=True) as reader:  # the other way out, as said
        assert reader.stats()["documents"] == 1
    first.close()
    with Context.open(directory) as again:
        assert again.stats()["documents"] == 1


def test_the_cli_says_this_process_too(tmp_path):
    directory = tmp_path / "ctx"
    _make(directory)
    with Context.open(directory):
        result = CliRunner().invoke(app, ["--db", str(directory), "delete", "trails://x/doc"])
    assert result.exit_code == 1
    assert "this process" in result.stderr and "another process" not in result.stderr


def test_the_with_block_releases_the_lock(tmp_path):
    directory = tmp_path / "ctx"
    doc = _make(directory)  # _make itself used a with block
    with Context.open(directory) as ctx:
        assert ingest_all([Document(id="two", source="mem:two", text="Second text.")],
                          ctx=ctx).ingested == 1
    with Context.open(directory) as ctx:
        assert ctx.stats()["documents"] == 2
        assert retrieve(TEXT, ctx, mode="vector", k=1)[0].metadata["doc_iri"] == doc


def test_the_with_block_releases_the_lock_after_an_error(tmp_path):
    directory = tmp_path / "ctx"
    _make(directory)
    with pytest.raises(RuntimeError), Context.open(directory):
        raise RuntimeError("the caller failed")
    Context.open(directory).close()


def test_a_failed_open_does_not_keep_the_lock(tmp_path):
    directory = tmp_path / "ctx"
    _make(directory)
    with pytest.raises(DimensionMismatchError):
        Context.open(directory, embedder=MockEmbedder(dim=16))
    with Context.open(directory) as ctx:
        assert ctx.embedder.dim == 32


def test_read_only_on_a_directory_without_a_context(tmp_path):
    with pytest.raises(ConfigurationError, match="holds no trails context"):
        Context.open(tmp_path / "nothing", read_only=True)
    assert not (tmp_path / "nothing").exists()
