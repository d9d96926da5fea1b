"""Query rewriting: a follow-up question and the conversation so far -> one standalone query.

"And how do I install them?" retrieves nothing useful on its own; after a turn about Ruby gems
it means "How do I install Ruby gems?". A :class:`QueryRewriter` makes that standalone query;
``retrieve(query, ctx, messages=..., rewriter=...)`` and the retrievers of
:mod:`trails.retrieval.retrievers` rank by it. Without a rewriter (or with :class:`IdentityRewriter`)
messages never change the query.

:class:`OpenAIQueryRewriter` asks a chat model through the ``openai`` client (OpenAI or any
compatible server: vLLM, Ollama, LiteLLM...). Unlike :class:`~trails.vector.embedders.openai.OpenAIEmbedder`,
which runs its own retry loop, it uses the client's retries (``max_retries``: exponential backoff
that honours ``Retry-After``), since one short request per query needs no batching.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from trails._lazy import require
from trails._openai import KEY_ENV, OpenAIClient, status_message
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError, RewriteError
from trails.rank._steps import check_setting

__all__ = ["SYSTEM_PROMPT", "IdentityRewriter", "OpenAIQueryRewriter", "QueryRewriter",
           "check_messages"]

SYSTEM_PROMPT = (
    "You rewrite the user's latest question into a standalone search query. Resolve pronouns "
    "and references using the conversation, keep every name, number and constraint, add nothing "
    "else, and do not answer the question. Reply with the query only, on one line."
)


@runtime_checkable
class QueryRewriter(Protocol):
    """Turns ``query`` plus prior ``messages`` (``{"role": ..., "content": ...}``, oldest first)
    into one standalone query."""

    def rewrite(self, query: str, messages: Sequence[Mapping[str, str]]) -> str: ...


class IdentityRewriter:
    """The default: the query as it is, whatever the conversation.

    >>> IdentityRewriter().rewrite("and them?", [{"role": "user", "content": "Ruby gems"}])
    'and them?'
    """

    def rewrite(self, query: str, messages: Sequence[Mapping[str, str]]) -> str:
        check_messages(messages)
        return query

    def __repr__(self) -> str:
        return "IdentityRewriter()"


def check_messages(messages: Sequence[Mapping[str, str]] | None) -> list[dict[str, str]]:
    """``messages`` as a list of ``{"role", "content"}`` dicts, or a clear error.

    Raises:
        InvalidArgumentTypeError: not a list of mappings, or a ``role``/``content`` that is
            not a string (also a TypeError).
        InvalidArgumentError: a message without ``role`` or ``content`` (also a ValueError).

    >>> check_messages([{"role": "user", "content": "hi"}])
    [{'role': 'user', 'content': 'hi'}]
    """
    if messages is None:
        return []
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InvalidArgumentTypeError(
            "messages must be a list of {'role': ..., 'content': ...} dicts, oldest first; got "
            f"{type(messages).__name__}")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidArgumentTypeError(
                f"messages: message {i} must be a {{'role': ..., 'content': ...}} dict, got "
                f"{type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        if role is None or content is None:
            raise InvalidArgumentError(f"messages: message {i} needs 'role' and 'content' "
                                       f"fields, got {dict(message)!r:.200}")
        if not isinstance(role, str) or not isinstance(content, str):
            raise InvalidArgumentTypeError(f"messages: message {i} needs string 'role' and "
                                           f"'content' fields, got {dict(message)!r:.200}")
        out.append({"role": role, "content": content})
    return out


class OpenAIQueryRewriter(OpenAIClient):
    """A chat model rewrites the query (OpenAI, or any OpenAI-compatible chat completions API).

    The request holds a short system prompt and one user message: the last ``max_messages``
    turns as a transcript, then the follow-up question. The model's reply, stripped, is the
    query. Without messages nothing is sent and the query is returned as it is.

    Args:
        model: the chat model.
        api_key: the key; default ``$OPENAI_API_KEY``, read on the first request.
        base_url: another OpenAI-compatible endpoint; default ``$OPENAI_BASE_URL`` or OpenAI.
        max_retries: the client's retries after a timeout, connection error, 408, 409, 429
            or 5xx (exponential backoff, ``Retry-After`` honoured).
        timeout: seconds one request may take.
        max_messages: only the latest turns are sent (the prompt stays short).
        temperature: sampling temperature (0: as repeatable as the model allows); None omits it
            (for models that refuse the parameter).
        system_prompt: the instructions sent first.
        organization: the OpenAI organisation id; default ``$OPENAI_ORG_ID``.

    >>> rewriter = OpenAIQueryRewriter(api_key="sk-...")
    >>> rewriter.rewrite("what is Rails?", [])  # no conversation: no request
    'what is Rails?'
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        max_retries: int = 2,
        timeout: float = 30.0,
        max_messages: int = 10,
        temperature: float | None = 0.0,
        system_prompt: str = SYSTEM_PROMPT,
        organization: str | None = None,
    ) -> None:
        check_setting("max_retries", max_retries, integer=True, at_least=0)
        check_setting("timeout", timeout, above=0)
        check_setting("max_messages", max_messages, integer=True, at_least=1)
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_messages = max_messages
        self.temperature = temperature
        self.system_prompt = system_prompt
        self.organization = organization

    def rewrite(self, query: str, messages: Sequence[Mapping[str, str]]) -> str:
        """The standalone query for ``query`` after ``messages``.

        Raises:
            ConfigurationError: no API key (before any request).
            RewriteError: the API rejected the request (4xx other than 408/409/429), kept
                failing past ``max_retries``, or replied with no text.
            TypeError, ValueError: malformed ``messages``.
        """
        turns = check_messages(messages)
        if not turns:
            return query
        client = self._get_client()
        response = self._create(client, self.request(query, turns))
        return self._reply(response)

    def request(self, query: str, messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        """The chat completions request body for ``query`` after ``messages``."""
        turns = check_messages(messages)[-self.max_messages :]
        transcript = "\n".join(f"{t['role']}: {t['content']}" for t in turns)
        body: dict[str, Any] = {"model": self.model, "messages": [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": f"Conversation:\n{transcript}\n\n"
                                        f"Latest question: {query}\n\nStandalone query:"},
        ]}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def _create(self, client: Any, body: dict[str, Any]) -> Any:
        openai = require("openai", "OpenAIQueryRewriter")
        try:
            return client.chat.completions.create(**body)
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status in (408, 409, 429) or status >= 500:
                hint = (f" (after {self.max_retries} retries); try again later, or raise "
                        "max_retries")
            else:
                hint = f" (check {KEY_ENV} or api_key=)" if status == 401 else ""
            raise RewriteError(
                f"the chat completions request to rewrite the query failed: "
                f"{status_message(exc)}{hint}") from exc
        except openai.APIConnectionError as exc:  # APITimeoutError included
            raise RewriteError(
                f"cannot reach the chat completions API at {self._endpoint()} "
                f"({exc.message}, after {self.max_retries} retries); try again later, or raise "
                "max_retries / timeout") from exc

    def _reply(self, response: Any) -> str:
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices else None
        text = (content or "").strip()
        if not text:
            raise RewriteError(f"{self.model} returned no rewritten query (finish_reason="
                               f"{getattr(choices[0], 'finish_reason', None) if choices else None!r})")
        return text

    def __repr__(self) -> str:
        return f"OpenAIQueryRewriter(model={self.model!r})"
