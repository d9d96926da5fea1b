"""The user's entities a filter used, for its audit record: the IRIs the filter writes out
(``<...>`` or a prefixed name, outside strings and comments) or binds, kept when the graph
of the searched scopes holds them as entities (a label, or a chunk mentioning them,
ADR 0031), so its predicates, classes and trails' own documents are left out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyoxigraph as ox

from trails.ingest.linking import DEFAULT_LABEL_PREDICATES
from trails.kg.base import KnowledgeGraph, select
from trails.kg.sparql import _PREFIX_DECLARATION as _DECLARED
from trails.kg.sparql import PREFIXES, code_only, iri_refs
from trails.rank._steps import values

__all__ = ["filter_entities"]

_PREFIXED = re.compile(r"(?<![\w<?$:/#.-])([A-Za-z][\w.-]*)?:([\w-](?:[\w.-]*[\w-])?)")


def filter_entities(kg: KnowledgeGraph, sparql_filter: str | None,
                    terms: Mapping[str, Any], scopes: Sequence[str]) -> list[str]:
    """The entities ``sparql_filter`` (with its bound ``terms``) names, sorted."""
    if not sparql_filter:
        return []
    named = set(_written(sparql_filter))
    named.update(t.value for t in terms.values() if isinstance(t, ox.NamedNode))
    checked = []
    for iri in named:
        try:
            checked.append(ox.NamedNode(iri).value)
        except ValueError:  # a relative IRI the filter's base would resolve: not an entity
            continue
    if not checked:
        return []
    rows = select(kg, f"SELECT DISTINCT ?e WHERE {{ {values('e', checked)} "
                      f"{{ [] trails:mentions ?e }} UNION {{ {values('p', DEFAULT_LABEL_PREDICATES)} "
                      "?e ?p [] FILTER NOT EXISTS { ?e a ?own FILTER(?own IN (trails:Document, "
                      "trails:Chunk, trails:Mention)) } } }", scopes=list(scopes)).rows
    return sorted(str(r["e"]) for r in rows)


def _written(text: str) -> list[str]:
    """The IRIs written out in ``text`` and its prefixed names, expanded."""
    declared = {**PREFIXES, **{(p or ""): iri for p, iri in _DECLARED.findall(text)}}
    code = _DECLARED.sub(lambda m: " " * len(m.group()), code_only(text))
    expanded = [declared[p or ""] + local for p, local in _PREFIXED.findall(code)
                if (p or "") in declared]
    return iri_refs(text) + expanded
