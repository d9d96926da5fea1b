"""Scoring: chunk hits pooled to documents, and trec_eval's measures through ir-measures.

A document scores as its best chunk (max-pooling, in first-occurrence order); runs are scored
with ``ir-measures`` (trec_eval's ``ndcg_cut.10`` and ``recall.100``, as BEIR and MTEB report
them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trails.errors import InvalidArgumentError, MissingExtraError
from trails.records import RetrievalHit

__all__ = ["DOC_DEPTH", "MEASURES", "ChunkHit", "max_pool", "score_run"]

# The measures reported, as ir-measures names them: trec_eval's ndcg_cut.10 and recall.100.
MEASURES = ("nDCG@10", "R@100")
# Documents per query in a run: Recall@100 needs 100 distinct documents.
DOC_DEPTH = 100

# One ranked chunk: a RetrievalHit, or a (chunk id, score) pair with optional metadata (a
# fused ranking's pairs, a store's VectorHit).
ChunkHit = RetrievalHit | tuple[str, float] | tuple[str, float, Mapping[str, Any]]


def max_pool(hits: Iterable[ChunkHit], doc_of: Mapping[str, str],
             depth: int = DOC_DEPTH) -> list[str]:
    """Document ids in the order their first (best) chunk appears, at most ``depth``.

    ``hits`` are best first; a hit maps to a document through ``metadata["doc_iri"]`` or,
    failing that, its chunk IRI's document part. Hits of unknown documents are skipped.

    >>> doc_of = {"t:doc/a": "a", "t:doc/b": "b"}
    >>> max_pool([("t:doc/b/v/1/c/0", .9), ("t:doc/a/v/1/c/2", .8), ("t:doc/b/v/1/c/1", .7)],
    ...          doc_of)
    ['b', 'a']
    """
    seen: dict[str, None] = {}
    for hit in hits:
        iri, metadata = _hit_parts(hit)
        # the last "/v/": a document id may hold one, a version and a position cannot
        document = doc_of.get(str(metadata.get("doc_iri") or iri.rsplit("/v/", 1)[0]))
        if document is not None and document not in seen:
            seen[document] = None
            if len(seen) >= depth:
                break
    return list(seen)


def _hit_parts(hit: ChunkHit) -> tuple[str, Mapping[str, Any]]:
    if isinstance(hit, RetrievalHit):
        return hit.iri, hit.metadata
    metadata = hit[2] if len(hit) > 2 else None
    return str(hit[0]), metadata if isinstance(metadata, Mapping) else {}


def score_run(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
              measures: Sequence[str] = MEASURES) -> tuple[dict[str, float],
                                                           dict[str, dict[str, float]]]:
    """Mean of each measure over every query of ``qrels`` (a query with no run scores 0).

    ``run`` maps a query id to document ids, best first (one listed again keeps its first
    rank); the documents get strictly decreasing scores, so trec_eval keeps exactly this order (it sorts by score and breaks
    ties by document id, which would reorder equal scores).

    >>> score_run({"q": ["d3", "d1"]}, {"q": {"d1": 1}})[0]
    {'nDCG@10': 0.6309297535714575, 'R@100': 1.0}

    Raises:
        InvalidArgumentError: a measure is none ir-measures knows.
        MissingExtraError: ir-measures is not installed (``trails[eval]``).
    """
    ir_measures = _ir_measures()
    parsed = [_parse(ir_measures, m) for m in measures]
    trec_run = {q: _scored(docs) for q, docs in run.items() if q in qrels and docs}
    trec_qrels = {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    per_query: dict[str, dict[str, float]] = {q: dict.fromkeys(measures, 0.0) for q in qrels}
    # Several names may spell one measure ("R@100", "R(rel=1)@100"): each gets its value.
    names: dict[str, list[str]] = {}
    for measure, name in zip(parsed, measures):
        names.setdefault(str(measure), []).append(name)
    for metric in ir_measures.iter_calc(parsed, trec_qrels, trec_run):
        if metric.query_id in per_query:
            for name in names[str(metric.measure)]:
                per_query[metric.query_id][name] = float(metric.value)
    count = max(len(per_query), 1)
    means = {m: sum(v[m] for v in per_query.values()) / count for m in measures}
    return means, per_query


def _scored(docs: Sequence[str]) -> dict[str, float]:
    """Strictly decreasing scores in ranking order, a document listed twice at its first
    (best) rank: a later score would replace the first and rank it at its worst."""
    first = list(dict.fromkeys(docs))
    return {d: float(len(first) - i) for i, d in enumerate(first)}


def _parse(ir_measures: Any, name: str) -> Any:
    """The ir-measures measure ``name`` spells, or an InvalidArgumentError naming it."""
    try:
        return ir_measures.parse_measure(name)
    except (NameError, ValueError, TypeError, SyntaxError) as exc:  # what its parser raises
        raise InvalidArgumentError(
            f"measure {name!r} is none ir-measures knows ({exc}); name one as ir-measures does, "
            "e.g. nDCG@10, R@100, P@5, RR, AP (https://ir-measur.es/)") from None


def _ir_measures() -> Any:
    # Not trails._lazy.require: ir-measures imports pytrec_eval itself, and a missing
    # pytrec_eval (a wheel that failed to build) is the same missing extra to the user.
    try:
        import ir_measures
    except ModuleNotFoundError as exc:
        if exc.name not in ("ir_measures", "pytrec_eval"):
            raise
        raise MissingExtraError("ir-measures", "eval", "scoring retrieval runs") from exc
    return ir_measures
