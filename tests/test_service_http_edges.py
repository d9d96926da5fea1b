"""What a newcomer's first HTTP calls get wrong, answered with what to fix: a JSON body sent
under another content type (``curl -d`` sends a form's), a method a route does not take."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from service_support import bearer, keys, seeded_context
from trails.service.app import create_app

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def client(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    with TestClient(create_app(ctx, keys())) as test_client:
        for _ in range(500):
            if test_client.get("/health/ready").status_code == 200:
                break
            time.sleep(0.01)
        yield test_client
    ctx.close()


JSON_ROUTES = [
    ("/retrieve", b'{"query": "glaciers", "k": 2}'),
    ("/ingest", b'{"documents": [{"id": "n1", "text": "Narwhals have tusks."}]}'),
    ("/runs/0123456789abcdef0123456789abcdef/feedback", b'{"rating": "up"}'),
]


@pytest.mark.parametrize("path, body", JSON_ROUTES)
@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain",
                                          "text/json; charset=utf-8", "multipart/form-data"])
def test_a_json_body_sent_as_another_type_is_refused_naming_the_header_to_send(
        client, path, body, content_type):
    """curl -d without -H 'Content-Type: application/json' sends a form, requests.post(data=)
    no type at all: the answer used to be 'Input should be a valid dictionary or object to
    extract fields from' (a 400 from /retrieve, a 422 from the others)."""
    headers = {**bearer("admin"), **({"Content-Type": content_type} if content_type else {})}
    response = client.post(path, content=body, headers=headers)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["error"] == "InvalidArgumentError"
    assert "Content-Type: application/json" in answer["message"]
    sent = repr(content_type.split(";")[0]) if content_type else "no Content-Type"
    assert sent in answer["message"]
    assert "valid dictionary" not in answer["message"]


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "Application/JSON", "application/ld+json"])
def test_a_json_body_sent_as_json_is_read(client, content_type):
    headers = {**bearer("admin"), "Content-Type": content_type}
    body = b'{"query": "glaciers", "k": 2, "scopes": ["alpha"]}'
    response = client.post("/retrieve", content=body,
                           headers=headers)
    assert response.status_code == 200, response.text
    assert len(response.json()["hits"]) == 2
