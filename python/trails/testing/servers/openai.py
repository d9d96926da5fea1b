"""A local OpenAI-compatible server (embeddings, chat completions), so tests run the real
``openai`` client offline.

>>> from trails.vector.embedders.openai import OpenAIEmbedder
>>> with OpenAICompatibleServer() as server:  # doctest: +SKIP
...     embedder = OpenAIEmbedder(base_url=server.base_url, api_key="test", dim=64)
...     server.fail_next(429, retry_after=0.01)
...     embedder.embed_array(["Rails is a web framework."]).shape, len(server.requests)
((1, 64), 2)

``POST /v1/embeddings`` answers like the API: ``data[i].embedding`` (a float list, or base64
little-endian float32 with ``encoding_format="base64"``, which the ``openai`` client asks for
by default), ``index``, ``model`` and ``usage``. Vectors come from :class:`MockEmbedder` (so
texts sharing words land close), shortened with ``dimensions``. It checks the bearer key and
the API's limits (2048 inputs, 8191 tokens per input, 300,000 per request). Scripted failures
(``fail_next``, ``delay_next``) are served first, one per request, and every request is recorded
in ``requests`` so tests can count retries and batch sizes.

``POST /v1/chat/completions`` answers ``choices[0].message.content`` with the next scripted
reply (``reply_next``), or else, deterministically, the content of the last user message (an
echo). It checks the key, the model (``chat_models``) and that ``messages`` is a non-empty list
of ``{"role", "content"}`` objects.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from trails.testing.servers import _openai_api as api
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.embedders.openai import load_cl100k

__all__ = ["OpenAICompatibleServer", "RecordedRequest"]

MODELS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
          "text-embedding-ada-002": 1536}
CHAT_MODELS = frozenset({"gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-4.1-nano"})


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, and the status it was answered with."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int

    @property
    def inputs(self) -> list[Any]:
        """The ``input`` texts of an embeddings request (always a list)."""
        value = self.body.get("input") if isinstance(self.body, dict) else None
        return value if isinstance(value, list) else [value]

    @property
    def messages(self) -> list[Any]:
        """The ``messages`` of a chat completions request (empty for other requests)."""
        value = self.body.get("messages") if isinstance(self.body, dict) else None
        return value if isinstance(value, list) else []


@dataclass
class _Action:
    status: int = 200
    delay: float = 0.0
    message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


class OpenAICompatibleServer:
    """An embeddings endpoint on ``127.0.0.1`` (ephemeral port) in a background thread.

    Args:
        api_key: the only key accepted (``Authorization: Bearer <key>``); others get 401.
        models: model name -> native dimension (default: the three OpenAI embedding models).
        seed: the MockEmbedder seed behind the vectors.
        scale: vectors are multiplied by this, to check that clients re-normalise.
        chat_models: the models chat completions accept (others get 404).
    """

    def __init__(self, api_key: str = "test", *, models: dict[str, int] | None = None,
                 seed: int = 0, scale: float = 1.0,
                 chat_models: frozenset[str] | set[str] | None = None) -> None:
        self.api_key = api_key
        self.models = dict(MODELS if models is None else models)
        self.chat_models = frozenset(CHAT_MODELS if chat_models is None else chat_models)
        self._replies: deque[str] = deque()
        self.seed = seed
        self.scale = scale
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []  # unexpected handler errors, for debugging
        self._script: deque[_Action] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._embedders: dict[int, MockEmbedder] = {}
        self._count: Callable[[str], int] | None = None
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> OpenAICompatibleServer:
        if self._httpd is None:
            self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
            self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                            name="openai-compatible-server", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes delayed responses
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        assert self._thread is not None
        self._thread.join(5)
        self._httpd = None

    def __enter__(self) -> OpenAICompatibleServer:  # noqa: PYI034 - Self needs Python 3.11
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, for ``OpenAI(base_url=...)``."""
        if self._httpd is None:
            raise RuntimeError("the server is not running: use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- scripting ----------------------------------------------------------------------------

    def fail_next(self, status: int = 500, *, retry_after: float | str | None = None,
                  retry_after_ms: float | None = None, message: str | None = None,
                  times: int = 1, headers: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests with ``status`` (and a ``Retry-After`` header)."""
        extra = dict(headers or {})
        if retry_after is not None:
            extra["retry-after"] = str(retry_after)
        if retry_after_ms is not None:
            extra["retry-after-ms"] = str(retry_after_ms)
        with self._lock:
            self._script.extend(_Action(status, 0.0, message, extra) for _ in range(times))

    def delay_next(self, seconds: float, *, times: int = 1) -> None:
        """Answer the next ``times`` requests normally, but only after ``seconds``."""
        with self._lock:
            self._script.extend(_Action(200, seconds) for _ in range(times))

    def reply_next(self, content: str, *, times: int = 1) -> None:
        """Answer the next ``times`` successful chat completions with ``content``."""
        with self._lock:
            self._replies.extend(content for _ in range(times))

    def reset(self) -> None:
        """Forget recorded requests and scripted responses and replies."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self._replies.clear()

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/embeddings")]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def count_tokens(self, text: str) -> int:
        """cl100k_base tokens (tiktoken), or ~4 characters a token when it is unavailable."""
        if self._count is None:
            try:
                self._count = _Counter(load_cl100k())
            except Exception:  # noqa: BLE001 - no tiktoken or no BPE file: approximate
                self._count = lambda t: len(t) // 4 + 1
        return self._count(text)

    # -- serving ------------------------------------------------------------------------------

    def _next_action(self) -> _Action:
        with self._lock:
            return self._script.popleft() if self._script else _Action()

    def _record(self, handler: BaseHTTPRequestHandler, body: Any, status: int) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest(handler.command, handler.path, headers, body,
                                                 status))

    def _respond(self, handler: BaseHTTPRequestHandler,
                 body: Any) -> tuple[int, Any, dict[str, str]]:
        """``(status, JSON body, headers)`` for one request."""
        path = handler.path.rstrip("/")
        routes = {"/embeddings": self._embeddings, "/chat/completions": self._chat}
        route = next((fn for suffix, fn in routes.items() if path.endswith(suffix)), None)
        if route is None:
            return api.error(api.ApiError(404, f"Unknown request URL: POST {handler.path}",
                                          "unknown_url"))
        if handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            return api.error(api.ApiError(401, "Incorrect API key provided.", "invalid_api_key"))
        try:
            return 200, route(body), {}
        except api.ApiError as exc:
            return api.error(exc)

    def _chat(self, body: Any) -> dict[str, Any]:
        model = api.requested_model(body, self.chat_models)
        messages = api.chat_messages(body.get("messages"))
        with self._lock:
            scripted = self._replies.popleft() if self._replies else None
        users = [m["content"] for m in messages if m["role"] == "user"]
        reply = scripted if scripted is not None else (users[-1] if users else "")
        prompt = sum(self.count_tokens(m["content"]) for m in messages)
        completion = self.count_tokens(reply)
        with self._lock:
            number = len(self.requests)
        return {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
                "model": model, "choices": [{
                    "index": 0, "finish_reason": "stop", "logprobs": None,
                    "message": {"role": "assistant", "content": reply, "refusal": None}}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}}

    def _embeddings(self, body: Any) -> dict[str, Any]:
        model = api.requested_model(body, self.models)
        texts = api.inputs(body.get("input"))
        dim = self._dimensions(model, body.get("dimensions"))
        fmt = body.get("encoding_format", "float")
        if fmt not in ("float", "base64"):
            raise api.ApiError(400, f"'{fmt}' is not one of ['float', 'base64'] - "
                               "'encoding_format'", param="encoding_format")
        counts = [self.count_tokens(t) for t in texts]
        for n in counts:
            if n > 8191:
                raise api.ApiError(400, f"This model's maximum context length is 8192 tokens, "
                                   f"however you requested {n} tokens in the input.")
        if sum(counts) > 300_000:
            raise api.ApiError(400, f"Requested {sum(counts)} tokens, max 300000 tokens per "
                               "request", "max_tokens_per_request")
        vectors = self._embedder(dim).embed_batch(texts) * np.float32(self.scale)
        data = [{"object": "embedding", "index": i, "embedding": api.encode(v, fmt)}
                for i, v in enumerate(vectors)]
        return {"object": "list", "data": data, "model": model,
                "usage": {"prompt_tokens": sum(counts), "total_tokens": sum(counts)}}

    def _dimensions(self, model: str, requested: Any) -> int:
        native = self.models[model]
        if requested is None:
            return native
        if not model.startswith("text-embedding-3"):
            raise api.ApiError(400, "This model does not support specifying dimensions.",
                               param="dimensions")
        if not isinstance(requested, int) or not 1 <= requested <= native:
            raise api.ApiError(400, f"Invalid value for 'dimensions' = {requested}. Must be "
                               f"between 1 and {native}.", param="dimensions")
        return requested

    def _embedder(self, dim: int) -> MockEmbedder:
        with self._lock:
            if dim not in self._embedders:
                self._embedders[dim] = MockEmbedder(dim=dim, seed=self.seed)
            return self._embedders[dim]


class _Counter:
    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding

    def __call__(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 owner: OpenAICompatibleServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        self.connections.add(sock)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Unblock handler threads waiting on idle keep-alive connections."""
        for sock in list(self.connections):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)) and exc is not None:
            self.owner.errors.append(exc)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms ACK stalls
    server: _HTTPServer

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        action = owner._next_action()
        if action.status != 200:
            status, payload, _ = api.error(api.ApiError(
                action.status, action.message or f"scripted failure ({action.status})",
                type_="rate_limit_error" if action.status == 429 else "server_error"))
            headers = action.headers
        else:
            status, payload, headers = owner._respond(self, body)
        owner._record(self, body, status)  # on arrival, so a delayed request counts at once
        if action.delay and owner._stopping.wait(action.delay):
            return
        self._send(status, payload, headers)

    def do_GET(self) -> None:
        self._send(404, {"error": {"message": f"Unknown request URL: GET {self.path}"}}, {})

    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{len(self.server.owner.requests)}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass
