"""A context whose knowledge graph is a real ``oxigraph serve`` process: ingestion, hybrid
retrieval, an outage in the middle of an ingest, a hanging endpoint, HTTP errors."""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

import pyoxigraph as ox
import pytest

from trails.context import Context
from trails.errors import (
    ConfigurationError,
    EndpointRefusedError,
    EndpointUnavailableError,
    InvalidArgumentError,
    MissingExtraError,
    SparqlError,
)
from trails.ingest import BatchEmbedded, Document, DocumentIngested, ingest, ingest_all
from trails.kg import IRI
from trails.resilience import Resilience
from trails.vector import MockEmbedder, SqliteVecStore, retrieve

httpx = pytest.importorskip("httpx")
from trails.kg import SparqlEndpointGraph
from trails.testing.servers.oxigraph import OxigraphServer

DIM = 32
TOPICS = ["rails routing", "graph databases", "vector search", "tax law", "sparql filters",
          "ruby gems", "knowledge graphs", "court rulings"]
SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?created "
         "FILTER(?created >= ?since) }")


def documents(n: int = 8, prefix: str = "d") -> list[Document]:
    return [Document(id=f"{prefix}{i}", source=f"{prefix}{i}.md", title=f"Doc {i}",
                     text=f"{TOPICS[i % len(TOPICS)].capitalize()} in document {i}. " * 3
                          + f"It covers {TOPICS[(i + 3) % len(TOPICS)]} as well.",
                     metadata={"date": dt.date(2024, 1, 1) + dt.timedelta(days=30 * i)})
            for i in range(n)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with OxigraphServer(tmp_path_factory.mktemp("oxigraph")) as running:
        yield running


def remote_context(url: str, **options) -> Context:
    embedder = MockEmbedder(dim=DIM)
    kg = SparqlEndpointGraph(url, **options)
    return Context(kg=kg, vectors=SqliteVecStore(":memory:", dim=DIM, embedder=embedder.identity),
                   embedder=embedder)


def hits(result) -> list[tuple[str, float]]:
    return [(h.iri, round(h.score, 12)) for h in result]


def test_hybrid_retrieval_with_a_date_filter_matches_the_embedded_graph(server):
    remote = remote_context(server.query_url)
    remote.kg.update("DROP ALL")
    embedded = Context.memory(MockEmbedder(dim=DIM))
    try:
        for ctx in (remote, embedded):
            assert ingest_all(documents(), ctx=ctx).ingested == 8
            assert ingest_all(documents(3, "legal-"), ctx=ctx, scope="legal").ingested == 3
        for query, since, scope in [("graph databases", dt.date(2024, 3, 1), None),
                                    ("tax law rulings", dt.date(2024, 6, 1), None),
                                    ("rails", dt.date(2023, 1, 1), "legal"),
                                    ("anything", dt.date(2030, 1, 1), None)]:
            args = {"mode": "hybrid", "k": 5, "sparql_filter": SINCE, "bindings": {"since": since},
                    "scope": scope}
            found = retrieve(query, ctx=remote, **args)
            assert hits(found) == hits(retrieve(query, ctx=embedded, **args))
            assert found.candidates == retrieve(query, ctx=embedded, **args).candidates
            for hit in found:  # the filter held: only documents created since `since`
                doc = hit.iri.split("/v/")[0]
                created = remote.kg.query("SELECT ?c WHERE { ?doc schema:dateCreated ?c }",
                                          {"doc": IRI(doc)}, scopes=[scope or "default"]).column("c")
                assert created and created[0] >= since
        assert hits(retrieve("graph", ctx=remote, mode="hybrid", k=20, scope="legal")) == hits(
            retrieve("graph", ctx=embedded, mode="hybrid", k=20, scope="legal"))
        assert remote.verify().ok and embedded.verify().ok
        assert len(remote.kg) == len(embedded.kg)
        # Unchanged documents are skipped on the endpoint too.
        assert ingest_all(documents(), ctx=remote).skipped == 8
    finally:
        remote.close()
        embedded.close()


def test_context_open_with_a_remote_graph(server, tmp_path):
    kg = SparqlEndpointGraph(server.query_url)
    kg.update("DROP ALL")
    with Context.open(tmp_path / "ctx", kg=kg, embedder=MockEmbedder(dim=DIM)) as ctx:
        assert ingest_all(documents(2), ctx=ctx).ingested == 2
        assert ctx.stats()["quads"] == len(kg) > 0
        assert len(retrieve("graph databases", ctx=ctx, mode="vector", k=3)) == 2


def test_outage_mid_ingest_fails_fast_loses_nothing_and_recovers(tmp_path):
    """The server stops while a run is embedding; its next graph write fails fast. Whatever the
    pipeline had committed survives, staged vectors stay invisible, a re-run completes."""
    with OxigraphServer(tmp_path / "graph") as server:
        ctx = remote_context(server.query_url, timeout=2.0)
        docs = documents(6)
        assert ingest_all(docs[:2], ctx=ctx).ingested == 2  # committed before the outage
        before = {h.iri for h in retrieve("document", ctx=ctx, mode="hybrid", k=50,
                                          sparql_filter=SINCE, bindings={"since": dt.date(2000, 1, 1)})}
        assert len(before) == 2

        events, committed = ingest(docs, ctx=ctx, batch_size=1), []
        started = None
        with pytest.raises(EndpointUnavailableError) as failure:
            for event in events:
                if isinstance(event, DocumentIngested):
                    committed.append(event.doc_iri)
                if isinstance(event, BatchEmbedded) and started is None:
                    server.stop()  # the next commit's graph write will find no server
                    started = time.monotonic()
        elapsed = time.monotonic() - started
        assert elapsed < 2.0, f"the ingest took {elapsed:.1f} s to fail"
        assert len(committed) < 4  # docs 0-1 skipped; the run did not get through docs 2-5
        message = str(failure.value)
        assert server.base_url in message and "Nothing partial was committed" in message

        # While the endpoint is down, graph calls fail fast with the same error.
        with pytest.raises(EndpointUnavailableError):
            ctx.verify()

        server.start()
        # What was committed survived the outage: the first two documents and doc 2.
        report = ctx.verify()
        assert report.uncommitted_vectors  # the interrupted commit's staged vectors: invisible
        assert not report.chunks_without_vectors and not report.vectors_without_chunks
        graph_docs = set(ctx.kg.query("SELECT ?d WHERE { ?d trails:currentVersion ?v }").column("d"))
        assert {h.split("/v/")[0] for h in before} | set(committed) == graph_docs
        still = {h.iri for h in retrieve("document", ctx=ctx, mode="hybrid", k=50,
                                         sparql_filter=SINCE, bindings={"since": dt.date(2000, 1, 1)})}
        assert before <= still and len(still) == 2 + len(committed)

        stats = ingest_all(docs, ctx=ctx)  # the re-run finishes the work
        assert (stats.ingested, stats.skipped, stats.failed) == (4 - len(committed),
                                                                  2 + len(committed), 0)
        assert ctx.verify().ok
        found = retrieve("document", ctx=ctx, mode="hybrid", k=50, sparql_filter=SINCE,
                         bindings={"since": dt.date(2000, 1, 1)})
        assert len(found) == 6 and len({h.iri.split("/v/")[0] for h in found}) == 6
        ctx.close()


@pytest.fixture
def hanging_url():
    """A listening socket that accepts connections (the kernel does) and never answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/query"
    sock.close()


def test_a_hanging_endpoint_times_out_quickly(hanging_url):
    # One try per call: the timeout alone is under test here (retries: test_resilience_faults).
    kg = SparqlEndpointGraph(hanging_url, timeout=0.3, resilience=Resilience(attempts=1))
    for call in (lambda: kg.query("ASK { ?s ?p ?o }"),
                 lambda: kg.update("INSERT DATA { <https://x/a> <https://x/b> 1 }"),
                 lambda: kg.extend([ox.Quad(ox.NamedNode("https://x/a"), ox.NamedNode("https://x/b"),
                                            ox.Literal("c"))]),
                 lambda: kg.query("SELECT * WHERE { ?s ?p ?o }", scopes=["default"]),
                 lambda: kg.select_iris("SELECT ?s WHERE { ?s ?p ?o }", scopes=["a"])):
        started = time.monotonic()
        with pytest.raises(EndpointUnavailableError, match="did not answer") as failure:
            call()
        assert time.monotonic() - started < 1.5
        assert hanging_url.rsplit("/", 1)[0] in str(failure.value)
    kg.close()


def test_a_refused_connection_is_endpoint_unavailable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    kg = SparqlEndpointGraph(f"http://127.0.0.1:{port}/query", timeout=1.0)
    with pytest.raises(EndpointUnavailableError, match="refused the connection"):
        kg.query("ASK {}")
    with pytest.raises(EndpointUnavailableError, match=f"127.0.0.1:{port}/update"):
        kg.update("CLEAR DEFAULT")


@contextlib.contextmanager
def _serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    """A loopback HTTP server answering with ``handler`` while the block runs; its port."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


class _Canned(http.server.BaseHTTPRequestHandler):
    status = 503
    body = b"the store is overloaded"
    media = "text/plain"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(self.status)
        if self.media:
            self.send_header("Content-Type", self.media)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(("status", "error", "words"), [
    (503, EndpointUnavailableError, "HTTP 503: the store is overloaded"),
    (500, EndpointUnavailableError, "HTTP 500"),
    (401, ConfigurationError, "credentials"),
    (404, ConfigurationError, "Check the URL"),
    (400, SparqlError, "the store is overloaded"),
])
def test_http_errors(status, error, words):
    handler = type("Handler", (_Canned,), {"status": status})
    with _serving(handler) as port:
        kg = SparqlEndpointGraph(f"http://127.0.0.1:{port}/query", timeout=2.0)
        with pytest.raises(error, match=words):
            kg.query("ASK {}", scopes=["a"])
        with pytest.raises(error, match=words):
            kg.update("CLEAR DEFAULT")
        kg.close()


@pytest.mark.parametrize(("media", "body"), [
    ("text/html", b"<html><form>Sign in</form></html>"),          # a proxy's login page
    ("application/sparql-results+json", b'{"head": {"vars": ['),  # cut short
    ("", b"ok")])
def test_an_answer_that_is_no_answer_is_refused_as_the_endpoints_fault(media, body):
    handler = type("Handler", (_Canned,), {"status": 200, "body": body, "media": media})
    with _serving(handler) as port:
        kg = SparqlEndpointGraph(f"http://127.0.0.1:{port}/query", timeout=2.0)
        # Not a SparqlError: the query is fine, the endpoint (or what stands in front) is not.
        with pytest.raises(EndpointRefusedError, match="names a SPARQL endpoint") as failure:
            kg.select_iris("SELECT ?s WHERE { ?s ?p ?o }", scopes=["a"])
        assert not isinstance(failure.value, SparqlError)
        assert isinstance(failure.value, ConfigurationError)
        kg.close()


@pytest.mark.parametrize(("media", "body", "query"), [
    ("application/sparql-results+json", (b'{"head": {"vars": ["s"]}, "results": {"bindings": '
                                         b'[{"s": {"type": "uri", "value": "https://x/a"}}]}}'),
     "CONSTRUCT WHERE { ?s ?p ?o }"),
    ("application/n-triples", b"<https://x/a> <https://x/b> <https://x/c> .\n",
     "SELECT ?s WHERE { ?s ?p ?o }"),
    ("application/sparql-results+json", b'{"head": {}, "boolean": true}',
     "DESCRIBE <https://x/a>"),
    ("application/n-triples", b"", "ASK { ?s ?p ?o }")])
def test_an_answer_of_another_kind_than_the_query_asks_is_refused(media, body, query):
    handler = type("Handler", (_Canned,), {"status": 200, "body": body, "media": media})
    with _serving(handler) as port:
        kg = SparqlEndpointGraph(f"http://127.0.0.1:{port}/query", timeout=2.0)
        # Was returned as it came: solutions for a CONSTRUCT, a list of triples for a SELECT.
        with pytest.raises(EndpointRefusedError, match=f"answered an? {query.split()[0]} query"):
            kg.query(query, scopes=["a"])
        kg.close()


class _Recording(_Canned):
    """Answers ``status`` and keeps the Authorization header of each request."""

    seen: ClassVar[list[str | None]] = []

    def do_POST(self):
        self.seen.append(self.headers.get("Authorization"))
        super().do_POST()

    do_GET = do_POST


@pytest.mark.parametrize("status", [401, 503, 200])
def test_credentials_in_the_url_are_sent_and_never_shown(status, tmp_path, monkeypatch):
    handler = type("Handler", (_Recording,), {"status": status, "seen": [],
                                              "body": b"<html>no</html>"})
    with _serving(handler) as port:
        kg = SparqlEndpointGraph(f"http://ann:s%40cret@127.0.0.1:{port}/query", timeout=2.0,
                                 resilience=Resilience(attempts=1))
        calls = [lambda: kg.query("ASK {}", scopes=["a"]), lambda: kg.update("CLEAR DEFAULT")]
        for call in calls[:1] if status == 200 else calls:  # HTML: no results, but updated
            with pytest.raises((ConfigurationError, EndpointUnavailableError, SparqlError)) as failure:
                call()
            assert f"http://127.0.0.1:{port}/" in str(failure.value)
            assert "s@cret" not in str(failure.value) and "s%40cret" not in str(failure.value)
        # Sent as basic auth, as httpx sends a URL's credentials: ann:s@cret.
        assert handler.seen == ["Basic YW5uOnNAY3JldA=="] * (1 if status == 200 else 2)
        shown = [repr(kg), kg.query_url, kg.update_url, str(kg.recorded_settings(tmp_path))]
        assert not any("cret" in text or "ann" in text for text in shown), shown
        kg.close()


class _Redirecting(_Canned):
    """Sends every request elsewhere, as a server moved to https or to another path does."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(self.status)
        self.send_header("Location", "/sparql/" if self.status == 308 else
                         "https://graph.example.org/query")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST


@pytest.mark.parametrize(("status", "target"), [
    (301, "https://graph.example.org/query"), (302, "https://graph.example.org/query"),
    (308, "http://127.0.0.1:{port}/sparql/")])  # a relative Location, resolved
def test_a_redirect_is_a_configuration_error_naming_where_to(status, target):
    handler = type("Handler", (_Redirecting,), {"status": status})
    with _serving(handler) as port:
        kg = SparqlEndpointGraph(f"http://127.0.0.1:{port}/query", timeout=2.0)
        for call in (lambda: kg.query("ASK {}", scopes=["a"]), lambda: kg.update("CLEAR DEFAULT")):
            # Not "unavailable, retry later": the URL is wrong, and trying again never helps.
            with pytest.raises(ConfigurationError, match=f"redirect to {target.format(port=port)};") as failure:
                call()
            assert f"HTTP {status}" in str(failure.value)
        kg.close()


def test_a_union_default_graph_server_cannot_confine_the_default_scope():
    with OxigraphServer(persistent=False, union_default_graph=True) as server:
        kg = SparqlEndpointGraph(server.query_url)
        kg.update("INSERT DATA { <https://x/d> <https://x/p> 1 . "
                  "GRAPH <urn:trails:scope:a> { <https://x/a> <https://x/p> 2 } }")
        with pytest.raises(ConfigurationError, match="union-default-graph"):
            kg.query("SELECT ?s WHERE { ?s ?p ?o }", scopes=["default"])
        assert kg.query("SELECT ?s WHERE { ?s ?p ?o }", scopes=["a"]).column("s") == ["https://x/a"]
        assert sorted(kg.query("SELECT ?s WHERE { ?s ?p ?o }").column("s")) == [
            "https://x/a", "https://x/d"]
        kg.close()


def test_a_server_that_names_its_default_graph_gets_protocol_parameters(server):
    sent = []
    kg = SparqlEndpointGraph(server.query_url, default_graph_uri="urn:x-arq:DefaultGraph")
    # Queries are sent as URL-encoded forms: the protocol parameters are in the body.
    kg.client.event_hooks["request"].append(
        lambda request: sent.append(httpx.QueryParams(request.content.decode())))
    kg.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }", scopes=["default", "a"])
    params = sent[-1]
    assert params.get_list("default-graph-uri") == ["urn:trails:scope:a", "urn:x-arq:DefaultGraph"]
    assert params.get_list("named-graph-uri") == ["urn:trails:scope:a"]
    kg.query("ASK {}", scopes=["default"])
    assert sent[-1].get_list("default-graph-uri") == ["urn:x-arq:DefaultGraph"]
    assert sent[-1].get_list("named-graph-uri") == []
    kg.query("ASK {}")
    assert "union-default-graph" in sent[-1]
    kg.close()


def test_import_trails_kg_does_not_import_httpx():
    code = "import sys, trails.kg, trails.context; assert 'httpx' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_missing_httpx_names_the_remote_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingExtraError, match=r"trails\[remote\]"):
        SparqlEndpointGraph("http://127.0.0.1:9/query")


@pytest.mark.parametrize(("name", "value"), [
    ("timeout", float("inf")), ("timeout", float("nan")), ("timeout", True), ("timeout", "10"),
    ("batch_size", 2.5), ("batch_size", True)])
def test_a_timeout_or_batch_size_no_call_could_run_with_is_refused(name, value):
    # An infinite timeout let a call wait for ever; NaN made every request fail at the
    # socket with a plain ValueError, as if each query were a bad argument.
    with pytest.raises(InvalidArgumentError, match=name):
        SparqlEndpointGraph("http://127.0.0.1:9/query", **{name: value})


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="batch_size"):
        SparqlEndpointGraph("http://127.0.0.1:9/query", batch_size=0)
    with pytest.raises(ValueError, match="timeout"):
        SparqlEndpointGraph("http://127.0.0.1:9/query", timeout=0)
    kg = SparqlEndpointGraph("http://127.0.0.1:9/sparql")
    assert kg.update_url == "http://127.0.0.1:9/sparql"
    assert SparqlEndpointGraph("https://h:1/query").update_url == "https://h:1/update"
    with pytest.raises(ValueError, match="scopes"):
        kg.query("ASK {}", scopes=[])
