"""Post-ranking steps by name, as a request names them: ``{"name": "mmr", "options": {...}}``.

Each name maps to a step class of :mod:`trails.rank` and the options it takes; anything else
is refused, so a request can never make the service import or load what it names. The
cross-encoder (``rerank``) is the one the service was started with, never a path a request
gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trails.errors import InvalidArgumentError
from trails.rank import MMR, EntityBoost, Neighbourhood, ParentDocument, RecencyDecay, Step

__all__ = ["STEP_OPTIONS", "build_steps"]

# name -> (factory, the options it accepts). Options pass to the class, which checks them.
_FACTORIES: dict[str, tuple[Callable[..., Step], tuple[str, ...]]] = {
    "mmr": (MMR, ("lambda_", "top_n", "relevance")),
    "recency": (RecencyDecay, ("horizon_days", "floor", "predicate")),
    "parent_document": (ParentDocument, ("mode", "window", "min_score")),
    "neighbourhood": (Neighbourhood, ("predicates", "depth")),
    "entities": (EntityBoost, ("neighbours", "hops", "decay", "weight")),
}
STEP_OPTIONS: dict[str, tuple[str, ...]] = {
    **{name: options for name, (_, options) in _FACTORIES.items()}, "rerank": ()}


def build_steps(specs: Sequence[tuple[str, Mapping[str, Any]]],
                reranker: Step | None = None) -> list[Step]:
    """The steps ``specs`` name, in order.

    Raises:
        InvalidArgumentError: an unknown step, an option the step does not take, a value it
            refuses, or ``rerank`` on a service started without a reranker.
    """
    steps: list[Step] = []
    for name, options in specs:
        if name == "rerank":
            if reranker is None:
                raise InvalidArgumentError(
                    "the step 'rerank' needs a cross-encoder, and this service was started "
                    "without one (trails serve --reranker MODEL)")
            if options:
                raise InvalidArgumentError("the step 'rerank' takes no options")
            steps.append(reranker)
            continue
        if name not in _FACTORIES:
            raise InvalidArgumentError(
                f"unknown step {name!r}; the steps are {', '.join(sorted(STEP_OPTIONS))}")
        factory, accepted = _FACTORIES[name]
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise InvalidArgumentError(
                f"the step {name!r} takes the options {', '.join(accepted)}; not "
                f"{', '.join(unknown)}")
        try:
            steps.append(factory(**options))
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"the step {name!r}: {exc}") from exc
    return steps
