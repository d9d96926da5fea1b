"""``retrieve()``: filter with SPARQL first, then rank the candidates exactly."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from trails.audit.records import started_now
from trails.context import Context, default_context
from trails.errors import ConfigurationError, EndpointUnavailableError, InvalidArgumentError
from trails.keywords import named_keywords
from trails.kg.terms import check_text
from trails.rank._steps import Step
from trails.rank.fusion import ExplainedFusion, FusionFn, Ranking, auto, rrf, weighted
from trails.rank.keyword import keyword_evidence
from trails.rank.rewrite import QueryRewriter
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval import spans
from trails.retrieval.absent_terms import absent_term_notes
from trails.retrieval.arguments import KEYWORDS_MEANT, check_rankable, check_retrieve_arguments
from trails.retrieval.back_references import candidate_rows, resolves_by_iri
from trails.retrieval.binding_notes import noted
from trails.retrieval.candidates import filter_candidates
from trails.retrieval.consistency import can_check_documents, pinned_reads
from trails.retrieval.degraded import Fallback, VectorSideFailure, embed_query, keyword_fallback
from trails.retrieval.expired import NOTHING_EXPIRED, expired_now
from trails.retrieval.graph_clauses import graph_notes
from trails.retrieval.graph_order import graph_hits, snippet
from trails.retrieval.mismatched import mismatch_notes
from trails.retrieval.provenance import complete_provenance
from trails.retrieval.recording import REPLAYING, SearchCall, observe, revisions
from trails.retrieval.request import FUSIONS, MODES, Fusion, Mode, SearchRequest
from trails.retrieval.steps import StepContext, run_steps
from trails.retrieval.thresholds import above_min_score
from trails.scopes import DEFAULT_SCOPE, check_known_scopes, normalize_scopes, scopes_elsewhere
from trails.tracing import span, traced
from trails.vector.stores.base import KeywordIndex, ScopeListing, check_compatible
from trails.vector.stores.records import back_reference

if TYPE_CHECKING:
    from trails.kg.base import KnowledgeGraph
    from trails.parts import ContextParts
    from trails.vector.embedders.base import Embedder
    from trails.vector.stores.base import VectorHit, VectorStore

__all__ = ["FUSIONS", "MODES", "Mode", "retrieve"]

log = logging.getLogger("trails.retrieve")

# The fusions by name (FUSIONS, in trails.retrieval.request, lists the same names).
_FUSERS: dict[str, FusionFn] = {"rrf": rrf, "weighted": weighted, "auto": auto}
# Each ranking feeds fusion this many hits (at least k): fusion needs hits beyond the top-k, and
# on BEIR 300 beat 100 for every fusion (docs/benchmarks.md).
FUSION_DEPTH = 300
# Post-ranking steps (rerankers, MMR) see this many hits (at least k) to choose from.
STEP_DEPTH = 50


@named_keywords(KEYWORDS_MEANT)
@traced("trails.retrieve", arguments=spans.retrieve_arguments, result=spans.retrieve_result)
def retrieve(
    query: str,
    ctx: Context | None = None,
    *,
    mode: Mode = "hybrid",
    k: int = 10,
    sparql_filter: str | None = None,
    bindings: Mapping[str, Any] | None = None,
    vector_store: VectorStore | None = None,
    embedder: Embedder | None = None,
    fusion: Fusion | FusionFn | None = "auto",
    scope: str | Sequence[str] | None = None,
    messages: Sequence[Mapping[str, str]] | None = None,
    rewriter: QueryRewriter | None = None,
    steps: Sequence[Step] = (),
    min_score: float | None = None,
    caller: str | None = None,
    why: bool | None = None,
    now: datetime | None = None,
    fallback: Fallback | None = "auto",
) -> RetrievalResult:
    """Find the ``k`` best chunks for ``query``.

    - ``vector``: embed the query, return the store's exact top-k.
    - ``graph``: run ``sparql_filter`` and return its IRIs in query order (no score).
    - ``hybrid``: run ``sparql_filter`` to get candidate IRIs (chunk IRIs, or document IRIs
      whose chunks become candidates), then rank only the candidates, exactly. Without a
      filter every vector is a candidate.

    Args:
        query: the question, in natural language.
        ctx: the Context whose graph, store and embedder to use (or the default context).
        k: how many hits at most; the result holds ``min(k, candidates with a vector)``.
        sparql_filter: a read-only SELECT projecting one variable (e.g. ``?iri``).
        bindings: values for variables of the filter, bound as RDF terms.
        vector_store, embedder: override the context's.
        fusion: how ``hybrid`` mode ranks. The default ``"auto"`` fuses the vector ranking
            and the store's BM25 keyword ranking over the same candidates and scopes
            (``FUSION_DEPTH`` hits each), weighing them per query by their own evidence
            (quality, agreement, query terms) so a poor ranking cannot drag down a good one
            (:class:`~trails.rank.fusion.GuardedFusion`, ADR 0022); in ``vector`` mode, or
            with a store that has no keyword index, it ranks by vector score. ``None`` ranks
            by vector score (cosine) alone. ``"rrf"`` (reciprocal rank, constant 60),
            ``"weighted"`` (min-max normalised scores) or a callable from a list of
            :class:`~trails.rank.fusion.Ranking` to ``(id, score)`` pairs (e.g.
            ``functools.partial(rrf, constant=20)``) fuse whatever rankings exist: in
            ``vector`` mode the vector ranking alone.
        scope: a scope name or a list of them (default: the default scope). The filter sees
            only those scopes' graphs and only those scopes' vectors are ranked.
        messages: prior conversation turns (``{"role": ..., "content": ...}``) as context for
            the query; ``rewriter`` (a QueryRewriter) turns query + messages into a standalone
            query. Without a rewriter, messages do not change the query.
        steps: post-ranking steps applied in order to the fused list before it is cut to
            ``k`` (rerankers, MMR, recency, graph expansion): each is called as
            ``step(query, hits, ctx)`` and returns hits.
        min_score: drop the hits whose *final* score (after fusion and steps, on the top
            ``k``) is below it; the result's ``notes`` say how many were dropped. What a
            score means depends on the fusion, so does a sensible threshold:

            - ``fusion=None`` or ``mode="vector"`` (``"auto"`` too when only the vector
              ranking exists): cosine similarity in [-1, 1]; with the default model
              relevant hits mostly score above 0.5, so 0.3-0.5 drops the unrelated.
            - ``"auto"`` (hybrid): in [0, 1], at most the sum of ``result.fusion_weights``
              (about 0.5 when both rankings are trusted and agree, far less when they
              disagree and one takes over), so the scale moves per query: keep a threshold
              low (0.05-0.2) and check it on your own queries.
            - ``"weighted"``: a sum of min-max normalised scores, in [0, number of
              rankings]; it is relative to each query's own hits (the best is always 1 or
              more), so a threshold drops the tail, never a whole poor answer.
            - ``"rrf"``: ``sum 1/(60 + rank)``, at most 2/61 ~ 0.033 with two rankings;
              rank-only, so a threshold (e.g. 0.016, "about top-1 in one ranking") says
              nothing about relevance. Prefer ``k``.
            - a step (reranker, recency) sets its own scale: a cross-encoder's logits.

            ``mode="graph"`` has no scores and refuses it.
        caller: who is searching, for the audit trail (default: ``ctx.audit.caller``, else
            ``TRAILS_CALLER``, else the login name). A context that audits records every
            search (docs/compliance.md); ``result.run_id`` names the record.
        why: give each hit of a filtered search the filter's solution that admitted it
            (``hit.admitted_by``); default: when the audit trail keeps it.
        now: the moment documents' expiries are judged at (an aware datetime; default: the
            time of the call). Expired documents are never candidates, in any mode
            (``trails.retrieval.expired``).
        fallback: when the embedder or vector store fails, ``"auto"`` answers a hybrid query
            with the keyword ranking of the same candidates (``result.degraded`` says why),
            ``"keyword"`` a vector query too, ``"skip"`` any query with no hits and a
            note saying which part failed, ``None`` never: it raises (docs/resilience.md).

    Raises:
        InvalidArgumentError: an argument out of range or of the wrong type (an
            InvalidArgumentTypeError, also a TypeError), named in the message: an unknown
            ``mode`` or ``fusion``, ``k`` not an int from 1 to ``MAX_K``, a bad scope name,
            ``min_score`` NaN, not a number or with ``mode="graph"``, bindings that are no
            mapping of variable names to values, an empty ``query`` outside graph mode, a
            keyword ``retrieve`` does not take (``top_k=``: the message names ``k=``).
        UnsafeFilterError, SparqlError: the filter is not allowed or does not parse.
        ConfigurationError: a needed part (graph, store, embedder) is missing, or closed.
        DimensionMismatchError, EmbeddingModelMismatchError: embedder and store disagree.
        StorageError: the context's files cannot be read (ContextDamagedError: corrupt).
        EndpointUnavailableError, EmbeddingError: a remote graph failed (never answered
            around), or the vector side failed and ``fallback`` does not cover it.

    The answer comes from one committed state of the store and shows whole document versions
    only, whatever a writer does meanwhile (ADR 0005, "Readers").

    >>> from trails.testing import fresh_context
    >>> ctx = fresh_context()
    >>> retrieve("anything", ctx, mode="vector")
    <RetrievalResult 0 hits, mode=vector, plan=full-scan, all vectors, exhaustive: []>
    """
    request = SearchRequest(query=query, mode=mode, k=k, filter=sparql_filter,
                            bindings=bindings, scopes=scope, fusion=fusion, steps=steps,
                            min_score=min_score, fallback=fallback, why=why, now=now)
    check_retrieve_arguments(ctx, vector_store=vector_store, embedder=embedder,
                             messages=messages, rewriter=rewriter)
    if caller is not None and (not isinstance(caller, str) or not caller.strip()):
        raise InvalidArgumentError(f"caller must be a non-empty string naming who searches; "
                                   f"got {caller!r}")
    if caller is not None:
        check_text(caller, "caller")  # else the search would run and its record be lost
    return _run(request, ctx, vector_store, embedder, messages, rewriter, caller)


def _run(request: SearchRequest, ctx: Context | None, vector_store: VectorStore | None,
         embedder: Embedder | None, messages: Sequence[Mapping[str, str]] | None,
         rewriter: QueryRewriter | None, caller: str | None) -> RetrievalResult:
    """Answer a checked request (``retrieve()``'s body)."""
    query, mode, k, sparql_filter = request.query, request.mode, request.k, request.filter
    bindings, fusion, steps, now = request.bindings, request.fusion, request.steps, request.now
    threshold, fallback = request.min_score, request.fallback
    clock, started = time.perf_counter(), started_now()
    if rewriter is not None and messages:
        query = rewriter.rewrite(query, list(messages))
    check_rankable(query, mode, rewritten=rewriter is not None and bool(messages))
    if fusion == "auto" and mode != "hybrid":
        fusion = None  # one ranking: auto passes it through, so skip fusion's deeper search
    if ctx is None and vector_store is None:
        ctx = default_context()
    scopes = normalize_scopes(None if request.scopes is None else list(request.scopes))
    # A typo must not read as "no match"; a replay reads the scopes its run read, even one
    # emptied since (its hits are gone, and the report says so).
    if ctx is not None and any(s != DEFAULT_SCOPE for s in scopes) and REPLAYING.get() is None:
        check_known_scopes(scopes, known_scopes(ctx, scopes))

    iris: Sequence[str] | None = None
    graph = None
    path: list[str] = []  # how the filter was answered (explain() says it)
    if mode in ("graph", "hybrid") and sparql_filter is not None:
        if ctx is None:
            raise ConfigurationError(
                f"mode={mode!r} with a sparql_filter needs a knowledge graph: pass ctx=..."
            )
        graph = ctx.kg

    store = vector_store if vector_store is not None else _need(ctx, "vector_store").vectors
    # One committed state of the store for the whole answer, pinned before the filter reads
    # the graph; a graph found newer than it is read again (retrieval/consistency.py).
    answer: RetrievalResult | None = None
    state: dict[str, str | None] = {}
    model = embedder if embedder is not None or ctx is None else ctx.embedder
    for read in pinned_reads(store, graph):
        with read:
            # Expired documents are gone: cut from the filter's candidates, and hidden from an
            # unfiltered ranking by over-fetching (retrieval/expired.py).
            expired = NOTHING_EXPIRED if ctx is None else expired_now(ctx.kg, store, now)
            if graph is not None:
                lift = (mode != "graph" and can_check_documents(graph, store, again=read.again)
                        and not resolves_by_iri(store))  # rows named by metadata["iri"]: chunks
                iris = expired.without(read.checked(filter_candidates(
                    graph, sparql_filter or "", bindings, scopes, documents=lift,
                    ordered=mode == "graph", path=path)))
            if mode == "graph":
                ordered = graph_hits(list(iris or ()), store, k, ctx, scopes)
                if steps:  # expansion steps apply to graph hits too; scoring ones refuse them
                    ordered = _same_result(ordered, *run_steps(
                        steps, query, ordered, _for_steps(ctx, store, model), now))
                answer = _shown(noted(read.noted(ordered), bindings, _why_empty(
                    graph, sparql_filter, bindings, scopes, iris)), ctx, scopes)
            else:
                model = embedder if embedder is not None else _need(ctx, "embedder").embedder
                check_compatible(model, store)
                rows = iris  # the store's names for them, once it answers
                try:
                    rows = candidate_rows(store, iris)
                    result = _ranked_hits(query, expired.hiding(store), model,
                                          k if not steps else max(k, STEP_DEPTH), rows, fusion,
                                          mode, scopes)
                except (VectorSideFailure, EndpointUnavailableError) as failure:
                    result = keyword_fallback(failure, query, expired.hiding(store), ctx,
                                              max(k, STEP_DEPTH) if steps else k, iris, mode,
                                              scopes, fallback, expired, rows=rows)
                # A step's hits are some of those it was given (retrieval/steps.py).
                result = _same_result(result, *run_steps(
                    steps, query, result, _for_steps(ctx, store, model), now))
                result = above_min_score(_same_result(result, list(result)[:k]), threshold)
                answer = _shown(noted(read.noted(result), bindings, _why_empty(
                    graph, sparql_filter, bindings, scopes, iris)), ctx, scopes)
            if ctx is not None and ctx.audit.enabled:
                state = revisions(ctx, store)  # in the snapshot the answer came from
        if answer is not None:
            break
    if answer is None:
        raise AssertionError("unreachable: the last read answers whatever it finds")
    call = SearchCall.asked(request, caller, scopes=scopes, started=started, revisions=state,
                            embedder=None if model is None else model.identity.describe(),
                            searched=None if query == request.query else query)
    if not answer and request.scopes is None and ctx is not None:
        answer.notes = (*answer.notes, *_elsewhere(ctx))
    answer.query = query  # the display marks its terms in each passage
    answer.filter_path = path[-1] if path else None
    answer.embedder = model  # to_context counts tokens with its tokenizer
    return observe(answer, ctx, call, time.perf_counter() - clock, started_now())


def _elsewhere(ctx: Context) -> list[str]:
    """Why a search naming no scope found nothing, when the default scope holds no document
    and others do (ingested with a scope, searched without one)."""
    try:
        scopes = scopes_elsewhere(ctx)
    except Exception as exc:  # noqa: BLE001 - a note is never worth the answer it explains
        log.warning("could not tell which scopes hold documents: %s", exc)
        return []
    if not scopes:
        return []
    named = ("the scope " if len(scopes) == 1 else "the scopes ") + ", ".join(scopes)
    return [(f"the default scope, which a search naming no scope reads, holds no documents; "
            f"this context's are in {named} (scope={scopes[0]!r}, --scope {scopes[0]})")]


def _shown(result: RetrievalResult, ctx: Context | None, scopes: list[str]) -> RetrievalResult:
    """The returned hits with their documents' title, source and date, from the graph when
    the payload allowlist keeps them out of the store (retrieval/provenance.py)."""
    return result if ctx is None else complete_provenance(result, ctx.kg, scopes)


def _why_empty(graph: KnowledgeGraph | None, sparql_filter: str | None,
               bindings: Mapping[str, Any] | None, scopes: list[str],
               iris: Sequence[str] | None) -> list[str]:
    """For a filter that selected nothing: a GRAPH clause no graph of the scopes can match
    (retrieval/graph_clauses.py), the terms it names that the scopes never hold
    (retrieval/absent_terms.py), a binding or constant whose type the values it is compared
    with never take (retrieval/mismatched.py)."""
    if graph is None or iris is None or iris or not sparql_filter:
        return []
    notes: list[str] = []
    for probe, arguments in ((graph_notes, (bindings, scopes)), (absent_term_notes, (scopes,)),
                             (mismatch_notes, (bindings, scopes))):
        try:
            notes += probe(graph, sparql_filter, *arguments)
        except Exception as exc:  # noqa: BLE001 - a note is never worth the answer it explains
            log.warning("could not tell why the filter selected nothing: %s", exc)
    return notes


def _for_steps(ctx: Context | None, store: VectorStore, model: Embedder | None
               ) -> ContextParts | None:
    """The ``ctx`` steps are given: the context, with the answer's store and embedder when
    the call overrode its own (steps.py)."""
    if ctx is None or (store is ctx.vectors and model in (None, ctx.embedder)):
        return ctx
    return StepContext(ctx, store, model if model is not None else ctx.embedder)


def known_scopes(ctx: Context, wanted: Sequence[str] = ()) -> list[str]:
    """The scopes that hold anything: triples in the graph or vectors in the store. When the
    graph alone holds every scope ``wanted`` (listing its named graphs is cheap), the store,
    whose listing reads every row, is not asked."""
    known = set(ctx.kg.scopes())
    if wanted and set(wanted) <= known:
        return sorted(known)
    if isinstance(ctx.vectors, ScopeListing):
        known.update(ctx.vectors.scopes())
    return sorted(known)


def _same_result(result: RetrievalResult, hits: Sequence[RetrievalHit],
                 notes: Sequence[str] = ()) -> RetrievalResult:
    """``result`` with other hits, and more notes (what a step says it did)."""
    return RetrievalResult(hits, mode=result.mode, plan=result.plan, candidates=result.candidates,
                           exhaustive=result.exhaustive, rankings=result.rankings,
                           notes=[*result.notes, *notes], fusion_weights=result.fusion_weights)


def _need(ctx: Context | None, argument: str) -> Context:
    if ctx is None:
        raise ConfigurationError(f"no {argument} given and no context: pass {argument}=... or ctx=...")
    return ctx


def _ranked_hits(
    query: str,
    store: VectorStore,
    embedder: Embedder,
    k: int,
    iris: Sequence[str] | None,
    fusion: str | FusionFn | None,
    mode: str,
    scopes: list[str],
) -> RetrievalResult:
    if iris is not None and not iris:
        return RetrievalResult([], mode=mode, plan="empty-filter", candidates=0, exhaustive=True)
    with span("trails.embed", lambda: spans.embedding(embedder)):
        vector = np.asarray(embed_query(embedder, query), dtype=np.float64)
    depth = k if fusion is None else max(k, FUSION_DEPTH)
    # Fusion ranks `depth` hits per ranking but keeps k: the store may then skip the metadata
    # of the rest (most of a fused call's cost), and only the kept hits' is read below.
    lean = fusion is not None
    with span("trails.rank.vector", lambda: spans.ranking(store, "vector_search", depth, iris)
              ) as ranked:
        found, plan = store.search_with_plan(vector, depth, ids=iris, scopes=scopes,
                                             with_metadata=not lean)
        ranked.set(spans.returned(found), **{"trails.rank.plan": plan.name})
    metadata = {h.id: h.metadata for h in found}
    rankings = [Ranking("vector", [(h.id, h.score) for h in found],
                        quality=float(found[0].score) if found else None)]
    candidates = None if iris is None else plan.candidates
    notes: list[str] = []
    weights: dict[str, float] = {}
    if fusion is not None and mode == "hybrid":
        keyword = _keyword_hits(query, store, depth, iris, scopes, notes, not lean)
        if keyword is not None:
            quality, about = keyword_evidence(query, store, keyword, scopes)
            rankings.append(Ranking("keyword", [(h.id, h.score) for h in keyword],
                                    quality=quality, query=about))
            metadata.update((h.id, h.metadata) for h in keyword if h.id not in metadata)
    if fusion is None:
        fused = rankings[0].hits
    else:
        fuse = _FUSERS[fusion] if isinstance(fusion, str) else fusion
        with span("trails.fusion", lambda: spans.fusion(fusion, rankings)):
            fused = fuse(rankings)
        if isinstance(fuse, ExplainedFusion) and len(rankings) > 1 and fused:  # hits to explain
            weights = dict(fuse.explain(rankings).get("weights", {}))
    if lean:
        metadata.update(store.metadata([id for id, _ in fused[:k]]))
    positions = {r.name: {doc: (rank, value) for rank, (doc, value) in enumerate(r.hits, 1)}
                 for r in rankings}
    hits = [
        RetrievalHit(back_reference(id, metadata.get(id, {})), score,
                     snippet(metadata.get(id, {})), metadata.get(id, {}),
                     _components(id, score, positions, fusion))
        for id, score in fused[:k]
    ]
    return RetrievalResult(hits, mode=mode, plan=plan.name, candidates=candidates,
                           exhaustive=plan.exhaustive,
                           rankings=[r.name for r in rankings] if fusion is not None else (),
                           notes=notes, fusion_weights=weights)


@traced("trails.rank.keyword", arguments=spans.keyword_arguments, result=spans.returned)
def _keyword_hits(
    query: str, store: VectorStore, depth: int, iris: Sequence[str] | None, scopes: list[str],
    notes: list[str], with_metadata: bool,
) -> list[VectorHit] | None:
    """The store's BM25 ranking of the same candidates and scopes, or None (with a note) when
    the store has no keyword index."""
    if not isinstance(store, KeywordIndex):
        notes.append(f"keyword ranking skipped: {type(store).__name__} has no keyword_search")
        return None
    try:
        return store.keyword_search(query, depth, iris, scopes=scopes, with_metadata=with_metadata)
    except ConfigurationError as exc:
        notes.append(f"keyword ranking skipped: {exc}")
        return None


def _components(
    id: str,
    score: float,
    positions: dict[str, dict[str, tuple[int, float]]],
    fusion: str | FusionFn | None,
) -> dict[str, float]:
    parts: dict[str, float] = {}
    for name, by_id in positions.items():
        if id in by_id:
            rank, value = by_id[id]
            parts[name] = value
            parts[f"{name}_rank"] = rank
    if fusion is not None:
        parts[fusion if isinstance(fusion, str) else "fused"] = score
    return parts
