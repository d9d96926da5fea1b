"""Degraded answers: a hybrid query whose vector side failed answers with the keyword ranking
of the same candidates, and says so (docs/resilience.md, ADR 0020).

When the embedder or the vector store raises ``EmbeddingError`` or
``EndpointUnavailableError`` while ranking, :func:`keyword_fallback` ranks the candidates the
filter already chose (the graph answered) by keywords:

- the store's own BM25 index when the store still answers (the embedder failed);
- else BM25 over the chunk texts the graph holds (``schema:text`` of the documents' current
  versions), bounded: only a filter's candidates (at most ``GRAPH_KEYWORD_LIMIT`` IRIs), or,
  without a filter, a context of at most ``GRAPH_KEYWORD_LIMIT`` chunks; beyond that a clear
  ``EndpointUnavailableError``, never an unbounded read.

The result says why (``result.degraded``, a note, ``plan="keyword-fallback"``). ``fallback``
decides when this happens: ``"auto"`` (the default) in hybrid mode only, ``"keyword"`` in
vector mode too, ``None`` never (the failure is raised). A failure of the graph side is never
answered around: no filter, no answer.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, get_args

import pyoxigraph as ox

from trails.errors import (
    EmbeddingError,
    EndpointUnavailableError,
    InvalidArgumentError,
    TrailsError,
)
from trails.kg.base import select
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.expired import Expired
from trails.retrieval.graph_order import snippet
from trails.text import keyword_terms
from trails.vector.stores.base import KeywordIndex
from trails.vector.stores.records import back_reference

if TYPE_CHECKING:
    from trails.context import Context
    from trails.vector.embedders.base import Embedder
    from trails.vector.stores.base import VectorStore

__all__ = ["FALLBACKS", "GRAPH_KEYWORD_LIMIT", "Fallback", "VectorSideFailure",
           "check_fallback", "embed_query", "keyword_fallback"]

Fallback = Literal["auto", "keyword", "skip"]
FALLBACKS: tuple[str | None, ...] = (*get_args(Fallback), None)
# Most chunk texts read from the graph to rank without the store: a filter's candidates, or a
# whole small context. Past it, an outage is reported rather than answered slowly.
GRAPH_KEYWORD_LIMIT = 5000
_BATCH = 500  # IRIs per VALUES block
_K1, _B = 1.2, 0.75  # BM25's usual constants (FTS5's bm25() and Lucene use them too)
_WORD = re.compile(r"[^\W_]+")
_CHUNK_ROW = ("?c a trails:Chunk ; schema:isPartOf ?d ; schema:text ?t ; trails:version ?v . "
              "?d trails:currentVersion ?v .")


class VectorSideFailure(Exception):
    """Raised inside retrieval (never out of it): ``part`` ("embedder") could not serve."""

    def __init__(self, part: str, error: TrailsError) -> None:
        super().__init__(str(error))
        self.part, self.error = part, error


def check_fallback(fallback: object) -> str | None:
    """``fallback`` if it is one of :data:`FALLBACKS`.

    Raises:
        InvalidArgumentError: anything else.
    """
    if fallback not in FALLBACKS:
        raise InvalidArgumentError(
            f"fallback must be 'auto' (hybrid queries fall back to keywords when the vector "
            f"side fails), 'keyword' (vector queries too), 'skip' (an empty answer that says "
            f"why) or None (raise); got {fallback!r}")
    return fallback


def embed_query(embedder: Embedder, query: str) -> list[float]:
    """The query's vector; an embedder that cannot serve raises :class:`VectorSideFailure`."""
    try:
        return embedder.embed(query)
    except (EmbeddingError, EndpointUnavailableError) as exc:
        raise VectorSideFailure("embedder", exc) from exc


def keyword_fallback(
    failure: VectorSideFailure | EndpointUnavailableError,
    query: str,
    store: VectorStore,
    ctx: Context | None,
    k: int,
    iris: Sequence[str] | None,
    mode: str,
    scopes: list[str],
    fallback: str | None,
    expired: Expired,
    *,
    rows: Sequence[str] | None = None,
) -> RetrievalResult:
    """The keyword ranking of the candidates ``iris`` (every chunk when None), marked degraded.

    ``rows``: the store's names for the candidates (``retrieval/back_references.py``;
    default ``iris``).

    Raises:
        EmbeddingError, EndpointUnavailableError: the failure itself when ``fallback`` does
            not allow a keyword answer in this ``mode`` (the message says how to allow it), or
            when neither the store nor (bounded) the graph can rank by keywords.
    """
    part, error = ((failure.part, failure.error) if isinstance(failure, VectorSideFailure)
                   else ("vector store", failure))
    reason = f"{part} unreachable: {error}"
    if fallback == "skip":  # the plugin design's on_error: skip, never silent
        return RetrievalResult([], mode=mode, plan="skipped", candidates=None, exhaustive=False,
                               notes=[f"skipped: the {part} failed (fallback='skip')"],
                               degraded=(reason,))
    if fallback is None or (mode == "vector" and fallback != "keyword"):
        hint = ("pass fallback='keyword' to rank by keywords while it is down" if mode == "vector"
                else "pass fallback='auto' to rank by keywords while it is down")
        raise type(error)(f"{error} ({mode} retrieval with fallback={fallback!r}: {hint})"
                          ) from error
    notes = [f"ranked by keywords only: the {part} failed"]
    # Candidates are counted in chunks, as a healthy answer counts them, even when the filter
    # selected documents.
    candidates = None if iris is None else 0
    if iris is not None and not iris:
        hits: list[RetrievalHit] = []
    elif part == "embedder" and isinstance(store, KeywordIndex):
        names = iris if rows is None else rows
        hits = [RetrievalHit(back_reference(h.id, h.metadata), h.score, snippet(h.metadata),
                             h.metadata, {"keyword": h.score, "keyword_rank": rank})
                for rank, h in enumerate(store.keyword_search(
                    query, k, names, scopes=scopes, with_metadata=True), 1)]
        if names is not None:
            candidates = len(store.expand_ids(names))
    else:
        if ctx is None:
            raise EndpointUnavailableError(f"{reason}; with no context there is no graph to "
                                           "rank its chunk texts by keywords") from error
        hits, read = graph_keyword_hits(query, ctx, k, iris, scopes, expired, reason)
        candidates = None if iris is None else read
        notes.append("keyword scores are BM25 over the graph's chunk texts (no stemming)")
    return RetrievalResult(hits, mode=mode, plan="keyword-fallback", candidates=candidates,
                           exhaustive=True, notes=notes, degraded=(reason,))


def graph_keyword_hits(query: str, ctx: Context, k: int, iris: Sequence[str] | None,
                       scopes: list[str], expired: Expired, reason: str
                       ) -> tuple[list[RetrievalHit], int]:
    """BM25 over the chunk texts of the graph's current document versions among ``iris``
    (chunk or document IRIs; every chunk of ``scopes`` when None), statistics of those
    chunks only; with the number of chunks read.

    Raises:
        EndpointUnavailableError: more than :data:`GRAPH_KEYWORD_LIMIT` chunks to read (a
            filter's documents are counted by their chunks).
    """
    if iris is None:
        counted = select(ctx.kg, f"SELECT (COUNT(?c) AS ?n) WHERE {{ {_CHUNK_ROW} }}",
                         scopes=scopes).rows
        size = int(counted[0]["n"]) if counted else 0
    else:
        size = len(iris)
    if size > GRAPH_KEYWORD_LIMIT:
        _too_many(reason, f"{size} candidates" if iris is not None else
                  f"{size} chunks and no filter")
    texts: dict[str, tuple[str, str]] = {}  # chunk -> (document, text), in the graph's order
    for values in _values_blocks(iris):
        text = (f"SELECT ?c ?d ?t WHERE {{ {_CHUNK_ROW} }}" if values is None else
                f"SELECT ?c ?d ?t WHERE {{ {{ VALUES ?c {{ {values} }} {_CHUNK_ROW} }} UNION "
                f"{{ VALUES ?d {{ {values} }} {_CHUNK_ROW} }} }}")
        for row in select(ctx.kg, text, scopes=scopes).rows:
            chunk, document = str(row["c"]), str(row["d"])
            if document not in expired.documents and chunk not in expired.chunks:
                texts.setdefault(chunk, (document, str(row["t"])))
        if len(texts) > GRAPH_KEYWORD_LIMIT:  # documents: each may hold many chunks
            _too_many(reason, f"candidates holding at least {len(texts)} chunks")
    ranked = bm25(keyword_terms(query), {c: words(t) for c, (_, t) in texts.items()})
    return [RetrievalHit(chunk, score, texts[chunk][1],
                         {"doc_iri": texts[chunk][0], "text": texts[chunk][1]},
                         {"keyword": score, "keyword_rank": rank})
            for rank, (chunk, score) in enumerate(ranked[:k], 1)], len(texts)


def _too_many(reason: str, what: str) -> None:
    raise EndpointUnavailableError(
        f"{reason}; ranking by the graph's chunk texts instead is bounded to "
        f"{GRAPH_KEYWORD_LIMIT} candidates and this query has {what}: narrow it "
        "with a sparql_filter, or retry when the vector side is back")


def words(text: str) -> list[str]:
    """``text``'s words as :func:`trails.text.keyword_terms` splits and folds them, repeats
    kept (BM25 counts them)."""
    return [w.lower() for w in _WORD.findall(unicodedata.normalize("NFC", text))]


def bm25(terms: Sequence[str], documents: dict[str, list[str]]) -> list[tuple[str, float]]:
    """Okapi BM25 of each document holding a term, best first (ties by id), with Lucene's
    idf ``log(1 + (N - n + 0.5) / (n + 0.5))`` (positive even for a term most documents hold).

    >>> bm25(["rails"], {"a": ["rails", "web"], "b": ["django"], "c": ["rails", "rails"]})[0][0]
    'c'
    """
    if not documents or not terms:
        return []
    counts = {doc: Counter(tokens) for doc, tokens in documents.items()}
    average = sum(len(tokens) for tokens in documents.values()) / len(documents) or 1.0
    total = len(documents)
    scores: dict[str, float] = {}
    for term in dict.fromkeys(terms):
        holding = [doc for doc, counted in counts.items() if term in counted]
        if not holding:
            continue
        idf = math.log(1.0 + (total - len(holding) + 0.5) / (len(holding) + 0.5))
        for doc in holding:
            tf = counts[doc][term]
            norm = _K1 * (1 - _B + _B * len(documents[doc]) / average)
            scores[doc] = scores.get(doc, 0.0) + idf * tf * (_K1 + 1) / (tf + norm)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def _values_blocks(iris: Sequence[str] | None) -> list[str | None]:
    if iris is None:
        return [None]
    return [" ".join(str(ox.NamedNode(i)) for i in iris[start:start + _BATCH])
            for start in range(0, len(iris), _BATCH)]

