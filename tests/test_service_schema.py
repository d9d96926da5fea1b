"""schemathesis against the service's own OpenAPI document: generated requests to every
route never get a 500, and every answer conforms to the document (status, media type,
body schema). Bounded and derandomised: the same examples on every run."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service_support import bearer, keys, seeded_context
from trails.service.app import create_app

pytestmark = pytest.mark.timeout(600)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def test_the_service_keeps_to_its_openapi_document(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    try:
        schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(ctx, keys()))
        operations = [result.ok() for result in schema.get_all_operations()]
        assert {op.path for op in operations} >= {"/retrieve", "/sparql", "/ingest",
                                                  "/documents/{iri}", "/health", "/metrics"}
        for operation in operations:

            @given(case=operation.as_strategy())
            # The loaded profile's count caps it (10 in `make test-fast`): a test's own
            # settings are not capped by the profile, and this one is built inside the test.
            @settings(max_examples=min(30, settings().max_examples), derandomize=True,
                      deadline=None, database=None, suppress_health_check=list(HealthCheck))
            def conforms(case):
                case.call_and_validate(headers=bearer("admin"), checks=CHECKS)

            conforms()
    finally:
        ctx.close()
