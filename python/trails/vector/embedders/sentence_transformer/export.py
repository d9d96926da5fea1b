"""The ONNX build tool: export a sentence-transformers model to ONNX, and quantise it to int8.

Runs once per model and export format, locally, from the model's own files (no network), into
a cache directory; :class:`~trails.vector.embedders.sentence_transformer.SentenceTransformerEmbedder`
calls :func:`ensure_onnx_export` only when its backend's file is missing. Exporting needs torch
and transformers (``trails[vector]``) and onnx (``trails[onnx]``); running the result needs
only onnxruntime. Every file is checked against the torch model before it is published.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import portalocker

from trails._lazy import require
from trails.errors import ConfigurationError, EmbeddingError
from trails.vector.embedders.base import Vectors
from trails.vector.embedders.sentence_transformer.backends import ONNX_FILES
from trails.vector.embedders.sentence_transformer.model_files import max_length, model_revision
from trails.vector.embedders.sentence_transformer.onnx_runtime import OnnxEncoder
from trails.vector.embedders.sentence_transformer.quiet import quiet_loading
from trails.vector.embedders.sentence_transformer.tokenization import batch_tokenizer

__all__ = ["EXPORT_FORMAT", "default_onnx_cache_dir", "ensure_onnx_export", "export_key"]

log = logging.getLogger(__name__)

# Bump when the export code changes what it writes: older exports are then not reused.
EXPORT_FORMAT = 1
# An export must reproduce the torch model's vectors this closely on the probe texts before it
# is published (cosine, per text). The int8 bound sits below the 0.97 seen on short texts.
MIN_PROBE_COSINE = {"onnx": 0.999, "onnx-int8": 0.95}
# Texts whose vectors an export must reproduce: short, long (past the 256-token limit),
# symbols and digits, and an empty string.
PROBE_TEXTS = (
    "",
    "hi",
    "The cat is sleeping on the sofa.",
    "Quarterly revenue grew by eight percent in 2024.",
    ("Alterations of the architecture of cerebral white matter in the developing human brain "
     "can affect cortical development and result in functional disabilities."),
    "p53 mutations (R175H, R248Q) occur in ~50% of human cancers; see doi:10.1038/nature.",
    " ".join(["Mitochondrial dysfunction precedes neuronal loss in several models."] * 40),
)


def default_onnx_cache_dir() -> Path:
    """``$TRAILS_ONNX_CACHE``; else ``$TRAILS_HOME/onnx``; else ``~/.cache/trails/onnx``.

    ``TRAILS_ONNX_CACHE`` lets a test session share one export across isolated kernels (an
    export is a pure function of the weights, so sharing it cannot leak state).
    """
    shared = os.environ.get("TRAILS_ONNX_CACHE")
    if shared:
        return Path(shared).expanduser()
    home = os.environ.get("TRAILS_HOME")
    if home:
        return Path(home).expanduser() / "onnx"
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "trails" / "onnx"


def export_key(model_id: str, path: Path) -> str:
    """A directory name unique to these weights and this export code.

    Packaged models are named by their package version; a model directory by a hash of its
    files, so edited weights never reuse a stale export.
    """
    source = model_revision(path) or "sha256-" + _fingerprint(path)
    return _slug(f"{model_id}-{source}-export{EXPORT_FORMAT}")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in text)


def _fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode())
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def ensure_onnx_export(model_path: Path, export_dir: Path, backend: str, *,
                       verbose: bool | None = None) -> tuple[Path, bool]:
    """The ONNX file for ``backend`` in ``export_dir``, exporting it if missing.

    Returns (file, created). Exports happen under an exclusive lock on ``export_dir/.lock``:
    a second process waits, then finds the file and reuses it; each file appears by an atomic
    rename, so nobody ever loads half a file. Loading the model to export it is quiet unless
    ``verbose`` (see ``quiet.py``).

    Raises:
        MissingExtraError: onnxruntime or onnx (or torch, to export) is not installed.
        ConfigurationError: the model is not one the export supports (use torch).
        EmbeddingError: the export's vectors disagree with the torch model's.
    """
    target = export_dir / ONNX_FILES[backend]
    if target.is_file():
        return target, False
    require("onnxruntime", "the ONNX backend")
    require("onnx", "the ONNX export")
    export_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(export_dir / ".lock"):
        if target.is_file():  # another process made it while we waited
            return target, False
        fp32 = export_dir / ONNX_FILES["onnx"]
        if not fp32.is_file():
            with quiet_loading(verbose):  # it loads the model through transformers
                _export_fp32(model_path, fp32)
        if backend == "onnx-int8":
            _quantize_int8(model_path, fp32, target)
    return target, True


@contextlib.contextmanager
def _exclusive_lock(lock_file: Path) -> Iterator[None]:
    """An exclusive lock on ``lock_file`` held for the block (released if we crash): one
    process exports while the others wait and then reuse its files."""
    with open(lock_file, "a+b") as handle:
        portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE)
        try:
            yield
        finally:
            portalocker.unlock(handle)


@contextlib.contextmanager
def _atomic_output(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target``, renamed onto it only if the block succeeds."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        tmp.chmod(0o644)  # mkstemp makes files private; an export is readable like any cache
        os.replace(tmp, target)  # atomic on one file system: readers see all or nothing
    finally:
        tmp.unlink(missing_ok=True)


def _export_fp32(model_path: Path, target: Path) -> None:
    """Trace the transformer + pooling + normalisation to ONNX, fuse it, check and publish.

    sentence-transformers' own ``backend="onnx"`` needs optimum-onnx, which pins transformers
    below 5 (sentence-transformers 6 needs 5): so trails traces the model itself with torch.
    """
    log.info("exporting %s to ONNX in %s (once)", model_path, target.parent)
    torch = require("torch", "the ONNX export")
    module, probe_reference = _torch_module(model_path)
    # The raw trace is an intermediate: it lives in a private directory beside the target.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".trace-") as work, \
            _atomic_output(target) as fused:
        traced = Path(work) / "traced.onnx"
        _trace(torch, module, traced)
        _fuse_for_cpu(traced, fused, module)
        _check_agreement(fused, model_path, probe_reference, "onnx")
    _write_manifest(target, model_path)


def _torch_module(model_path: Path) -> tuple[Any, Vectors]:
    """The torch module that the graph records, and its vectors for the probe texts."""
    torch = require("torch", "the ONNX export")
    transformers = require("transformers", "the ONNX export")
    modules = _check_supported(model_path)
    # Eager attention traces to plain ONNX ops that ORT's transformer optimizer fuses.
    # local_files_only: a local model, so nothing is asked of a model hub.
    bert = transformers.AutoModel.from_pretrained(str(model_path), attn_implementation="eager",
                                                  local_files_only=True)
    module = _sentence_embedding_module(torch, bert.eval(), modules["pooling"]).eval()
    tokenize = batch_tokenizer(model_path, max_length(model_path))
    ids, mask = tokenize(list(PROBE_TEXTS))
    with torch.no_grad():
        reference = module(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
    return module, np.asarray(reference, dtype=np.float32)


def _trace(torch: ModuleType, module: Any, out: Path) -> None:
    # The dummy batch must contain padding: transformers skips the mask when it is all ones,
    # and a trace records only the branch it took.
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            "sentence_embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter; agreement is checked
        # dynamo=False: the TorchScript exporter needs no onnxscript and handles BERT well.
        torch.onnx.export(module, (ids, mask), str(out), input_names=["input_ids", "attention_mask"],
                          output_names=["sentence_embedding"], dynamic_axes=axes, opset_version=17,
                          do_constant_folding=True, dynamo=False)


def _fuse_for_cpu(source: Path, out: Path, module: Any) -> None:
    """ORT's BERT optimizer: fused Attention / LayerNorm / Gelu nodes (and int8 kernels for
    them after quantisation, which an unfused graph does not get)."""
    optimizer = require("onnxruntime.transformers.optimizer", "the ONNX export")
    config = module.config
    optimized = optimizer.optimize_model(str(source), model_type="bert",
                                         num_heads=config.num_attention_heads,
                                         hidden_size=config.hidden_size, opt_level=None)
    optimized.save_model_to_file(str(out))


def _quantize_int8(model_path: Path, fp32: Path, target: Path) -> None:
    """Dynamic int8 quantisation: int8 weights per output channel, activations per batch.

    Per-channel scales matter here: per-tensor int8 dropped the cosine to torch to 0.75 on
    some texts, per-channel keeps it above 0.97 (ADR 0007).
    """
    onnx = require("onnx", "the int8 quantisation")
    quantization = require("onnxruntime.quantization", "the int8 quantisation")
    reference = _onnx_vectors(fp32, model_path)
    with _atomic_output(target) as tmp:
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)  # quantize_dynamic logs a "pre-process first" tip
        try:
            # DefaultTensorType: shape inference cannot type the fused ORT ops' outputs.
            quantization.quantize_dynamic(
                str(fp32), str(tmp), weight_type=quantization.QuantType.QInt8, per_channel=True,
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        finally:
            logging.disable(previous)
        _check_agreement(tmp, model_path, reference, "onnx-int8")
    _write_manifest(target, model_path)


def _onnx_vectors(onnx_file: Path, model_path: Path) -> Vectors:
    return OnnxEncoder(onnx_file, model_path, None).encode(list(PROBE_TEXTS))


def _check_agreement(onnx_file: Path, model_path: Path, reference: Vectors,
                     backend: str) -> None:
    """Refuse to publish an export whose vectors stray from the reference on the probes."""
    vectors = _onnx_vectors(onnx_file, model_path)
    cosine = np.sum(vectors * reference, axis=1) / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1))
    worst = float(cosine.min())
    if worst < MIN_PROBE_COSINE[backend]:
        raise EmbeddingError(
            f"the {backend} export of {model_path} disagrees with the torch model (worst probe "
            f"cosine {worst:.4f} < {MIN_PROBE_COSINE[backend]}); use backend='torch'")


def _write_manifest(target: Path, model_path: Path) -> None:
    """What made this file, for people and for debugging (not read back by trails)."""
    manifest = {"source": str(model_path), "revision": model_revision(model_path),
                "export_format": EXPORT_FORMAT,
                "versions": {name: _version_or_none(name)
                             for name in ("torch", "transformers", "onnx", "onnxruntime")}}
    with _atomic_output(target.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")


def _version_or_none(package: str) -> str | None:
    try:
        return version(package)
    except Exception:  # noqa: BLE001 - informative only
        return None


def _sentence_embedding_module(torch: ModuleType, transformer: Any, pooling: str) -> Any:
    """The traced module: transformer -> pooling -> L2 normalisation, as one graph.

    The class is defined here, not at module level, so importing this file never imports torch.
    """

    # torch comes from require(), typed as a plain module: its classes are Any to mypy.
    class SentenceEmbedding(torch.nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer
            self.config = transformer.config

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            # Single-segment input: token types are all 0, as the tokenizer would give.
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=torch.zeros_like(input_ids))[0]
            if pooling == "cls":
                pooled = hidden[:, 0]
            else:  # mean over real tokens, as sentence-transformers' Pooling does
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    return SentenceEmbedding()


def _check_supported(model_path: Path) -> dict[str, str]:
    """The ONNX export covers Transformer -> Pooling (mean or CLS) [-> Normalize] models."""
    modules_file = model_path / "modules.json"
    modules = json.loads(modules_file.read_text()) if modules_file.is_file() else []
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ConfigurationError(
            f"the ONNX backend supports Transformer + Pooling (+ Normalize) models; {model_path} "
            f"has {kinds or 'no modules.json'}: use backend='torch'")
    pooling = json.loads((model_path / modules[1]["path"] / "config.json").read_text())
    if pooling.get("pooling_mode_mean_tokens"):
        mode = "mean"
    elif pooling.get("pooling_mode_cls_token"):
        mode = "cls"
    else:
        raise ConfigurationError(f"the ONNX backend supports mean or CLS pooling, not {pooling}")
    if sum(bool(v) for k, v in pooling.items() if k.startswith("pooling_mode")) != 1:
        raise ConfigurationError(f"the ONNX backend supports one pooling mode, not {pooling}")
    return {"pooling": mode}
