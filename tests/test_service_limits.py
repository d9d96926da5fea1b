"""A request body past the service's ``max_request_bytes`` is answered 413, whether it
announces its length or comes in chunks, on ``/sparql`` and ``/retrieve`` alike, and the
message names the cap and how to raise it; a body within it is answered as before."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from service_support import bearer, keys, seeded_context
from trails.errors import InvalidArgumentError
from trails.service.app import create_app


@pytest.fixture
def service(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    with TestClient(create_app(ctx, keys(), max_request_bytes=2000)) as client:
        yield client
    ctx.close()


def _refused(answer) -> None:
    assert answer.status_code == 413, answer.text
    body = answer.json()
    assert body["error"] == "RequestTooLargeError"
    assert "2,000 bytes" in body["message"] and "--max-request-bytes" in body["message"]


QUERY = "ASK { ?s ?p ?o }"


def test_a_sparql_body_past_the_cap_is_refused_with_413(service):
    padded = "# " + "x" * 3000 + "\n" + QUERY
    headers = {**bearer("all-reader"), "Content-Type": "application/sparql-query"}
    _refused(service.post("/sparql", content=padded.encode(), headers=headers))

    def chunks():  # no Content-Length: sent chunked, counted as it comes
        for _ in range(8):
            yield b"# " + b"x" * 500 + b"\n"
        yield QUERY.encode()

    _refused(service.post("/sparql", content=chunks(), headers=headers))
    within = service.post("/sparql", content=QUERY.encode(), headers={
        **headers, "Accept": "application/sparql-results+json"})
    assert within.status_code == 200 and within.json()["boolean"] is True


def test_a_retrieve_body_past_the_cap_is_refused_with_413_announced_or_not(service):
    request = {"query": "glaciers " * 400, "k": 3}
    _refused(service.post("/retrieve", json=request, headers=bearer("all-reader")))
    encoded = json.dumps(request).encode()
    _refused(service.post("/retrieve", content=iter([encoded[:1000], encoded[1000:]]),
                          headers={**bearer("all-reader"), "Content-Type": "application/json"}))
    assert service.post("/retrieve", json={"query": "glaciers", "k": 3},
                        headers=bearer("all-reader")).status_code == 200


@pytest.mark.parametrize("value", [0, -5, True, 2.5])
def test_a_max_request_bytes_that_is_no_positive_integer_is_refused(tmp_path, value):
    with pytest.raises(InvalidArgumentError, match="max_request_bytes"):
        create_app(tmp_path / "never-opened", keys(), max_request_bytes=value)
