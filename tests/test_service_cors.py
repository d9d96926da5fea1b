"""Browsers and the service: no CORS headers, so a page of another origin cannot read an
answer (a keyless service on loopback must not be readable by any page the user opens), and
an app of the owner's own gets them by wrapping the app, as docs/service.md shows."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from starlette.middleware.cors import CORSMiddleware

from service_support import bearer, keys, seeded_context
from trails.service.app import create_app

pytestmark = pytest.mark.timeout(120)

PAGE = "https://evil.example"
APP = "https://app.example.org"


@pytest.mark.parametrize("with_keys", [False, True])
def test_no_origin_is_allowed_to_read_an_answer(tmp_path, with_keys):
    ctx = seeded_context(tmp_path / "kb")
    try:
        with TestClient(create_app(ctx, keys() if with_keys else None)) as client:
            auth = bearer("admin") if with_keys else {}
            answered = client.post("/retrieve", json={"query": "glaciers", "k": 1},
                                   headers={"Origin": PAGE, **auth})
            assert answered.status_code == 200, answered.text
            assert not any(h.lower().startswith("access-control-") for h in answered.headers)
            preflight = client.options("/retrieve", headers={
                "Origin": PAGE, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type"})
            assert "access-control-allow-origin" not in preflight.headers
            assert "access-control-allow-headers" not in preflight.headers
    finally:
        ctx.close()


def test_an_app_of_ones_own_gets_cors_by_wrapping_the_service(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    try:
        app = CORSMiddleware(create_app(ctx, keys()), allow_origins=[APP],
                             allow_methods=["GET", "POST"],
                             allow_headers=["authorization", "content-type"])
        with TestClient(app) as client:
            preflight = client.options("/retrieve", headers={
                "Origin": APP, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type"})
            assert preflight.status_code == 200
            assert preflight.headers["access-control-allow-origin"] == APP
            answered = client.post("/retrieve", json={"query": "glaciers", "k": 1},
                                   headers={"Origin": APP, **bearer("admin")})
            assert answered.status_code == 200, answered.text
            assert answered.headers["access-control-allow-origin"] == APP
            other = client.post("/retrieve", json={"query": "glaciers", "k": 1},
                                headers={"Origin": PAGE, **bearer("admin")})
            assert "access-control-allow-origin" not in other.headers
    finally:
        ctx.close()
