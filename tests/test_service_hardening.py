"""The service's promises under attack: every search recorded whatever its answer, error
messages that name only the caller's scopes, a keyless service that answers only requests
addressed to it (DNS rebinding), one write at a time even when a client goes away, and an
answer for every request, whatever text it holds."""

from __future__ import annotations

import contextlib
import json
import re
import threading

import httpx
import pytest
from fastapi.testclient import TestClient

from service_support import ALPHA_DOCS, KEYS_TOML, SECRETS, bearer, live_server, seeded_context
from trails.audit.records import SearchRecord
from trails.errors import ConfigurationError
from trails.service.app import create_app
from trails.service.keys import KeyRing
from trails.vector.embedders.mock import MockEmbedder

pytestmark = pytest.mark.timeout(120)

# Two more keys: one granting a scope that holds nothing beside alpha, one granting only
# scopes that hold nothing.
GHOST_KEYS = KEYS_TOML + """
[[key]]
label = "alpha-and-ghost"
secret = "ghost-secret-0123456789"
scopes = ["alpha", "ghost"]
rights = ["read", "write"]

[[key]]
label = "ghost-only"
secret = "void-secret-0123456789"
scopes = ["ghost", "phantom"]
rights = ["read"]
"""
GHOST_SECRETS = {**SECRETS, "alpha-and-ghost": "ghost-secret-0123456789",
                 "ghost-only": "void-secret-0123456789"}


def auth(label: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {GHOST_SECRETS[label]}"}


@pytest.fixture
def seeded(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    yield ctx
    ctx.close()


def ghost_client(ctx) -> TestClient:
    return TestClient(create_app(ctx, KeyRing.parse(GHOST_KEYS, source="test")))


@pytest.fixture
def client(seeded):
    with ghost_client(seeded) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def refusing(tmp_path_factory):
    """One seeded context and its client for the tests whose every request is refused: each
    checks its own answer (and that nothing was written), none reads what another left."""
    ctx = seeded_context(tmp_path_factory.mktemp("refusing") / "kb")
    with ghost_client(ctx) as test_client:
        yield test_client, ctx
    ctx.close()


def searches(ctx, caller: str) -> list[SearchRecord]:
    return [r for r in ctx.audit.activities(caller=caller, limit=None)
            if isinstance(r, SearchRecord)]


# -- every search is recorded ----------------------------------------------------------------

def test_a_search_in_scopes_that_hold_nothing_is_recorded(client, seeded):
    response = client.post("/retrieve", json={"query": "glaciers"}, headers=auth("ghost-only"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["hits"] == [] and body["run_id"]
    [record] = searches(seeded, "ghost-only")
    assert record.run_id == body["run_id"]
    assert record.hits == [] and record.scopes == []


@pytest.mark.parametrize("body", [{"filter": "SELECT ?c WHERE { ?c "}, {"mode": "graph"},
                                  {"mode": "vector", "filter": "SELECT ?c WHERE { ?c ?p ?o }"}])
def test_a_mistake_is_refused_and_recorded_even_where_nothing_is_to_search(client, seeded,
                                                                           body):
    response = client.post("/retrieve", json={"query": "glaciers", **body},
                           headers=auth("ghost-only"))
    assert response.status_code == 400, response.text
    assert [r.plan for r in searches(seeded, "ghost-only")] == ["refused"]


@pytest.mark.parametrize(("label", "body", "status"), [
    ("alpha-reader", {"scopes": ["beta"]}, 403),                       # a scope not granted
    ("alpha-and-ghost", {"scopes": ["ghost"]}, 400),                   # granted, holds nothing
    ("admin", {"filter": "SELECT ?c WHERE { ?c "}, 400),              # a filter that won't parse
    ("admin", {"filter": "SELECT ?c WHERE { SERVICE <http://127.0.0.1:9/> { ?c ?p ?o } }"}, 400),
    ("admin", {"mode": "graph"}, 400),                                 # graph mode, no filter
    ("admin", {"now": "yesterday"}, 400),
    ("admin", {"filter": "SELECT ?c WHERE { ?c ?p ?o }", "bindings": {"o": {
        "type": "uri", "value": "not an iri"}}}, 400),
])
def test_a_search_refused_after_parsing_is_recorded(client, seeded, label, body, status):
    response = client.post("/retrieve", json={"query": "glaciers", **body}, headers=auth(label))
    assert response.status_code == status, response.text
    [record] = searches(seeded, label)
    assert record.hits == [] and record.plan == "refused"
    assert any(response.json()["error"] in note for note in record.notes), record.notes
    assert record.query == "glaciers" or record.query_sha256


def test_a_key_without_the_read_right_is_refused_and_recorded(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    writer_only = KEYS_TOML + ('\n[[key]]\nlabel = "scribe"\nsecret = "scribe-secret-012345"\n'
                               'scopes = ["alpha"]\nrights = ["write"]\n')
    with TestClient(create_app(ctx, KeyRing.parse(writer_only, source="t"))) as client:
        response = client.post("/retrieve", json={"query": "glaciers"},
                               headers={"Authorization": "Bearer scribe-secret-012345"})
    assert response.status_code == 403
    assert [r.plan for r in searches(ctx, "scribe")] == ["refused"]
    ctx.close()


# -- scope names never leak ------------------------------------------------------------------

@pytest.mark.parametrize("asked", [["ghost"], ["alpha", "ghost"], ["ghots"], ["beta"],
                                   ["default"], ["alpha", "beta"]])
def test_errors_name_only_the_callers_scopes(refusing, asked):
    client, _ = refusing
    response = client.post("/retrieve", json={"query": "glaciers", "scopes": asked},
                           headers=auth("alpha-and-ghost"))
    assert response.status_code in (400, 403), response.text
    message = response.json()["message"]
    quoted = set(re.findall(r"'([^']*)'", message))
    assert quoted <= {"alpha-and-ghost", "alpha", "ghost", *asked}, message
    for other in ("beta", "default"):
        assert other in asked or other not in message, message


def test_an_empty_scope_suggests_among_the_callers_scopes_only(refusing):
    client, _ = refusing
    message = client.post("/retrieve", json={"query": "x", "scopes": ["betaa"]},
                          headers=auth("admin")).json()["message"]
    assert "'beta'" in message  # a key with every scope may know every scope
    narrow = client.post("/retrieve", json={"query": "x", "scopes": ["ghost"]},
                         headers=auth("ghost-only")).json()["message"]
    assert "'ghost'" in narrow and "alpha" not in narrow and "beta" not in narrow


# -- DNS rebinding: a keyless service answers only requests addressed to it -------------------

REBOUND = ["evil.example", "evil.example:8000", "127.0.0.1.evil.example",
           "localhost.evil.example", "[::2]", "0.0.0.0", "127.0.0.1@evil.example", ""]


@pytest.fixture(scope="module")
def keyless(tmp_path_factory):
    ctx = seeded_context(tmp_path_factory.mktemp("keyless") / "kb")
    with live_server(create_app(ctx, None)) as url:
        yield url
    ctx.close()


@pytest.mark.parametrize("host", REBOUND)
@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/retrieve", {"query": "glaciers"}),
    ("GET", "/sparql", None),
    ("POST", "/ingest", {"scope": "alpha", "documents": [{"id": "x", "text": "rebound"}]}),
    ("DELETE", "/documents/trails://local/scope/alpha/doc/a1", None),
    ("GET", "/whoami", None),
    ("GET", "/health", None),
    ("GET", "/metrics", None),
    ("GET", "/openapi.json", None),
])
def test_a_keyless_service_refuses_a_request_for_another_host(keyless, host, method, path,
                                                              body):
    with httpx.Client(base_url=keyless, timeout=30) as http:
        response = http.request(method, path, json=body, headers={"Host": host})
    assert response.status_code in (421, 403), response.text
    assert "Host" in response.json()["message"]
    with httpx.Client(base_url=keyless, timeout=30) as http:
        kept = http.post("/retrieve", json={"query": "Alpine glaciers", "scopes": ["alpha"]})
    assert ALPHA_DOCS["a1"] in [hit["snippet"] for hit in kept.json()["hits"]]


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}",
                                  "LOCALHOST:{port}", "localhost", "127.0.0.1"])
def test_a_keyless_service_answers_its_own_addresses(keyless, host):
    port = keyless.rsplit(":", 1)[1]
    with httpx.Client(base_url=keyless, timeout=30) as http:
        response = http.get("/whoami", headers={"Host": host.format(port=port)})
    assert response.status_code == 200, response.text


def test_a_keyless_service_refuses_the_right_host_on_another_port(keyless):
    with httpx.Client(base_url=keyless, timeout=30) as http:
        response = http.get("/whoami", headers={"Host": "127.0.0.1:1"})
    assert response.status_code in (421, 403)


def test_allowed_hosts_add_names_and_keys_keep_proxies_working(seeded):
    with TestClient(create_app(seeded, None)) as test_client:  # addressed as it is bound
        assert test_client.get("/whoami").status_code == 200
        refused = test_client.get("/whoami", headers={"Host": "evil.example"})
        assert refused.status_code == 421 and refused.json()["error"] == "MisdirectedRequest"
    named = create_app(seeded, None, allowed_hosts=["search.internal", "proxy.internal:8443"])
    with TestClient(named) as test_client:
        for host, status in (("search.internal", 200), ("search.internal:9000", 200),
                             ("proxy.internal:8443", 200), ("proxy.internal:8444", 421),
                             ("evil.example", 421)):
            assert test_client.get("/whoami", headers={"Host": host}).status_code == status
    with pytest.raises(ConfigurationError, match="no host name"):
        create_app(seeded, None, allowed_hosts=["http://search.internal/"])
    keyed = create_app(seeded, KeyRing.parse(KEYS_TOML, source="t"))
    with TestClient(keyed, base_url="http://search.example.org") as test_client:
        assert test_client.get("/whoami", headers=bearer("admin")).status_code == 200


# -- one write at a time, even when a client goes away ---------------------------------------

class GateEmbedder(MockEmbedder):
    """A mock embedder that holds every batch mentioning "slow" until released, and notes
    whether another write's batch was embedded meanwhile."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.held = threading.Event()
        self.release = threading.Event()
        self.other_write = threading.Event()
        self.overlapped = False

    def embed_batch(self, texts):
        if any("slow" in text for text in texts):
            self.held.set()
            self.release.wait(60)
            self.held.clear()
        elif any("after" in text for text in texts):
            self.overlapped = self.overlapped or self.held.is_set()
            self.other_write.set()
        return super().embed_batch(texts)


@pytest.mark.parametrize("second", ["ingest", "delete"])
def test_a_client_that_disconnects_mid_ingest_keeps_the_writers_turn(tmp_path, second):
    gate = GateEmbedder()
    ctx = seeded_context(tmp_path / "kb", embedder=gate)
    deleting = ctx.delete_document

    def delete_document(iri, **options):
        gate.overlapped = gate.overlapped or gate.held.is_set()
        gate.other_write.set()
        return deleting(iri, **options)

    ctx.delete_document = delete_document  # type: ignore[method-assign]
    answers: list[httpx.Response] = []
    try:
        with live_server(create_app(ctx, None)) as url:
            with httpx.Client(base_url=url, timeout=60) as http, http.stream(
                    "POST", "/ingest", json={"scope": "alpha", "documents": [
                        {"id": "s", "text": "a slow document"}]}) as first:
                assert first.status_code == 200
                assert gate.held.wait(30), "the first ingest never reached its embedding"
            # The first client is gone, its step still running: the next write waits.
            request = (("POST", "/ingest", {"scope": "alpha", "documents": [
                {"id": "n", "text": "written after"}]}) if second == "ingest" else
                ("DELETE", "/documents/trails://local/scope/alpha/doc/a2", None))

            def write() -> None:
                with httpx.Client(base_url=url, timeout=60) as other:
                    answers.append(other.request(request[0], request[1], json=request[2]))

            writer = threading.Thread(target=write)
            writer.start()
            gate.other_write.wait(2)  # a write that overlaps starts at once
            gate.release.set()
            writer.join(60)
    finally:
        gate.release.set()
        with contextlib.suppress(Exception):
            ctx.close()
    assert not gate.overlapped, "the second write ran while the first one's step still ran"
    assert [a.status_code for a in answers] == [200], [a.text for a in answers]
    if second == "ingest":
        assert '"ingested": 1' in answers[0].text


# -- every request is answered, whatever text it holds ----------------------------------------

LONE = "\\ud800"


@pytest.mark.parametrize(("path", "body"), [
    ("/retrieve", '{"query": "x%s"}'),
    ("/retrieve", '{"query": "x", "filter": "SELECT ?c WHERE { ?c ?p \\"%s\\" }"}'),
    ("/retrieve", ('{"query": "x", "filter": "SELECT ?c WHERE { ?c ?p ?o }", '
                  '"bindings": {"o%s": 1}}')),
    ("/retrieve", ('{"query": "x", "filter": "SELECT ?c WHERE { ?c ?p ?o }", '
                  '"bindings": {"o": "%s"}}')),
    ("/retrieve", ('{"query": "x", "filter": "SELECT ?c WHERE { ?c ?p ?o }", '
                  '"bindings": {"o": {"type": "literal", "value": "%s"}}}')),
    ("/retrieve", '{"query": "x", "scopes": ["a%s"]}'),
    ("/retrieve", '{"query": "x", "now": "%s"}'),
    ("/retrieve", ('{"query": "x", "steps": [{"name": "recency", "options": '
                  '{"predicate": "%s"}}]}')),
    ("/retrieve", '{"query": "x", "steps": [{"name": "mmr", "options": {"%s": 1}}]}'),
    ("/ingest", '{"documents": [{"id": "x", "text": "a%s"}]}'),
    ("/ingest", '{"documents": [{"id": "x%s", "text": "a"}]}'),
    ("/ingest", '{"documents": [{"id": "x", "text": "a", "title": "%s"}]}'),
    ("/ingest", '{"documents": [{"id": "x", "text": "a", "metadata": {"k%s": "v"}}]}'),
    ("/ingest", '{"documents": [{"id": "x", "text": "a", "metadata": {"k": ["%s"]}}]}'),
    ("/ingest", '{"scope": "a%s", "documents": [{"id": "x", "text": "a"}]}'),
])
def test_a_lone_surrogate_anywhere_in_a_body_is_a_clear_error(refusing, path, body):
    client, seeded = refusing
    before = len(seeded.vectors)
    response = client.post(path, content=(body % LONE).encode(),
                           headers={**auth("admin"), "Content-Type": "application/json"})
    assert response.status_code in (400, 422), response.text
    message = response.json()["message"]
    assert "surrogate" in message, message
    json.dumps(response.json(), ensure_ascii=False).encode("utf-8")  # the answer is UTF-8
    assert len(seeded.vectors) == before
