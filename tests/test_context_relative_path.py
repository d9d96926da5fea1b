"""A context opened by a relative path keeps working in its own directory after the process
changes its working directory: every part, the audit log and the export guard name the
directory it was opened in, not whatever the relative path names later."""

from __future__ import annotations

import pytest

from trails import Context
from trails.errors import ConfigurationError
from trails.ingest import Document, ingest_all
from trails.retrieval.retrieve import retrieve
from trails.testing import MockEmbedder

TRIPLE = b'<https://x/a> <https://schema.org/name> "A" .'


def test_a_context_opened_by_a_relative_path_survives_a_change_of_directory(tmp_path,
                                                                            monkeypatch):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir(), elsewhere.mkdir()
    monkeypatch.chdir(home)
    ctx = Context.open("kb", embedder=MockEmbedder(dim=16))
    try:
        ctx.kg.load(TRIPLE)
        monkeypatch.chdir(elsewhere)
        config = (home / "kb" / "trails.json").read_bytes()
        for own in ("trails.json", "vectors.db", "graph/CURRENT"):
            with pytest.raises(ConfigurationError, match="nothing was written"):
                ctx.kg.dump(str(home / "kb" / own), format="nquads")
        assert (home / "kb" / "trails.json").read_bytes() == config  # not replaced by RDF
        ingest_all([Document("tides", "memo", "Tides rise twice a day.")], ctx=ctx)
        assert [h.document for h in retrieve("tides", ctx=ctx, k=1)] == [
            "trails://local/doc/tides"]
        ctx.audit.fold()
    finally:
        ctx.close()
    assert not (elsewhere / "kb").exists()  # nothing written under the new directory
    with Context.open(home / "kb", embedder=MockEmbedder(dim=16), read_only=True) as again:
        assert [h.document for h in retrieve("tides", ctx=again, k=1)] == [
            "trails://local/doc/tides"]


def test_a_graph_opened_by_a_relative_path_survives_a_change_of_directory(tmp_path,
                                                                          monkeypatch):
    from trails.kg.oxigraph import OxigraphGraph

    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir(), elsewhere.mkdir()
    monkeypatch.chdir(home)
    kg = OxigraphGraph("graph")
    try:
        monkeypatch.chdir(elsewhere)
        with pytest.raises(ConfigurationError, match="nothing was written"):
            kg.dump(str(home / "graph" / "CURRENT"), format="nquads")
        kg.load(TRIPLE)
        kg.flush()
    finally:
        kg.close()
    assert not (elsewhere / "graph").exists()
    again = OxigraphGraph(home / "graph", read_only=True)
    try:
        assert again.query("SELECT ?n WHERE { ?s schema:name ?n }").rows == [{"n": "A"}]
    finally:
        again.close()


def test_a_vector_store_opened_by_a_relative_path_survives_a_change_of_directory(
        tmp_path, monkeypatch):
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir(), elsewhere.mkdir()
    monkeypatch.chdir(home)
    store = SqliteVecStore("vectors.db", dim=4)
    try:
        store.add("a", [1.0, 0.0, 0.0, 0.0])
        monkeypatch.chdir(elsewhere)
        store.add("b", [0.0, 1.0, 0.0, 0.0])  # its vector file: written where it was opened
    finally:
        store.close()
    assert list(elsewhere.iterdir()) == []
    again = SqliteVecStore(home / "vectors.db", read_only=True)
    try:
        assert sorted(hit.id for hit in again.search([1.0, 1.0, 0.0, 0.0], k=5)) == ["a", "b"]
    finally:
        again.close()
