"""The checks on what ``retrieve()`` and the retrievers are given, before any work.

Each names the argument, what it got and what it takes, as an
:class:`~trails.errors.InvalidArgumentError` (a ``ValueError``) or, for a value of the wrong
type, an :class:`~trails.errors.InvalidArgumentTypeError` (also a ``TypeError``)::

    >>> check_k(2**63)
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentError: k must be an int from 1 to 1000000, got 9223372036854775808
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from trails.context import Context
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.kg.terms import check_text
from trails.rank.rewrite import QueryRewriter, check_messages
from trails.retrieval.replaying import REPLAYING
from trails.scopes import check_scope_argument
from trails.vector.embedders.base import Embedder
from trails.vector.stores.base import VectorStore

__all__ = [
    "KEYWORDS_MEANT",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "check_fusion",
    "check_k",
    "check_messages_argument",
    "check_min_score",
    "check_mode",
    "check_query",
    "check_rankable",
    "check_retrieve_arguments",
    "check_scope_argument",
    "check_steps",
    "check_why",
]

# At most this many hits: a result is built hit by hit in memory, and a larger k (2**63)
# would overflow the store's native integers instead of saying what is wrong.
MAX_K = 1_000_000
# The longest question: a search is embedded, ranked and recorded (its text in the audit
# trail) whole, so a 10 MB query cost a read-only key 10 MB of the owner's disk a request.
MAX_QUERY_CHARS = 100_000

# Names other retrieval libraries give retrieve()'s arguments, and the one trails takes
# (a misspelling of trails' own names is matched by closeness instead).
KEYWORDS_MEANT = {
    "filter": "sparql_filter", "sparql": "sparql_filter", "where": "sparql_filter",
    "query_filter": "sparql_filter", "filters": "sparql_filter",
    "top_k": "k", "topk": "k", "limit": "k", "n": "k", "n_results": "k", "size": "k",
    "params": "bindings", "bind": "bindings", "parameters": "bindings",
    "scopes": "scope", "graph": "scope", "namespace": "scope",
    "threshold": "min_score", "score_threshold": "min_score",
    "context": "ctx", "store": "vector_store", "history": "messages",
}


def check_k(k: object, name: str = "k") -> int:
    """``k`` itself if it is an int (not a bool) from 1 to :data:`MAX_K`."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidArgumentTypeError(f"{name} must be an int from 1 to {MAX_K}, got "
                                       f"{type(k).__name__} {_shown(k)}")
    if not 1 <= k <= MAX_K:
        raise InvalidArgumentError(f"{name} must be an int from 1 to {MAX_K}, got {_shown(k)}")
    return k


def check_mode(mode: object, modes: Sequence[str]) -> str:
    """``mode`` if it is one of ``modes``."""
    if not isinstance(mode, str) or mode not in modes:
        raise InvalidArgumentError(f"mode must be one of {', '.join(map(repr, modes))}; got "
                                   f"{_shown(mode)}")
    return mode


def check_query(query: object) -> str:
    """The question, if it is a str that UTF-8 can encode."""
    if isinstance(query, Context):  # retrieve(ctx, "question")
        raise InvalidArgumentTypeError("query must be a str (the question), got a Context: "
                                       "the question goes first, retrieve(query, ctx)")
    if not isinstance(query, str):
        raise InvalidArgumentTypeError(f"query must be a str (the question), got "
                                       f"{type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS and REPLAYING.get() is None:  # a replay runs as it ran
        raise InvalidArgumentError(
            f"query is {len(query):,} characters long; a question may be at most "
            f"{MAX_QUERY_CHARS:,} (it is embedded and recorded whole): pass the question, and "
            "give long text to ingest as a document")
    return check_text(query, "query")


def check_rankable(query: str, mode: str, *, rewritten: bool = False) -> None:
    """Refuse an empty question where one ranks the hits: the vector of "" is nobody's
    question, and its order would read as an answer. A replay runs a recorded search as it
    ran, even one for "" recorded before the rule (replay notes it)."""
    if mode != "graph" and not query.strip() and REPLAYING.get() is None:
        said = "the rewriter turned the query and messages into an empty question" if rewritten \
            else "query is empty"
        raise InvalidArgumentError(
            f"{said}; mode={mode!r} ranks chunks by it: pass the question to rank by, or use "
            f"mode='graph' with a sparql_filter to list the filter's matches unranked")


def check_min_score(min_score: object, mode: object = "hybrid") -> float | None:
    """``min_score`` as a float (None: no threshold); refused in graph mode, which has no
    scores.

    >>> check_min_score(0.5), check_min_score(None)
    (0.5, None)
    >>> check_min_score(0.5, mode="graph")
    Traceback (most recent call last):
    ...
    trails.errors.InvalidArgumentError: min_score does not apply to mode='graph': graph hits have no score (they come in the filter's order); drop min_score, or use mode='hybrid' to rank the filter's candidates

    Raises:
        InvalidArgumentTypeError: not a number (a bool or a str is refused too).
        InvalidArgumentError: NaN, or given with ``mode="graph"``.
    """
    if min_score is None:
        return None
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)):
        raise InvalidArgumentTypeError(f"min_score must be a number (a threshold on the final "
                                       f"score) or None, got {type(min_score).__name__} "
                                       f"{_shown(min_score)}")
    try:
        threshold = float(min_score)
    except OverflowError:  # an int too large for a float
        raise InvalidArgumentError(f"min_score must be a number a float can hold, got "
                                   f"{_shown(min_score)}") from None
    if math.isnan(threshold):
        raise InvalidArgumentError("min_score must be a number, got NaN; pass None for no "
                                   "threshold")
    if mode == "graph":
        raise InvalidArgumentError(
            "min_score does not apply to mode='graph': graph hits have no score (they come in "
            "the filter's order); drop min_score, or use mode='hybrid' to rank the filter's "
            "candidates")
    return threshold


def check_fusion(fusion: object, choices: Sequence[str]) -> None:
    """``fusion`` is None, one of ``choices`` or a callable."""
    if fusion is None or callable(fusion):
        return
    if isinstance(fusion, str):
        if fusion not in choices:
            raise InvalidArgumentError(f"fusion must be None, a callable or one of "
                                       f"{tuple(choices)}; got {fusion!r}")
        return
    raise InvalidArgumentTypeError(f"fusion must be None, a callable or one of "
                                   f"{tuple(choices)}; got {type(fusion).__name__}")


def check_steps(steps: object) -> tuple[Callable[..., Any], ...]:
    """``steps`` as a tuple of callables (each ``step(query, hits, ctx)``)."""
    if not isinstance(steps, (list, tuple)):
        raise InvalidArgumentTypeError(f"steps must be a list of callables step(query, hits, "
                                       f"ctx), got {type(steps).__name__}")
    for i, step in enumerate(steps):
        if not callable(step):
            raise InvalidArgumentTypeError(f"steps[{i}] must be callable as step(query, hits, "
                                           f"ctx), got {_shown(step)}")
    return tuple(steps)


def check_why(why: object) -> bool | None:
    """``why`` if it is True, False or None (None: as the audit trail keeps it)."""
    if why is not None and not isinstance(why, bool):
        raise InvalidArgumentTypeError(f"why must be True, False or None, got "
                                       f"{type(why).__name__} {_shown(why)}")
    return why


def check_messages_argument(messages: object) -> list[dict[str, str]]:
    """:func:`~trails.rank.rewrite.check_messages` (its errors are argument errors)."""
    return check_messages(messages)  # type: ignore[arg-type]


def check_retrieve_arguments(ctx: object, *, vector_store: object, embedder: object,
                             messages: object, rewriter: object) -> None:
    """What ``retrieve()`` is given besides its request (a
    :class:`~trails.retrieval.request.SearchRequest` checks that): the parts that answer it.

    Raises:
        InvalidArgumentTypeError: an argument of the wrong type.
        InvalidArgumentError: malformed messages.
    """
    if ctx is not None and not isinstance(ctx, Context):
        raise InvalidArgumentTypeError(f"ctx must be a trails Context (Context.open(...)) or "
                                       f"None, got {type(ctx).__name__}")
    if vector_store is not None and not isinstance(vector_store, VectorStore):
        raise InvalidArgumentTypeError(f"vector_store must be a VectorStore or None, got "
                                       f"{type(vector_store).__name__}")
    if isinstance(embedder, type):  # a class passes the protocol check: its attributes exist
        raise InvalidArgumentTypeError(f"embedder must be an Embedder or None, got the class "
                                       f"{embedder.__name__}: make one, {embedder.__name__}(...)")
    if embedder is not None and not isinstance(embedder, Embedder):
        raise InvalidArgumentTypeError(f"embedder must be an Embedder or None, got "
                                       f"{type(embedder).__name__}")
    check_messages_argument(messages)
    if rewriter is not None and not isinstance(rewriter, QueryRewriter):
        raise InvalidArgumentTypeError(f"rewriter must have a rewrite(query, messages) method, "
                                       f"got {type(rewriter).__name__}")


def _shown(value: object) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:80] + "..."
