"""How a failure becomes an HTTP answer: a status, and ``{"error": class, "message": ...}``.

Every :class:`~trails.errors.TrailsError` has a status by its class; the plain ``ValueError``
and ``TypeError`` the library raises for a bad argument (and pyoxigraph's ``SyntaxError``)
are the caller's mistake too (400). Anything else is a bug: 500 with its class name and no
traceback, logged in full on the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trails.errors import (
    AuthenticationError,
    ContextDamagedError,
    ContextLockedError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    EndpointRefusedError,
    EndpointUnavailableError,
    InvalidArgumentError,
    MissingExtraError,
    NotAcceptableError,
    PermissionDeniedError,
    ReadOnlyServiceError,
    RequestTooLargeError,
    RewriteError,
    StorageError,
    TrailsError,
    UnknownDocumentError,
    UnknownRunError,
)
from trails.retrieval.request import no_object

__all__ = ["error_body", "no_object_body", "not_json", "printable", "status_of", "unread_body",
           "unreadable_json"]


# Most specific first: the first class an error is an instance of gives its status.
_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (UnknownRunError, 404),
    (UnknownDocumentError, 404),
    (ContextLockedError, 409),
    (ReadOnlyServiceError, 409),
    (NotAcceptableError, 406),
    (RequestTooLargeError, 413),
    (EmbeddingModelMismatchError, 409),
    (MissingExtraError, 501),
    (EndpointUnavailableError, 503),
    (EndpointRefusedError, 503),  # the service's own backend settings: not the caller's fault
    (EmbeddingError, 503),
    (RewriteError, 503),
    (ContextDamagedError, 503),
    (StorageError, 503),
    (TrailsError, 400),
    (ValueError, 400),
    (TypeError, 400),
    (SyntaxError, 400),
)


def status_of(exc: BaseException) -> int:
    """The HTTP status for ``exc``: 4xx for what the caller can fix, 5xx for the server's
    side (a backend down, files unreadable, a missing extra), 500 for a bug."""
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 500


def error_body(exc: BaseException) -> dict[str, str]:
    """``{"error": class name, "message": ...}``; a bug's message says only that it is one
    (its text could hold anything; the server's log has it)."""
    if status_of(exc) == 500:
        return {"error": "InternalError",
                "message": f"internal error ({type(exc).__name__}); this is a bug in trails, "
                           "the service's log has the details"}
    message = " ".join(str(exc).split()) or type(exc).__name__
    return {"error": type(exc).__name__, "message": printable(message)}


def printable(text: str) -> str:
    """``text`` as UTF-8 can carry it: a lone surrogate (from a request's own text, quoted
    back) written as its escape, so that an error can always be answered."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def not_json(method: str, path: str, content_type: str | None) -> InvalidArgumentError | None:
    """The error for a JSON route's body sent under another ``Content-Type`` (or none), which
    the app does not read as JSON (so that no web page can post to it as a plain form); None
    for a JSON type (``application/json``, ``application/*+json``), as the app reads them."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media == "application/json" or (media.startswith("application/")
                                       and media.endswith("+json")):
        return None
    sent = repr(media) if media else "no Content-Type"
    return InvalidArgumentError(
        f"{method} {path} reads a JSON body sent with Content-Type: application/json; the "
        f"request has {sent} (curl -d sends a form's type unless given "
        "-H 'Content-Type: application/json'; or use curl --json)")


_SEND_JSON = "send one JSON object, encoded as UTF-8"


def unreadable_json(error: dict[str, Any]) -> str:
    """The message for a body that does not parse as JSON (FastAPI's ``json_invalid`` error,
    whose location is the character offset): what the parser expected, and where."""
    loc = tuple(error.get("loc", ()))
    at = f" at character {loc[1]}" if len(loc) > 1 else ""
    reason = str((error.get("ctx") or {}).get("error") or "it does not parse")
    return printable(f"the request body is no JSON ({reason}{at}); {_SEND_JSON}")


def unread_body(cause: BaseException) -> dict[str, str]:
    """The answer to a JSON body the framework could not read for another reason than its
    syntax (``cause``): bytes that are no UTF-8, nesting too deep for the parser, a key
    given twice in one object (:mod:`trails.service.unique_json`)."""
    if isinstance(cause, InvalidArgumentError):
        return error_body(cause)
    if isinstance(cause, UnicodeDecodeError):
        why = f"is not UTF-8 ({cause.reason} at byte {cause.start})"
    elif isinstance(cause, RecursionError):
        why = "nests arrays or objects too deep to read"
    else:
        why = f"cannot be read as JSON ({type(cause).__name__})"
    return {"error": "InvalidArgumentError", "message": f"the request body {why}; {_SEND_JSON}"}


# What each JSON route's body is, by example (POST /retrieve's: retrieve()'s own words).
_BODIES = {
    "/ingest": 'an ingest request is one JSON object such as {"documents": [{"id": '
               '"handbook", "text": "..."}], "scope": "public"}',
    "/runs/{run}/feedback": 'feedback is one JSON object such as {"rating": "up", "note": '
                            '"..."}',
}


def no_object_body(route: str, errors: Sequence[Any]) -> InvalidArgumentError | None:
    """The error for a body of ``route`` (its path template) that is no JSON object at all
    (nothing, null, an array...), saying what it should be; None for any other mistake."""
    what = _BODIES.get(route)
    if what is None or not errors or tuple(errors[0].get("loc", ())) != ("body",) or \
            errors[0].get("type") not in ("missing", "model_attributes_type", "model_type"):
        return None
    return no_object(what, errors[0])
