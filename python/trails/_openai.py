"""The ``openai`` client that ``OpenAIEmbedder`` and ``OpenAIQueryRewriter`` share: made on the
first request from ``api_key=`` or ``$OPENAI_API_KEY``, and released by ``close``."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from trails import deadline
from trails._lazy import require
from trails.errors import ConfigurationError
from trails.resilience import public_url

__all__ = ["KEY_ENV", "OpenAIClient", "status_message"]

KEY_ENV = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # the openai client's, without $OPENAI_BASE_URL


class OpenAIClient:
    """Holds the ``openai.OpenAI`` client of the class it is mixed into.

    That class sets ``api_key``, ``base_url``, ``organization``, ``timeout`` and
    ``max_retries``; with ``_own_retries`` it runs its own retry loop and the client's retries
    are switched off. ``timeout`` bounds each request in all, from connecting to the last byte
    of the answer (:mod:`trails.deadline`), not only each read.
    """

    api_key: str | None
    base_url: str | None
    organization: str | None
    timeout: float
    max_retries: int
    _own_retries: ClassVar[bool] = False
    _client: Any = None

    def _get_client(self) -> Any:
        """The client, made on first use.

        Raises:
            ConfigurationError: no API key, neither ``api_key=`` nor ``$OPENAI_API_KEY``.
            MissingExtraError: the ``openai`` package is not installed.
        """
        if self._client is None:
            owner = type(self).__name__
            key = self.api_key if self.api_key is not None else os.environ.get(KEY_ENV)
            if not key:
                raise ConfigurationError(
                    f"{owner} needs an API key: set the {KEY_ENV} environment variable or pass "
                    "api_key=...")
            openai = require("openai", owner)
            # The client's own timeout bounds each read; the transport bounds the request.
            url = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
            http = openai.DefaultHttpxClient(transport=deadline.transport(
                self.timeout, url, package=deadline.package_of(openai.DefaultHttpxClient)))
            self._client = openai.OpenAI(
                api_key=key, base_url=self.base_url, organization=self.organization,
                timeout=self.timeout, max_retries=0 if self._own_retries else self.max_retries,
                http_client=http)
        return self._client

    def _endpoint(self) -> str:
        """The endpoint as messages name it: never with a ``user:password@`` it holds."""
        return public_url(str(getattr(self._client, "base_url", self.base_url or "the API")))

    def close(self) -> None:
        """Close the HTTP client (a new one is made if this object is used again)."""
        if self._client is not None:
            self._client.close()
            self._client = None


def status_message(exc: Any) -> str:
    """``429 rate_limit_exceeded: <the API's message>`` from an ``openai.APIStatusError``."""
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    code = f" {exc.code}" if getattr(exc, "code", None) else ""
    return f"{exc.status_code}{code}: {message or exc.message}"
