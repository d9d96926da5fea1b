"""OpenAIEmbedder through the real ``openai`` client, against a local compatible server.

Nothing reaches the internet: ``trails.testing.servers.openai`` answers on 127.0.0.1. Retries
sleep through an injected ``sleep`` that records the delays (and does not wait), so backoff,
jitter and Retry-After are checked exactly and the suite stays fast.
"""

from __future__ import annotations

import email.utils
import socket
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("openai")
pytest.importorskip("tiktoken")

from trails import retrieve
from trails.context import Context, embedder_for
from trails.errors import (
    ConfigurationError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    InvalidArgumentError,
    TrailsError,
)
from trails.ingest import BatchEmbedded, Document, DocumentIngested, ingest, ingest_all
from trails.resilience import CircuitBreaker, Failure
from trails.testing import fresh_context
from trails.testing.servers.openai import OpenAICompatibleServer
from trails.vector.embedders.base import TokenAwareEmbedder, TokenCountingEmbedder
from trails.vector.embedders.openai import OpenAIEmbedder, load_cl100k

try:
    load_cl100k()
except ConfigurationError as exc:  # pragma: no cover - depends on the environment
    pytest.skip(f"cl100k_base is not available offline: {exc}", allow_module_level=True)

TEXTS = ["Rails is a web framework.", "Ruby gems are packages.", "Elephants are grey."]


class Sleeps(list):
    """An injected ``sleep``: records each delay instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server():
    with OpenAICompatibleServer(api_key="test") as running:
        yield running


@pytest.fixture
def sleeps():
    return Sleeps()


@pytest.fixture
def make(server, sleeps):
    """OpenAIEmbedder factory pointed at the local server, with recorded sleeps."""
    made = []

    def factory(**options):
        options = {"base_url": server.base_url, "api_key": "test", "dim": 64,
                   "sleep": sleeps, **options}
        embedder = OpenAIEmbedder(**options)
        made.append(embedder)
        return embedder

    yield factory
    for embedder in made:
        embedder.close()


def statuses(server):
    return [r.status for r in server.embedding_requests]


# -- embedding ----------------------------------------------------------------------------


def test_embeds_unit_float32_vectors_deterministically(server, make):
    server.scale = 3.0  # the server's vectors are not unit length: the client re-normalises
    embedder = make()
    first = embedder.embed_array(TEXTS)
    assert first.shape == (3, 64) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-6)
    again = make().embed_array(list(reversed(TEXTS)))
    np.testing.assert_array_equal(again[::-1], first)
    assert embedder.embed(TEXTS[0]) == first[0].tolist()
    assert embedder.identity.model == "openai/text-embedding-3-small"
    assert (embedder.identity.dim, embedder.identity.normalized) == (64, True)
    body = server.embedding_requests[0].body
    assert body["model"] == "text-embedding-3-small" and body["input"] == TEXTS
    assert body["encoding_format"] == "base64"
    assert server.embedding_requests[0].headers["authorization"] == "Bearer test"


def test_texts_sharing_words_land_closer(make):
    a, b, c = make().embed_array(["rails web framework", "a web framework", "grey elephants"])
    assert a @ b > a @ c


def test_dimensions_are_requested_only_when_shortening(server, make):
    assert make(dim=None).embed_array(["x"]).shape == (1, 1536)
    assert "dimensions" not in server.embedding_requests[-1].body
    assert make(dim=256).embed_array(["x"]).shape == (1, 256)
    assert server.embedding_requests[-1].body["dimensions"] == 256
    large = make(model="text-embedding-3-large", dim=None)
    assert large.dim == 3072 and large.embed_array(["x"]).shape == (1, 3072)
    ada = make(model="text-embedding-ada-002", dim=None)
    assert ada.dim == 1536 and ada.identity.model == "openai/text-embedding-ada-002"
    ada.embed_array(["x"])
    assert "dimensions" not in server.embedding_requests[-1].body


@pytest.mark.parametrize("model, dim, word", [
    ("text-embedding-ada-002", 256, "cannot shorten"),
    ("text-embedding-3-small", 4096, "at most 1536"),
    ("text-embedding-3-small", 0, "positive integer"),
    ("my-local-model", None, "pass dim="),
])
def test_bad_dimensions_are_value_errors(model, dim, word):
    with pytest.raises(ValueError, match=word):
        OpenAIEmbedder(model, dim=dim, api_key="test")


def test_a_compatible_servers_model_declares_its_dim():
    with OpenAICompatibleServer(models={"local-embedder": 32}) as local:
        embedder = OpenAIEmbedder("local-embedder", dim=32, base_url=local.base_url,
                                  api_key="test")
        assert embedder.embed_array(["x"]).shape == (1, 32)
        assert "dimensions" not in local.embedding_requests[0].body
        wrong = OpenAIEmbedder("local-embedder", dim=16, base_url=local.base_url, api_key="test")
        with pytest.raises(EmbeddingError, match="returned 32-d vectors, expected 16"):
            wrong.embed_array(["x"])


def test_server_answers_float_and_base64_alike(server):
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    floats = client.embeddings.create(model="text-embedding-3-small", input=["a b"],
                                      dimensions=8, encoding_format="float")
    decoded = client.embeddings.create(model="text-embedding-3-small", input=["a b"],
                                       dimensions=8)  # the client asks for base64 itself
    assert server.embedding_requests[1].body["encoding_format"] == "base64"
    assert isinstance(floats.data[0].embedding, list)
    np.testing.assert_allclose(floats.data[0].embedding, decoded.data[0].embedding, rtol=1e-6)
    assert floats.usage.prompt_tokens == 2 and floats.model == "text-embedding-3-small"
    client.close()


# -- keys ---------------------------------------------------------------------------------


def test_missing_key_is_a_clear_error_before_any_request(server, make):
    embedder = make(api_key=None)  # OPENAI_API_KEY is removed by the isolated kernel
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        embedder.embed_array(TEXTS)
    assert server.requests == []


def test_key_from_the_environment(server, make, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    assert make(api_key=None).embed_array(["x"]).shape == (1, 64)


def test_wrong_key_fails_at_once_naming_the_variable(server, make, sleeps):
    with pytest.raises(EmbeddingError, match="401.*Incorrect API key.*OPENAI_API_KEY"):
        make(api_key="wrong").embed_array(["x"])
    assert statuses(server) == [401] and sleeps == []


# -- retries ------------------------------------------------------------------------------


def test_429_waits_as_long_as_retry_after_says(server, make, sleeps):
    server.fail_next(429, retry_after=0.05)
    embedder = make()
    assert embedder.embed_array(TEXTS).shape == (3, 64)
    assert statuses(server) == [429, 200]
    assert sleeps == [pytest.approx(0.05)] and sum(sleeps) >= 0.05


def test_retry_after_ms_and_http_dates_are_honoured(server, make, sleeps):
    now = 1_700_000_000.0
    server.fail_next(429, retry_after_ms=250)
    server.fail_next(503, retry_after=email.utils.formatdate(now + 7, usegmt=True))
    make(clock=lambda: now).embed_array(["x"])
    assert statuses(server) == [429, 503, 200]
    assert sleeps == [pytest.approx(0.25), pytest.approx(7.0)]


def test_a_retry_after_beyond_the_limit_is_not_waited_for(server, make, sleeps):
    server.fail_next(429, retry_after=3600)
    with pytest.raises(EmbeddingError, match="wait 3600 s"):
        make().embed_array(["x"])
    assert statuses(server) == [429] and sleeps == []


def test_5xx_retries_with_exponential_backoff_and_jitter(server, make, sleeps):
    server.fail_next(500, times=2)
    server.fail_next(502)
    assert make(initial_backoff=0.5).embed_array(["x"]).shape == (1, 64)
    assert statuses(server) == [500, 500, 502, 200]
    for attempt, delay in enumerate(sleeps):  # full jitter: anywhere up to the base delay
        assert 0.0 <= delay <= 0.5 * 2 ** attempt
    assert len(sleeps) == 3


def test_backoff_is_capped(make):
    policy = make(initial_backoff=1.0, max_backoff=4.0).resilience  # what its retries run under
    circuit = CircuitBreaker("the OpenAI embeddings API", "http://127.0.0.1:1",
                             failure_threshold=10**6)
    waits: list[float] = []

    def down() -> None:
        raise ConnectionError("refused")

    for _ in range(100):
        with pytest.raises(ConnectionError):
            policy.call(down, lambda exc: Failure(), circuit, sleep=waits.append)
    assert len(waits) == 100 * 6  # max_retries=6
    assert all(0.0 <= wait <= 4.0 for wait in waits)
    assert max(waits[3::6]) > 3.0  # the whole range up to the cap is drawn


def test_exhausted_retries_raise_embedding_error(server, make, sleeps):
    server.fail_next(503, times=10, message="overloaded")
    with pytest.raises(EmbeddingError, match=r"failed 3 times \(max_retries=2\).*503: overloaded"):
        make(max_retries=2).embed_array(["x"])
    assert statuses(server) == [503] * 3 and len(sleeps) == 2
    assert issubclass(EmbeddingError, TrailsError)


def test_x_should_retry_false_is_obeyed(server, make, sleeps):
    server.fail_next(500, headers={"x-should-retry": "false"})
    with pytest.raises(EmbeddingError, match="rejected"):
        make().embed_array(["x"])
    assert statuses(server) == [500] and sleeps == []


def test_timeout_then_success(server, make, sleeps):
    server.delay_next(2.0)
    assert make(timeout=0.3).embed_array(["x"]).shape == (1, 64)
    assert len(server.embedding_requests) == 2 and len(sleeps) == 1


def test_timeouts_exhaust_retries(server, make, sleeps):
    server.delay_next(2.0, times=2)
    with pytest.raises(EmbeddingError, match="failed 2 times.*timed out"):
        make(timeout=0.2, max_retries=1).embed_array(["x"])
    assert len(sleeps) == 1


def test_connection_errors_are_retried_then_reported(sleeps):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAIEmbedder(dim=64, api_key="test", base_url=f"http://127.0.0.1:{port}/v1",
                              max_retries=2, sleep=sleeps)
    with pytest.raises(EmbeddingError, match=f"failed 3 times.*Connection error.*{port}"):
        embedder.embed_array(["x"])
    assert len(sleeps) == 2


def test_credentials_in_the_endpoint_url_are_never_shown_nor_recorded(sleeps, monkeypatch,
                                                                       tmp_path):
    """A base_url with user:password@ (a proxy's basic auth) showed the password in every
    connection error (and so in the service's 503 bodies) and wrote it into trails.json."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    secret_url = f"http://alice:s3cret@127.0.0.1:{port}/v1"
    embedder = OpenAIEmbedder(dim=64, api_key="test", base_url=secret_url, max_retries=0,
                              sleep=sleeps)
    with pytest.raises(EmbeddingError, match=f"Connection error.*127.0.0.1:{port}") as raised:
        embedder.embed_array(["x"])
    assert "s3cret" not in str(raised.value) and "alice" not in str(raised.value)
    recorded = embedder.recorded_settings(tmp_path)
    assert recorded is not None and recorded["base_url"] == f"http://127.0.0.1:{port}/v1"
    # Reopened from the record, the environment's URL for the same endpoint gives them back.
    monkeypatch.setenv("OPENAI_BASE_URL", secret_url)
    assert OpenAIEmbedder(dim=64, api_key="test", base_url=recorded["base_url"]).base_url == secret_url
    monkeypatch.setenv("OPENAI_BASE_URL", "http://bob:other@elsewhere.example:1/v1")
    assert OpenAIEmbedder(dim=64, api_key="test",
                          base_url=recorded["base_url"]).base_url == recorded["base_url"]


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_other_4xx_fail_immediately_with_the_api_message(server, make, sleeps, status):
    server.fail_next(status, message="Invalid 'input': bad things")
    with pytest.raises(EmbeddingError, match=f"{status}: Invalid 'input': bad things"):
        make().embed_array(["x"])
    assert statuses(server) == [status] and sleeps == []


def test_unknown_model_on_the_server_reports_its_message(server, make):
    with pytest.raises(EmbeddingError, match="404 model_not_found: The model `gone`"):
        make(model="gone", dim=64).embed_array(["x"])


# -- batching and limits ------------------------------------------------------------------


def test_requests_hold_at_most_batch_size_texts_in_order(server, make):
    texts = [f"text number {i}" for i in range(7)]
    embedder = make(batch_size=3)
    vectors = embedder.embed_array(texts)
    assert [len(r.inputs) for r in server.embedding_requests] == [3, 3, 1]
    assert [t for r in server.embedding_requests for t in r.inputs] == texts
    single = make().embed_array(texts[5:6])
    np.testing.assert_array_equal(vectors[5:6], single)


def test_requests_are_packed_under_the_token_budget(server, make):
    texts = ["one two three four five six"] * 5 + ["alpha"] * 4  # 6 and 1 tokens each
    embedder = make(max_request_tokens=13)
    assert [embedder.count_tokens(t) for t in texts[4:6]] == [6, 1]
    embedder.embed_array(texts)
    sizes = [[embedder.count_tokens(t) for t in r.inputs] for r in server.embedding_requests]
    assert sizes == [[6, 6], [6, 6], [6, 1, 1, 1, 1]]
    assert all(sum(s) <= 13 for s in sizes)
    assert embedder.last_usage.requests == 3
    assert embedder.last_usage.prompt_tokens == embedder.total_tokens == 6 * 5 + 4
    embedder.embed_array(["alpha"])
    assert embedder.last_usage.total_tokens == 1 and embedder.total_tokens == 35


def test_batch_size_is_validated():
    with pytest.raises(ValueError, match="2048"):
        OpenAIEmbedder(api_key="test", batch_size=4096)


def test_an_over_long_text_names_its_length_and_a_chunker(server, make):
    # The caller's text is what is wrong: an InvalidArgumentError (a 400 from the service),
    # not an EmbeddingError (a 503, as if the service were down).
    embedder = make()
    text = " word" * 9000  # 9000 tokens
    with pytest.raises(InvalidArgumentError,
                       match=r"text 1 is 9000 tokens.*8191.*token_chunker_for"):
        embedder.embed_array(["fine", text])
    assert server.requests == []


def test_an_over_long_query_is_refused_not_answered_by_keywords_alone(server, make):
    # An EmbeddingError from the query's embedding fell back to a keyword-only answer (or a
    # 503 from the service): the caller's mistake read as the embedder being down.
    with fresh_context(embedder=make()) as ctx:
        ingest_all([Document("d", "mem:d", "Rails is a web framework written in Ruby.")],
                   ctx=ctx)
        with pytest.raises(InvalidArgumentError, match="Shorten a query"):
            retrieve(" word" * 9000, ctx)
        from trails.service.problems import status_of
        try:
            retrieve(" word" * 9000, ctx, mode="vector")
        except InvalidArgumentError as exc:
            assert status_of(exc) == 400
        else:
            raise AssertionError("an over-long query was answered")


def test_an_empty_text_is_refused_as_a_bad_argument(server, make):
    # A plain ValueError before: the service answered it 400 but no caller catching
    # TrailsError saw it. InvalidArgumentError is still a ValueError.
    with pytest.raises(InvalidArgumentError, match="text 1 is empty"):
        make().embed_array(["x", ""])
    assert server.requests == []


def test_tokenizer_is_cl100k_for_chunkers(make):
    from trails.ingest.chunkers import default_chunker, token_chunker_for

    embedder = make()
    assert isinstance(embedder, TokenAwareEmbedder) and isinstance(embedder, TokenCountingEmbedder)
    assert embedder.tokenizer is embedder.encoding
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("<|endoftext|>") > 1  # ordinary text, not a control token
    assert embedder.max_tokens == 8191
    assert token_chunker_for(embedder).max_tokens == 8191
    assert default_chunker(embedder).max_tokens == 8191


# -- identity, stores, contexts -----------------------------------------------------------


def test_identity_is_recorded_and_another_model_refused(make):
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    embedder = make()
    store = SqliteVecStore(":memory:", dim=64, embedder=embedder.identity)
    assert store.embedder_identity == embedder.identity
    store.bind_embedder(make().identity)  # the same model and dim: fine
    with pytest.raises(EmbeddingModelMismatchError, match="text-embedding-3-small"):
        store.bind_embedder(make(model="text-embedding-3-large").identity)


def test_a_persisted_context_reopens_with_the_same_embedder(server, make, tmp_path,
                                                            monkeypatch):
    ctx = Context.open(tmp_path / "ctx", embedder=make(dim=128))
    ctx.close()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    again = Context.open(tmp_path / "ctx")
    try:
        assert isinstance(again.embedder, OpenAIEmbedder)
        assert again.embedder.identity == make(dim=128).identity
        assert again.embedder.embed_array(["x"]).shape == (1, 128)
    finally:
        again.close()
        again.embedder.close()
    other = Context.open(tmp_path / "ctx", embedder=make(model="text-embedding-3-large",
                                                         dim=128))
    try:
        with pytest.raises(EmbeddingModelMismatchError):
            list(ingest([Document(id="d", source="d", text="x")], ctx=other))
    finally:
        other.close()


def test_embedder_for_rebuilds_openai_identities(make):
    rebuilt = embedder_for(make(model="text-embedding-3-large", dim=256).identity)
    assert isinstance(rebuilt, OpenAIEmbedder)
    assert (rebuilt.model, rebuilt.dim) == ("text-embedding-3-large", 256)
    assert embedder_for(make(dim=None, model="text-embedding-ada-002").identity).dim == 1536


def test_ingest_end_to_end_reports_api_tokens(server, make):
    docs = [Document(id="rails", source="rails.md",
                     text="Rails is a web framework. It is written in Ruby."),
            Document(id="gems", source="gems.md", text="Ruby gems are packages."),
            Document(id="zoo", source="zoo.md", text="Elephants are grey. They live long.")]
    embedder = make()
    with fresh_context(embedder=embedder) as ctx:
        events, reported = [], []
        # last_usage is read as each batch's event arrives: no batch may be embedded ahead
        # of it in the run's second thread (it would be the next batch's usage).
        for event in ingest(docs, ctx=ctx, batch_size=2, prepare_ahead=False):
            events.append(event)
            if isinstance(event, BatchEmbedded):  # the usage the API reported for this batch
                reported.append(embedder.last_usage.prompt_tokens)
        batches = [e for e in events if isinstance(e, BatchEmbedded)]
        assert len([e for e in events if isinstance(e, DocumentIngested)]) == 3
        assert [b.chunks for b in batches] == [2, 1] and ctx.vectors.count() == 3
        assert [len(r.inputs) for r in server.embedding_requests] == [2, 1]
        # The events count with tiktoken before sending; the API's usage agrees exactly.
        assert [b.tokens for b in batches] == reported
        assert sum(reported) == embedder.total_tokens > 0
        hits = retrieve("web framework written in Ruby", ctx, mode="vector", k=1)
        assert "Rails" in hits[0].snippet
        assert ctx.vectors.embedder_identity == embedder.identity


def test_a_declared_price_gives_each_batch_its_cost(server, make):
    """The runtime's EmbeddingMetrics carry cost: an OpenAI embedder told its price (dollars
    per million tokens, e.g. 0.02 for text-embedding-3-small) prices each batch's tokens."""
    docs = [Document(id="a", source="a.md", text="Rails is a web framework."),
            Document(id="b", source="b.md", text="Elephants are grey.")]
    with fresh_context(embedder=make(price_per_million_tokens=0.02)) as ctx:
        batches = [e for e in ingest(docs, ctx=ctx, batch_size=1)
                   if isinstance(e, BatchEmbedded)]
    assert len(batches) == 2 and all(b.tokens > 0 for b in batches)
    assert [b.cost for b in batches] == pytest.approx([b.tokens * 0.02 / 1e6 for b in batches])
    assert make().price_per_million_tokens is None
    for bad in (-1, float("nan"), "0.02", True):
        with pytest.raises(InvalidArgumentError, match="price_per_million_tokens"):
            make(price_per_million_tokens=bad)


# -- packaging ----------------------------------------------------------------------------


def test_trails_vector_does_not_import_openai():
    code = ("import sys, trails.vector; assert 'openai' not in sys.modules; "
            "assert 'tiktoken' not in sys.modules; "
            "from trails.vector import OpenAIEmbedder; OpenAIEmbedder(api_key='k'); "
            "assert 'openai' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
