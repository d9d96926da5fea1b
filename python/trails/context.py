"""Context: a knowledge graph, a vector store and an embedder that belong together."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Self

from trails import _state
from trails.errors import ConfigurationError
from trails.kg import KnowledgeGraph, OxigraphGraph
from trails.similarity import register_similarity
from trails.vector.embedders.base import Embedder, EmbedderIdentity
from trails.vector.stores.base import VectorStore, VersionedStore

__all__ = ["DEFAULT_BASE_IRI", "Context", "default_context", "embedder_for", "set_default_context"]

DEFAULT_BASE_IRI = "trails://local/"
CONFIG_FILE = "trails.json"
GRAPH_DIR = "graph"
VECTORS_FILE = "vectors.db"
FORMAT = 1


class Context:
    """Everything one retrieval needs: ``kg`` (graph), ``vectors`` (store), ``embedder``.

    Build one from parts, open a directory with :meth:`open` (everything persisted there), or
    use ``trails.testing.fresh_context()`` for an in-memory one. Close it when done, or use it
    as a context manager.

    >>> from trails.testing import fresh_context
    >>> with fresh_context() as ctx:
    ...     ctx.kg.query("ASK { ?s ?p ?o }")
    False
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        vectors: VectorStore,
        embedder: Embedder,
        *,
        base_iri: str = DEFAULT_BASE_IRI,
        directory: Path | None = None,
        read_only: bool = False,
    ) -> None:
        self.kg = kg
        self.vectors = vectors
        self.embedder = embedder
        self.base_iri = base_iri
        self.directory = directory
        self.read_only = read_only
        self._closed = False
        register_similarity(self)  # trails:similarity(?chunk, "text") in ctx.kg.query

    @classmethod
    def memory(cls, embedder: Embedder | None = None, *, base_iri: str = DEFAULT_BASE_IRI) -> Context:
        """An in-memory context (nothing touches disk); defaults to the local model."""
        from trails.vector.stores.sqlite_vec import SqliteVecStore

        model = embedder if embedder is not None else _default_embedder()
        store = SqliteVecStore(":memory:", dim=model.dim, embedder=model.identity)
        return cls(OxigraphGraph(), store, model, base_iri=base_iri)

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        read_only: bool = False,
        base_iri: str | None = None,
        kg: KnowledgeGraph | None = None,
        vectors: VectorStore | None = None,
    ) -> Context:
        """Open (or create) a context persisted in ``directory``.

        ``kg`` and ``vectors`` replace the embedded graph and store (a SPARQL endpoint, a
        Qdrant collection); the directory then keeps the configuration and whatever part is
        still embedded.

        A new directory records the embedder's identity and the base IRI; reopening restores
        them, so ``Context.open(dir)`` alone gets the same embedder back. Opening with another
        embedder is allowed (graph queries still work), but retrieving or ingesting with it
        raises EmbeddingModelMismatchError.

        Raises:
            ContextLockedError: another process has the directory open for writing.
            ConfigurationError: ``read_only`` on a directory that holds no context.
        """
        from trails.vector.stores.sqlite_vec import SqliteVecStore

        root = Path(directory)
        config = _read_config(root)
        if config is None:
            if read_only:
                raise ConfigurationError(
                    f"{str(root)!r} holds no trails context; create it first with "
                    f"Context.open({str(root)!r}) or `trails --db {root} init`"
                )
            model = embedder if embedder is not None else _default_embedder()
            config = {"format": FORMAT, "base_iri": base_iri or DEFAULT_BASE_IRI,
                      "embedder": model.identity.model_dump(mode="json")}
            root.mkdir(parents=True, exist_ok=True)
        else:
            model = embedder if embedder is not None else embedder_for(
                EmbedderIdentity.model_validate(config["embedder"]))
        graph = kg if kg is not None else OxigraphGraph(root / GRAPH_DIR, read_only=read_only)
        try:
            store: VectorStore = vectors if vectors is not None else SqliteVecStore(
                root / VECTORS_FILE, dim=None if read_only else model.dim, read_only=read_only)
            if store.embedder_identity is None and not read_only:
                store.bind_embedder(EmbedderIdentity.model_validate(config["embedder"]))
        except BaseException:
            graph.close()
            raise
        if not (root / CONFIG_FILE).exists():
            _write_config(root, config)
        return cls(graph, store, model, base_iri=base_iri or config["base_iri"], directory=root,
                   read_only=read_only)

    def verify(self, repair: bool = False):
        """Check that graph and vectors agree; ``repair=True`` removes what a crash left.

        Returns a :class:`trails.ingest.maintenance.VerifyReport`.
        """
        from trails.ingest.maintenance import verify

        if repair:
            self._check_writable()
        return verify(self, repair=repair)

    def delete_document(self, iri: str) -> bool:
        """Remove every trace of a document (vectors, chunk and document triples)."""
        from trails.ingest.maintenance import delete_document

        self._check_writable()
        return delete_document(self, iri)

    def stats(self) -> dict[str, Any]:
        """Counts for people: documents, live vectors, quads, scopes, the embedder."""
        # A store without versioned commits (a user's own VectorStore) records no documents.
        versions = (self.vectors.current_versions()
                    if isinstance(self.vectors, VersionedStore) else {})
        return {
            "documents": len(versions),
            "vectors": self.vectors.count(),
            "quads": len(self.kg),
            "scopes": sorted({v.scope for v in versions.values()}),
            "embedder": self.embedder.identity.describe(),
            "directory": None if self.directory is None else str(self.directory),
        }

    def _check_writable(self) -> None:
        if self.read_only:
            raise ConfigurationError(
                "this context was opened read-only; open it without read_only=True (one "
                "writer at a time) to change it")

    def close(self) -> None:
        """Flush and release the graph and the store (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        self.vectors.close()
        self.kg.close()
        if _state.default_context is self:
            _state.default_context = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "memory" if self.directory is None else str(self.directory)
        return f"<Context {where} embedder={self.embedder.identity.describe()}>"


def _default_embedder() -> Embedder:
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


_MOCK = re.compile(r"^trails-mock-bow:seed=(-?\d+)$")


def embedder_for(identity: EmbedderIdentity) -> Embedder:
    """Rebuild the embedder a context recorded, from its identity."""
    from trails.vector.embedders.mock import MockEmbedder

    match = _MOCK.match(identity.model)
    if match:
        return MockEmbedder(dim=identity.dim, seed=int(match.group(1)))
    if identity.model.startswith("sentence-transformers/"):
        from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

        # The revision names the backend that made the vectors (torch, onnx, onnx-int8):
        # rebuild that one, so queries are embedded as the documents were (ADR 0007).
        return SentenceTransformerEmbedder.from_identity(identity)
    if identity.model.startswith("openai/"):
        # The key and endpoint are not recorded: $OPENAI_API_KEY / $OPENAI_BASE_URL on use.
        from trails.vector.embedders.openai import OpenAIEmbedder

        return OpenAIEmbedder.from_identity(identity)
    raise ConfigurationError(
        f"this context was built with {identity.describe()}, which cannot be recreated "
        "automatically; pass embedder=... to Context.open"
    )


def _read_config(root: Path) -> dict[str, Any] | None:
    path = root / CONFIG_FILE
    if not path.exists():
        return None
    config = json.loads(path.read_text())
    if config.get("format") != FORMAT:
        raise ConfigurationError(
            f"{path} has format {config.get('format')!r}, this trails reads format {FORMAT}"
        )
    return config


def _write_config(root: Path, config: dict[str, Any]) -> None:
    tmp = root / (CONFIG_FILE + ".tmp")
    tmp.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, root / CONFIG_FILE)  # atomic: a crash never leaves half a config


def default_context() -> Context:
    """The context ``retrieve()`` uses when given none; set it with :func:`set_default_context`."""
    if _state.default_context is None:
        raise ConfigurationError(
            "no context given and no default context set: pass ctx=..., or call "
            "trails.set_default_context(Context.open(...)) once"
        )
    return _state.default_context


def set_default_context(ctx: Context | None) -> None:
    _state.default_context = ctx
