"""OpenAI's API as the local server speaks it: what a request must hold, and how it refuses.

The checks and the error bodies follow the API's own (status, ``error.message``, ``type``,
``param``, ``code``), so clients meet the failures they meet in production.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

__all__ = ["ApiError", "chat_messages", "encode", "error", "inputs", "requested_model"]


class ApiError(Exception):
    """A refusal, as the API words it: HTTP status, message, error type, code and param."""

    def __init__(self, status: int, message: str, code: str | None = None,
                 type_: str = "invalid_request_error", param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.type = status, message, code, type_
        self.param = param


def requested_model(body: Any, served: Any) -> Any:
    """The request's ``model``, which this server must serve (errors worded as the API's)."""
    if not isinstance(body, dict):
        raise ApiError(400, "We could not parse the JSON body of your request.")
    model = body.get("model")
    if model not in served:
        raise ApiError(404, f"The model `{model}` does not exist or you do not have "
                       "access to it.", "model_not_found")
    return model


def inputs(value: Any) -> list[str]:
    """The texts of an embeddings request's ``input`` (a string, strings, or token ids)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ApiError(400, "'input' must be a non-empty string or array", param="input")
    if len(value) > 2048:
        raise ApiError(400, f"'input' has {len(value)} items, the maximum is 2048",
                       param="input")
    if all(isinstance(v, int) for v in value):  # one pre-tokenised text
        value = [value]
    texts = []
    for item in value:
        if isinstance(item, list):  # token ids: hash them as text
            item = " ".join(f"t{int(t)}" for t in item)
        if not isinstance(item, str) or not item:
            raise ApiError(400, "'$.input' is invalid: every input must be a non-empty "
                           "string", param="input")
        texts.append(item)
    return texts


def chat_messages(value: Any) -> list[dict[str, str]]:
    """A chat request's ``messages``: a non-empty list of ``{"role", "content"}`` strings."""
    if not isinstance(value, list) or not value:
        raise ApiError(400, "'messages' must be a non-empty array", param="messages")
    for i, message in enumerate(value):
        if (not isinstance(message, dict) or not isinstance(message.get("role"), str)
                or not isinstance(message.get("content"), str)):
            raise ApiError(400, f"Invalid value for 'messages[{i}]': each message needs a "
                           "string 'role' and 'content'.", param=f"messages[{i}]")
    return value


def encode(vector: np.ndarray, fmt: str) -> Any:
    """One embedding as the API sends it: a float list, or base64 of little-endian float32."""
    if fmt == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


def error(exc: ApiError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """``(status, JSON body, headers)`` of a refusal."""
    return exc.status, {"error": {"message": exc.message, "type": exc.type,
                                  "param": exc.param, "code": exc.code}}, {}
