"""``ctx.kg.dump(path)`` refuses a path over a file of the context, as ``trails export -o``
does: pointed at ``trails.json``, ``vectors.db`` or a file of the graph's folder, the export
replaced the context's settings, every vector or the graph with RDF."""

from __future__ import annotations

import os

import pytest

from trails.context import Context
from trails.errors import ConfigurationError
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph
from trails.kg.exchange import guard_exports
from trails.testing import MockEmbedder

FACT = b'<https://ex.org/a> <https://schema.org/name> "A" .'


@pytest.fixture
def kb(tmp_path):
    directory = tmp_path / "kb"
    with Context.open(directory, embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all([Document(id="a", source="a", text="Alpha beta.")], ctx=ctx)
        ctx.kg.load(FACT)
    return directory


def files_of(directory) -> dict:
    return {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ["trails.json", "vectors.db", "vectors.db.f32",
                                  "graph/CURRENT", "audit/x.jsonl", "backup.nq"])
def test_dump_into_the_context_directory_is_refused_and_writes_nothing(kb, name):
    target = kb / name
    with Context.open(kb, embedder=MockEmbedder(dim=8)) as ctx:
        before = files_of(kb)
        with pytest.raises(ConfigurationError, match="inside the context directory") as raised:
            ctx.kg.dump(target, format="nquads")
        assert str(target) in str(raised.value) and "nothing was written" in str(raised.value)
        assert files_of(kb) == before
        assert ctx.kg.dump(kb.parent / "backup.nq") is None  # outside it: written
    assert "https://ex.org/a" in (kb.parent / "backup.nq").read_text()
    with Context.open(kb, read_only=True, embedder=MockEmbedder(dim=8)) as ctx:
        assert ctx.verify().ok
        assert len(ctx.kg.query("SELECT ?n WHERE { <https://ex.org/a> ?p ?n }")) == 1


def test_a_read_only_context_refuses_it_too_and_so_does_a_path_through_a_link(kb, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(kb)
    with Context.open(kb, read_only=True, embedder=MockEmbedder(dim=8)) as ctx:
        before = files_of(kb)
        for path in (kb / "trails.json", link / "trails.json", str(link / "vectors.db")):
            with pytest.raises(ConfigurationError, match="inside the context directory"):
                ctx.kg.dump(path, format="nquads")
        assert files_of(kb) == before


def test_a_relative_path_into_the_context_is_refused(kb, monkeypatch):
    monkeypatch.chdir(kb)
    with Context.open(kb, embedder=MockEmbedder(dim=8)) as ctx:
        before = files_of(kb)
        with pytest.raises(ConfigurationError, match="inside the context directory"):
            ctx.kg.dump("trails.json", format="nquads")
        assert files_of(kb) == before


def test_a_graph_alone_refuses_its_own_folder(tmp_path):
    folder = tmp_path / "graph"
    kg = OxigraphGraph(folder)
    try:
        kg.load(FACT)
        before = files_of(folder)
        with pytest.raises(ConfigurationError, match="inside the graph's folder"):
            kg.dump(folder / "CURRENT", format="nquads")
        assert files_of(folder) == before
        kg.dump(tmp_path / "out.nq")
        assert "https://ex.org/a" in (tmp_path / "out.nq").read_text()
    finally:
        kg.close()


def test_a_vector_store_outside_the_directory_is_kept_by_its_name(tmp_path):
    """A store recorded elsewhere: its file and the files named after it are refused, the
    folder it sits in is not the context's."""

    class Store:
        path = str(tmp_path / "shared" / "vectors.db")

    (tmp_path / "shared").mkdir()
    kg = OxigraphGraph()
    kg.load(FACT)
    guard_exports(kg, tmp_path / "kb", Store())
    for name in ("vectors.db", "vectors.db-wal", "vectors.db.f32"):
        with pytest.raises(ConfigurationError, match="beside the context's vector store"):
            kg.dump(tmp_path / "shared" / name, format="nquads")
        assert not (tmp_path / "shared" / name).exists()
    kg.dump(tmp_path / "shared" / "backup.nq")
    assert os.path.getsize(tmp_path / "shared" / "backup.nq") > 0


def test_an_in_memory_graph_dumps_anywhere_it_is_asked(tmp_path):
    kg = OxigraphGraph()
    kg.load(FACT)
    assert kg.dump(tmp_path / "trails.json", format="nquads") is None
    assert "https://ex.org/a" in (tmp_path / "trails.json").read_text()
