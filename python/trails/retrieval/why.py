"""Why each hit was allowed: the filter's solution that admitted it.

The filter runs again, as written (not as planned: the variables a user wrote are the ones to
show), with every variable projected and its selected variable limited to the hits' chunks and
documents (a filter may select either). One query over ``k`` IRIs, so cheap beside the filter
itself. A filter whose shape cannot be opened up this way (modifiers, a dataset clause) still
admitted its hits; they then carry an empty solution.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pyoxigraph as ox

from trails.errors import SparqlError
from trails.kg.base import KnowledgeGraph, select
from trails.kg.bindings import check_bindings
from trails.kg.planning import parse_filter
from trails.records import RetrievalHit

__all__ = ["admitting_solutions"]

log = logging.getLogger("trails.retrieve")


def admitting_solutions(kg: KnowledgeGraph, sparql: str, bindings: Mapping[str, Any] | None,
                        scopes: Sequence[str], hits: Sequence[RetrievalHit],
                        ) -> list[dict[str, str]]:
    """For each hit, the filter's solution admitting it (variable -> N-Triples term; the
    first in term order when several do), ``{}`` when it cannot be told."""
    if not hits:
        return []
    shape = parse_filter(sparql, kg.prefixes)
    if shape is None:
        return [{} for _ in hits]
    iris = sorted({h.iri for h in hits} | {h.document for h in hits if h.document})
    try:
        # The bindings travel in the hits' VALUES rows: a separate block of them first would
        # let the engine start from a bound pattern (half the documents) instead of k IRIs.
        terms = {name: str(term) for name, term in check_bindings(bindings).items()
                 if name != shape.variable}
        names = " ".join(f"?{name}" for name in (shape.variable, *terms))
        rows = " ".join(f"({' '.join((str(ox.NamedNode(i)), *terms.values()))})" for i in iris)
        found = select(kg, shape.solutions_text(f"VALUES ({names}) {{ {rows} }}"),
                       scopes=list(scopes))
    except (SparqlError, ValueError) as exc:  # the search answered; its explanation must not fail it
        log.warning("could not tell why the hits were admitted: %s", exc)
        return [{} for _ in hits]
    by_iri: dict[str, dict[str, str]] = {}
    for row in sorted(found.raw, key=lambda r: sorted((k, str(v)) for k, v in r.items())):
        selected = row.get(shape.variable)
        if isinstance(selected, ox.NamedNode) and selected.value not in by_iri:
            by_iri[selected.value] = {name: str(term) for name, term in sorted(row.items())
                                      if term is not None}
    return [by_iri.get(h.iri) or by_iri.get(h.document or "") or {} for h in hits]
