"""What the spans of a search say (``trails.tracing``; docs/tracing.md lists them).

Attribute names follow the OpenTelemetry semantic conventions where one fits: the GenAI
retrieval and embeddings spans (``gen_ai.operation.name``, ``gen_ai.request.top_k``,
``gen_ai.request.model``...) and the database spans (``db.system.name``,
``db.operation.name``, ``db.response.returned_rows``); the rest are ``trails.*``. The query,
the filter's text and the hits' IRIs are added only under ``TRAILS_LOG_TEXT``
(``gen_ai.retrieval.query.text``, ``db.query.text``, ``gen_ai.retrieval.documents``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from trails.records import RetrievalResult
from trails.scopes import normalize_scopes
from trails.tracing import Attributes, db_system, text_allowed

__all__ = ["embedding", "filter_arguments", "filter_result", "fusion", "keyword_arguments",
           "named", "ranking", "retrieve_arguments", "retrieve_result", "returned", "step"]

def retrieve_arguments(call: Mapping[str, Any]) -> Attributes:
    """The root span's request attributes, from ``retrieve()``'s arguments."""
    fusion = call.get("fusion")
    try:
        scopes = len(normalize_scopes(call.get("scope")))
    except (TypeError, ValueError):  # retrieve() itself refuses them, with the reason
        scopes = None
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.request.top_k": float(call["k"]) if isinstance(call.get("k"), int) else None,
        "trails.retrieve.mode": call.get("mode") if isinstance(call.get("mode"), str) else None,
        "trails.retrieve.has_filter": call.get("sparql_filter") is not None,
        "trails.retrieve.bindings": len(call.get("bindings") or {}),
        "trails.retrieve.scopes": scopes,
        "trails.retrieve.fusion": named(fusion) if fusion is not None else "none",
        "trails.retrieve.steps": len(call.get("steps") or ()),
        "trails.retrieve.min_score": call.get("min_score"),
    }
    if text_allowed() and isinstance(call.get("query"), str) and not _digest_only(call):
        attributes["gen_ai.retrieval.query.text"] = call["query"]
    return attributes


def _digest_only(call: Mapping[str, Any]) -> bool:
    """Whether the search reads a scope whose security level keeps only the query's digest
    (``AuditConfig.digest_levels``): its text then goes into no span either."""
    audit = getattr(call.get("ctx"), "audit", None)
    settings = getattr(audit, "settings", None)
    if settings is None:
        return False
    try:
        return bool(settings.digest_only(normalize_scopes(call.get("scope"))))
    except (TypeError, ValueError):
        return True  # a scope retrieve() will refuse: nothing said of its query


def retrieve_result(result: RetrievalResult) -> Attributes:
    """The root span's answer attributes."""
    attributes: dict[str, Any] = {
        "trails.retrieve.plan": result.plan,
        "trails.retrieve.filter_path": result.filter_path,
        "trails.retrieve.candidates": result.candidates,
        "trails.retrieve.exhaustive": result.exhaustive,
        "trails.retrieve.hits": len(result),
        "trails.retrieve.rankings": list(result.rankings) or None,
        "trails.retrieve.notes": len(result.notes),
    }
    if text_allowed():
        attributes["gen_ai.retrieval.documents"] = json.dumps(
            [{"id": hit.iri, "score": hit.score} for hit in result])
    return attributes


def filter_arguments(call: Mapping[str, Any]) -> Attributes:
    """The filter span's request attributes (``filter_candidates``' arguments)."""
    scopes = call.get("scopes")
    attributes: dict[str, Any] = {
        "db.system.name": db_system(call["graph"]),
        "db.operation.name": "SELECT",
        "trails.filter.scopes": None if scopes is None else len(scopes),
        "trails.filter.documents": bool(call.get("documents")),
    }
    if text_allowed():
        attributes["db.query.text"] = call.get("sparql")
    return attributes


def filter_result(iris: Sequence[str]) -> Attributes:
    return {"db.response.returned_rows": len(iris)}


def embedding(model: Any) -> Attributes:
    """An embedding span's attributes (GenAI embeddings conventions)."""
    identity = model.identity
    return {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": identity.model,
            "gen_ai.embeddings.dimension.count": identity.dim}


def ranking(store: object, operation: str, depth: int, candidates: Sequence[str] | None,
            ) -> Attributes:
    """A ranking span's attributes: which store, which search, how deep, over how many."""
    return {"db.system.name": db_system(store), "db.operation.name": operation,
            "trails.rank.depth": depth,
            "trails.rank.candidates": None if candidates is None else len(candidates)}


def keyword_arguments(call: Mapping[str, Any]) -> Attributes:
    """The keyword ranking span's attributes (``_keyword_hits``' arguments)."""
    return ranking(call["store"], "keyword_search", call["depth"], call.get("iris"))


def returned(hits: Sequence[object] | None) -> Attributes:
    """How many hits a ranking returned (None: it was skipped)."""
    return {"db.response.returned_rows": None if hits is None else len(hits),
            "trails.rank.skipped": hits is None}


def fusion(fuse: object, rankings: Sequence[object]) -> Attributes:
    return {"trails.fusion.name": named(fuse), "trails.fusion.rankings": len(rankings)}


def step(part: object) -> Attributes:
    return {"trails.step.name": named(part)}


def named(part: object) -> str:
    """A fusion's or a step's name: its own, its function's, or its class's."""
    if isinstance(part, str):
        return part
    name = getattr(part, "name", None)
    if isinstance(name, str):
        return name
    function = getattr(part, "func", part)  # functools.partial
    return str(getattr(function, "__qualname__", type(part).__qualname__))
