"""The model's tokenizer, read from its own files: nothing is looked up on a model hub."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from trails import _state
from trails._lazy import require
from trails.vector.embedders.sentence_transformer.quiet import quiet_loading

__all__ = ["BatchTokenizer", "batch_tokenizer", "hf_tokenizer"]

TokenIds = npt.NDArray[np.int64]
# texts -> (input_ids, attention_mask), padded to the longest text and truncated.
BatchTokenizer = Callable[[list[str]], tuple[TokenIds, TokenIds]]


def hf_tokenizer(model_path: Path, verbose: bool | None = None) -> Any:
    """The model's Hugging Face (fast) tokenizer, loaded once per process.

    ``local_files_only``: the path is a local model, so transformers never asks a hub about it
    (the environment needs no ``HF_HUB_OFFLINE``). Importing transformers is quiet unless
    ``verbose`` (see ``quiet.py``): in a notebook, tqdm's import warns.
    """
    def load() -> Any:
        with quiet_loading(verbose):
            transformers = require("transformers", "the model's tokenizer")
            return transformers.AutoTokenizer.from_pretrained(str(model_path),
                                                              local_files_only=True)

    return _state.cached(("hf-tokenizer", str(model_path)), load)


def batch_tokenizer(model_path: Path, max_length: int) -> BatchTokenizer:
    """A :data:`BatchTokenizer` for the model, without transformers or torch when it can.

    Uses the ``tokenizers`` library straight from ``tokenizer.json`` (what the HF fast
    tokenizer wraps, so the ids are the same); a model without that file goes through
    transformers.
    """
    tokenizer_file = model_path / "tokenizer.json"
    if not tokenizer_file.is_file():
        return _hf_batch_tokenizer(model_path, max_length)
    tokenizers = require("tokenizers", "the ONNX backend's tokenizer")
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=max_length)
    # tokenizer.json may pin a fixed padding length: pad to the batch's longest instead.
    padding = tokenizer.padding or {}
    tokenizer.enable_padding(pad_id=padding.get("pad_id", 0),
                             pad_token=padding.get("pad_token", "[PAD]"))

    def tokenize(texts: list[str]) -> tuple[TokenIds, TokenIds]:
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    return tokenize


def _hf_batch_tokenizer(model_path: Path, max_length: int) -> BatchTokenizer:
    """The same contract through transformers, for models without a tokenizer.json."""
    tokenizer = hf_tokenizer(model_path)

    def tokenize(texts: list[str]) -> tuple[TokenIds, TokenIds]:
        encoded = tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                            return_tensors="np")
        return (encoded["input_ids"].astype(np.int64),
                encoded["attention_mask"].astype(np.int64))

    return tokenize
