"""Rerankers: one verb, ``rank(query, hits)``, and a base class that makes them steps.

A reranker passed to ``retrieve(..., steps=[reranker])`` is called as
``reranker(query, hits, ctx)`` on the fused list before it is cut to ``k``.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from trails import _state
from trails._lazy import require
from trails.errors import ConfigurationError
from trails.parts import ContextParts
from trails.rank._steps import (
    H,
    below,
    by_score,
    check_setting,
    key,
    rescored,
    scoped_rows,
    values,
)

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from trails.records import RetrievalHit

__all__ = ["BaseReranker", "CrossEncoderReranker", "Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Reorders hits for a query: ``rank(query, hits) -> hits``, best first."""

    def rank(self, query: str, hits: Sequence[RetrievalHit]) -> list[RetrievalHit]: ...


class BaseReranker:
    """Derives ``arank`` (async) and ``__call__`` (a retrieve step) from ``rank``.

    >>> class Reverse(BaseReranker):
    ...     def rank(self, query, hits):
    ...         return list(reversed(hits))
    >>> Reverse()("q", [1, 2, 3], None)
    [3, 2, 1]
    """

    def rank(self, query: str, hits: Sequence[H]) -> list[H]:
        raise NotImplementedError

    async def arank(self, query: str, hits: Sequence[H]) -> list[H]:
        """``rank`` in a worker thread, so a model's forward pass does not block the loop."""
        return await asyncio.to_thread(self.rank, query, list(hits))

    def __call__(self, query: str, hits: Sequence[H], ctx: ContextParts | None = None) -> list[H]:
        return self.rank(query, hits)


class CrossEncoderReranker(BaseReranker):
    """Scores (query, chunk text) pairs with a sentence-transformers ``CrossEncoder``.

    The first ``top_n`` hits get the model's raw logit as their score (components
    ``cross_encoder`` and ``cross_encoder_rank``, from 1) and are sorted by it; hits beyond
    ``top_n`` keep their order below them, each scored no higher than the last reranked hit
    (so the list still falls in score; their earlier scores stay in their components). As a step, the chunk text comes in full
    from the graph (``schema:text``, one query per scope); ``rank`` alone uses
    ``metadata["text"]`` or else the snippet, which is cut at 280 characters.

    The model loads on first use, once per process (``trails[vector]``). It is a directory
    holding a cross-encoder, or an installed package with ``get_model_path()``; nothing is
    downloaded.

    Args:
        model_path: the model directory, or the module name of a package that ships one.
        top_n: how many of the best hits to score.
        batch_size: pairs per forward pass.
        device: ``"cpu"``, ``"cuda"``...; None lets sentence-transformers choose.

    Raises:
        ConfigurationError: ``model_path`` is neither a directory nor such a package.
        ValueError: ``top_n`` or ``batch_size`` below 1.
    """

    def __init__(self, model_path: str | os.PathLike[str], top_n: int = 50, batch_size: int = 32,
                 device: str | None = None) -> None:
        check_setting("top_n", top_n, integer=True, at_least=1)
        check_setting("batch_size", batch_size, integer=True, at_least=1)
        self.path = resolve_cross_encoder(model_path)
        self.top_n = top_n
        self.batch_size = batch_size
        self.device = device

    def rank(self, query: str, hits: Sequence[H]) -> list[H]:
        return self._rank(query, hits, {})

    def __call__(self, query: str, hits: Sequence[H], ctx: ContextParts | None = None) -> list[H]:
        texts = {} if ctx is None else chunk_texts(ctx, hits[: self.top_n])
        return self._rank(query, hits, texts)

    def _rank(self, query: str, hits: Sequence[H], texts: dict[tuple[str, str], str]) -> list[H]:
        head, tail = list(hits[: self.top_n]), list(hits[self.top_n :])
        if not head:
            return tail
        pairs = [(query, _text(h, texts)) for h in head]
        scores = self.score(pairs)
        order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable on ties
        ranks = {i: rank for rank, i in enumerate(order, 1)}
        scored = [rescored(h, float(scores[i]), cross_encoder=float(scores[i]),
                           cross_encoder_rank=ranks[i]) for i, h in enumerate(head)]
        return below(by_score(scored), tail)

    def score(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """The model's raw logits for (query, text) pairs: one float per pair.

        A model with several labels is read at its last label (the "relevant" class of a
        two-class model).
        """
        model = self.warm()
        torch = require("torch", "CrossEncoderReranker")  # loaded with sentence_transformers
        logits = model.predict(list(pairs), batch_size=self.batch_size, show_progress_bar=False,
                               activation_fn=torch.nn.Identity(), convert_to_numpy=True)
        logits = np.asarray(logits, dtype=np.float64)
        return logits[:, -1] if logits.ndim == 2 else logits.reshape(len(pairs))

    def warm(self) -> CrossEncoder:
        """Load the model now (services call this at start-up); returns it.

        It is read from local files only, so nothing is asked of a model hub.
        """
        def load() -> CrossEncoder:
            st = require("sentence_transformers", "CrossEncoderReranker")
            model: CrossEncoder = st.CrossEncoder(str(self.path), device=self.device,
                                                  local_files_only=True)
            return model

        return _state.cached(("cross-encoder", str(self.path), self.device), load)

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({str(self.path)!r}, top_n={self.top_n})"


def resolve_cross_encoder(model: str | os.PathLike[str]) -> Path:
    """A directory holding the model: ``model`` itself, or an installed package's model."""
    candidate = Path(model).expanduser()
    if candidate.is_dir():
        return candidate
    name = str(model)
    if name.isidentifier():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
        else:
            if hasattr(module, "get_model_path"):
                return Path(module.get_model_path())
    raise ConfigurationError(
        f"cannot find cross-encoder {name!r}: pass a directory holding a sentence-transformers "
        "CrossEncoder (or a Hugging Face sequence-classification model), or the module name "
        "of an installed package with get_model_path(); nothing is downloaded"
    )


def chunk_texts(ctx: ContextParts, hits: Sequence[Any]) -> dict[tuple[str, str], str]:
    """Each chunk's full ``schema:text`` from the graph, one query per scope of the hits,
    keyed by (scope, iri); hits with ``metadata["text"]`` are not looked up."""
    rows = scoped_rows(ctx, [h for h in hits if "text" not in h.metadata], lambda group: (
        f"SELECT ?c ?t WHERE {{ {values('c', (h.iri for h in group))} ?c schema:text ?t }}"))
    return {(scope, row["c"].value): row["t"].value for scope, row in rows}


def _text(hit: Any, graph: dict[tuple[str, str], str]) -> str:
    """``metadata["text"]``, else the graph's text, else the (truncated) snippet."""
    if hit.metadata.get("text"):
        return str(hit.metadata["text"])
    return graph.get(key(hit)) or str(hit.snippet or "")
