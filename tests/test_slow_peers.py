"""Remote peers that are slow or send too much, on loopback: a server that trickles its answer
a byte at a time (each read within the timeout, the whole far past it) fails the call within
the timeout for the SPARQL endpoint, Qdrant and an OpenAI-compatible API; an answer past the
SPARQL graph's ``max_response_bytes`` is refused, announced or not, compressed or not."""

from __future__ import annotations

import gzip
import socketserver
import threading
import time

import pytest

from trails.errors import (
    EmbeddingError,
    EndpointUnavailableError,
    InvalidArgumentError,
    SparqlError,
)
from trails.resilience import Resilience

httpx = pytest.importorskip("httpx")
from trails.kg import SparqlEndpointGraph

pytestmark = pytest.mark.timeout(60)

ONE_TRY = Resilience(attempts=1, failure_threshold=100)
ASK_TRUE = b'{"head": {}, "boolean": true}'
# Each byte comes within the timeout of a read (0.5 s), the answer in ~6 s: far past it.
GAP = 0.05
TRICKLED = 120
BOUND = 4.0  # generous: the timeout, connection set-up, a slow machine


class Peer(socketserver.ThreadingTCPServer):
    """A loopback HTTP server answering every request with ``answer``: the first ``slow``
    bytes of it sent one at a time ``GAP`` apart, the rest at once."""

    daemon_threads = True

    def __init__(self, answer: bytes, slow: int = 0) -> None:
        self.answer, self.slow = answer, slow
        super().__init__(("127.0.0.1", 0), _Answer)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Answer(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        answer, slow = self.server.answer, self.server.slow
        try:
            self.request.recv(1 << 20)
            for i in range(min(slow, len(answer))):
                self.request.sendall(answer[i : i + 1])
                time.sleep(GAP)
            self.request.sendall(answer[slow:])
        except OSError:  # the client hung up
            pass


def response(body: bytes, media: str = "application/sparql-results+json", *,
             length: bool = True, extra: str = "") -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {media}\r\nConnection: close\r\n{extra}"
    if length:
        head += f"Content-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


@pytest.fixture
def peers():
    made: list[Peer] = []

    def make(answer: bytes, slow: int = 0) -> Peer:
        made.append(Peer(answer, slow))
        return made[-1]

    yield make
    for peer in made:
        peer.close()


def trickling(peers, where: str) -> Peer:
    """A peer that trickles its status line and headers (``headers``) or its body (``body``)."""
    answer = response(ASK_TRUE + b" " * TRICKLED)
    head = answer.index(b"\r\n\r\n") + 4
    return peers(answer, slow=TRICKLED if where == "headers" else head + TRICKLED)


# -- a whole exchange within the timeout ---------------------------------------------------


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_sparql_endpoint_trickling_its_answer_times_out_within_the_timeout(peers, where):
    peer = trickling(peers, where)
    kg = SparqlEndpointGraph(peer.url + "/query", timeout=0.5, resilience=ONE_TRY)
    for call in (lambda: kg.query("ASK { ?s ?p ?o }"),
                 lambda: kg.update("INSERT DATA { <https://x/a> <https://x/b> 1 }")):
        started = time.monotonic()
        with pytest.raises(EndpointUnavailableError, match="did not answer .* within 0.5 s"):
            call()
        assert time.monotonic() - started < BOUND
    kg.close()


def test_each_retry_of_a_trickled_query_has_its_own_timeout(peers):
    peer = trickling(peers, "body")
    kg = SparqlEndpointGraph(peer.url + "/query", timeout=0.5, resilience=Resilience(
        attempts=2, initial_backoff=0.01, failure_threshold=100))
    started = time.monotonic()
    with pytest.raises(EndpointUnavailableError, match="did not answer a query"):
        kg.query("ASK { ?s ?p ?o }")
    assert time.monotonic() - started < 2 * BOUND
    kg.close()


def test_a_qdrant_server_trickling_its_answer_times_out_within_the_timeout(peers):
    pytest.importorskip("qdrant_client")
    from trails.vector.stores.qdrant import QdrantStore

    peer = trickling(peers, "body")
    started = time.monotonic()
    with pytest.raises(EndpointUnavailableError, match=peer.url.split("//")[1]):
        QdrantStore(url=peer.url, dim=3, timeout=1, resilience=ONE_TRY)
    # qdrant-client asks for the server's version first, then whether the collection exists
    assert time.monotonic() - started < 2 * BOUND


def test_an_embeddings_api_trickling_its_answer_times_out_within_the_timeout(peers):
    pytest.importorskip("openai")
    from trails.vector.embedders.openai import OpenAIEmbedder

    peer = trickling(peers, "headers")
    embedder = OpenAIEmbedder("my-model", dim=8, api_key="test", base_url=peer.url + "/v1",
                              timeout=0.5, max_retries=0)
    embedder.count_tokens("warm")  # the tokenizer loads outside the measured call
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="timed out"):
        embedder.embed_batch(["Rails is a web framework."])
    assert time.monotonic() - started < BOUND
    embedder.close()


# -- answers past max_response_bytes ---------------------------------------------------------


LARGE = b'{"head": {}, "boolean": true' + b" " * 2_000_000 + b"}"


@pytest.mark.parametrize("answer", [
    response(LARGE),                                                     # announced
    response(LARGE, length=False),                                       # read to the end
    response(gzip.compress(LARGE), extra="Content-Encoding: gzip\r\n"),  # small compressed
], ids=["announced", "unannounced", "compressed"])
def test_an_answer_past_max_response_bytes_is_refused_naming_the_setting(peers, answer):
    peer = peers(answer)
    kg = SparqlEndpointGraph(peer.url + "/query", timeout=5.0, resilience=ONE_TRY,
                             max_response_bytes=100_000)
    with pytest.raises(SparqlError, match=r"max_response_bytes=100,000") as refused:
        kg.query("ASK { ?s ?p ?o }")
    assert "raise the cap" in str(refused.value)
    kg.close()


def test_an_answer_within_max_response_bytes_is_read_and_the_cap_is_recorded(peers, tmp_path):
    peer = peers(response(gzip.compress(ASK_TRUE), extra="Content-Encoding: gzip\r\n"))
    kg = SparqlEndpointGraph(peer.url + "/query", timeout=5.0, resilience=ONE_TRY,
                             max_response_bytes=len(ASK_TRUE))
    assert kg.query("ASK { ?s ?p ?o }") is True
    assert (kg.recorded_settings(tmp_path) or {})["max_response_bytes"] == len(ASK_TRUE)
    assert "max_response_bytes" not in (SparqlEndpointGraph(peer.url + "/query")
                                        .recorded_settings(tmp_path) or {})
    kg.close()


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "10"])
def test_a_max_response_bytes_that_is_no_positive_integer_is_refused(value):
    with pytest.raises(InvalidArgumentError, match="max_response_bytes must be a positive"):
        SparqlEndpointGraph("http://127.0.0.1:1/query", max_response_bytes=value)
