"""Fusion: pure functions from several ranked lists to one."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from trails.errors import InvalidArgumentError
from trails.rank import _guard_fit
from trails.rank._steps import check_setting

__all__ = ["RRF_CONSTANT", "AutoFusion", "ExplainedFusion", "FusionFn", "GuardedFusion",
           "Ranking", "auto", "rrf", "weighted"]

# Cormack, Clarke & Buettcher (SIGIR 2009). Note qdrant-client defaults to 2; we do not.
RRF_CONSTANT = 60


class Ranking(NamedTuple):
    """One ranker's output: ``(id, score)`` pairs, best first, under a name like ``"vector"``.

    ``quality`` is the ranker's own evidence of how well it matched this query, on an absolute
    scale (None: no evidence). ``retrieve`` sets it to the best hit's cosine similarity for
    ``"vector"`` and to the best hit's BM25 score over the query's IDF mass for ``"keyword"``
    (1.0 is about what a document holding each query term once scores). :data:`auto` reads it.

    ``query``: what the ranker knows of the query itself; ``retrieve`` gives the keyword ranking
    ``{"terms": distinct scored terms, "weight": their summed IDF in the store}``.
    """

    name: str
    hits: list[tuple[str, float]]
    quality: float | None = None
    query: Mapping[str, float] | None = None


# A fusion takes the rankings and returns (id, fused score) pairs, best first.
FusionFn = Callable[[Sequence[Ranking]], list[tuple[str, float]]]


def rrf(
    rankings: Sequence[Ranking],
    *,
    constant: float = RRF_CONSTANT,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: ``score(d) = sum_r w_r / (constant + rank_r(d))``, ranks from 1.

    Ties are broken by id so the output is deterministic.

    >>> a = Ranking("vector", [("x", 0.9), ("y", 0.8)])
    >>> b = Ranking("keyword", [("y", 7.0), ("z", 3.0)])
    >>> [doc for doc, _ in rrf([a, b])]
    ['y', 'x', 'z']
    """
    check_setting("the RRF constant", constant, at_least=0)
    fused: dict[str, float] = {}
    for ranking in rankings:
        weight = _weight(weights, ranking.name)
        for rank, (doc, _score) in enumerate(ranking.hits, start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (constant + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def _weight(weights: Mapping[str, float] | None, name: str) -> float:
    """A ranking's weight from ``weights`` (1.0 when unnamed), refused unless a finite number."""
    if weights is None:
        return 1.0
    if not isinstance(weights, Mapping):
        raise InvalidArgumentError(f"weights must map ranking names to numbers, got "
                                   f"{type(weights).__name__} {weights!r:.80}")
    weight = weights.get(name, 1.0)
    check_setting(f"weights[{name!r}]", weight)
    return float(weight)


def weighted(
    rankings: Sequence[Ranking],
    *,
    weights: Mapping[str, float] | None = None,
    normalize: Literal["minmax", "zscore"] = "minmax",
) -> list[tuple[str, float]]:
    """Score fusion: ``score(d) = sum_r w_r * norm_r(d)``, each ranking's scores mapped to [0, 1].

    ``minmax`` maps a ranking's best listed score to 1 and its worst to 0; ``zscore`` maps
    ``mean - 3 sd`` to 0 and ``mean + 3 sd`` to 1, clipped (the distribution-based score fusion
    of Qdrant's ``dbsf``), so one outlier does not squash the rest. A ranking whose scores are
    all equal gives each listed hit 1. A document a ranking did not list gets 0 from it.
    Ties are broken by id.

    >>> a = Ranking("vector", [("x", 0.9), ("y", 0.5), ("z", 0.1)])
    >>> b = Ranking("keyword", [("z", 12.0), ("y", 2.0)])
    >>> weighted([a, b])
    [('x', 1.0), ('z', 1.0), ('y', 0.5)]
    """
    if normalize not in ("minmax", "zscore"):
        raise InvalidArgumentError(f"normalize must be 'minmax' or 'zscore', got {normalize!r}")
    fused: dict[str, float] = {}
    for ranking in rankings:
        weight = _weight(weights, ranking.name)
        scores = [float(score) for _doc, score in ranking.hits]
        normed = _minmax(scores) if normalize == "minmax" else _zscore(scores)
        for (doc, _score), value in zip(ranking.hits, normed):
            fused[doc] = fused.get(doc, 0.0) + weight * value
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def _minmax(scores: list[float]) -> list[float]:
    """Scores mapped to [0, 1] by the finite ones' range; an infinite score to its end (a
    custom ranker may give one; the arithmetic would turn it into NaN)."""
    finite = [s for s in scores if math.isfinite(s)]
    low, high = min(finite, default=0.0), max(finite, default=0.0)
    return [1.0 if s > high or high == low else 0.0 if s < low else (s - low) / (high - low)
            for s in scores]


def _zscore(scores: list[float]) -> list[float]:
    if not scores:
        return []
    mean = math.fsum(scores) / len(scores)
    sd = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    if sd == 0:
        return [1.0] * len(scores)
    return [min(1.0, max(0.0, (s - mean + 3 * sd) / (6 * sd))) for s in scores]


@dataclass(frozen=True)
class AutoFusion:
    """Score fusion guarded by each ranking's own evidence of quality, so that a poor ranking
    cannot drag a good one down: ``fusion="auto"`` before adr/0022, and what
    :class:`GuardedFusion` falls back to for rankings it has no fit for.

    Per query:

    1. Each ranking's scores are divided by its best score (0 stays 0: BM25 and cosine have a
       natural zero), so a ranking contributes at most its weight to a document.
    2. Each ranking's *quality* (:attr:`Ranking.quality`: for ``"vector"`` the best hit's
       cosine similarity, for ``"keyword"`` the best hit's BM25 score over the query's IDF
       mass) is mapped through a ramp ``(low, high)`` to a confidence in [0, 1]; a ranking with
       no quality, or with no ramp, gets 1. Confidences become shares that sum to 1.
    3. The rankings' agreement (the share of their top ``agreement_depth`` hits they have in
       common) decides how hard to lean: below ``agreement_floor`` each ranking's prior weight
       times its share is raised to a power of up to ``1 + sharpen``, so of two rankings that
       disagree the more confident one (or, equally confident, the one with the larger prior
       weight) ends close to alone; rankings that agree fuse by weight times share.
    4. A document's score is ``sum_r (weights[r] * share_r) ** power * score_r(d) / best_r``,
       in [0, 1].

    A single ranking passes through unchanged (its own scores). Every setting was chosen on the
    SciFact train and NFCorpus dev qrels, with one ranking damaged on purpose (adr/0010); the
    quality ramps assume the default model's cosine scale (all-MiniLM-L6-v2: relevant hits
    mostly score above 0.5). Ties are broken by id.

    >>> a = Ranking("vector", [("x", 0.62), ("y", 0.55), ("z", 0.40)], quality=0.62)
    >>> b = Ranking("keyword", [("y", 14.0), ("z", 9.0)], quality=0.9)
    >>> ramps = AutoFusion()
    >>> [doc for doc, _ in ramps([a, b])]  # z: second in both rankings
    ['y', 'z', 'x']
    >>> poor = Ranking("keyword", [("z", 3.0), ("w", 2.0)], quality=0.1)  # matched little
    >>> [doc for doc, _ in ramps([a, poor])]
    ['x', 'y', 'z', 'w']
    """

    weights: Mapping[str, float] = field(
        default_factory=lambda: {"vector": 0.55, "keyword": 0.45})
    # Rankings of other names weigh this much before shares.
    other_weight: float = 0.5
    quality_ramps: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: {"vector": (0.3, 0.5), "keyword": (0.2, 0.8)})
    agreement_depth: int = 20
    agreement_floor: float = 0.3
    sharpen: float = 4.0

    def __post_init__(self) -> None:  # read-only views: `auto` is shared by every call
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))
        object.__setattr__(self, "quality_ramps", MappingProxyType(dict(self.quality_ramps)))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # mapping proxies do not pickle
        return (type(self), (dict(self.weights), self.other_weight, dict(self.quality_ramps),
                             self.agreement_depth, self.agreement_floor, self.sharpen))

    def __call__(self, rankings: Sequence[Ranking]) -> list[tuple[str, float]]:
        return _fuse_explained(rankings, self.explain)

    def explain(self, rankings: Sequence[Ranking]) -> dict[str, Any]:
        """The per-query numbers behind the fusion: each ranking's confidence and final weight,
        the rankings' agreement and the power applied to the shares."""
        confidence = {r.name: self._confidence(r) for r in rankings}
        total = sum(confidence.values())
        shares = {n: (c / total if total > 0 else 1 / len(confidence))
                  for n, c in confidence.items()}
        agreement = _agreement(rankings, self.agreement_depth)
        power = 1.0
        if agreement is not None and self.agreement_floor > 0:
            shortfall = max(0.0, self.agreement_floor - agreement) / self.agreement_floor
            power += self.sharpen * shortfall
        # The power applies to prior weight times share: when the rankings disagree and are
        # equally confident, the prior (vector first) decides rather than an even split.
        weights = {n: (self.weights.get(n, self.other_weight) * shares[n]) ** power
                   for n in shares}
        return {"confidence": confidence, "agreement": agreement, "power": power,
                "weights": weights}

    def _confidence(self, ranking: Ranking) -> float:
        ramp = self.quality_ramps.get(ranking.name)
        if ranking.quality is None or ramp is None:
            return 1.0
        low, high = ramp
        if not math.isfinite(ranking.quality):
            return 1.0 if ranking.quality > 0 else 0.0
        return min(1.0, max(0.0, (ranking.quality - low) / (high - low)))


@runtime_checkable
class ExplainedFusion(Protocol):
    """A fusion that can say, per query, why it fused as it did: ``explain`` returns a mapping
    whose ``"weights"`` gives each ranking's weight (``retrieve`` shows them as
    :attr:`~trails.records.RetrievalResult.fusion_weights`)."""

    def __call__(self, rankings: Sequence[Ranking]) -> list[tuple[str, float]]: ...

    def explain(self, rankings: Sequence[Ranking]) -> dict[str, Any]: ...


# How far from its center, in scales, a piece of evidence counts: the fit saw none beyond
# 4.8, and a line must not extrapolate (a scope whose every row holds the query's words has
# a near-zero IDF mass, so a keyword quality in the millions that says nothing).
REACH = 5.0
# The evidence the guard reads, in the order of the fitted coefficients (_guard_fit).
EVIDENCE = ("vector_quality", "keyword_quality", "agreement", "log_terms", "idf_per_term",
            "vector_drop", "keyword_drop")


@dataclass(frozen=True)
class GuardedFusion:
    """The recommended hybrid fusion (``fusion="auto"``, :data:`auto`): score fusion of a vector
    and a keyword ranking whose keyword share is read off each query's own evidence.

    Per query, ``share = sigmoid(sum_i coefficient_i * clip((evidence_i - mean_i) / scale_i,
    -REACH, REACH) + bias)`` over :data:`EVIDENCE`, all of it free (the rankings and the one store call the
    keyword quality already makes):

    - ``vector_quality``, ``keyword_quality``: :attr:`Ranking.quality` (0 when None);
    - ``agreement``: the share of their top 20 hits the two rankings have in common;
    - ``log_terms``: ``log(1 + distinct scored query terms)``; ``idf_per_term``: the query's
      summed IDF over that count (``Ranking.query`` of the keyword ranking);
    - ``vector_drop``, ``keyword_drop``: ``(score 1 - score 10) / score 1`` of each ranking,
      how far its top stands out.

    A document's score is ``(1 - share) * vector(d) / best + share * keyword(d) / best``, in
    [0, 1]. The coefficients were fitted on tuning splits only (SciFact train, NFCorpus dev,
    ArguAna dev), clean and with either ranking damaged on purpose, to the best mean nDCG@10
    (``studies/guard_study.py``, docs/fusion-study.md, adr/0022). Anything else (other
    ranking names, three rankings, a keyword ranking without quality or query evidence) fuses
    with ``fallback``, the quality-ramp guard of adr/0010. Ties are broken by id.

    >>> vector = Ranking("vector", [("x", 0.62), ("y", 0.55), ("z", 0.40)], quality=0.62)
    >>> keyword = Ranking("keyword", [("y", 14.0), ("z", 9.0)], quality=0.9,
    ...                   query={"terms": 3, "weight": 15.6})
    >>> [doc for doc, _ in auto([vector, keyword])]  # y: high in both
    ['y', 'x', 'z']
    >>> round(auto.explain([vector, keyword])["weights"]["keyword"], 3)
    0.135
    """

    center: tuple[float, ...] = _guard_fit.CENTER
    scale: tuple[float, ...] = _guard_fit.SCALE
    coefficients: tuple[float, ...] = _guard_fit.COEFFICIENTS
    bias: float = _guard_fit.BIAS
    fallback: AutoFusion = field(default_factory=AutoFusion)

    def __post_init__(self) -> None:
        sizes = {len(self.center), len(self.scale), len(self.coefficients)}
        if sizes != {len(EVIDENCE)}:
            raise InvalidArgumentError(
                f"a guard needs {len(EVIDENCE)} centers, scales and coefficients "
                f"({', '.join(EVIDENCE)}), one each, got {sorted(sizes)}")

    def __call__(self, rankings: Sequence[Ranking]) -> list[tuple[str, float]]:
        # The fallback's explanation when there is no evidence: its own weights, fused alike.
        return _fuse_explained(rankings, self.explain)

    def explain(self, rankings: Sequence[Ranking]) -> dict[str, Any]:
        """The per-query numbers behind the fusion: the evidence, the keyword share and the
        weight of each ranking (the fallback's explanation when there is no evidence)."""
        found = evidence(rankings)
        if found is None:
            return self.fallback.explain(rankings)
        share = self.share(found)
        return {"evidence": found, "share": share,
                "weights": {"vector": 1.0 - share, "keyword": share}}

    def share(self, found: Mapping[str, float]) -> float:
        """The keyword share for ``found`` (as :func:`evidence` gives it)."""
        x = sum(c * max(-REACH, min(REACH, (found[n] - m) / s)) for n, m, s, c in
                zip(EVIDENCE, self.center, self.scale, self.coefficients)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


def evidence(rankings: Sequence[Ranking]) -> dict[str, float] | None:
    """:data:`EVIDENCE` of a vector and a keyword ranking, or None when the rankings are not
    exactly those two or the keyword ranking carries no quality or query evidence."""
    by_name = {r.name: r for r in rankings}
    if len(rankings) != 2 or set(by_name) != {"vector", "keyword"}:
        return None
    vector, keyword = by_name["vector"], by_name["keyword"]
    if keyword.quality is None or not keyword.query:
        return None
    terms = float(keyword.query.get("terms", 0.0))
    return {
        "vector_quality": _finite(vector.quality),
        "keyword_quality": _finite(keyword.quality),
        "agreement": _agreement(rankings, 20) or 0.0,
        "log_terms": math.log1p(terms),
        "idf_per_term": _finite(keyword.query.get("weight", 0.0) / terms if terms else 0.0),
        "vector_drop": _drop(vector.hits, 10),
        "keyword_drop": _drop(keyword.hits, 10),
    }


def _finite(value: float | None) -> float:
    """``value`` as a number the guard can weigh (None or NaN: 0; infinities: clipped)."""
    if value is None or math.isnan(value):
        return 0.0
    return max(-1e6, min(1e6, float(value)))


def _drop(hits: list[tuple[str, float]], depth: int) -> float:
    """``(score 1 - score depth) / score 1`` (the last score when fewer are listed; 0 when the
    best is not positive)."""
    if not hits or not hits[0][1] > 0 or not math.isfinite(hits[0][1]):
        return 0.0
    last = float(hits[min(depth, len(hits)) - 1][1])
    return _finite((hits[0][1] - last) / hits[0][1])


def _fuse_explained(rankings: Sequence[Ranking],
                    explain: Callable[[Sequence[Ranking]], Mapping[str, Any]],
                    ) -> list[tuple[str, float]]:
    """Score fusion (scores over the best) with the weights ``explain`` gives; one ranking
    as it is."""
    if len(rankings) == 1:
        return sorted(rankings[0].hits, key=lambda pair: (-pair[1], pair[0]))
    fused: dict[str, float] = {}
    weights = explain(rankings)["weights"]
    for ranking in rankings:
        weight = weights[ranking.name]
        for doc, value in zip((d for d, _ in ranking.hits), _by_best(ranking.hits)):
            fused[doc] = fused.get(doc, 0.0) + weight * value
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def _by_best(hits: list[tuple[str, float]]) -> list[float]:
    """Scores over the best score, floored at 0 (min-max when the best is not positive)."""
    scores = [float(score) for _doc, score in hits]
    best = max(scores, default=0.0)
    if best <= 0 or not math.isfinite(best):
        return _minmax(scores)
    return [max(0.0, s / best) for s in scores]


def _agreement(rankings: Sequence[Ranking], depth: int) -> float | None:
    """Mean share of top-``depth`` ids two rankings have in common, over pairs of non-empty
    rankings (None when fewer than two have hits)."""
    tops = [{doc for doc, _ in r.hits[:depth]} for r in rankings if r.hits]
    pairs = [(a, b) for i, a in enumerate(tops) for b in tops[i + 1:]]
    if not pairs:
        return None
    return sum(len(a & b) / min(len(a), len(b)) for a, b in pairs) / len(pairs)


# ``fusion="auto"``: the recommended hybrid with its fitted guard.
auto = GuardedFusion()
