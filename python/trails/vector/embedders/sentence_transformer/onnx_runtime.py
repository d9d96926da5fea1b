"""Inference on an exported model with ONNX Runtime: tokenise, one ``run``, no torch."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from trails._lazy import require
from trails.vector.embedders.base import Vectors
from trails.vector.embedders.sentence_transformer.model_files import sentence_bert_config
from trails.vector.embedders.sentence_transformer.tokenization import batch_tokenizer

__all__ = ["OnnxEncoder"]


class OnnxEncoder:
    """An exported model in an ONNX Runtime session, with the model's fast tokenizer.

    The graph takes ``input_ids`` and ``attention_mask`` and returns the pooled, normalised
    sentence embedding, so encoding is tokenise + one ``run``: no torch at inference time.

    Each text runs on its own (batch of one, single-threaded kernels), several texts at once on
    a pool of threads, one per core. Why not batches:

    - int8 quantises activations with one scale per *input tensor*: in a batch a text's vector
      would depend on its neighbours (seen: cosine 0.978 between a text alone and in a batch).
      One text per run makes every vector a function of its text only, as on torch.
    - No padding: a batch computes every text at its longest member's length.
    - Texts in parallel use the cores better than parallel kernels on one small matrix: on 2
      cores int8 ran ~2x torch this way, ~1.6x in batches of 32 (ADR 0007).
    """

    def __init__(self, onnx_file: Path, model_path: Path, dim: int | None) -> None:
        ort = require("onnxruntime", "the ONNX backend")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # parallel across texts instead (see above)
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_file), options,
                                            providers=["CPUExecutionProvider"])
        config = sentence_bert_config(model_path)
        self.max_length = int(config.get("max_seq_length") or 512)
        self.lower_case = bool(config.get("do_lower_case", False))
        self.tokenize = batch_tokenizer(model_path, self.max_length)
        self.dim = dim
        self.workers = _usable_cores()
        self._pool: ThreadPoolExecutor | None = None

    def get_sentence_embedding_dimension(self) -> int:
        return int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str]) -> Vectors:
        """Vectors for texts, in order."""
        if not texts:
            return np.empty((0, self.dim or self.get_sentence_embedding_dimension()), np.float32)
        if self.lower_case:  # sentence-transformers lower-cases before tokenising when told to
            texts = [t.lower() for t in texts]
        if len(texts) == 1 or self.workers == 1:
            return np.vstack([self._one(t) for t in texts])
        return np.vstack(list(self._threads().map(self._one, texts)))

    def _one(self, text: str) -> Vectors:
        # ORT releases the GIL in run(): the pool's threads compute in parallel.
        input_ids, attention_mask = self.tokenize([text])
        outputs = self.session.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})
        return np.asarray(outputs[0], dtype=np.float32)

    def _threads(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="trails-onnx")
        return self._pool


def _usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
