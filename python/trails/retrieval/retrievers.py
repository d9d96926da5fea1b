"""Retrievers: ``retrieve()`` with every option fixed at construction, behind one protocol.

A :class:`Retriever` has one method, ``retrieve(query, messages=None) -> list[hit]``, and keeps
these promises (``tests/test_retriever_contract.py`` checks each for every retriever here):

- read-only: retrieving never changes the graph or the vector store;
- the query is the question; ``messages`` (prior turns) are context, and change the results
  only through the retriever's query rewriter;
- an empty list is a valid result; errors raise (no sentinel values);
- the same query gives the same ids (and scores) on every call;
- scores, when present, are sorted descending and keep one scale per retriever (cosine in
  [-1, 1], RRF in (0, n/61], or None for graph order);
- no per-call options: ``k``, filters, scopes, fusion and steps are given at construction,
  checked there (a bad filter fails when the retriever is built), and cannot be changed;
- a composite of retrievers is a retriever and keeps the same promises;
- ``min_score`` (every retriever but :class:`GraphRetriever`, whose hits have no score)
  drops the hits whose final score is below it, and the result's ``notes`` say how many.

Each retriever here also has ``await retriever.aretrieve(query, messages=None)``: the same
hits, computed in a worker thread so a running event loop stays free (``asynchronous.py``).

>>> from trails.testing import fresh_context
>>> ctx = fresh_context()
>>> VectorRetriever(ctx, k=3).retrieve("anything")
<RetrievalResult 0 hits, mode=vector, plan=full-scan, all vectors, exhaustive: []>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from trails.context import Context, default_context
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.keywords import named_fields
from trails.kg.base import FunctionGraph
from trails.kg.bindings import apply_bindings, check_bindings
from trails.kg.sparql import check_filter
from trails.kg.variables import check_bound
from trails.rank._steps import Step
from trails.rank.fusion import FusionFn, Ranking, rrf
from trails.rank.rewrite import QueryRewriter
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.arguments import (
    KEYWORDS_MEANT,
    check_fusion,
    check_k,
    check_messages_argument,
    check_min_score,
    check_query,
    check_scope_argument,
    check_steps,
    check_why,
)
from trails.retrieval.asynchronous import AsyncRetrieval
from trails.retrieval.degraded import Fallback, check_fallback
from trails.retrieval.request import Fusion, spelt_none
from trails.retrieval.retrieve import FUSIONS, retrieve
from trails.retrieval.steps import run_steps
from trails.retrieval.thresholds import above_min_score
from trails.vector.stores.base import check_compatible

__all__ = [
    "CompositeRetriever",
    "GraphRetriever",
    "HybridRetriever",
    "RerankedRetriever",
    "Retriever",
    "Step",
    "VectorRetriever",
]

Messages = Sequence[Mapping[str, str]]


@runtime_checkable
class Retriever(Protocol):
    """Anything that turns a question (and optional prior turns) into ranked hits."""

    def retrieve(self, query: str, messages: Messages | None = None) -> list[RetrievalHit]: ...


@runtime_checkable
class _HasContext(Protocol):
    """A retriever that carries the context its steps should see."""

    ctx: Context | None


# -- the retrievers ------------------------------------------------------------------------


@named_fields(KEYWORDS_MEANT)
@dataclass(frozen=True, eq=False)
class VectorRetriever(AsyncRetrieval):
    """Exact top-``k`` by cosine over every live vector of the scope (``mode="vector"``).

    Scores are cosine similarities in [-1, 1]; ``min_score`` (keyword) drops hits below it.

    Raises (at construction):
        ValueError: ``k`` is negative or a scope name is malformed.
        DimensionMismatchError, EmbeddingModelMismatchError: embedder and store disagree.
    """

    ctx: Context
    k: int = 10
    scope: str | Sequence[str] | None = None
    rewriter: QueryRewriter | None = field(default=None, kw_only=True)
    min_score: float | None = field(default=None, kw_only=True)
    caller: str | None = field(default=None, kw_only=True)  # for the audit trail
    fallback: Fallback | None = field(default="auto", kw_only=True)  # as retrieve()'s

    def __post_init__(self) -> None:
        _init_common(self)
        object.__setattr__(self, "min_score", check_min_score(self.min_score, "vector"))
        object.__setattr__(self, "fallback", check_fallback(spelt_none(self.fallback)))
        check_compatible(self.ctx.embedder, self.ctx.vectors)

    def retrieve(self, query: str, messages: Messages | None = None) -> RetrievalResult:
        question = _standalone(query, messages, self.rewriter)
        return retrieve(question, self.ctx, mode="vector", k=self.k, scope=self.scope,
                        min_score=self.min_score, caller=self.caller, fallback=self.fallback)


@named_fields(KEYWORDS_MEANT)
@dataclass(frozen=True, eq=False)
class HybridRetriever(AsyncRetrieval):
    """Filter with SPARQL, then rank the candidates exactly (``mode="hybrid"``).

    Args:
        ctx: the context to read.
        k: hits at most.
        sparql_filter: a SELECT of one variable choosing candidate chunks or documents;
            checked here (``check_filter``), so a bad filter fails at construction.
        bindings: values for the filter's variables (copied: later changes to the mapping
            do not reach the retriever).
        fusion: ``"auto"`` (the default, as ``retrieve``), None (cosine scores), ``"rrf"``,
            ``"weighted"`` or a fusion function.
        scope: a scope name or names (default: the default scope).
        steps: post-ranking steps, each ``step(query, hits, ctx) -> hits``, applied in order
            to the best ``STEP_DEPTH`` hits before the cut to ``k``. A step that reorders hits
            must give each the score it is ranked by: a result out of score order raises.
        rewriter: turns the question and ``messages`` into a standalone query.
        query_variable: a variable of the filter bound to the (standalone) question on each
            call, e.g. ``"q"`` for ``FILTER(trails:similarity(?iri, ?q) > 0.3)``.
        min_score: drop hits whose final score is below it (its scale is the fusion's:
            see ``retrieve``).
    """

    ctx: Context
    k: int = field(default=10, kw_only=True)
    sparql_filter: str | None = field(default=None, kw_only=True)
    bindings: Mapping[str, Any] | None = field(default=None, kw_only=True)
    fusion: Fusion | FusionFn | None = field(default="auto", kw_only=True)
    scope: str | Sequence[str] | None = field(default=None, kw_only=True)
    steps: Sequence[Step] = field(default=(), kw_only=True)
    rewriter: QueryRewriter | None = field(default=None, kw_only=True)
    query_variable: str | None = field(default=None, kw_only=True)
    min_score: float | None = field(default=None, kw_only=True)
    caller: str | None = field(default=None, kw_only=True)  # for the audit trail
    fallback: Fallback | None = field(default="auto", kw_only=True)  # as retrieve()'s
    why: bool | None = field(default=None, kw_only=True)  # as retrieve()'s

    def __post_init__(self) -> None:
        _init_common(self)
        _init_filter(self)
        object.__setattr__(self, "fusion", spelt_none(self.fusion))  # "none", as retrieve()
        check_fusion(self.fusion, FUSIONS)
        object.__setattr__(self, "min_score", check_min_score(self.min_score, "hybrid"))
        object.__setattr__(self, "steps", _checked_steps(self.steps))
        object.__setattr__(self, "fallback", check_fallback(spelt_none(self.fallback)))
        check_why(self.why)
        check_compatible(self.ctx.embedder, self.ctx.vectors)

    def retrieve(self, query: str, messages: Messages | None = None) -> RetrievalResult:
        question = _standalone(query, messages, self.rewriter)
        result = retrieve(question, self.ctx, mode="hybrid", k=self.k,
                          sparql_filter=self.sparql_filter,
                          bindings=_call_bindings(self, question), fusion=self.fusion,
                          scope=self.scope, steps=self.steps, min_score=self.min_score,
                          caller=self.caller, fallback=self.fallback, why=self.why)
        return result  # its steps' hits checked by retrieve() (retrieval/steps.py)


@named_fields(KEYWORDS_MEANT)
@dataclass(frozen=True, eq=False)
class GraphRetriever(AsyncRetrieval):
    """The filter's IRIs in the filter's own order (``mode="graph"``); scores are None.

    With ``query_variable`` the question is bound into the filter, so the filter itself can
    order by meaning: ``ORDER BY DESC(trails:similarity(?iri, ?q))`` with
    ``query_variable="q"`` (the scores stay None: the order is the filter's). ``min_score``
    is refused (InvalidArgumentError): there is no score to compare.
    """

    ctx: Context
    sparql_filter: str
    bindings: Mapping[str, Any] | None = None
    k: int = 10
    scope: str | Sequence[str] | None = None
    rewriter: QueryRewriter | None = field(default=None, kw_only=True)
    query_variable: str | None = field(default=None, kw_only=True)
    min_score: float | None = field(default=None, kw_only=True)
    caller: str | None = field(default=None, kw_only=True)  # for the audit trail
    why: bool | None = field(default=None, kw_only=True)  # as retrieve()'s

    def __post_init__(self) -> None:
        _init_common(self)
        check_min_score(self.min_score, "graph")
        check_why(self.why)
        if self.sparql_filter is None:
            raise InvalidArgumentError("GraphRetriever needs a sparql_filter selecting the IRIs to return")
        _init_filter(self)

    def retrieve(self, query: str, messages: Messages | None = None) -> RetrievalResult:
        question = _standalone(query, messages, self.rewriter)
        return retrieve(question, self.ctx, mode="graph", k=self.k,
                        sparql_filter=self.sparql_filter,
                        bindings=_call_bindings(self, question), scope=self.scope,
                        caller=self.caller, why=self.why)


@named_fields(KEYWORDS_MEANT)
@dataclass(frozen=True, eq=False)
class RerankedRetriever(AsyncRetrieval):
    """Another retriever's hits passed through post-ranking steps (``step(query, hits, ctx)``).

    The steps see only the inner retriever's hits: give it a larger ``k`` than this one's so
    there is something to choose from. ``ctx`` (given to the steps) defaults to the inner
    retriever's. The scale of the scores is the last step's; hits out of score order raise.

    Args:
        inner: the retriever whose hits are reranked.
        steps: one step or a sequence of them, applied in order.
        k: hits at most after the steps (None: as many as the steps return).
        ctx: passed to each step.
        min_score: drop hits whose score after the steps is below it (the last step's scale).
    """

    inner: Retriever
    steps: Step | Sequence[Step]
    k: int | None = None
    ctx: Any = None
    min_score: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_score", check_min_score(self.min_score, "reranked"))
        _check_retriever(self.inner, "inner")
        object.__setattr__(self, "steps", _checked_steps(_as_steps(self.steps)))
        if not self.steps:
            raise InvalidArgumentError("RerankedRetriever needs at least one step")
        if self.k is not None:
            _check_k(self.k)
        if self.ctx is None:
            object.__setattr__(self, "ctx", self.inner.ctx if isinstance(self.inner, _HasContext)
                               else None)

    def retrieve(self, query: str, messages: Messages | None = None) -> RetrievalResult:
        _check_query(query)
        inner = self.inner.retrieve(query, messages)
        # A step's hits are some of those it was given (retrieval/steps.py).
        hits, notes = run_steps(_as_steps(self.steps), query, list(inner), self.ctx)
        if self.k is not None:
            hits = hits[: self.k]
        if isinstance(inner, RetrievalResult):
            result = RetrievalResult(hits, mode=inner.mode, plan="reranked",
                                     candidates=inner.candidates, exhaustive=inner.exhaustive,
                                     notes=[*inner.notes, *notes], query=query)
        else:
            result = RetrievalResult(hits, mode="reranked", plan="reranked", candidates=None,
                                     exhaustive=False, notes=notes, query=query)
        return above_min_score(result, self.min_score)


@named_fields(KEYWORDS_MEANT)
@dataclass(frozen=True, eq=False)
class CompositeRetriever(AsyncRetrieval):
    """Several retrievers' lists fused into one (RRF by default), cut to ``k``.

    Every retriever gets the same query and messages. A hit keeps the snippet and metadata
    of its first appearance; ``components`` holds its fused score (``rrf``, or ``fused`` for
    another fusion) and, per retriever ``i`` that found it, ``r{i}_rank`` and ``r{i}`` (its
    score there, when it had one). With RRF the scores lie in (0, n/61] for n retrievers,
    whatever the retrievers' own scales. For a good fusion give the retrievers a ``k`` at
    least as large as this one's. Composites nest. ``min_score`` drops fused hits below it
    (with RRF a rank-only number: at most n/61, see ``retrieve``).
    """

    retrievers: Sequence[Retriever]
    fusion: FusionFn = rrf
    k: int = 10
    min_score: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_score", check_min_score(self.min_score, "composite"))
        retrievers = tuple(self.retrievers)
        if not retrievers:
            raise InvalidArgumentError("CompositeRetriever needs at least one retriever")
        for i, retriever in enumerate(retrievers):
            _check_retriever(retriever, f"retrievers[{i}]")
        object.__setattr__(self, "retrievers", retrievers)
        if not callable(self.fusion):
            raise InvalidArgumentTypeError(f"fusion must be a fusion function (like rrf), got {self.fusion!r}")
        _check_k(self.k)

    def retrieve(self, query: str, messages: Messages | None = None) -> RetrievalResult:
        _check_query(query)
        check_messages_argument(messages)
        results = [r.retrieve(query, messages) for r in self.retrievers]
        rankings = [Ranking(f"r{i}", [(h.iri, h.score) for h in hits])  # type: ignore[misc]
                    for i, hits in enumerate(results)]
        fused = self.fusion(rankings)[: self.k]
        name = "rrf" if self.fusion is rrf else "fused"
        found: list[dict[str, tuple[int, RetrievalHit]]] = [{} for _ in results]
        for by_iri, hits in zip(found, results):
            for rank, hit in enumerate(hits, start=1):
                by_iri.setdefault(hit.iri, (rank, hit))
        hits = [_fused_hit(iri, score, name, found) for iri, score in fused]
        return above_min_score(RetrievalResult(
            hits, mode="composite", plan=name, candidates=None,
            exhaustive=all(isinstance(r, RetrievalResult) and r.exhaustive for r in results),
            query=query),
            self.min_score)


# -- construction checks ------------------------------------------------------------------


def _init_common(retriever: Any) -> None:
    if retriever.ctx is None:
        object.__setattr__(retriever, "ctx", default_context())
    if not isinstance(retriever.ctx, Context):
        raise InvalidArgumentTypeError(f"ctx must be a trails Context, got "
                                       f"{type(retriever.ctx).__name__}")
    _check_k(retriever.k)
    object.__setattr__(retriever, "scope", tuple(check_scope_argument(retriever.scope)))
    rewriter = retriever.rewriter
    if rewriter is not None and not isinstance(rewriter, QueryRewriter):
        raise InvalidArgumentTypeError(f"rewriter must have a rewrite(query, messages) method, got {rewriter!r}")


def _init_filter(retriever: Any) -> None:
    """Check the filter, its bindings and the query variable now, not on the first call."""
    kg, text = retriever.ctx.kg, retriever.sparql_filter
    if text is not None and not isinstance(text, str):
        raise InvalidArgumentTypeError(f"sparql_filter must be a SPARQL SELECT (str), got "
                                       f"{type(text).__name__}")
    if retriever.query_variable is not None and not isinstance(retriever.query_variable, str):
        raise InvalidArgumentTypeError("query_variable must be a variable name (str), got "
                                       f"{type(retriever.query_variable).__name__}")
    check_bindings(retriever.bindings)
    bindings = dict(retriever.bindings or {})
    if text is None:
        if bindings or retriever.query_variable is not None:
            raise InvalidArgumentError(
                "bindings and query_variable need a sparql_filter to bind them in: pass "
                "sparql_filter=... naming their variables, or leave them out")
    else:
        check_filter(text, kg.prefixes,
                     functions=kg.functions if isinstance(kg, FunctionGraph) else ())
        variable = retriever.query_variable
        if variable is not None:
            if variable in bindings:
                raise InvalidArgumentError(
                    f"query_variable {variable!r} is also given in bindings; each call binds "
                    "it to the query, so leave it out of bindings")
            bindings_to_check = {**bindings, variable: ""}
        else:
            bindings_to_check = bindings
        apply_bindings(text, bindings_to_check)  # a name that is no variable: refused
        check_bound(text, bindings_to_check.keys())  # and variables nothing binds, a mistake
    object.__setattr__(retriever, "bindings", MappingProxyType(bindings))


def _as_steps(steps: Step | Sequence[Step]) -> Sequence[Step]:
    return (steps,) if callable(steps) else steps


def _checked_steps(steps: Any) -> tuple[Step, ...]:
    return check_steps(steps)


def _check_k(k: Any) -> None:
    check_k(k)


def _check_retriever(retriever: object, name: str) -> None:
    if not isinstance(retriever, Retriever):
        raise InvalidArgumentTypeError(f"{name} must be a Retriever (with retrieve(query, messages=None)), "
                        f"got {retriever!r}")


# -- per call ------------------------------------------------------------------------------


def _check_query(query: Any) -> None:
    check_query(query)


def _standalone(query: str, messages: Messages | None, rewriter: QueryRewriter | None) -> str:
    """The question to rank by: ``query``, or the rewriter's standalone form of it."""
    _check_query(query)
    turns = check_messages_argument(messages)
    if rewriter is None or not turns:
        return query
    rewritten = rewriter.rewrite(query, turns)
    if not isinstance(rewritten, str):
        raise InvalidArgumentTypeError(
            f"rewriter {rewriter!r:.80}: rewrite(query, messages) returned "
            f"{type(rewritten).__name__}, not a str; it must return the query to search as text")
    return rewritten


def _call_bindings(retriever: Any, question: str) -> dict[str, Any] | None:
    bindings = dict(retriever.bindings)
    if retriever.query_variable is not None:
        bindings[retriever.query_variable] = question
    return bindings or None


def _fused_hit(iri: str, score: float, name: str,
               found: Sequence[Mapping[str, tuple[int, RetrievalHit]]]) -> RetrievalHit:
    first: RetrievalHit | None = None
    components: dict[str, float] = {name: score}
    for i, by_iri in enumerate(found):
        if iri in by_iri:
            rank, hit = by_iri[iri]
            first = first or hit
            components[f"r{i}_rank"] = rank
            if hit.score is not None:
                components[f"r{i}"] = hit.score
    if first is None:
        raise InvalidArgumentError(
            f"the fusion returned {iri!r:.120}, which no retriever found; a fusion function "
            "must return only ids of the rankings it is given")
    return RetrievalHit(iri, score, first.snippet, first.metadata, components)

