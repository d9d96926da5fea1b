"""What the service tests share: a context with two scopes of distinct documents, keys for
each kind of caller, and a real uvicorn server on loopback in a thread."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from trails import Context, ingest_all
from trails.ingest.document import Document
from trails.service.keys import KeyRing
from trails.vector.embedders.mock import MockEmbedder

ALPHA_DOCS = {"a1": "Alpine glaciers retreat every summer.",
              "a2": "Alpacas graze on high meadows."}
BETA_DOCS = {"b1": "Beehives hum in the orchard at dawn.",
             "b2": "Beetles shelter under fallen bark."}
SECRETS = {
    "admin": "admin-secret-0123456789",
    "alpha-reader": "alpha-secret-0123456789",
    "beta-writer": "beta-secret-0123456789",
    "all-reader": "reader-secret-0123456789",
}
KEYS_TOML = """
[[key]]
label = "admin"
secret = "admin-secret-0123456789"
scopes = ["*"]
rights = ["read", "write"]

[[key]]
label = "alpha-reader"
secret = "alpha-secret-0123456789"
scopes = ["alpha"]
rights = ["read"]

[[key]]
label = "beta-writer"
secret = "beta-secret-0123456789"
scopes = ["beta"]
rights = ["read", "write"]

[[key]]
label = "all-reader"
secret = "reader-secret-0123456789"
scopes = ["*"]
rights = ["read"]
"""


def keys() -> KeyRing:
    return KeyRing.parse(KEYS_TOML, source="the test keys")


def bearer(label: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {SECRETS[label]}"}


def seeded_context(directory: Path, embedder: MockEmbedder | None = None) -> Context:
    """A writable context in ``directory`` with ALPHA_DOCS in scope alpha, BETA_DOCS in beta."""
    ctx = Context.open(directory, embedder=embedder or MockEmbedder(dim=32))
    for scope, docs in (("alpha", ALPHA_DOCS), ("beta", BETA_DOCS)):
        ingest_all([Document(id=name, source=name, text=text) for name, text in docs.items()],
                   ctx=ctx, scope=scope)
    return ctx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def live_server(app: object) -> Iterator[str]:
    """``app`` served by uvicorn on a loopback port in a thread; yields its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning",
                            lifespan="on")  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(30)


@contextlib.contextmanager
def seeded_client(directory: Path) -> Iterator[tuple[Any, Context]]:
    """A TestClient of the service (with :func:`keys`) on a :func:`seeded_context`, and the
    context; both closed after."""
    from fastapi.testclient import TestClient

    from trails.service.app import create_app

    ctx = seeded_context(directory)
    try:
        with TestClient(create_app(ctx, keys())) as client:
            yield client, ctx
    finally:
        ctx.close()
