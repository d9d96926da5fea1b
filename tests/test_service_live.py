"""The service on a real socket: uvicorn on loopback, real HTTP clients (httpx, SPARQLWrapper,
rdflib's SPARQLStore, trails' own SparqlEndpointGraph), and ``trails serve`` as a process."""

from __future__ import annotations

import getpass
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from rdflib import Graph, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLStore
from SPARQLWrapper import JSON, TURTLE, SPARQLWrapper

from _cli import run_trails
from service_support import (
    ALPHA_DOCS,
    BETA_DOCS,
    SECRETS,
    bearer,
    keys,
    live_server,
    seeded_context,
)
from trails import Context
from trails.audit.records import SearchRecord
from trails.errors import ConfigurationError
from trails.kg import SparqlEndpointGraph
from trails.service.app import create_app
from trails.service.discovery import SERVICE_FILE, read_service
from trails.service.keys import KeyRing
from trails.vector.embedders.mock import MockEmbedder

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parent.parent
TEXTS = "SELECT ?t WHERE { ?c <https://schema.org/text> ?t } ORDER BY ?t"


@pytest.fixture
def seeded(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    yield ctx
    ctx.close()


@pytest.fixture
def url(seeded):
    with live_server(create_app(seeded, keys())) as base:
        deadline = time.monotonic() + 30
        while httpx.get(base + "/health/ready").status_code != 200:
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.02)
        yield base


def test_retrieve_over_a_real_socket_with_httpx(url, seeded):
    response = httpx.post(url + "/retrieve", json={"query": "beetles", "k": 1},
                          headers=bearer("beta-writer"))
    assert response.status_code == 200
    body = response.json()
    assert [hit["snippet"] for hit in body["hits"]] == [BETA_DOCS["b2"]]
    callers = [r.caller for r in seeded.audit.pending()
               if isinstance(r, SearchRecord) and r.run_id == body["run_id"]]
    assert callers == ["beta-writer"]


def test_ingest_events_arrive_in_order_to_a_streaming_client(url):
    documents = [{"id": f"s{n}", "text": f"Swallow number {n} nests under the eaves."}
                 for n in range(5)]
    kinds, seen = [], []
    with httpx.stream("POST", url + "/ingest", json={"scope": "beta", "documents": documents},
                      headers=bearer("admin"), timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[len("data: "):])
                kinds.append(event["kind"])
                if event["kind"] == "document_ingested":
                    seen.append(event["source"])
    assert kinds[0] == "document_started" and kinds[-1] == "summary"
    assert kinds.count("summary") == 1
    assert sorted(seen) == [f"s{n}" for n in range(5)]


def test_sparqlwrapper_selects_asks_and_constructs(url):
    client = SPARQLWrapper(url + "/sparql")
    client.addCustomHttpHeader("Authorization", f"Bearer {SECRETS['alpha-reader']}")
    client.setQuery(TEXTS)
    client.setReturnFormat(JSON)
    rows = client.query().convert()["results"]["bindings"]
    assert [row["t"]["value"] for row in rows] == sorted(ALPHA_DOCS.values())
    client.setQuery(f"ASK {{ ?c <https://schema.org/text> \"{BETA_DOCS['b1']}\" }}")
    assert client.query().convert()["boolean"] is False  # beta is not alpha-reader's
    client.setQuery("CONSTRUCT { ?c <urn:says> ?t } WHERE { ?c <https://schema.org/text> ?t }")
    client.setReturnFormat(TURTLE)
    graph = Graph().parse(data=client.query().convert(), format="turtle")
    assert sorted(str(o) for o in graph.objects()) == sorted(ALPHA_DOCS.values())


def test_sparqlwrapper_post_and_a_refused_update(url):
    client = SPARQLWrapper(url + "/sparql")
    client.addCustomHttpHeader("X-API-Key", SECRETS["admin"])
    client.setMethod("POST")
    client.setQuery(TEXTS)
    client.setReturnFormat(JSON)
    assert len(client.query().convert()["results"]["bindings"]) == 4
    client.setQuery("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    with pytest.raises(Exception, match="403|Forbidden|refused"):
        client.query()


def test_rdflib_sparqlstore_reads_through_the_service(url):
    store = SPARQLStore(url + "/sparql", headers={
        "Authorization": f"Bearer {SECRETS['alpha-reader']}"})
    graph = Graph(store)
    rows = list(graph.query(TEXTS))
    assert [str(row[0]) for row in rows] == sorted(ALPHA_DOCS.values())
    assert graph.query("ASK { ?s ?p ?o }").askAnswer is True


def test_sparqlwrapper_sends_a_default_graph_and_named_graphs(url):
    client = SPARQLWrapper(url + "/sparql")
    client.addCustomHttpHeader("Authorization", f"Bearer {SECRETS['admin']}")
    client.setReturnFormat(JSON)
    client.addDefaultGraph("urn:trails:scope:beta")
    client.setQuery(TEXTS)
    rows = client.query().convert()["results"]["bindings"]
    assert [row["t"]["value"] for row in rows] == sorted(BETA_DOCS.values())
    named = SPARQLWrapper(url + "/sparql/")
    named.addCustomHttpHeader("Authorization", f"Bearer {SECRETS['alpha-reader']}")
    named.setReturnFormat(JSON)
    named.addNamedGraph("urn:trails:scope:alpha")
    named.setQuery("SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g")
    rows = named.query().convert()["results"]["bindings"]
    assert [row["g"]["value"] for row in rows] == ["urn:trails:scope:alpha"]
    named.addNamedGraph("urn:trails:scope:beta")  # not alpha-reader's
    with pytest.raises(Exception, match="403|Forbidden"):
        named.query()


def test_rdflib_sparqlstore_bound_to_a_scope_graph(url):
    for label, scope, expected in (("alpha-reader", "alpha", ALPHA_DOCS), ("admin", "beta",
                                                                           BETA_DOCS)):
        store = SPARQLStore(url + "/sparql", headers={
            "Authorization": f"Bearer {SECRETS[label]}"})
        graph = Graph(store, identifier=URIRef(f"urn:trails:scope:{scope}"))
        texts = sorted(str(o) for o in graph.objects(None, URIRef("https://schema.org/text")))
        assert texts == sorted(expected.values()), label


def test_sparql_endpoint_graph_queries_the_service_with_scopes(url):
    graph = SparqlEndpointGraph(url + "/sparql", headers=bearer("admin"))
    try:
        everything = graph.query(TEXTS)
        assert everything.column("t") == sorted([*ALPHA_DOCS.values(), *BETA_DOCS.values()])
        beta = graph.query(TEXTS, scopes=["beta"])
        assert beta.column("t") == sorted(BETA_DOCS.values())
        assert graph.query("ASK { ?s ?p ?o }", scopes=["alpha"]) is True
        triples = graph.query("CONSTRUCT { ?c <urn:says> ?t } WHERE { "
                              "?c <https://schema.org/text> ?t }", scopes=["alpha"])
        assert sorted(t.object.value for t in triples) == sorted(ALPHA_DOCS.values())
    finally:
        graph.close()


def test_sparql_endpoint_graph_with_a_scoped_key_sees_its_scope_only(url):
    graph = SparqlEndpointGraph(url + "/sparql", headers=bearer("alpha-reader"))
    try:
        assert graph.query(TEXTS).column("t") == sorted(ALPHA_DOCS.values())
        with pytest.raises(ConfigurationError, match="does not grant the scope"):
            graph.query(TEXTS, scopes=["beta"])  # the client reports the 403 as such
    finally:
        graph.close()


# -- trails serve, as a process -------------------------------------------------------------------

def _cli(*args: str, **options) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([sys.executable, "-m", "trails.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False, **options)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_trails_serve_writes_service_json_answers_and_stops_cleanly(tmp_path, stop):
    seeded_context(tmp_path / "kb").close()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    process = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", "--db", str(tmp_path / "kb"), "serve", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        info = None
        while info is None:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "service.json never appeared"
            info = read_service(tmp_path / "kb")
            time.sleep(0.05)
        assert info.pid == process.pid
        assert info.url.startswith("http://127.0.0.1:")
        assert (tmp_path / "kb" / SERVICE_FILE).stat().st_mode & 0o777 == 0o600
        token = {"Authorization": f"Bearer {info.token}"}
        assert httpx.get(info.url + "/whoami", headers=token).json()["label"].startswith(
            "local:")
        answer = httpx.post(info.url + "/retrieve", json={"query": "glaciers", "k": 1,
                                                          "scopes": ["alpha"]}, headers=token)
        assert [h["snippet"] for h in answer.json()["hits"]] == [ALPHA_DOCS["a1"]]
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert info.url in out
    assert not (tmp_path / "kb" / SERVICE_FILE).exists()
    assert "Traceback" not in err
    with Context.open(tmp_path / "kb", read_only=True) as after:
        assert after.audit.pending() == []  # folded into the graph at shutdown
        recorded = [r for r in after.audit.activities() if r.run_id == answer.json()["run_id"]]
        assert [r.caller for r in recorded] == [f"local:{getpass.getuser()}"]


def test_trails_serve_refuses_a_public_host_without_keys(tmp_path):
    seeded_context(tmp_path / "kb").close()
    result = _cli("--db", str(tmp_path / "kb"), "serve", "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 1
    assert "--keys" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "kb" / SERVICE_FILE).exists()


def test_keys_add_appends_a_hashed_key_and_prints_its_secret_once(tmp_path, seeded):
    keys_file = tmp_path / "keys.toml"
    first = run_trails("keys", "add", "analyst", "--keys", str(keys_file), "--scope", "alpha")
    second = run_trails("keys", "add", "ingester", "--keys", str(keys_file), "--scope", "*", "--write")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    secret = first.stdout.strip()
    text = keys_file.read_text()
    assert secret not in text and keys_file.stat().st_mode & 0o777 == 0o600
    doubled = run_trails("keys", "add", "analyst", "--keys", str(keys_file), "--scope", "alpha")
    assert doubled.returncode == 1 and "analyst" in doubled.stderr
    ring = KeyRing.load(keys_file)
    assert ring is not None
    key = ring.authenticate(secret)
    assert (key.label, key.scopes, key.rights) == ("analyst", frozenset({"alpha"}),
                                                   frozenset({"read"}))
    writer = ring.authenticate(second.stdout.strip())
    assert writer.scopes is None and writer.can("write")


class _HeldEmbedder(MockEmbedder):
    """Embeds as MockEmbedder, but once ``hold`` is set each batch waits for ``release``,
    saying so on ``holding``: an ingest stuck in its embedding step."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.hold, self.holding, self.release = (threading.Event(), threading.Event(),
                                                 threading.Event())

    def embed_batch(self, texts):
        if self.hold.is_set():
            self.holding.set()
            assert self.release.wait(60), "the test never released the embedder"
        return super().embed_batch(texts)


def test_the_service_keeps_answering_while_an_ingest_runs(tmp_path):
    model = _HeldEmbedder()
    ctx = seeded_context(tmp_path / "kb", embedder=model)
    outcome: dict[str, object] = {}

    def ingest(base: str) -> None:
        with httpx.stream("POST", base + "/ingest", headers=bearer("admin"), timeout=120,
                          json={"scope": "beta", "documents": [
                              {"id": "slow", "text": "Snails cross the path slowly."}]}) as answer:
            outcome["kinds"] = [json.loads(line[6:])["kind"] for line in answer.iter_lines()
                                if line.startswith("data: ")]

    try:
        with live_server(create_app(ctx, keys())) as base:
            while httpx.get(base + "/health/ready").status_code != 200:  # warm-up embeds too
                time.sleep(0.02)
            model.hold.set()
            writer = threading.Thread(target=ingest, args=(base,))
            writer.start()
            assert model.holding.wait(60), "the ingest never reached its embedding"
            # The ingest is blocked inside the library: the loop still answers.
            assert httpx.get(base + "/health", timeout=10).status_code == 200
            answer = httpx.get(base + "/sparql", params={"query": TEXTS}, timeout=10,
                               headers=bearer("alpha-reader"))
            assert answer.status_code == 200
            model.release.set()
            writer.join(60)
            assert outcome["kinds"][-1] == "summary"
            found = httpx.post(base + "/retrieve", json={"query": "snails", "k": 1,
                                                         "scopes": ["beta"]},
                               headers=bearer("admin")).json()["hits"]
            assert [hit["snippet"] for hit in found] == ["Snails cross the path slowly."]
    finally:
        model.release.set()
        ctx.close()
