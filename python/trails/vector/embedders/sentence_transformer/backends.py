"""Which backend runs the model, and how an identity's revision names it.

``torch`` is sentence-transformers on PyTorch; ``onnx`` and ``onnx-int8`` are ONNX Runtime on
the CPU; ``auto`` picks one when the embedder is made (see :func:`resolve_backend`).
"""

from __future__ import annotations

import contextlib
import sys
from importlib.util import find_spec
from pathlib import Path

from trails.errors import ConfigurationError, MissingExtraError

__all__ = [
    "AUTO_CPU_BACKEND",
    "BACKENDS",
    "ONNX_FILES",
    "backend_of_revision",
    "backend_revision",
    "resolve_backend",
]

BACKENDS = ("torch", "onnx", "onnx-int8", "auto")
# What "auto" runs on the CPU. Set from the measurement in adr/0007-onnx-backend.md: int8 lost
# less than 0.005 nDCG@10 on BEIR SciFact against torch and was the fastest. None = torch.
AUTO_CPU_BACKEND: str | None = "onnx-int8"
# The file each ONNX backend runs, inside the model's export directory.
ONNX_FILES = {"onnx": "model.onnx", "onnx-int8": "model-int8.onnx"}
ONNX_EXTRA = ("onnxruntime", "onnx")  # pip distribution, trails extra


def resolve_backend(backend: str, device: str | None) -> str:
    """The concrete backend ("torch", "onnx" or "onnx-int8") a requested one runs on.

    Raises:
        ConfigurationError: an unknown backend, or an ONNX backend on a non-CPU device.
        MissingExtraError: an ONNX backend was asked for and onnxruntime is not installed.
    """
    if backend not in BACKENDS:
        raise ConfigurationError(f"unknown backend {backend!r}: choose one of {BACKENDS}")
    on_cpu = device == "cpu" or (device is None and not _accelerator_visible())
    if backend == "auto":
        # ONNX Runtime here is CPU-only: on a GPU torch is the fast path.
        if on_cpu and AUTO_CPU_BACKEND is not None and _onnxruntime_installed():
            return AUTO_CPU_BACKEND
        return "torch"
    if backend != "torch":
        if device not in (None, "cpu"):
            raise ConfigurationError(
                f"backend {backend!r} runs on the CPU only, not device={device!r}; use "
                "backend='torch' for another device")
        if not _onnxruntime_installed():
            raise MissingExtraError(*ONNX_EXTRA, f"SentenceTransformerEmbedder(backend={backend!r})")
    return backend


def _onnxruntime_installed() -> bool:
    # find_spec, not import: deciding the backend must stay cheap (no onnxruntime load).
    return find_spec("onnxruntime") is not None


def _accelerator_visible() -> bool:
    """Whether sentence-transformers would pick a GPU when device is None, cheaply.

    Importing torch only to ask would cost seconds in a process that runs ONNX; when torch is
    already imported, ask it, otherwise look for the NVIDIA driver.
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            return bool(torch.cuda.is_available())
    return Path("/proc/driver/nvidia/version").exists()


def backend_revision(base: str | None, backend: str) -> str | None:
    """The identity revision for a backend: the base revision, plus ``+onnx...`` for ONNX.

    torch keeps the bare revision, so stores written before ONNX existed read as torch.
    """
    if backend == "torch":
        return base
    return f"{base}+{backend}" if base else backend


def backend_of_revision(revision: str | None) -> str:
    """The backend an identity's revision names (torch when it names none)."""
    tail = (revision or "").rsplit("+", 1)[-1]
    return tail if tail in ONNX_FILES else "torch"
