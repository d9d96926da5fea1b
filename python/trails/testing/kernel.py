"""The isolated engine every test of the kit starts from: :func:`fresh_context` and
:func:`isolated_kernel`."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator

from trails import _state
from trails.context import DEFAULT_BASE_IRI, Context, set_default_context
from trails.errors import ConfigurationError, InvalidArgumentError, InvalidArgumentTypeError
from trails.keywords import named_keywords
from trails.vector.embedders.base import Embedder
from trails.vector.embedders.mock import MockEmbedder

__all__ = ["context_directory", "fresh_context", "isolated_kernel"]

DEFAULT_DIM = 64  # the MockEmbedder's size when a test gives none

# The thread of each open kernel, innermost last. A kernel swaps process-wide state (the
# default context, the environment, tempfile's directory): two threads cannot each have
# their own, and a second thread's kernel would swap the first's out from under it.
_kernels: list[int] = []
_kernels_lock = threading.Lock()


@named_keywords({"dims": "dim", "dimensions": "dim", "model": "embedder"})
def fresh_context(*, dim: int = DEFAULT_DIM, seed: int = 0, embedder: Embedder | None = None,
                  base_iri: str = DEFAULT_BASE_IRI) -> Context:
    """A new in-memory context with a deterministic MockEmbedder (nothing on disk or network).

    ``embedder`` replaces the MockEmbedder (``dim`` and ``seed`` are then left out: one that
    differs from the embedder's raises ``InvalidArgumentError``);
    ``base_iri`` is where documents' IRIs are minted, as in :meth:`Context.memory`.

    Raises:
        InvalidArgumentError: ``dim`` is no positive integer, ``seed`` no integer,
            ``embedder`` no :class:`~trails.vector.embedders.base.Embedder` (or one of
            another size or seed than ``dim`` or ``seed`` given beside it), or ``base_iri``
            no absolute IRI ending in ``/`` or ``#``.
    """
    return Context.memory(_embedder(embedder, dim, seed), base_iri=base_iri)


def _embedder(embedder: Embedder | None, dim: int, seed: int) -> Embedder:
    if embedder is None:
        return MockEmbedder(dim=dim, seed=seed)
    if not isinstance(embedder, Embedder):
        raise InvalidArgumentTypeError(
            f"embedder must be an Embedder (MockEmbedder(dim=64), a SentenceTransformerEmbedder"
            f"...) or None, got {type(embedder).__name__}; to set the mock's size, pass dim=")
    # dim and seed are the MockEmbedder's: given beside another embedder, they were dropped
    # without a word, and a test ran on another size or seed than it said.
    if dim != DEFAULT_DIM and dim != embedder.dim:
        raise InvalidArgumentError(
            f"dim={dim!r} was given with an embedder of dimension {embedder.dim}: dim sizes "
            "the MockEmbedder made when no embedder is given; leave dim out, or make the "
            f"embedder that size (MockEmbedder(dim={dim!r}))")
    if seed != 0 and seed != getattr(embedder, "seed", None):
        raise InvalidArgumentError(
            f"seed={seed!r} was given with an embedder {embedder!r} that does not use it: seed "
            "seeds the MockEmbedder made when no embedder is given; leave seed out, or give "
            f"it to the embedder (MockEmbedder(seed={seed!r}))")
    return embedder


@contextlib.contextmanager
@named_keywords({"dims": "dim", "dimensions": "dim", "model": "embedder"})
def isolated_kernel(*, dim: int = DEFAULT_DIM, seed: int = 0, embedder: Embedder | None = None,
                    base_iri: str = DEFAULT_BASE_IRI) -> Iterator[Context]:
    """Isolate all process-wide engine state for the duration of a ``with`` block.

    Inside: a fresh in-memory context is the default context; the model cache is empty;
    API keys and trails settings (every ``TRAILS_*``, ``OPENAI_*`` and ``QDRANT_*`` variable
    but ``TRAILS_ONNX_CACHE``, the session's shared ONNX exports) are removed from the
    environment; ``TRAILS_HOME`` and
    ``tempfile`` point at a private temporary directory. Everything is restored on exit and
    the directory removed, so nothing leaks between tests. One thread at a time has kernels
    open (nested ones too): another thread's is refused with a ``ConfigurationError``; threads
    inside one kernel share it, or each use a :func:`fresh_context` passed as ``ctx=``.

    >>> from trails import retrieve
    >>> with isolated_kernel() as ctx:
    ...     len(retrieve("anything", mode="vector"))
    0
    """
    _hold_kernel()
    saved_default, saved_cache = _state.default_context, dict(_state.model_cache)
    saved_env = {name: os.environ.get(name)
                 for name in _state.isolated_environment(os.environ)}
    saved_tempdir = tempfile.tempdir
    home, ctx = None, None
    try:
        home = tempfile.mkdtemp(prefix="trails-kernel-")
        for name in saved_env:
            os.environ.pop(name, None)
        os.environ["TRAILS_HOME"] = home
        tempfile.tempdir = home
        _state.model_cache.clear()
        ctx = fresh_context(dim=dim, seed=seed, embedder=embedder, base_iri=base_iri)
        set_default_context(ctx)
        yield ctx
    finally:
        try:
            if ctx is not None:
                ctx.close()
        finally:  # a close that fails must not leave the kernel's state in later tests
            _state.default_context = saved_default
            _state.model_cache.clear()
            _state.model_cache.update(saved_cache)
            tempfile.tempdir = saved_tempdir
            _restore_environment(saved_env)
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
            with _kernels_lock:
                _kernels.pop()


def _hold_kernel() -> None:
    """Count this thread's kernel in, or refuse one while another thread has a kernel open."""
    me = threading.get_ident()
    with _kernels_lock:
        if _kernels and _kernels[-1] != me:
            raise ConfigurationError(
                "isolated_kernel() is already open in another thread: it swaps process-wide "
                "state (the default context, TRAILS_* variables, tempfile's directory), so a "
                "second thread's kernel would swap the first's out from under it. In threads, "
                "use fresh_context() and pass ctx= to retrieve() and ingest_all(); open "
                "isolated_kernel() once, around the threads")
        _kernels.append(me)


def _restore_environment(saved: dict[str, str | None]) -> None:
    # A variable set inside the block goes too, whatever its name.
    for name in _state.isolated_environment(os.environ) - set(saved):
        os.environ.pop(name, None)
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def context_directory(directory: str | os.PathLike[str], *, dim: int = DEFAULT_DIM, seed: int = 0,
                      embedder: Embedder | None = None) -> Iterator[Context]:
    """A context persisted in ``directory`` (created when new), closed when the block ends.

    The embedder is a MockEmbedder (``dim``, ``seed``) unless ``embedder`` is given; reopen
    the directory with the same one.

    Raises:
        InvalidArgumentError: as :func:`fresh_context`.
        StorageError: the directory cannot be created or written (or a file is in the way).
        ContextDamagedError: it holds a damaged context.
    """
    ctx = Context.open(directory, embedder=_embedder(embedder, dim, seed))
    try:
        yield ctx
    finally:
        ctx.close()
