"""SentenceTransformerEmbedder: a local sentence-transformers model, on torch or ONNX Runtime."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trails import _state
from trails._lazy import require
from trails.errors import ConfigurationError, EmbeddingError, MissingExtraError
from trails.recorded import Settings
from trails.vector.embedders.base import (
    BaseEmbedder,
    EmbedderIdentity,
    Vectors,
    batch_texts,
)
from trails.vector.embedders.sentence_transformer.backends import (
    backend_of_revision,
    backend_revision,
    resolve_backend,
)
from trails.vector.embedders.sentence_transformer.export import (
    default_onnx_cache_dir,
    ensure_onnx_export,
    export_key,
)
from trails.vector.embedders.sentence_transformer.model_files import (
    canonical_name,
    model_revision,
    read_dim,
    resolve_model_path,
    sentence_bert_config,
)
from trails.vector.embedders.sentence_transformer.onnx_runtime import OnnxEncoder
from trails.vector.embedders.sentence_transformer.quiet import quiet_loading
from trails.vector.embedders.sentence_transformer.tokenization import hf_tokenizer

if TYPE_CHECKING:
    from typing import Self

    from sentence_transformers import SentenceTransformer

__all__ = ["SentenceTransformerEmbedder"]

log = logging.getLogger(__name__)


class SentenceTransformerEmbedder(BaseEmbedder):
    """The embedded default: all-MiniLM-L6-v2 (384-d) from an installed package, offline.

    The model loads on the first batch (or ``warm()``) and once per process: contexts share it.
    It is read from local files only, so nothing is asked of a model hub whatever the
    environment says.

    Args:
        model: a packaged model name or a path to a sentence-transformers model directory.
        device: ``"cpu"``, ``"cuda"``...; None lets sentence-transformers choose. The ONNX
            backends run on the CPU only.
        batch_size: texts per forward pass on torch; texts handed to the thread pool per call
            on ONNX (which runs each text on its own: see :class:`OnnxEncoder`).
        backend: ``"torch"``, ``"onnx"``, ``"onnx-int8"`` or ``"auto"`` (see the package doc).
        cache_dir: where ONNX exports are kept; default :func:`default_onnx_cache_dir`.
        verbose: show transformers' weight-loading progress and tqdm's warnings while the
            model loads (default: only when ``TRAILS_MODEL_PROGRESS=1``; see ``quiet.py``).

    Raises:
        MissingExtraError: an ONNX backend was asked for and onnxruntime is not installed.
        ConfigurationError: an unknown backend, or an ONNX backend on a non-CPU device.
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", device: str | None = None,
                 batch_size: int = 32, backend: str = "auto",
                 cache_dir: str | os.PathLike[str] | None = None,
                 verbose: bool | None = None) -> None:
        self.model = model
        self.verbose = verbose
        self.device = device
        self.batch_size = batch_size
        self.path = resolve_model_path(model)
        self.model_id = canonical_name(model, self.path)
        self._known_dim = read_dim(self.path)
        self.requested_backend = backend
        # Decided now, not at load: the identity (which names the backend) is read before any
        # batch, e.g. when a store is bound or a document version is minted.
        self.backend = resolve_backend(backend, device)
        self.revision = backend_revision(model_revision(self.path), self.backend)
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None

    @property
    def dim(self) -> int:
        if self._known_dim is None:
            found = self.warm().get_sentence_embedding_dimension()
            if found is None:
                raise EmbeddingError(f"{self.path} does not say its output dimension")
            self._known_dim = int(found)
        return self._known_dim

    @classmethod
    def from_identity(cls, identity: EmbedderIdentity) -> Self:
        """The embedder a recorded identity names, on the backend that made its vectors.

        When that backend cannot run here (onnxruntime missing), "auto" is used instead: the
        backends' vectors are compatible (ADR 0007), so queries still score correctly.
        """
        name = identity.model.split("/", 1)[1] if identity.model.startswith(
            "sentence-transformers/") else identity.model
        backend = backend_of_revision(identity.revision)
        try:
            return cls(name, backend=backend)
        except MissingExtraError as exc:
            log.warning("%s; using backend='auto' for vectors made with %s", exc, backend)
            return cls(name, backend="auto")

    # -- loading ---------------------------------------------------------------------------

    def warm(self) -> SentenceTransformer | OnnxEncoder:
        """Load the model now (services call this at start-up); returns it.

        For an ONNX backend this exports the model first if the cache has no export yet.
        """
        if self.backend == "torch":
            return self._torch_model()
        return self._onnx_encoder()

    def _torch_model(self) -> SentenceTransformer:
        def load() -> SentenceTransformer:
            with quiet_loading(self.verbose):  # its import too: that is where tqdm warns
                st = require("sentence_transformers", "SentenceTransformerEmbedder")
                model: SentenceTransformer = st.SentenceTransformer(
                    str(self.path), device=self.device, local_files_only=True)
            return model

        return _state.cached(("sentence-transformers", str(self.path), self.device), load)

    def _onnx_encoder(self) -> OnnxEncoder:
        onnx_file = self.export()[0]
        return _state.cached(("onnx-encoder", str(onnx_file)),
                             lambda: OnnxEncoder(onnx_file, self.path, self._known_dim))

    @property
    def export_dir(self) -> Path:
        """The directory holding this model's ONNX exports (made on first use)."""
        root = self._cache_dir if self._cache_dir is not None else default_onnx_cache_dir()
        return root / export_key(self.model_id, self.path)

    def export(self) -> tuple[Path, bool]:
        """Make sure this backend's ONNX file exists; returns (path, whether this call made it).

        Safe across processes: one exports under a file lock while the others wait, and each
        file appears by an atomic rename, so nobody ever loads half a file.
        """
        if self.backend == "torch":
            raise ConfigurationError("export() is for the ONNX backends; this one is torch")
        return ensure_onnx_export(self.path, self.export_dir, self.backend, verbose=self.verbose)

    # -- embedding -------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        texts = batch_texts(texts)
        if self.backend != "torch":
            return self._onnx_encoder().encode(list(texts))
        vectors = self._torch_model().encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True,
            normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    # -- tokens (TokenAwareEmbedder) -------------------------------------------------------

    @property
    def tokenizer(self) -> Any:
        """The model's Hugging Face tokenizer, the same object type on every backend.

        Chunkers count tokens with it; one tokenizer for all backends gives the same chunks
        whichever backend embeds them.
        """
        if self.backend == "torch":
            return self._torch_model().tokenizer
        return hf_tokenizer(self.path, self.verbose)

    @property
    def max_tokens(self) -> int:
        """The most tokens the model reads per text, its special tokens included."""
        configured = sentence_bert_config(self.path).get("max_seq_length")
        if configured:  # what sentence-transformers itself reads: no need to load the model
            return int(configured)
        # Unset there too: the BERT limit, as the ONNX encoder assumes.
        return int(self._torch_model().max_seq_length or 512)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.identity.describe()} backend={self.backend}>"

    # -- trails.json (trails.vector.embedders.base.Rebuildable) ---------------------------

    @classmethod
    def from_record(cls, settings: Settings, identity: EmbedderIdentity) -> Self:
        """:meth:`from_identity`: the inference backend that made the vectors (or a fallback);
        a model directory comes from ``settings``, as the identity names only its folder."""
        model = settings.get("model")
        named = identity if model is None else identity.model_copy(update={"model": str(model)})
        return cls.from_identity(named)

    def recorded_settings(self, root: Path) -> Settings | None:
        folder = Path(self.model).expanduser()
        return {"model": str(folder.resolve()) if folder.is_dir() else self.model}
