"""What the post-ranking steps share: graph look-ups per scope and copies of frozen hits.

Hits are frozen dataclasses (``RetrievalHit``); a step returns changed copies and never
touches the stores. Nothing here imports ``trails.retrieval.retrieve`` (which imports this package).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime as dt
import math
import numbers
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import pyoxigraph as ox

from trails.errors import ConfigurationError, InvalidArgumentError, InvalidArgumentTypeError
from trails.kg.base import select
from trails.kg.sparql import PREFIXES
from trails.kg.terms import IRI, to_python
from trails.parts import ContextParts
from trails.records import RetrievalHit
from trails.scopes import DEFAULT_SCOPE, check_scope


class HitLike(Protocol):
    """What steps read of a hit (:class:`trails.records.RetrievalHit` is one)."""

    @property
    def iri(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def snippet(self) -> str: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def components(self) -> dict[str, float]: ...


H = TypeVar("H", bound=HitLike)
# A post-ranking step (reranker, MMR, recency, expansion): step(query, hits, ctx) -> hits.
Step = Callable[[str, list[RetrievalHit], ContextParts | None], Sequence[RetrievalHit]]
_PREFIXED = re.compile(r"^([A-Za-z][\w\-.]*):([\w\-.]+)$")


def need_ctx(ctx: ContextParts | None, step: str) -> ContextParts:
    """The context, or a ConfigurationError saying how to give one."""
    if ctx is None:
        raise ConfigurationError(
            f"{step} reads the knowledge graph: run it as a step of retrieve(..., ctx=ctx, "
            f"steps=[...]) or call it as step(query, hits, ctx)"
        )
    return ctx


# The moment the answer steps work on is judged at (retrieve(now=...)), while they run.
_ASKED_AT: contextvars.ContextVar[dt.datetime | None] = contextvars.ContextVar(
    "trails_steps_asked_at", default=None)


def asked_at() -> dt.datetime | None:
    """The moment the answer a running step works on is judged at: ``retrieve(now=...)``
    (the moment its expiries are judged at); None outside ``retrieve`` or when the call
    gave none (then a step reading the time reads the clock)."""
    return _ASKED_AT.get()


@contextlib.contextmanager
def judged_at(now: dt.datetime | None) -> Iterator[None]:
    """Run steps inside this block to have them judge time at ``now`` (:func:`asked_at`)."""
    token = _ASKED_AT.set(now)
    try:
        yield
    finally:
        _ASKED_AT.reset(token)


def scope_of(hit: Any) -> str:
    """The scope a hit's vector belongs to (``metadata["scope"]``), default if absent."""
    return check_scope(str(hit.metadata.get("scope") or DEFAULT_SCOPE))


def by_scope(hits: Iterable[H]) -> dict[str, list[H]]:
    """Hits grouped by scope, first-seen order; each group is queried in its own scope only."""
    groups: dict[str, list[H]] = {}
    for hit in hits:
        groups.setdefault(scope_of(hit), []).append(hit)
    return groups


def values(variable: str, iris: Iterable[str]) -> str:
    """``VALUES ?variable { <a> <b> }``; each IRI is serialised (and checked) by pyoxigraph."""
    terms = " ".join(dict.fromkeys(str(ox.NamedNode(i)) for i in iris))
    return f"VALUES ?{variable} {{ {terms} }}"


def check_setting(name: str, value: object, *, integer: bool = False, at_least: float | None = None,
                  above: float | None = None, at_most: float | None = None) -> None:
    """Refuse a step's setting that is not a finite number (an integer when ``integer``) in
    its range, naming it: steps are built from configuration, where a string, a bool, NaN or
    infinity is a mistake, not a step that silently changes nothing.

    Raises:
        InvalidArgumentError: naming the setting, its range and the value given.
    """
    bounds = [(">=", at_least, operator.ge), (">", above, operator.gt),
              ("<=", at_most, operator.le)]
    kind = numbers.Integral if integer else numbers.Real
    # An int is finite however large (math.isfinite would overflow converting it to float).
    if isinstance(value, bool) or not (isinstance(value, kind)
            and (isinstance(value, numbers.Integral) or math.isfinite(value))
            and all(bound is None or test(value, bound) for _, bound, test in bounds)):
        wanted = "".join(f" {sign} {bound}" for sign, bound, _ in bounds if bound is not None)
        kind_text = "an integer" if integer else "a finite number"
        raise InvalidArgumentError(f"{name} must be {kind_text}{wanted}, got {value!r}")


def predicate_list(name: str, predicates: object) -> list[str]:
    """``predicates`` as a list of strings (one string is not a list of its letters).

    Raises:
        InvalidArgumentTypeError: naming ``name``, for anything but a list or tuple.
    """
    if not isinstance(predicates, (list, tuple)):
        raise InvalidArgumentTypeError(f"{name} must be a list of predicates (prefix:name or "
                                       f"full IRIs), got {type(predicates).__name__} "
                                       f"{predicates!r:.80}")
    return list(predicates)


def predicate_node(name: str) -> ox.NamedNode:
    """A predicate from ``prefix:local`` (a predeclared prefix) or a full IRI.

    Raises:
        InvalidArgumentError: an unknown prefix or a string that is not an IRI (an
            InvalidArgumentTypeError: not a string).
    """
    if not isinstance(name, str):
        raise InvalidArgumentTypeError(f"a predicate must be a string, prefix:name or a full "
                                       f"IRI, got {type(name).__name__} {name!r:.80}")
    match = _PREFIXED.match(name)
    if match and "://" not in name:
        prefix, local = match.groups()
        if prefix not in PREFIXES:
            raise InvalidArgumentError(f"unknown prefix {prefix!r} in {name!r}; use one of "
                             f"{sorted(PREFIXES)} or a full IRI")
        return ox.NamedNode(PREFIXES[prefix] + local)
    try:
        return ox.NamedNode(name.removeprefix("<").removesuffix(">"))
    except ValueError as exc:
        raise InvalidArgumentError(f"{name!r} is neither prefix:name nor an IRI") from exc


def scoped_rows(
    ctx: ContextParts, hits: Sequence[Any], build: Callable[[list[Any]], str]
) -> list[tuple[str, dict[str, Any]]]:
    """Run ``build(group)`` once per scope of ``hits``, confined to that scope: ``(scope, raw
    row)`` pairs.

    A hit is only ever looked up in its own scope's graph, so a step cannot show another
    scope's triples even when the IRIs are shared; key what you find by ``(scope, iri)``.
    """
    rows: list[tuple[str, dict[str, Any]]] = []
    for scope, group in by_scope(hits).items():
        rows += [(scope, row) for row in select(ctx.kg, build(group), scopes=[scope]).raw]
    return rows


def key(hit: Any) -> tuple[str, str]:
    """What a step's look-ups are keyed by: the same IRI in two scopes is two things."""
    return scope_of(hit), hit.iri


def value(term: Any) -> Any:
    """A Python value for a raw term; IRIs become :class:`trails.kg.IRI` (a ``str``)."""
    if isinstance(term, ox.NamedNode):
        return IRI(term.value)
    return to_python(term)


def rescored(hit: H, score: float, **components: float) -> H:
    """A copy of ``hit`` with a new score and more score components."""
    merged = {**hit.components, **components}
    return dataclasses.replace(hit, score=score, components=merged)  # type: ignore[type-var]


def below(head: list[H], rest: Sequence[H]) -> list[H]:
    """``head`` (re-scored, in score order) followed by ``rest`` in its own order, each of
    ``rest`` scored no higher than the last of ``head``.

    A step that re-scores only part of the list (``top_n``, hits it cannot score) puts two
    scales side by side; the list must still fall in score, so a hit of ``rest`` scored above
    the head's last gets that score (a tie, its order kept). Its earlier scores stay in its
    components.

    >>> from trails.records import RetrievalHit
    >>> head = [RetrievalHit("a", -2.0, ""), RetrievalHit("b", -3.0, "")]
    >>> [h.score for h in below(head, [RetrievalHit("c", 0.9, ""), RetrievalHit("d", -5.0, "")])]
    [-2.0, -3.0, -3.0, -5.0]
    """
    if not head:
        return list(rest)
    floor = head[-1].score
    if floor is None:
        return head + list(rest)
    return head + [h if h.score is None or h.score <= floor else rescored(h, floor)
                   for h in rest]


def annotated(hit: H, **metadata: Any) -> H:
    """A copy of ``hit`` with more metadata (the original dict is left alone)."""
    merged = {**hit.metadata, **metadata}
    return dataclasses.replace(hit, metadata=merged)  # type: ignore[type-var]


def check_scored(hits: Sequence[Any], step: str) -> None:
    """Scoring steps need scores: graph-mode hits (score None) cannot be re-weighted."""
    if any(h.score is None for h in hits):
        raise InvalidArgumentError(f"{step} re-weights scores, but some hits have score=None "
                                   "(graph mode); use mode='vector' or 'hybrid'")


def by_score(hits: Sequence[H]) -> list[H]:
    """Stable sort by score, best first (equal scores keep their order)."""
    return sorted(hits, key=lambda h: -(h.score or 0.0))


class NotedHits(list[H]):
    """A step's hits with notes on what it did (``retrieve`` adds them to the answer's
    notes, so ``result.explain()`` shows them)."""

    def __init__(self, hits: Iterable[H] = (), notes: Sequence[str] = ()) -> None:
        super().__init__(hits)
        self.notes = tuple(notes)
