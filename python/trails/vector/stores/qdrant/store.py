"""QdrantStore: the scale vector store, on a Qdrant server or cluster, or in qdrant-client's
local mode (in-process, in memory or in a folder) for tests and small data."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trails.recorded import Settings, Where, relative, with_resilience
from trails.vector.stores.qdrant.keyword import QdrantKeywords

if TYPE_CHECKING:
    from typing import Self

__all__ = ["QDRANT_DIR", "QDRANT_KEY_ENV", "QdrantStore"]

QDRANT_DIR = "qdrant"  # a context's local-mode folder, unless settings say
QDRANT_KEY_ENV = "QDRANT_API_KEY"  # a server's API key, read each time a context opens


class QdrantStore(QdrantKeywords):
    """Vectors in a Qdrant collection, searched exactly over SPARQL candidate sets.

    One constructor argument picks where the data lives: nothing for qdrant-client's in-process
    ``:memory:`` mode, ``path=`` for a local folder, ``url=`` (or ``host=``/``port=``) for a
    server or cluster, or ``client=`` for a ``QdrantClient`` you configured yourself (it is not
    closed by :meth:`close`). The store uses two collections: ``collection`` for the vectors and
    ``<collection>__versions`` for the document versions and the store's own record. It is a
    :class:`~trails.vector.stores.base.VectorStore` with versioned commits and a keyword index
    (no :class:`~trails.vector.stores.base.KeywordWeights`: fusion then reads no keyword
    quality).

    Args:
        collection: the Qdrant collection name.
        dim: vector dimension; required for a new store, checked against an existing one.
        url, host, port, api_key: a Qdrant server (``api_key`` for Qdrant Cloud).
        path: a folder for qdrant-client's local mode (one process at a time).
        embedder: optional identity to record (new store) or check (existing store).
        read_only: open an existing store without writing to it.
        client: an existing ``qdrant_client.QdrantClient``.
        timeout: seconds a request to a server may take in all, from connecting to the last
            byte of the answer (default 5, qdrant-client's).
        resilience: retries and the circuit breaker for a server
            (:class:`trails.resilience.Resilience` or a mapping of its fields): reads are
            retried after a failure, writes only when the connection was refused, and after
            ``failure_threshold`` failed calls in a row calls fail at once with
            EndpointUnavailableError until a probe succeeds (docs/resilience.md).

    Raises:
        DimensionMismatchError: ``dim`` differs from the store's dimension.
        EmbeddingModelMismatchError: ``embedder`` differs from the recorded identity.
        ConfigurationError: a missing store opened read-only, or a collection trails did not make.
        ContextLockedError: ``path=`` is open in another process (local mode's folder lock).
        MissingExtraError: qdrant-client is not installed (``pip install "trails[vector-qdrant]"``).

    >>> store = QdrantStore(dim=3)
    >>> store.add("a", [1.0, 0.0, 0.0], {"snippet": "x"})
    >>> [hit.id for hit in store.search([1.0, 0.1, 0.0], k=1)]
    ['a']
    >>> store.add_many(["b", "c"], [[0, 1, 0], [0, 0, 1]], [{"doc_iri": "d1"}, {"doc_iri": "d2"}])
    >>> store.delete_where({"doc_iri": "d1"}), store.count()
    (1, 2)
    """

    _new_home = "a new collection"

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"count={self.count()}"
        return (f"<QdrantStore collection={self.collection!r} location={self.location!r} "
                f"dim={self._dim} {state}>")

    # -- trails.json (trails.recorded.Recordable) ---------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, where: Where) -> Self:
        """A server (``url``: its API key from ``$QDRANT_API_KEY``) or a local folder."""
        options: dict[str, Any] = dict(settings)
        if "url" in options:
            options["api_key"] = os.environ.get(QDRANT_KEY_ENV) or None
        else:
            options["path"] = where.path(options.get("path"), QDRANT_DIR)
        return cls(**options, dim=where.dim, read_only=where.read_only)

    def recorded_settings(self, root: Path) -> Settings | None:
        location = self.location
        if location in (":memory:", "client"):  # nothing on disk, or a client only the caller has
            return None
        if "://" in location:
            return with_resilience({"collection": self.collection, "url": location},
                                   self.resilience)
        if Path(location).is_dir():  # local mode
            return {"collection": self.collection, "path": relative(location, root)}
        return with_resilience({"collection": self.collection, "url": f"http://{location}"},
                               self.resilience)  # host:port
