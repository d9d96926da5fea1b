"""The HTTP application route by route, through FastAPI's TestClient (the wide matrix; the
real server and real clients are in test_service_live.py)."""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.parse

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from service_support import ALPHA_DOCS, BETA_DOCS, bearer, keys, seeded_context
from trails.audit.records import DeletionRecord, SearchRecord
from trails.context import Context
from trails.ingest.events import IngestionStats
from trails.kg import SparqlEndpointGraph
from trails.resilience import Resilience, breaker_for
from trails.service import state as state_module
from trails.service.app import create_app
from trails.service.state import WARM_UP_CALLER
from trails.vector import SqliteVecStore
from trails.vector.embedders.mock import MockEmbedder

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def seeded(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    yield ctx
    ctx.close()


@pytest.fixture
def client(seeded):
    with TestClient(create_app(seeded, keys())) as test_client:
        _wait_ready(test_client)
        yield test_client


def _wait_ready(test_client: TestClient) -> None:
    for _ in range(500):
        if test_client.get("/health/ready").status_code == 200:
            return
        time.sleep(0.01)
    raise AssertionError("the service never became ready")


def _retrieve(client, label, **body):
    return client.post("/retrieve", json={"query": "glaciers", **body}, headers=bearer(label))


def _snippets(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [hit["snippet"] for hit in response.json()["hits"]]


# -- /retrieve ---------------------------------------------------------------------------------

def test_retrieve_answers_hits_with_provenance_query_and_degraded(client):
    response = _retrieve(client, "admin", scopes=["alpha"], k=1)
    body = response.json()
    assert _snippets(response) == [ALPHA_DOCS["a1"]]
    assert body["query"] == "glaciers"
    assert body["degraded"] == []
    assert body["hits"][0]["document"].endswith("/doc/a1")
    assert body["mode"] == "hybrid" and body["run_id"]


def test_a_scoped_key_reads_only_its_scopes_when_it_names_none(client):
    texts = _snippets(_retrieve(client, "alpha-reader", k=10))
    assert sorted(texts) == sorted(ALPHA_DOCS.values())


def test_a_scoped_key_asking_for_another_scope_is_refused(client):
    response = _retrieve(client, "alpha-reader", scopes=["beta"])
    assert response.status_code == 403
    assert response.json()["error"] == "PermissionDeniedError"
    assert "beta" in response.json()["message"]


def test_every_retrieve_is_recorded_with_the_key_label_as_caller(client, seeded):
    run_id = _retrieve(client, "alpha-reader").json()["run_id"]
    records = [r for r in seeded.audit.pending() if isinstance(r, SearchRecord)]
    assert [(r.run_id, r.caller) for r in records if r.run_id == run_id] == [
        (run_id, "alpha-reader")]


def test_bindings_take_sparql_json_terms_and_json_scalars(client):
    document = _retrieve(client, "admin", scopes=["beta"], query="bark").json()["hits"][0][
        "document"]
    by_term = _retrieve(client, "admin", scopes=["alpha", "beta"], query="anything",
                        filter="SELECT ?c WHERE { ?c schema:isPartOf ?doc }",
                        bindings={"doc": {"type": "uri", "value": document}})
    assert _snippets(by_term) == [BETA_DOCS["b2"]]
    by_scalar = _retrieve(client, "admin", scopes=["alpha", "beta"], query="anything",
                          filter="SELECT ?c WHERE { ?c schema:text ?t FILTER(CONTAINS(?t, ?w)) }",
                          bindings={"w": "Alpacas"})
    assert _snippets(by_scalar) == [ALPHA_DOCS["a2"]]


def test_a_malformed_term_binding_is_a_400(client):
    response = _retrieve(client, "admin", filter="SELECT ?c WHERE { ?c schema:isPartOf ?d }",
                         bindings={"d": {"type": "uri", "value": "not an iri"}})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "InvalidArgumentError"


@pytest.mark.parametrize("value, datatype", [
    ("2024-13-01", "date"), ("2024-01-01", "dateTime"), ("ten", "integer"), ("yes", "boolean")])
def test_an_ill_typed_literal_binding_is_a_400_not_an_empty_answer(client, value, datatype):
    """"2024-13-01"^^xsd:date compares with nothing: bound as it is, the filter selected no
    chunk and the answer was 200 with no hits."""
    response = _retrieve(
        client, "admin", scopes=["alpha", "beta"],
        filter="SELECT ?c WHERE { ?c schema:isPartOf ?d . ?d schema:dateCreated ?t "
               "FILTER(?t >= ?since) }",
        bindings={"since": {"type": "literal", "value": value,
                            "datatype": f"http://www.w3.org/2001/XMLSchema#{datatype}"}})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "InvalidArgumentError"
    assert f"no xsd:{datatype} value" in response.json()["message"]
    assert "since" in response.json()["message"]


def test_steps_by_name_run_and_unknown_ones_are_400(client):
    ran = _retrieve(client, "admin", scopes=["alpha"],
                    steps=[{"name": "parent_document", "options": {"mode": "document"}}])
    assert ran.status_code == 200
    assert ran.json()["hits"][0]["metadata"]["document_text"] in ALPHA_DOCS.values()
    assert _retrieve(client, "admin", steps=[{"name": "shell"}]).status_code == 400
    bad_option = _retrieve(client, "admin", steps=[{"name": "mmr", "options": {"x": 1}}])
    assert bad_option.status_code == 400 and "lambda_" in bad_option.json()["message"]
    bad_value = _retrieve(client, "admin", steps=[{"name": "mmr", "options": {"lambda_": 7}}])
    assert bad_value.status_code == 400
    no_reranker = _retrieve(client, "admin", steps=[{"name": "rerank"}])
    assert no_reranker.status_code == 400 and "--reranker" in no_reranker.json()["message"]


def test_parent_document_takes_the_data_flows_min_score_over_http(client):
    """The data flow's parent documents for confident hits only: over HTTP as in Python
    (ParentDocument(min_score=...)); the hits below it pass through unexpanded."""
    plain = _retrieve(client, "admin", scopes=["alpha"], k=3).json()["hits"]
    scores = sorted(hit["score"] for hit in plain)
    floor = scores[-1]  # only the best hit reaches it
    ran = _retrieve(client, "admin", scopes=["alpha"], k=3, steps=[
        {"name": "parent_document", "options": {"mode": "document", "min_score": floor}}])
    assert ran.status_code == 200, ran.text
    expanded = ["document_text" in hit["metadata"] for hit in ran.json()["hits"]]
    assert expanded == [hit["score"] >= floor for hit in plain] and sum(expanded) >= 1
    bad = _retrieve(client, "admin", steps=[
        {"name": "parent_document", "options": {"min_score": "high"}}])
    assert bad.status_code == 400 and "min_score" in bad.json()["message"]


@pytest.mark.parametrize("body", [
    {"mode": "vector", "filter": "SELECT ?c WHERE { ?c ?p ?o }"},
    {"mode": "graph"},
    {"filter": "SELECT ?c WHERE { ?c ?p"},
    {"filter": "SELECT ?c WHERE { SERVICE <http://evil/> { ?c ?p ?o } }"},
    {"scopes": ["no such scope!"]},
    {"scopes": ["nothing-here"]},
    {"now": "yesterday"},
    {"now": "2026-01-01T00:00:00"},
    {"mode": "graph", "filter": "SELECT ?c WHERE { ?c ?p ?o }", "min_score": 0.5},
])
def test_bad_arguments_are_400_with_a_message_never_500(client, body):
    response = _retrieve(client, "admin", **body)
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error", "message"} and response.json()["message"]


def test_a_search_the_request_refuses_is_400_as_retrieve_refuses_it(client):
    for body in ({"query": "x", "k": 0}, {"query": "x", "k": "ten"},
                 {"query": "x", "mode": "psychic"}, {"query": "x", "bogus": 1}):
        answer = client.post("/retrieve", json=body, headers=bearer("admin"))
        assert answer.status_code == 400 and answer.json()["error"].startswith(
            "InvalidArgument"), answer.text


# -- authentication ----------------------------------------------------------------------------

def test_no_key_and_unknown_key_are_401_with_a_bearer_challenge(client):
    for headers in ({}, {"Authorization": "Bearer nope-nope-nope-nope"}, {"X-API-Key": "x"}):
        response = client.post("/retrieve", json={"query": "x"}, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == 'Bearer realm="trails"'
        assert response.json()["error"] == "AuthenticationError"
    assert client.get("/sparql", params={"query": "ASK {}"}).status_code == 401


def test_the_x_api_key_header_is_accepted(client):
    response = client.get("/whoami", headers={"X-API-Key": "alpha-secret-0123456789"})
    assert response.json() == {"label": "alpha-reader", "rights": ["read"], "scopes": ["alpha"]}


def test_a_read_key_can_neither_ingest_nor_delete(client):
    ingest = client.post("/ingest", json={"documents": [{"id": "x", "text": "t"}],
                                          "scope": "alpha"}, headers=bearer("alpha-reader"))
    assert ingest.status_code == 403
    delete = client.delete("/documents/" + urllib.parse.quote("trails://local/scope/alpha/doc/a1",
                                                              safe=""),
                           headers=bearer("all-reader"))
    assert delete.status_code == 403


def test_without_keys_requests_are_anonymous_with_every_right(seeded):
    with TestClient(create_app(seeded, None)) as anonymous:
        assert anonymous.get("/whoami").json()["label"] == "anonymous"
        assert anonymous.post("/retrieve", json={"query": "bark", "scopes": ["beta"]}
                              ).status_code == 200


# -- /ingest and DELETE /documents ---------------------------------------------------------------

def _events(response) -> list[tuple[str, dict]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events, kind = [], None
    for line in response.text.splitlines():
        if line.startswith("event: "):
            kind = line[len("event: "):]
        elif line.startswith("data: "):
            events.append((kind, json.loads(line[len("data: "):])))
    return events


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def test_ingest_streams_each_event_in_order_then_a_summary(client):
    body = {"scope": "beta", "documents": [
        {"id": "b3", "text": "Bumblebees visit clover."},
        {"source": "notes/b4.txt", "text": "Badgers dig at night.", "metadata": {"k": 1}},
        {"id": "b5", "text": "Nested too deep.", "metadata": {"deep": _nested(40)}}]}
    events = _events(client.post("/ingest", json=body, headers=bearer("beta-writer")))
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "summary"
    assert all(kind == data["kind"] for kind, data in events)
    for name in ("b3", "notes/b4.txt"):
        started = next(i for i, (k, d) in enumerate(events)
                       if k == "document_started" and d["source"] == name)
        done = next(i for i, (k, d) in enumerate(events)
                    if k == "document_ingested" and d["source"] == name)
        assert started < done
    summary = events[-1][1]
    assert (summary["ingested"], summary["failed"]) == (2, 1)
    assert [d["source"] for k, d in events if k == "document_failed"] == ["b5"]
    assert _snippets(_retrieve(client, "beta-writer", query="badgers", k=1)) == [
        "Badgers dig at night."]


def test_the_ingest_summary_reports_the_run_s_wall_time(client, monkeypatch):
    """The summary's seconds are the run's wall time (here a clock that reads 100.0 when the
    run starts and 104.0 ever after: a four-second run), not 0.0."""
    readings = iter([100.0])
    monkeypatch.setattr(IngestionStats, "clock", lambda: next(readings, 104.0), raising=False)
    events = _events(client.post("/ingest", json={"scope": "beta", "documents": [
        {"id": "b9", "text": "Bitterns boom in the reeds."}]}, headers=bearer("beta-writer")))
    summary = events[-1][1]
    assert (summary["kind"], summary["ingested"]) == ("summary", 1)
    assert summary["seconds"] == 4.0


def test_ingest_into_a_scope_the_key_lacks_is_refused_before_anything_is_written(client):
    response = client.post("/ingest", json={"scope": "alpha", "documents": [
        {"id": "x", "text": "intruder text"}]}, headers=bearer("beta-writer"))
    assert response.status_code == 403
    found = _snippets(_retrieve(client, "admin", scopes=["alpha"], query="intruder text"))
    assert sorted(found) == sorted(ALPHA_DOCS.values())


def test_ingest_into_an_ill_named_scope_is_a_bad_argument(client):
    response = client.post("/ingest", json={"scope": "bad scope", "documents": [
        {"id": "x", "text": "misplaced text"}]}, headers=bearer("admin"))
    assert response.status_code == 400
    assert response.json()["error"] == "InvalidArgumentError"
    assert "scope names are 1-128 characters" in response.json()["message"]


def test_a_document_needs_an_id_or_a_source(client):
    response = client.post("/ingest", json={"documents": [{"text": "nameless"}]},
                           headers=bearer("admin"))
    assert response.status_code == 422


def _quoted(iri: str) -> str:
    return "/documents/" + urllib.parse.quote(iri, safe="")


def test_delete_removes_the_document_and_records_the_key_label(client, seeded):
    hit = _retrieve(client, "beta-writer", query="beehives", k=1).json()["hits"][0]
    assert hit["snippet"] == BETA_DOCS["b1"]
    response = client.delete(_quoted(hit["document"]), headers=bearer("beta-writer"))
    assert response.status_code == 200 and response.json() == {"deleted": hit["document"]}
    assert BETA_DOCS["b1"] not in _snippets(_retrieve(client, "admin", scopes=["beta"],
                                                      query="beehives"))
    deletions = [r for r in seeded.audit.pending() if isinstance(r, DeletionRecord)]
    assert [(r.caller, r.documents) for r in deletions] == [("beta-writer", [hit["document"]])]
    again = client.delete(_quoted(hit["document"]), headers=bearer("beta-writer"))
    assert again.status_code == 404 and again.json()["error"] == "UnknownDocumentError"


def test_a_writer_cannot_delete_another_scopes_document_nor_learn_it_exists(client):
    alpha_doc = _retrieve(client, "admin", scopes=["alpha"]).json()["hits"][0]["document"]
    response = client.delete(_quoted(alpha_doc), headers=bearer("beta-writer"))
    missing = client.delete(_quoted("trails://local/scope/beta/doc/none"),
                            headers=bearer("beta-writer"))
    assert response.status_code == missing.status_code == 404
    assert response.json()["message"].replace(alpha_doc, "X") == missing.json()[
        "message"].replace("trails://local/scope/beta/doc/none", "X")
    assert ALPHA_DOCS["a1"] in _snippets(_retrieve(client, "admin", scopes=["alpha"]))


def test_delete_of_something_that_is_no_iri_is_a_400(client):
    assert client.delete("/documents/not%20an%20iri", headers=bearer("admin")).status_code == 400


def test_a_read_only_service_refuses_writes_with_409(tmp_path):
    seeded_context(tmp_path / "kb").close()
    with TestClient(create_app(tmp_path / "kb", keys(), read_only=True)) as read_only:
        ingest = read_only.post("/ingest", json={"documents": [{"id": "x", "text": "t"}]},
                                headers=bearer("admin"))
        assert ingest.status_code == 409
        assert ingest.json()["error"] == "ReadOnlyServiceError"
        assert "--read-only" in ingest.json()["message"]
        delete = read_only.delete(_quoted("trails://local/scope/alpha/doc/a1"),
                                  headers=bearer("admin"))
        assert delete.status_code == 409
        assert read_only.get("/health").json()["read_only"] is True
        assert _snippets(read_only.post("/retrieve", json={"query": "glaciers", "k": 1,
                                                           "scopes": ["alpha"]},
                                        headers=bearer("admin"))) == [ALPHA_DOCS["a1"]]


# -- /health and /metrics ----------------------------------------------------------------------

class GatedEmbedder(MockEmbedder):
    """A MockEmbedder whose embedding waits for ``gate`` while ``armed``: a slow model."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.gate, self.armed = threading.Event(), False

    def embed_batch(self, texts):
        if self.armed:
            assert self.gate.wait(60), "the test never opened the gate"
        return super().embed_batch(texts)


def test_health_is_starting_until_the_warm_up_query_ran_then_ready(tmp_path):
    model = GatedEmbedder()
    ctx = seeded_context(tmp_path / "kb", embedder=model)
    model.armed = True
    try:
        with TestClient(create_app(ctx, keys())) as client:
            assert client.get("/health").status_code == 200
            assert client.get("/health").json()["status"] == "starting"
            assert client.get("/health/ready").status_code == 503
            model.gate.set()
            _wait_ready(client)
            assert client.get("/health").json()["status"] == "ready"
        # The warm-up was one whole search, recorded under its own caller like any other.
        warm_ups = [r for r in [*ctx.audit.pending(), *ctx.audit.activities()]
                    if r.caller == WARM_UP_CALLER]
        assert [(r.query, r.mode) for r in warm_ups] == [("warm-up query", "hybrid")]
    finally:
        model.gate.set()
        ctx.close()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_count_requests_latencies_and_ingests(client):
    for _ in range(3):
        _retrieve(client, "admin")
    client.post("/retrieve", json={"query": "x"})
    events = _events(client.post("/ingest", json={"scope": "beta", "documents": [
        {"id": "m1", "text": "Moths circle the lamp. They rest by day."}]},
        headers=bearer("admin")))
    chunks = events[-1][1]["chunks"]
    samples = _samples(client.get("/metrics").text)

    def requests(status: str) -> float:
        return samples[("trails_http_requests_total", (
            ("method", "POST"), ("route", "/retrieve"), ("status", status)))]

    assert requests("200") == 3 and requests("401") == 1
    assert samples[("trails_http_request_duration_seconds_count", (
        ("method", "POST"), ("route", "/retrieve")))] == 4
    assert samples[("trails_ingest_documents_total", (("outcome", "ingested"),))] == 1
    assert samples[("trails_ingest_chunks_total", ())] == chunks >= 1


def test_a_bug_is_a_500_with_its_class_only_and_is_counted(client, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a path like /home/someone/secret")

    monkeypatch.setattr("trails.service.app.keyed_search", broken)
    response = _retrieve(client, "admin")
    assert response.status_code == 500
    assert response.json()["error"] == "InternalError"
    assert "secret" not in response.text and "Traceback" not in response.text
    samples = _samples(client.get("/metrics").text)
    assert samples[("trails_http_requests_total", (
        ("method", "POST"), ("route", "/retrieve"), ("status", "500")))] == 1


def test_health_names_a_backend_without_the_credentials_in_its_url(client):
    # A remote graph opened on a URL with user:password@ makes this breaker; /health answers
    # anyone, keyless, so it must show where the backend is and nothing to log in with.
    breaker_for("the SPARQL endpoint", "https://bob:hunter2@sparql.health.test:8443/query",
                Resilience())
    shown = [b["url"] for b in client.get("/health").json()["backends"]]
    assert "https://sparql.health.test:8443" in shown
    assert not any("hunter2" in url or "bob" in url for url in shown)


class _LoginPage(http.server.BaseHTTPRequestHandler):
    """What a proxy in front of a SPARQL server answers a request without its session."""

    status = 200

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"<html><form>Sign in</form></html>"
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("status", [200, 401, 403])
def test_a_graph_backend_that_refuses_the_service_is_a_503_not_the_callers_400(status):
    handler = type("Handler", (_LoginPage,), {"status": status})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    embedder = MockEmbedder(dim=16)
    graph = SparqlEndpointGraph(f"http://127.0.0.1:{httpd.server_address[1]}/query",
                                resilience=Resilience(attempts=1, failure_threshold=100))
    ctx = Context(kg=graph, vectors=SqliteVecStore(":memory:", dim=16,
                                                   embedder=embedder.identity),
                  embedder=embedder)
    try:
        with TestClient(create_app(ctx, keys())) as client:
            asked = [client.get("/sparql", headers=bearer("alpha-reader"),
                                params={"query": "SELECT * WHERE { ?s ?p ?o }"}),
                     client.post("/retrieve", headers=bearer("alpha-reader"), json={
                         "query": "glaciers", "scopes": ["alpha"],
                         "filter": "SELECT ?c WHERE { ?c ?p ?o }"})]
        for answer in asked:  # the request was right: the service's backend is unusable
            assert answer.status_code == 503, answer.text
            assert answer.json()["error"] == "EndpointRefusedError"
    finally:
        ctx.close()
        httpd.shutdown()
        httpd.server_close()


def test_a_service_that_stops_lets_its_warm_up_end_before_closing_its_context(tmp_path,
                                                                            monkeypatch):
    # Closed under a warm-up still searching, the context's graph stayed locked by the
    # warm-up's search after the service ended: the next writer of the directory was refused.
    seeded_context(tmp_path / "kb").close()
    real = state_module.retrieve

    def still_loading(*args, **kwargs):
        time.sleep(0.5)  # the model still loading when the service is stopped
        return real(*args, **kwargs)

    monkeypatch.setattr(state_module, "retrieve", still_loading)
    app = create_app(tmp_path / "kb", keys())
    with TestClient(app):
        pass  # stopped at once, the warm-up half-way
    assert app.state.service.warmup.status == "ready", app.state.service.warmup
    with Context.open(tmp_path / "kb") as ctx:  # free for the next writer
        assert len(ctx.kg) > 0
