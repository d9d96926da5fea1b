"""``trails init`` with a Qdrant store, a SPARQL endpoint or an OpenAI-compatible embedder:
later commands need none of the options, in this process or a fresh one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from test_cli import one_line_error, run_trails, trails
from trails.cli import make_embedder
from trails.cli._common import model_choice


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "graphs.md").write_text("Graph databases store nodes and edges.\n")
    (folder / "vectors.md").write_text("Vector search ranks chunks by cosine similarity.\n")
    (folder / "rails.txt").write_text("Rails is a web framework written in Ruby.\n")
    return folder


def hits(db: Path) -> list[list]:
    """``trails query --json`` in this process, as (iri, score) pairs."""
    result = trails("--db", db, "query", "graph databases", "--json")
    assert result.exit_code == 0, result.stderr
    return [[h["iri"], h["score"]] for h in json.loads(result.stdout)["hits"]]


def init_ingest_and_compare(db: Path, notes: Path, *options: str) -> dict:
    """init with ``options``, ingest, query here and in a fresh process: the same hits.

    The fresh process is the query's (its interpreter reads only what the directory says);
    stats and verify, which need none of the options either, run here."""
    created = trails("--db", db, "init", *options)
    assert created.exit_code == 0, created.stderr
    ingested = trails("--db", db, "ingest", notes, "--quiet")
    assert ingested.exit_code == 0, ingested.stderr
    assert "3 documents ingested" in ingested.stdout
    here = hits(db)
    assert len(here) == 3
    fresh = run_trails("--db", db, "query", "graph databases", "--json")
    assert fresh.returncode == 0, fresh.stderr
    assert [[h["iri"], h["score"]] for h in json.loads(fresh.stdout)["hits"]] == here
    stats = trails("--db", db, "stats", "--json")
    assert stats.exit_code == 0 and json.loads(stats.stdout)["documents"] == 3
    assert trails("--db", db, "verify").exit_code == 0
    return json.loads((db / "trails.json").read_text())


def test_a_local_qdrant_folder(tmp_path, notes):
    pytest.importorskip("qdrant_client")
    db = tmp_path / "kb"
    config = init_ingest_and_compare(db, notes, "--vectors", "qdrant", "--model", "mock:32")
    assert config["vectors"] == {"backend": "qdrant",
                                 "settings": {"collection": "trails", "path": "qdrant"}}
    assert (db / "qdrant").is_dir() and not (db / "vectors.db").exists()


def test_a_qdrant_folder_elsewhere_with_its_own_collection(tmp_path, notes):
    pytest.importorskip("qdrant_client")
    config = init_ingest_and_compare(
        tmp_path / "kb", notes, "--qdrant-path", tmp_path / "shared-qdrant",
        "--qdrant-collection", "notes", "--model", "mock:16")
    assert config["vectors"]["settings"] == {
        "collection": "notes", "path": str((tmp_path / "shared-qdrant").resolve())}


@pytest.fixture(scope="module")
def sparql_server(tmp_path_factory):
    pytest.importorskip("httpx")
    from trails.testing.servers.oxigraph import OxigraphServer

    with OxigraphServer(tmp_path_factory.mktemp("oxigraph")) as running:
        yield running


def test_a_sparql_endpoint(tmp_path, notes, sparql_server):
    from trails.kg.remote import SparqlEndpointGraph

    cleared = SparqlEndpointGraph(sparql_server.query_url)
    cleared.update("DROP ALL")
    db = tmp_path / "kb"
    config = init_ingest_and_compare(db, notes, "--graph", "sparql", "--endpoint",
                                     sparql_server.query_url, "--model", "mock:32")
    assert config["graph"]["backend"] == "sparql"
    assert config["graph"]["settings"]["update_url"] == sparql_server.update_url
    assert not (db / "graph").exists()
    assert len(cleared) > 0  # the triples are on the endpoint
    cleared.close()


def test_resilience_options_are_recorded_for_the_remote_parts_and_reopened(
        tmp_path, sparql_server, monkeypatch):
    """`--resilience NAME=VALUE` sets the policy of each remote part (here the endpoint and
    an OpenAI-compatible server), typed as JSON; the embedded store takes none; a later
    init adds to what is recorded; a fresh open gets the same policy back."""
    pytest.importorskip("openai")
    from trails.context import Context
    from trails.resilience import Resilience
    from trails.testing.servers.openai import OpenAICompatibleServer

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    db = tmp_path / "kb"
    with OpenAICompatibleServer(api_key="test") as server:
        made = trails("--db", db, "init", "--graph", "sparql", "--endpoint",
                      sparql_server.query_url, "--model", "openai:text-embedding-3-small",
                      "--openai-base-url", server.base_url, "--openai-dim", "16",
                      "--resilience", "max_rps=5", "--resilience", "attempts=4",
                      "--resilience", "require_tls=false", "--json")
        assert made.exit_code == 0, made.stderr
        assert json.loads(made.stdout)["resilience"] == {
            "max_rps": 5, "attempts": 4, "require_tls": False}
        again = trails("--db", db, "init", "--resilience", "deadline=12.5")
        assert again.exit_code == 0, again.stderr
        config = json.loads((db / "trails.json").read_text())
        chosen = {"max_rps": 5, "attempts": 4, "require_tls": False, "deadline": 12.5}
        assert config["graph"]["settings"]["resilience"] == chosen
        assert config["embedder"]["settings"]["resilience"] == chosen
        assert "resilience" not in config["vectors"]["settings"]  # embedded: no network
        with Context.open(db) as reopened:
            assert reopened.kg.resilience == Resilience.from_settings(chosen)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("options", "words"), [
    (["--resilience", "max_rps=5"], "remote part"),
    (["--resilience", "attempts=0", "--graph", "sparql", "--endpoint", "http://127.0.0.1:9/q"],
     "attempts"),
    (["--resilience", "retries=3", "--graph", "sparql", "--endpoint", "http://127.0.0.1:9/q"],
     "unknown resilience settings"),
    (["--resilience", "require_tls=no", "--graph", "sparql", "--endpoint", "http://127.0.0.1:9/q"],
     "require_tls"),
    (["--resilience", "max_rps", "--graph", "sparql", "--endpoint", "http://127.0.0.1:9/q"],
     "NAME=VALUE"),
])
def test_a_resilience_option_that_cannot_apply_is_refused_before_anything_is_made(
        tmp_path, options, words):
    result = trails("--db", tmp_path / "kb", "init", "--model", "mock:8", *options)
    assert result.exit_code == 1, result.output
    assert words in one_line_error(result.stderr)
    assert not (tmp_path / "kb").exists()


def test_resilience_on_a_context_without_a_remote_part_is_refused(tmp_path):
    db = tmp_path / "kb"
    assert trails("--db", db, "init", "--model", "mock:8").exit_code == 0
    before = (db / "trails.json").read_text()
    refused = trails("--db", db, "init", "--resilience", "max_rps=5")
    assert refused.exit_code == 1 and "remote part" in one_line_error(refused.stderr)
    assert (db / "trails.json").read_text() == before


def test_an_openai_compatible_embedder(tmp_path, notes, monkeypatch):
    pytest.importorskip("openai")
    pytest.importorskip("tiktoken")
    from trails.testing.servers.openai import OpenAICompatibleServer

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with OpenAICompatibleServer(api_key="test") as server:
        base_url = server.base_url
        config = init_ingest_and_compare(
            tmp_path / "kb", notes, "--model", "openai:text-embedding-3-small",
            "--openai-base-url", base_url, "--openai-dim", "128")
        assert len(server.embedding_requests) >= 2  # ingested, then queried, through it
    assert config["embedder"]["backend"] == "openai"
    assert config["embedder"]["settings"] == {
        "model": "text-embedding-3-small", "dim": 128, "base_url": base_url}
    assert "test" not in json.dumps(config["embedder"])  # the key is never recorded


# -- options that do not fit together ---------------------------------------------------------

@pytest.mark.parametrize(("options", "words"), [
    (["--graph", "sparql"], "--endpoint"),
    (["--endpoint", "http://127.0.0.1:9/query", "--graph", "oxigraph"], "--graph sparql"),
    (["--qdrant-url", "http://127.0.0.1:9", "--vectors", "sqlite-vec"], "--vectors qdrant"),
    (["--qdrant-url", "http://127.0.0.1:9", "--qdrant-path", "q"], "not both"),
    (["--openai-base-url", "http://127.0.0.1:9/v1"], "openai:MODEL"),
    (["--vectors", "faiss"], "qdrant"),
])
def test_options_that_do_not_fit_are_user_errors(tmp_path, options, words):
    result = trails("--db", tmp_path / "kb", "init", "--model", "mock:8", *options)
    assert result.exit_code == 1
    assert words in one_line_error(result.stderr)
    assert not (tmp_path / "kb" / "trails.json").exists()


def test_init_again_refuses_another_backend(tmp_path):
    db = tmp_path / "kb"
    assert trails("--db", db, "init", "--model", "mock:8").exit_code == 0
    again = trails("--db", db, "init", "--vectors", "qdrant")
    assert again.exit_code == 1
    assert "sqlite-vec" in one_line_error(again.stderr)
    assert trails("--db", db, "init", "--vectors", "sqlite-vec").exit_code == 0


def test_a_missing_extra_names_the_pip_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # as if not installed
    result = trails("--db", tmp_path / "kb", "init", "--vectors", "qdrant", "--model", "mock:8")
    assert result.exit_code == 1
    assert 'pip install "trails[vector-qdrant]"' in one_line_error(result.stderr)


# -- model specs ------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "options", "expected"), [
    ("mock", {}, ("mock", {})),
    ("mock:8", {}, ("mock", {"dim": 8})),
    ("openai:text-embedding-3-large", {}, ("openai", {"model": "text-embedding-3-large"})),
    ("openai:my-model", {"openai_dim": 64, "openai_base_url": "http://h/v1"},
     ("openai", {"model": "my-model", "dim": 64, "base_url": "http://h/v1"})),
    ("all-MiniLM-L6-v2", {}, ("sentence-transformers", {"model": "all-MiniLM-L6-v2"})),
])
def test_model_choice(spec, options, expected):
    assert model_choice(spec, **options) == expected


def test_an_openai_spec_makes_an_openai_embedder_without_a_request():
    pytest.importorskip("openai")
    embedder = make_embedder("openai:text-embedding-3-small", openai_dim=256)
    assert embedder.identity.model == "openai/text-embedding-3-small" and embedder.dim == 256
