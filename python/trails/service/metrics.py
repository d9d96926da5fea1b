"""``GET /metrics``: requests by route, method and status, latency per route, ingest counts.

Each application has its own registry, so two services in one process (tests) never mix
their counts, and the process-wide default registry stays untouched.
"""

from __future__ import annotations

from trails._lazy import require

require("prometheus_client", "trails serve (the HTTP service)")

# (Imported after the check above, which names the extra to install.)
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Seconds: from a cached keyword lookup (ms) to a cold model or a large ingest (s).
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ServiceMetrics:
    """The service's Prometheus metrics, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "trails_http_requests", "HTTP requests answered, by route template, method and "
            "status", ("route", "method", "status"), registry=self.registry)
        self.latency = Histogram(
            "trails_http_request_duration_seconds", "Time to answer a request, by route "
            "template", ("route", "method"), buckets=_BUCKETS, registry=self.registry)
        self.documents = Counter(
            "trails_ingest_documents", "Documents ingested through the service, by outcome "
            "(ingested, skipped, failed, metadata_updated)", ("outcome",),
            registry=self.registry)
        self.chunks = Counter("trails_ingest_chunks", "Chunks written by ingests through the "
                              "service", registry=self.registry)
        self.failures = Counter("trails_ingest_failures", "Ingests through the service that "
                                "stopped with an error", registry=self.registry)

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route, method).observe(seconds)

    def text(self) -> bytes:
        """The registry in the Prometheus text exposition format."""
        return generate_latest(self.registry)
