"""Errors raised by trails.

Every error the engine raises on purpose derives from :class:`TrailsError`, and every message
says what was wrong and what to do next. The tree::

    TrailsError
    ├── ConfigurationError            a setting, path or argument combination cannot work
    │   ├── ContextLockedError        another process is writing to the context directory
    │   ├── UnknownScopeError         a scope that holds nothing; lists the scopes that exist
    │   ├── EndpointRefusedError      a remote endpoint refused trails' credentials or URL, or
    │   │                             answered with something that is no answer (a login page)
    │   └── InvalidArgumentError (+ValueError)  an argument of the wrong type or out of range
    │       └── InvalidArgumentTypeError (+TypeError)  an argument of the wrong type
    ├── StorageError                  a context's files cannot be read or written (disk full,
    │   │                             read-only mount, permissions); nothing was lost
    │   └── ContextDamagedError       a context's files are corrupt, or one half (graph or
    │                                 vectors) is missing or belongs to another context
    ├── MissingExtraError (+ImportError)  an optional package is not installed; names the pip command
    ├── SparqlError                   a SPARQL query or filter is malformed or not allowed
    │   ├── UnsafeFilterError         a retrieval filter is not a read-only single-variable SELECT
    │   └── UnboundVariableError      a filter uses a variable that nothing binds
    ├── RdfSyntaxError                RDF to load does not parse (names the line and column)
    │   └── RdfLimitError             RDF to load passes a bound (size, literal, XML entities)
    ├── VectorError                   a vector cannot be stored or compared
    │   ├── DimensionMismatchError    a vector or store has another dimension than expected
    │   └── InvalidVectorError        a vector holds NaN/inf or has zero length
    ├── EmbeddingModelMismatchError   a store was built with another embedder than the one in use
    ├── EmbeddingError                an embedding service refused a text or kept failing
    ├── RewriteError                  a query-rewriting model refused a request or kept failing
    ├── EndpointUnavailableError      a remote endpoint refused, timed out or failed (HTTP 5xx)
    ├── UnknownRunError               an audit record id that this context does not hold
    ├── AuthenticationError           a service request with no API key, or one it does not know
    ├── PermissionDeniedError         an API key without the right or the scope a request needs
    ├── ReadOnlyServiceError          a write sent to a service that serves its context read-only
    ├── NotAcceptableError            no format the client accepts can carry the answer
    ├── RequestTooLargeError          a request body past the service's --max-request-bytes
    └── UnknownDocumentError          a document IRI that the context (in the caller's scopes) lacks

Bad arguments (an unknown ``mode``, ``k=-1``, ``retrieve(None)``) raise
``InvalidArgumentError``, also a ``ValueError`` (``InvalidArgumentTypeError`` for a wrong
type, also a ``TypeError``), naming the argument and what it takes; pyoxigraph's own
``SyntaxError`` passes through where the caller is talking to the graph directly. What the
embedded databases raise for a full disk, a read-only mount or a corrupt file becomes a
``StorageError`` or ``ContextDamagedError`` naming the file (:mod:`trails.faults`).
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "ConfigurationError",
    "ContextDamagedError",
    "ContextLockedError",
    "DimensionMismatchError",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "EndpointRefusedError",
    "EndpointUnavailableError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidVectorError",
    "MissingExtraError",
    "NotAcceptableError",
    "PermissionDeniedError",
    "RdfLimitError",
    "RdfSyntaxError",
    "ReadOnlyServiceError",
    "RequestTooLargeError",
    "RewriteError",
    "SparqlError",
    "StorageError",
    "TrailsError",
    "UnboundVariableError",
    "UnknownDocumentError",
    "UnknownRunError",
    "UnknownScopeError",
    "UnsafeFilterError",
    "VectorError",
]


class TrailsError(Exception):
    """Base class of every error trails raises on purpose."""


class ConfigurationError(TrailsError):
    """A setting, path or combination of arguments cannot work."""


class ContextLockedError(ConfigurationError):
    """Another process holds the context directory open for writing."""


class UnknownScopeError(ConfigurationError):
    """A read names a scope that holds nothing (a typo, most often)."""


class EndpointRefusedError(ConfigurationError):
    """A remote backend refused trails' requests (credentials, a URL it does not serve, a
    redirect) or answered them with something that is no answer (a proxy's login page):
    its settings need fixing, and trying again never helps. A service answers 503 (its
    backend is unusable), not 400: the caller's request is not at fault."""


class InvalidArgumentError(ConfigurationError, ValueError):
    """An argument has the wrong type or is out of range (``retrieve(None)``, ``k=2**63``,
    ``scope=123``); the message names the argument, what it got and what it takes."""


class StorageError(TrailsError):
    """A context's files cannot be read or written: the disk is full, the mount is read-only,
    permissions refuse it. The operation that met it wrote nothing partial; free space or fix
    the permissions and run it again."""


class ContextDamagedError(StorageError):
    """A context's files are corrupt, or one half of it (the graph or the vectors) is missing
    or belongs to another context. trails refuses to open it rather than rebuild the missing
    half empty (which would make repair delete the surviving one); restore the files from a
    backup, or re-create the context and ingest again."""


class MissingExtraError(TrailsError, ImportError):
    """An optional dependency is missing; the message names the ``pip install`` command."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the '{package}' package, which is not installed. "
            f'Install it with: pip install "trails[{extra}]"'
        )


class SparqlError(TrailsError):
    """A SPARQL query or update is malformed or failed to evaluate."""


class UnsafeFilterError(SparqlError):
    """A retrieval filter is not a read-only SELECT projecting exactly one variable."""


class UnboundVariableError(SparqlError):
    """A filter uses a variable that no pattern, BIND, VALUES or binding gives a value."""


class RdfSyntaxError(TrailsError):
    """RDF given to load does not parse; nothing of it was loaded.

    ``source`` names the file (or "the RDF text"); ``line`` and ``column`` (1-based) point at
    the error when the parser reports them, else they are None.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 column: int | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.column = column


class RdfLimitError(RdfSyntaxError):
    """RDF given to load passes a bound on what trails parses (its size, a literal's size, what
    its XML entities expand to), so it was refused before being built; nothing of it was
    loaded. The message names the bound and how to load the data (split the file, drop the
    entity declarations)."""


class VectorError(TrailsError):
    """A vector cannot be stored, loaded or compared."""


class DimensionMismatchError(VectorError):
    """A vector or a persisted store has a different dimension than the one expected."""


class InvalidVectorError(VectorError):
    """A vector contains NaN or infinity, or has zero length (cosine is undefined)."""


class EmbeddingModelMismatchError(TrailsError):
    """Vectors were made by one embedder and are being queried or extended with another."""


class EmbeddingError(TrailsError):
    """An embedding service rejected a request, or kept failing after every retry.

    The message carries the service's own explanation (or the last failure) and what to do.
    """


class EndpointUnavailableError(TrailsError):
    """A remote endpoint (a SPARQL server) refused the connection, timed out or failed (5xx).

    The message names the URL and what happened. The request that failed was applied whole or
    not at all (a SPARQL endpoint applies each request atomically), so nothing partial was
    committed by it; retry the operation once the endpoint is back (ingestion is idempotent).
    """


class RewriteError(TrailsError):
    """A query-rewriting model (a chat completions API) rejected a request, kept failing after
    every retry, or answered with no usable query.

    The message carries the service's own explanation (or the last failure) and what to do.
    """


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument has the wrong type (``retrieve(None)``, ``k="3"``, ``Document(id=123)``);
    also a ``TypeError``, so code that caught one before still does."""


class UnknownRunError(TrailsError):
    """An audit record (``trails audit show RUN``, ``trails replay RUN``) that the context does
    not hold: a typo, another context's, or past the retention. The message says how to list
    the runs there are."""


class AuthenticationError(TrailsError):
    """A request to the service carried no API key, or one the service does not know. The
    message says how to send one (never where the service keeps its keys)."""


class PermissionDeniedError(TrailsError):
    """An API key lacks the right (read or write) or a scope that a request needs. The message
    names the key's label, what it asked for and what the key grants."""


class ReadOnlyServiceError(TrailsError):
    """A write (ingest, delete) sent to a service started with ``--read-only``: its context is
    open for reading only. The message says to restart it without that option."""


class NotAcceptableError(TrailsError):
    """An answer none of the formats a client accepts can carry (a control character in a
    literal has no place in XML 1.0). The message names the formats that can."""


class RequestTooLargeError(TrailsError):
    """A request body longer than the service reads (``trails serve --max-request-bytes``):
    answered 413 before it was read whole. The message names the cap and how to raise it."""


class UnknownDocumentError(TrailsError):
    """A document IRI (``DELETE /documents/{iri}``) that the context does not hold in the
    scopes the caller may read. The message says how to find the documents there are."""
