"""Query rewriting: the protocol, the identity default, and OpenAIQueryRewriter through the real
``openai`` client against the local compatible server (``POST /v1/chat/completions``)."""

from __future__ import annotations

import socket

import pytest

openai = pytest.importorskip("openai")

from trails import retrieve
from trails.errors import ConfigurationError, RewriteError, TrailsError
from trails.rank.rewrite import (
    SYSTEM_PROMPT,
    IdentityRewriter,
    OpenAIQueryRewriter,
    QueryRewriter,
    check_messages,
)
from trails.retrieval.retrievers import HybridRetriever, VectorRetriever
from trails.testing.servers.openai import OpenAICompatibleServer

MESSAGES = [
    {"role": "user", "content": "Which tool installs Ruby gems?"},
    {"role": "assistant", "content": "Bundler installs the gems listed in a Gemfile."},
]
FOLLOW_UP = "and how do elephants remember them?"
STANDALONE = "how does bundler install ruby gems"


@pytest.fixture
def server():
    with OpenAICompatibleServer(api_key="test") as running:
        yield running


@pytest.fixture
def rewriter(server):
    made = OpenAIQueryRewriter(api_key="test", base_url=server.base_url, max_retries=2,
                               timeout=5.0)
    yield made
    made.close()


@pytest.fixture
def corpus(ctx):
    texts = {
        "trails://c/bundler": "Bundler installs Ruby gems from a Gemfile",
        "trails://c/gems": "Ruby gems are packages of Ruby code",
        "trails://c/elephants": "Elephants remember water holes for decades",
        "trails://c/memory": "How memory works in the brain",
    }
    ctx.vectors.add_many(list(texts), ctx.embedder.embed_many(list(texts.values())),
                         [{"snippet": t} for t in texts.values()])
    ctx.kg.update("INSERT DATA { " + " ".join(f"<{i}> a trails:Chunk ." for i in texts) + " }")
    return ctx


def pairs(result):
    return [(h.iri, h.score) for h in result]


# -- the protocol and the default ----------------------------------------------------------


def test_both_rewriters_satisfy_the_protocol():
    assert isinstance(IdentityRewriter(), QueryRewriter)
    assert isinstance(OpenAIQueryRewriter(api_key="x"), QueryRewriter)


def test_the_identity_rewriter_returns_the_query_unchanged():
    assert IdentityRewriter().rewrite(FOLLOW_UP, MESSAGES) == FOLLOW_UP
    assert IdentityRewriter().rewrite(FOLLOW_UP, []) == FOLLOW_UP


@pytest.mark.parametrize("messages, error", [
    ("hello", TypeError),
    ({"role": "user", "content": "hi"}, TypeError),
    ([("user", "hi")], TypeError),
    ([{"role": "user"}], ValueError),
    ([{"role": "user", "content": 3}], TypeError),
])
def test_malformed_messages_are_refused(messages, error):
    with pytest.raises(error):
        check_messages(messages)
    with pytest.raises(error):
        IdentityRewriter().rewrite("q", messages)


# -- OpenAIQueryRewriter against the local server -------------------------------------------


def test_the_request_holds_the_conversation_and_the_query(server, rewriter):
    server.reply_next(f"  {STANDALONE}\n")
    assert rewriter.rewrite(FOLLOW_UP, MESSAGES) == STANDALONE
    (request,) = server.chat_requests
    assert request.path == "/v1/chat/completions" and request.status == 200
    assert request.headers["authorization"] == "Bearer test"
    assert request.body["model"] == "gpt-4o-mini"
    assert request.body["temperature"] == 0.0
    system, user = request.messages
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    for message in MESSAGES:
        assert f"{message['role']}: {message['content']}" in user["content"]
    assert user["content"].index(MESSAGES[0]["content"]) < user["content"].index(
        MESSAGES[1]["content"]) < user["content"].index(FOLLOW_UP)


def test_without_messages_nothing_is_sent(server, rewriter):
    assert rewriter.rewrite(FOLLOW_UP, []) == FOLLOW_UP
    assert server.requests == []


def test_only_the_latest_turns_are_sent(server):
    rewriter = OpenAIQueryRewriter(api_key="test", base_url=server.base_url, max_messages=1)
    rewriter.rewrite(FOLLOW_UP, MESSAGES)
    content = server.chat_requests[0].messages[1]["content"]
    assert MESSAGES[1]["content"] in content and MESSAGES[0]["content"] not in content
    rewriter.close()


def test_temperature_none_is_left_out(server):
    rewriter = OpenAIQueryRewriter("gpt-4o", api_key="test", base_url=server.base_url,
                                   temperature=None)
    rewriter.rewrite(FOLLOW_UP, MESSAGES)
    assert "temperature" not in server.chat_requests[0].body
    assert server.chat_requests[0].body["model"] == "gpt-4o"
    rewriter.close()


def test_the_server_echoes_the_last_user_message_by_default(server, rewriter):
    reply = rewriter.rewrite(FOLLOW_UP, MESSAGES)
    assert reply == server.chat_requests[0].messages[-1]["content"].strip()


def test_the_key_comes_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    server.reply_next(STANDALONE)
    rewriter = OpenAIQueryRewriter(base_url=server.base_url)
    assert rewriter.rewrite(FOLLOW_UP, MESSAGES) == STANDALONE
    rewriter.close()


# -- errors ------------------------------------------------------------------------------


def test_a_missing_key_names_the_variable_before_any_request(server):
    rewriter = OpenAIQueryRewriter(base_url=server.base_url)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        rewriter.rewrite(FOLLOW_UP, MESSAGES)
    assert server.requests == []


def test_a_wrong_key_fails_at_once(server):
    rewriter = OpenAIQueryRewriter(api_key="wrong", base_url=server.base_url, max_retries=3)
    with pytest.raises(RewriteError, match="401.*OPENAI_API_KEY"):
        rewriter.rewrite(FOLLOW_UP, MESSAGES)
    assert len(server.requests) == 1
    rewriter.close()


def test_an_unknown_model_reports_the_servers_message(server):
    rewriter = OpenAIQueryRewriter("gpt-0", api_key="test", base_url=server.base_url)
    with pytest.raises(RewriteError, match="404.*`gpt-0` does not exist"):
        rewriter.rewrite(FOLLOW_UP, MESSAGES)
    assert len(server.requests) == 1
    rewriter.close()


def test_rate_limits_and_server_errors_are_retried(server, rewriter):
    server.fail_next(429, retry_after_ms=1)
    server.fail_next(503, retry_after_ms=1)
    server.reply_next(STANDALONE)
    assert rewriter.rewrite(FOLLOW_UP, MESSAGES) == STANDALONE
    assert [r.status for r in server.requests] == [429, 503, 200]


def test_exhausted_retries_raise_a_rewrite_error(server, rewriter):
    server.fail_next(500, retry_after_ms=1, times=3, message="overloaded")
    with pytest.raises(RewriteError, match="500.*overloaded.*after 2 retries") as error:
        rewriter.rewrite(FOLLOW_UP, MESSAGES)
    assert isinstance(error.value, TrailsError)
    assert len(server.requests) == 3


def test_a_timeout_raises_a_rewrite_error(server):
    rewriter = OpenAIQueryRewriter(api_key="test", base_url=server.base_url, max_retries=0,
                                   timeout=0.2)
    server.delay_next(2.0)
    with pytest.raises(RewriteError, match="cannot reach"):
        rewriter.rewrite(FOLLOW_UP, MESSAGES)
    rewriter.close()


def test_an_unreachable_server_raises_a_rewrite_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    rewriter = OpenAIQueryRewriter(api_key="test", base_url=f"http://127.0.0.1:{port}/v1",
                                   max_retries=0, timeout=2.0)
    with pytest.raises(RewriteError, match=f"127.0.0.1:{port}"):
        rewriter.rewrite(FOLLOW_UP, MESSAGES)


def test_an_empty_reply_raises_instead_of_searching_for_nothing(server, rewriter):
    server.reply_next("   ")
    with pytest.raises(RewriteError, match="no rewritten query"):
        rewriter.rewrite(FOLLOW_UP, MESSAGES)


@pytest.mark.parametrize("options", [{"max_retries": -1}, {"timeout": 0}, {"max_messages": 0}])
def test_bad_limits_are_value_errors(options):
    with pytest.raises(ValueError):
        OpenAIQueryRewriter(api_key="x", **options)


# -- the server's chat endpoint ------------------------------------------------------------


def test_the_server_validates_chat_requests(server):
    client = openai.OpenAI(api_key="test", base_url=server.base_url, max_retries=0)
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="gpt-4o-mini", messages=[])
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="gpt-4o-mini",
                                       messages=[{"role": "user"}])  # type: ignore[list-item]
    response = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hello there"}])
    assert response.choices[0].message.content == "hello there"
    assert response.usage.total_tokens == (response.usage.prompt_tokens
                                           + response.usage.completion_tokens) > 0
    server.reply_next("scripted")
    server.reset()  # forgets scripted replies too
    response = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "echo"}])
    assert response.choices[0].message.content == "echo"
    client.close()


# -- retrieval ranks by the rewritten query ----------------------------------------------------


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_retrieve_ranks_by_the_rewritten_query(corpus, server, rewriter, mode):
    server.reply_next(STANDALONE)
    rewritten = retrieve(FOLLOW_UP, corpus, mode=mode, k=3, messages=MESSAGES, rewriter=rewriter)
    assert pairs(rewritten) == pairs(retrieve(STANDALONE, corpus, mode=mode, k=3))
    assert pairs(rewritten) != pairs(retrieve(FOLLOW_UP, corpus, mode=mode, k=3))
    assert rewritten[0].iri == "trails://c/bundler"
    assert FOLLOW_UP in server.chat_requests[0].messages[1]["content"]


def test_messages_without_a_rewriter_do_not_change_the_query(corpus, server):
    plain = pairs(retrieve(FOLLOW_UP, corpus, k=3))
    assert pairs(retrieve(FOLLOW_UP, corpus, k=3, messages=MESSAGES)) == plain
    assert pairs(retrieve(FOLLOW_UP, corpus, k=3, messages=MESSAGES,
                          rewriter=IdentityRewriter())) == plain
    assert server.requests == []


@pytest.mark.parametrize("make", [
    lambda ctx, rewriter: VectorRetriever(ctx, k=3, rewriter=rewriter),
    lambda ctx, rewriter: HybridRetriever(ctx, k=3, rewriter=rewriter,
                                          sparql_filter="SELECT ?i WHERE { ?i a trails:Chunk }"),
], ids=["vector", "hybrid"])
def test_retrievers_rank_by_the_rewritten_query(corpus, server, rewriter, make):
    retriever = make(corpus, rewriter)
    server.reply_next(STANDALONE)
    assert pairs(retriever.retrieve(FOLLOW_UP, MESSAGES)) == pairs(retriever.retrieve(STANDALONE))
    assert len(server.chat_requests) == 1  # no messages, no request


def test_a_rewriter_failure_fails_the_retrieval(corpus, server, rewriter):
    server.fail_next(400, message="bad request")
    with pytest.raises(RewriteError, match="bad request"):
        VectorRetriever(corpus, rewriter=rewriter).retrieve(FOLLOW_UP, MESSAGES)
