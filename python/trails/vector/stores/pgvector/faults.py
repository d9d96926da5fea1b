"""psycopg's failures in trails' words, and the resilience policy every call runs under.

- The server cannot be reached, refused the connection, was shut down, or no pooled
  connection came in time: :class:`~trails.errors.EndpointUnavailableError` naming the server
  (never its password) and what to check.
- A statement ran past ``statement_timeout``: EndpointUnavailableError saying so.
- The server refused the credentials, the database does not exist, or the role may not do
  what was asked: :class:`~trails.errors.EndpointRefusedError` (a ConfigurationError) naming
  what to set (``PGPASSWORD``, ``TRAILS_PG_DSN``, the grant); a read-only store tried to
  write: :class:`~trails.errors.ConfigurationError`.
- The server's disk is full: :class:`~trails.errors.StorageError`.

Anything else (a statement trails built wrong) passes through unchanged. Errors are told by
SQLSTATE and class name, so importing this module does not import psycopg.

Every call runs under the store's :class:`~trails.resilience.Resilience` policy: a read is
retried after the server was unavailable, a write only when it never reached the server (no
connection was made), and the server's circuit breaker makes calls fail at once while open.
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from trails.errors import (
    ConfigurationError,
    EndpointRefusedError,
    EndpointUnavailableError,
    StorageError,
    TrailsError,
)
from trails.resilience import CircuitBreaker, Failure, Resilience

__all__ = ["check_tls", "guarded", "server_url", "translate", "translated"]

T = TypeVar("T")

# SQLSTATE classes and codes (PostgreSQL, Appendix A).
_UNAVAILABLE = {"08", "57P01", "57P02", "57P03", "53300"}  # connection, shutdown, too many
_REFUSED = {"28000": "the server refused the role", "28P01": "the password was refused",
            "3D000": "the database does not exist", "42501": "the role lacks a privilege",
            "25006": "the store was opened read-only", "0A000": "the server lacks a feature"}
# What libpq says (without a SQLSTATE) when the server refuses to let a connection in.
_REFUSALS = ("password authentication failed", "does not exist", "no pg_hba.conf entry",
             "password is required", "permission denied for database")
# Failures before any statement reached the server: a write may be tried again.
_NEVER_SENT = {"PoolTimeout", "ConnectionTimeout"}
_CONNECTING = ("connection refused", "could not connect", "no such file or directory",
               "connection to server", "timeout expired", "could not translate host name")


# The sslmodes that never let a connection run in clear (libpq's default, prefer, falls back).
_ENCRYPTED = {"require", "verify-ca", "verify-full"}


def check_tls(params: Mapping[str, str | None], location: str, policy: Resilience) -> None:
    """Refuse, under ``policy.require_tls``, a DSN (``params``: its keywords) that may reach
    another machine in clear: a host or hostaddr (``PGHOST``/``PGHOSTADDR`` when it names
    none) that is neither a unix socket nor this machine, with an sslmode (``PGSSLMODE``,
    else libpq's ``prefer``) that allows a connection without TLS.

    Raises:
        ConfigurationError: naming the DSN (without its password) and the two ways on.
    """
    mode = params.get("sslmode") or os.environ.get("PGSSLMODE") or "prefer"
    if mode in _ENCRYPTED:
        return
    hosts = [host for key in ("host", "hostaddr")
             for host in (params.get(key) or os.environ.get(f"PG{key.upper()}") or "").split(",")]
    policy.check_clear(
        "PostgreSQL at", location, [h for h in hosts if h and not h.startswith(("/", "@"))],
        reason=f"is reached with sslmode={mode}, which lets a connection run without TLS",
        fix="Add sslmode=require (or verify-full) to the DSN, or set PGSSLMODE")


def server_url(params: Mapping[str, str | None]) -> str:
    """The server a DSN (``params``: its keywords) reaches, as the URL its circuit breaker is
    keyed by: ``postgresql://`` and its host(s) (a socket directory quoted) and port(s), as
    libpq picks them (``PGHOST``, ``PGPORT``, else the local socket and 5432). Databases,
    users and options of one server share its breaker; two servers never do.

    >>> server_url({"host": "/run/postgresql", "port": "5433", "dbname": "kb"})
    'postgresql://%2Frun%2Fpostgresql:5433'
    """
    def given(key: str) -> str:
        return params.get(key) or os.environ.get(f"PG{key.upper()}") or ""

    host = given("hostaddr") or given("host") or "localhost"
    return f"postgresql://{urllib.parse.quote(host, safe='')}:{given('port') or '5432'}"


def _sqlstate(exc: BaseException) -> str:
    return str(getattr(exc, "sqlstate", None) or "")


def translate(exc: BaseException, location: str) -> BaseException:
    """The trails error ``exc`` (raised by psycopg or its pool) stands for, or ``exc``."""
    if isinstance(exc, TrailsError):
        return exc
    kind, text, state = type(exc).__name__, str(exc).strip(), _sqlstate(exc)
    where = f"PostgreSQL at {location}"
    lowered = text.lower()
    if state in _REFUSED or any(refusal in lowered for refusal in _REFUSALS):
        reason = _REFUSED.get(state, "the server refused the connection")
        return EndpointRefusedError(
            f"{where}: {reason}: {text[:300]}. Check the DSN's user and database, set "
            "PGPASSWORD (or the full DSN in TRAILS_PG_DSN) to credentials the server accepts, "
            "and grant the role what the store needs (CREATE on the schema, the vector "
            "extension)")
    if state == "57014":  # query_canceled: statement_timeout
        return EndpointUnavailableError(
            f"{where}: a statement ran longer than the store's statement_timeout and was "
            "cancelled; raise statement_timeout, or check the server's load")
    if state == "53100":
        return StorageError(f"{where}: the server's disk is full ({text[:200]}); free space "
                            "there and run it again: the transaction wrote nothing")
    unavailable = (state in _UNAVAILABLE or state[:2] in _UNAVAILABLE or kind in _NEVER_SENT
                   or (kind == "OperationalError" and (not state or any(
                       c in lowered for c in _CONNECTING))))
    if unavailable:
        return EndpointUnavailableError(
            f"{where} failed: {text[:300] or kind}. Check that the server is running and "
            "reachable (the DSN, the network, the socket directory), then run it again: a "
            "transaction PostgreSQL did not commit wrote nothing, and ingestion is idempotent")
    return exc


@contextlib.contextmanager
def translated(location: str) -> Iterator[None]:
    """Raise what fails inside the block as trails' errors (:func:`translate`)."""
    try:
        yield
    except Exception as exc:
        error = translate(exc, location)
        if error is exc:
            raise
        raise error from exc


def _never_sent(exc: BaseException) -> bool:
    """Whether no connection was ever made, so the statement cannot have arrived."""
    if type(exc).__name__ in _NEVER_SENT:
        return True
    lowered = str(exc).lower()
    return type(exc).__name__ == "OperationalError" and any(
        c in lowered for c in _CONNECTING[:3])


def guarded(operation: Callable[[], T], location: str, policy: Resilience,
            breaker: CircuitBreaker, *, write: bool) -> T:
    """``operation()`` under ``policy`` and ``breaker``, its failures as trails' errors."""
    def classify(exc: BaseException) -> Failure | None:
        if not isinstance(translate(exc, location), EndpointUnavailableError):
            return None
        if _sqlstate(exc) == "57014":  # the same statement would time out again
            return Failure(retryable=False)
        return Failure(retryable=not write or _never_sent(exc))

    with translated(location):
        return policy.call(operation, classify, breaker)


def refused(location: str, reason: str) -> ConfigurationError:
    """A ConfigurationError for a store that cannot be used as configured."""
    return ConfigurationError(f"PostgreSQL at {location}: {reason}")
