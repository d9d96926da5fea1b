"""A small client for the service's ``POST /retrieve``, on the standard library alone.

``trails query`` uses it when a service serves the directory (:mod:`trails.service.discovery`),
so it must start fast: no HTTP package, no engine. The service answers with
``RetrievalResult.to_dict()``; an error comes back as ``{"error": class, "message": ...}`` and
is raised here as the same :class:`~trails.errors.TrailsError` subclass.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from trails import errors
from trails.errors import TrailsError
from trails.kg.terms import sparql_json, to_term
from trails.service.discovery import ServiceInfo

__all__ = ["NotAnswered", "ServiceClient", "json_term"]

_ERRORS: dict[str, type[TrailsError]] = {
    name: cls for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, TrailsError)}


class NotAnswered(Exception):
    """The service gave no answer this client can use (it is gone, not ready, or replied in
    another shape, such as a request validation error): answer in this process instead,
    which also says precisely what was wrong with a request."""


def json_term(value: Any) -> dict[str, Any]:
    """A binding value as a SPARQL 1.1 JSON results term, which ``/retrieve`` takes.

    >>> json_term(3)
    {'type': 'literal', 'value': '3', 'datatype': 'http://www.w3.org/2001/XMLSchema#integer'}
    """
    return sparql_json(to_term(value))


class ServiceClient:
    """Calls one service with its local token."""

    def __init__(self, info: ServiceInfo, *, timeout: float = 60.0) -> None:
        """Raises NotAnswered when ``info`` names no loopback HTTP address."""
        self.info = info
        self.timeout = timeout
        parsed = urllib.parse.urlsplit(info.url)
        if parsed.scheme != "http" or not _loopback(parsed.hostname):
            # The token and the query go only to this machine's loopback: a service.json
            # naming another host is not followed (the command answers in its own process).
            raise NotAnswered(f"not a loopback http URL: {info.url}")
        self._host, self._port = str(parsed.hostname), parsed.port or 80

    def health(self) -> dict[str, Any]:
        """``GET /health`` (``status`` is ``ready`` once models are warm); empty when the
        service does not answer."""
        try:
            status, body = self._call("GET", "/health", None, timeout=2.0)
        except NotAnswered:
            return {}
        return body if status == 200 and isinstance(body, dict) else {}

    def retrieve(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /retrieve``: the result as the service's JSON.

        Raises:
            NotAnswered: the service did not answer, or not with a result or an error of
                its own.
            TrailsError: the service refused the request (the same class it raised there).
        """
        status, body = self._call("POST", "/retrieve", dict(request), timeout=self.timeout)
        if status == 200 and isinstance(body, dict):
            return body
        raise _error(status, body)

    def _call(self, method: str, path: str, payload: dict[str, Any] | None, *,
              timeout: float) -> tuple[int, Any]:
        connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        headers = {"Authorization": f"Bearer {self.info.token}", "Accept": "application/json"}
        data = None
        if payload is not None:
            data = json.dumps(payload).encode()
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise NotAnswered(f"{self.info.url}: {exc}") from exc
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error(status: int, body: Any) -> Exception:
    """The error the service raised, as its own class; NotAnswered for any other reply."""
    cls = _ERRORS.get(str(body.get("error"))) if isinstance(body, dict) else None
    if cls is None or not isinstance(body.get("message"), str):
        return NotAnswered(f"the service answered HTTP {status}: {body!r:.300}")
    try:
        return cls(body["message"])
    except TypeError:  # a class whose constructor takes more (MissingExtraError)
        return TrailsError(body["message"])
