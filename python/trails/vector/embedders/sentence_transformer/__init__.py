"""SentenceTransformerEmbedder: a local sentence-transformers model, fully offline.

Two ways to run the same weights:

- ``backend="torch"``: sentence-transformers on PyTorch (any device).
- ``backend="onnx"`` / ``"onnx-int8"``: ONNX Runtime on the CPU, from an export made once,
  locally, from the packaged weights (no network) into a cache directory. ``onnx-int8`` is the
  same graph with dynamically quantised int8 weights (per channel).
- ``backend="auto"`` (the default): the ONNX variant that ADR 0007 measured to keep retrieval
  quality (:data:`AUTO_CPU_BACKEND`) when running on the CPU with onnxruntime installed, else
  torch.

Every backend records the same ``model`` in its identity and says which backend it is in
``revision`` (``...+onnx``, ``...+onnx-int8``): vectors from different backends are compatible,
because ADR 0007 measured them to agree (cosine and retrieval quality), and a store still shows
which backend made its vectors.

The package, one concern per module: :mod:`.embedder` (the embedder), :mod:`.backends` (which
backend runs), :mod:`.model_files` (where the model is and what its files say),
:mod:`.tokenization` (its tokenizer), :mod:`.onnx_runtime` (ONNX inference) and :mod:`.export`
(the build tool that exports and quantises, run only when an export is missing).
"""

from __future__ import annotations

from trails.vector.embedders.sentence_transformer.backends import (
    AUTO_CPU_BACKEND,
    BACKENDS,
    ONNX_FILES,
    backend_of_revision,
    backend_revision,
)
from trails.vector.embedders.sentence_transformer.embedder import SentenceTransformerEmbedder
from trails.vector.embedders.sentence_transformer.export import (
    EXPORT_FORMAT,
    default_onnx_cache_dir,
    ensure_onnx_export,
)
from trails.vector.embedders.sentence_transformer.model_files import (
    PACKAGED_MODELS,
    resolve_model_path,
)
from trails.vector.embedders.sentence_transformer.onnx_runtime import OnnxEncoder

__all__ = [
    "AUTO_CPU_BACKEND",
    "BACKENDS",
    "EXPORT_FORMAT",
    "ONNX_FILES",
    "PACKAGED_MODELS",
    "OnnxEncoder",
    "SentenceTransformerEmbedder",
    "backend_of_revision",
    "backend_revision",
    "default_onnx_cache_dir",
    "ensure_onnx_export",
    "resolve_model_path",
]
