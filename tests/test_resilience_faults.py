"""Real faults on loopback: an ``oxigraph serve`` process stopped mid-run and restarted on the
same port (the circuit opens, calls fail without a request, a probe closes it again), ports
that accept and never answer (each call ends within its bound; an update that may have
arrived is not sent twice), a refused update retried, a Qdrant server that never answers, and
an OpenAI-compatible embeddings server shut down under a hybrid query (it degrades to the
keyword ranking and says so; the graph failing is an error, never an unfiltered answer)."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from typing import ClassVar

import pytest

from trails import retrieve
from trails.context import Context
from trails.errors import EmbeddingError, EndpointUnavailableError
from trails.ingest import Document, ingest_all
from trails.kg import OxigraphGraph
from trails.resilience import Resilience
from trails.vector.stores.sqlite_vec import SqliteVecStore

httpx = pytest.importorskip("httpx")
from trails.kg import SparqlEndpointGraph
from trails.testing.servers.oxigraph import OxigraphServer

pytestmark = pytest.mark.timeout(120)

QUICK = Resilience(attempts=2, initial_backoff=0.01, max_backoff=0.05, failure_threshold=2,
                   cool_down=0.5)
ASK = "ASK { ?s ?p ?o }"
INSERT = "INSERT DATA { <https://x/a> <https://x/b> 1 }"


def counted(kg: SparqlEndpointGraph) -> list[str]:
    """The requests ``kg`` starts (one per try, before it connects)."""
    sent: list[str] = []
    kg.client.event_hooks["request"].append(lambda request: sent.append(request.url.path))
    return sent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Silent:
    """A port that accepts connections and never answers; counts the connections."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(connection)  # held open, never read, never answered

    def close(self) -> None:
        self.sock.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def silent():
    listener = Silent()
    yield listener
    listener.close()


# -- a SPARQL endpoint stopped and restarted ------------------------------------------------


def test_a_stopped_endpoint_opens_its_circuit_and_a_probe_closes_it_after_restart(tmp_path):
    with OxigraphServer(tmp_path / "graph") as server:
        kg = SparqlEndpointGraph(server.query_url, timeout=2.0, resilience=QUICK)
        sent = counted(kg)
        kg.update(INSERT)
        assert kg.query(ASK) is True

        server.stop()
        for _ in range(QUICK.failure_threshold):  # each call tries twice, then fails
            with pytest.raises(EndpointUnavailableError, match="refused the connection"):
                kg.query(ASK)
        assert len(sent) == 2 + 2 * QUICK.failure_threshold
        before = len(sent)
        for _ in range(20):  # the circuit is open: nothing is sent
            with pytest.raises(EndpointUnavailableError, match="circuit is open") as failure:
                kg.query(ASK)
        assert len(sent) == before
        assert server.base_url in str(failure.value) and "SPARQL endpoint" in str(failure.value)

        server.start()  # same port, same data
        time.sleep(QUICK.cool_down)  # the circuit's cool-down
        assert kg.query(ASK) is True  # the probe: the circuit closes
        assert len(sent) == before + 1
        assert kg.query("SELECT ?o WHERE { <https://x/a> <https://x/b> ?o }").column("o") == [1]
        kg.close()


def test_a_probe_that_finds_the_server_still_down_keeps_the_circuit_open(tmp_path):
    with OxigraphServer(tmp_path / "graph") as server:
        kg = SparqlEndpointGraph(server.query_url, timeout=2.0, resilience=QUICK)
        sent = counted(kg)
        server.stop()
        for _ in range(QUICK.failure_threshold):
            with pytest.raises(EndpointUnavailableError):
                kg.query(ASK)
        time.sleep(QUICK.cool_down)
        before = len(sent)
        with pytest.raises(EndpointUnavailableError, match="refused the connection"):
            kg.query(ASK)  # the probe: one try only
        assert len(sent) == before + 1
        with pytest.raises(EndpointUnavailableError, match="circuit is open"):
            kg.query(ASK)
        assert len(sent) == before + 1
        kg.close()


def test_queries_during_a_restart_under_load_fail_cleanly_and_then_all_succeed(tmp_path):
    """Eight threads query while the server stops and starts: every call either answers or
    raises EndpointUnavailableError (nothing else, nothing hangs), and all answer after."""
    with OxigraphServer(tmp_path / "graph") as server:
        kg = SparqlEndpointGraph(server.query_url, timeout=2.0, resilience=QUICK)
        kg.update(INSERT)
        stop = threading.Event()
        outcomes: list[object] = []

        def worker() -> None:
            while not stop.is_set():
                try:
                    outcomes.append(kg.query(ASK))
                except EndpointUnavailableError as exc:
                    outcomes.append(exc)
                except Exception as exc:  # noqa: BLE001 - recorded for the assertion
                    outcomes.append(("unexpected", exc))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        server.stop()
        time.sleep(1.0)
        server.start()
        time.sleep(QUICK.cool_down + 0.5)
        stop.set()
        for thread in threads:
            thread.join(30)
        assert not any(isinstance(o, tuple) for o in outcomes), [o for o in outcomes
                                                                 if isinstance(o, tuple)]
        assert any(o is True for o in outcomes)
        assert any(isinstance(o, EndpointUnavailableError) for o in outcomes)
        assert all(kg.query(ASK) is True for _ in range(5))
        kg.close()


class Overloaded(http.server.BaseHTTPRequestHandler):
    """Answers the first ``busy`` requests with ``status`` (and a Retry-After), then a SPARQL
    ASK result (a query) or 204 (an update); records each request's path."""

    busy = 2
    status = 503
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append(self.path)
        if len(type(self).seen) <= type(self).busy:
            body = b"overloaded"
            self.send_response(type(self).status)
            self.send_header("Retry-After", "0.05")
        elif self.path.endswith("/update"):
            self.send_response(204)
            self.end_headers()
            return
        else:
            body = b'{"head": {}, "boolean": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def overloaded():
    Overloaded.seen, Overloaded.busy = [], 2
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Overloaded)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/query"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("status", [503, 429])
def test_a_busy_endpoint_is_asked_again_after_retry_after_but_an_update_is_not(overloaded,
                                                                                status):
    Overloaded.status = status
    kg = SparqlEndpointGraph(overloaded, timeout=2.0,
                             resilience=Resilience(attempts=3, max_retry_after=1.0))
    assert kg.query(ASK) is True  # two busy answers, then the answer
    assert Overloaded.seen == ["/query"] * 3
    Overloaded.seen, Overloaded.busy = [], 1
    with pytest.raises(EndpointUnavailableError, match=f"HTTP {status}"):
        kg.update(INSERT)  # the server may hold it: not sent twice
    assert Overloaded.seen == ["/update"]
    kg.close()


# -- ports that never answer, updates that must not be sent twice ----------------------------


def test_a_silent_endpoint_fails_within_the_timeout_bound_and_retries_only_reads(silent):
    kg = SparqlEndpointGraph(f"http://127.0.0.1:{silent.port}/query", timeout=0.3,
                             resilience=Resilience(attempts=3, initial_backoff=0.01,
                                                   failure_threshold=100))
    with pytest.raises(EndpointUnavailableError, match="did not answer a query within 0.3 s"):
        kg.query(ASK)
    assert len(silent.accepted) == 3  # a read is safe to send again
    with pytest.raises(EndpointUnavailableError, match="did not answer an update"):
        kg.update(INSERT)
    assert len(silent.accepted) == 4  # the server may have the update: sent once
    kg.close()


def test_a_refused_update_is_retried_since_it_never_arrived():
    port = free_port()
    kg = SparqlEndpointGraph(f"http://127.0.0.1:{port}/query", timeout=1.0,
                             resilience=Resilience(attempts=3, initial_backoff=0.01))
    sent = counted(kg)
    with pytest.raises(EndpointUnavailableError, match="refused the connection"):
        kg.update(INSERT)
    assert sent == ["/update"] * 3
    kg.close()


def test_a_silent_qdrant_server_fails_within_the_timeout_bound(silent):
    qdrant = pytest.importorskip("qdrant_client")
    from trails.vector.stores.qdrant import QdrantStore

    assert qdrant is not None
    with pytest.raises(EndpointUnavailableError, match=f"127.0.0.1:{silent.port}"):
        QdrantStore(url=f"http://127.0.0.1:{silent.port}", dim=3, timeout=1,
                    resilience=Resilience(attempts=2, initial_backoff=0.01))
    assert len(silent.accepted) >= 2  # the read (does the collection exist?) was retried


# -- an embeddings server shut down under a hybrid query ------------------------------------


TEXTS = ["Rails routing maps URLs to controllers.", "Graph databases store triples.",
         "Tax law governs court rulings.", "Ruby gems package Rails plugins.",
         "Vector search ranks embeddings.", "Knowledge graphs link court rulings to law."]
DOCS_FILTER = "SELECT ?iri WHERE { VALUES ?iri { <trails://local/doc/d0> <trails://local/doc/d3> } }"


@pytest.fixture
def openai_context():
    pytest.importorskip("openai")
    from trails.testing.servers.openai import OpenAICompatibleServer
    from trails.vector.embedders.openai import OpenAIEmbedder

    server = OpenAICompatibleServer(api_key="test").start()
    embedder = OpenAIEmbedder(api_key="test", base_url=server.base_url, dim=64, max_retries=1,
                              initial_backoff=0.01, timeout=2.0,
                              resilience={"failure_threshold": 3, "cool_down": 60.0})
    ctx = Context(OxigraphGraph(), SqliteVecStore(":memory:", dim=64), embedder)
    ingest_all([Document(id=f"d{i}", source=f"d{i}.md", text=text)
                for i, text in enumerate(TEXTS)], ctx=ctx)
    yield ctx, server
    server.close()
    ctx.close()


def test_a_hybrid_query_degrades_to_keywords_when_the_embedder_dies(openai_context):
    ctx, server = openai_context
    healthy = retrieve("rails plugins", ctx, k=3, sparql_filter=DOCS_FILTER)
    assert healthy.degraded == () and "vector" in healthy.rankings
    server.close()  # the process's server is gone: connections are refused
    for _ in range(5):  # connection refused, then the open circuit: both degrade
        found = retrieve("rails plugins", ctx, k=3, sparql_filter=DOCS_FILTER)
        assert len(found.degraded) == 1 and found.degraded[0].startswith("embedder unreachable")
        assert found.plan == "keyword-fallback" and found.candidates == 2
        expected = ctx.vectors.keyword_search("rails plugins", 3, ["trails://local/doc/d0",
                                                                   "trails://local/doc/d3"])
        assert [(h.iri, h.score) for h in found] == [(h.id, h.score) for h in expected]
        assert {h.document for h in found} <= {"trails://local/doc/d0", "trails://local/doc/d3"}
        assert found.to_dict()["degraded"] == list(found.degraded)
        assert "degraded: embedder unreachable" in found.explain()
        assert "degraded: embedder unreachable" in str(found)
        assert "degraded: embedder unreachable" in found._repr_html_()
    assert "circuit is open" in found.degraded[0]  # the breaker stopped the retries


def test_vector_mode_with_the_embedder_down_is_an_error_unless_keywords_are_asked_for(
        openai_context):
    ctx, server = openai_context
    server.close()
    with pytest.raises(EmbeddingError, match="fallback='keyword'"):
        retrieve("rails", ctx, mode="vector", k=3)
    found = retrieve("rails", ctx, mode="vector", k=3, fallback="keyword")
    assert found.degraded and found.mode == "vector"
    assert [h.iri for h in found] == [h.id for h in ctx.vectors.keyword_search("rails", 3)]
    with pytest.raises((EmbeddingError, EndpointUnavailableError), match="fallback=None"):
        retrieve("rails", ctx, k=3, fallback=None)


def test_the_audit_record_of_a_degraded_answer_says_so(openai_context):
    ctx, server = openai_context
    ctx.audit.enabled = True
    server.close()
    found = retrieve("court rulings", ctx, k=2, caller="tester")
    assert found.degraded and found.run_id is not None
    (record,) = ctx.audit.pending()
    assert record.run_id == found.run_id and record.degraded == list(found.degraded)


def test_the_graph_failing_is_an_error_never_an_unfiltered_answer(tmp_path):
    from trails.vector.embedders.mock import MockEmbedder

    with OxigraphServer(tmp_path / "graph") as server:
        embedder = MockEmbedder(dim=16)
        ctx = Context(SparqlEndpointGraph(server.query_url, timeout=1.0, resilience=QUICK),
                      SqliteVecStore(":memory:", dim=16, embedder=embedder.identity), embedder)
        ingest_all([Document(id=f"d{i}", source=f"d{i}.md", text=text)
                    for i, text in enumerate(TEXTS)], ctx=ctx)
        assert retrieve("rails", ctx, k=2, sparql_filter=DOCS_FILTER)
        server.stop()
        for _ in range(4):  # refused, then the open circuit: an error either way
            with pytest.raises(EndpointUnavailableError, match=server.base_url):
                retrieve("rails", ctx, k=2, sparql_filter=DOCS_FILTER)
        for mode in ("hybrid", "vector"):  # no filter: the expiry check needs the graph too
            with pytest.raises(EndpointUnavailableError, match="circuit is open"):
                retrieve("rails", ctx, mode=mode, k=2)
        ctx.close()


@contextlib.contextmanager
def served(ctx):
    """A test client of the service over ``ctx``, once its warm-up is done."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from trails.service.app import create_app

    with TestClient(create_app(ctx, None)) as client:
        deadline = time.monotonic() + 30
        while client.get("/health/ready").status_code != 200:
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.02)
        yield client


def test_the_service_answers_degraded_over_http_when_the_embedder_dies(openai_context):
    ctx, server = openai_context
    with served(ctx) as client:
        asked = {"query": "rails plugins", "k": 3, "filter": DOCS_FILTER}
        healthy = client.post("/retrieve", json=asked)
        assert healthy.status_code == 200 and healthy.json()["degraded"] == []
        server.close()
        answer = client.post("/retrieve", json=asked)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert len(body["degraded"]) == 1 and body["degraded"][0].startswith(
            "embedder unreachable")
        assert body["plan"] == "keyword-fallback" and body["hits"]
        assert {h["document"] for h in body["hits"]} <= {"trails://local/doc/d0",
                                                           "trails://local/doc/d3"}
        vector_only = client.post("/retrieve", json={"query": "rails plugins", "mode": "vector"})
        assert vector_only.status_code == 503, vector_only.text
        assert vector_only.json()["error"] in ("EndpointUnavailableError", "EmbeddingError")
        asked_for = client.post("/retrieve", json={"query": "rails plugins", "mode": "vector",
                                                   "fallback": "keyword"})
        assert asked_for.status_code == 200 and asked_for.json()["degraded"]
        never = client.post("/retrieve", json={**asked, "fallback": "none"})
        assert never.status_code == 503, never.text


def test_health_reports_each_remote_backend_circuit(openai_context):
    ctx, server = openai_context
    with served(ctx) as client:
        base = server.base_url
        embedders = [b for b in client.get("/health").json()["backends"]
                     if base.startswith(b["url"])]
        assert [b["circuit"] for b in embedders] == ["closed"]
        server.close()
        for _ in range(3):  # the fixture's threshold: three failed calls open the circuit
            client.post("/retrieve", json={"query": "rails plugins", "k": 3})
        states = [b for b in client.get("/health").json()["backends"]
                  if base.startswith(b["url"])]
        assert [(b["circuit"], b["failures"] >= 3) for b in states] == [("open", True)]
