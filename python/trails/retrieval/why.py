"""Why each hit was allowed: the filter's solution that admitted it.

The filter runs again with every variable projected and its selected variable limited to the
hits' chunks and documents (a filter may select either). One query over ``k`` IRIs, so cheap
beside the filter itself, when the engine can start from them: parts it evaluates whole before
joining (``MINUS``, a ``VALUES`` list, a ``UNION``) are written first in an equivalent form
that keeps every solution (``kg/equivalent_forms.py`` without its set-only rewrites; a
``VALUES`` list on a variable the patterns bind as a ``sameTerm`` test), and variables only
those forms add are not shown: the solution is the filter's as written. A filter whose shape
cannot be opened up this way (modifiers, a dataset clause) still admitted its hits; they then
carry an empty solution. A hit the VALUES rows find no solution for (an engine's fault: Virtuoso
7 joins a ``*`` or ``+`` path with several rows to nothing) is asked for again, as written,
the hits tested by a ``FILTER(?v IN (...))``: slower, since the engine then evaluates the whole
filter, and only then. A group sharing no variable with the hits (``kg/unrelated.py``) is read
once on its own and its first solution given beside each hit's: joined with the hits it would
multiply their solutions by its own.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyoxigraph as ox

from trails.errors import SparqlError
from trails.kg.base import KnowledgeGraph, select
from trails.kg.bindings import check_bindings
from trails.kg.equivalent_forms import equivalent_form
from trails.kg.planning import FilterShape, Other, Token, Triple, _tokens, parse_filter
from trails.kg.sparql_text import WORD_CHAR
from trails.kg.unrelated import split_unrelated
from trails.records import RetrievalHit

__all__ = ["admitting_solutions"]

log = logging.getLogger("trails.retrieve")
# VALUES ?v { terms }: one variable, its list.
_VALUES = re.compile(rf"^VALUES\s*[?$](?P<name>{WORD_CHAR}+)\s*\{{(?P<terms>.*)\}}\s*$",
                     re.DOTALL | re.IGNORECASE)


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
    written = set().union(*(item.variables for item in shape.items), {shape.variable})
    # Groups sharing nothing with the hits (kg/unrelated.py): each solution of the rest pairs
    # with each of theirs, so the first in term order is the rest's first beside theirs.
    split = split_unrelated(shape)
    shape, unrelated = split if split is not None else (shape, [])
    started = _started_from_hits(equivalent_form(shape, (bindings or {}).keys(), sets=False))
    iris = sorted({h.iri for h in hits} | {h.document for h in hits if h.document})
    try:
        # The bindings travel in the hits' VALUES rows: a separate block of them first would
        # let the engine start from a bound pattern (half the documents) instead of k IRIs.
        terms = {name: str(term) for name, term in check_bindings(bindings).items()
                 if name != shape.variable}
        names = " ".join(f"?{name}" for name in (shape.variable, *terms))
        rows = " ".join(f"({' '.join((str(ox.NamedNode(i)), *terms.values()))})" for i in iris)
        values = f"VALUES ({names}) {{ {rows} }}"
        try:
            found = select(kg, started.solutions_text(values), scopes=list(scopes))
        except SparqlError:  # the faster form must not cost the explanation: as written
            found = select(kg, shape.solutions_text(values), scopes=list(scopes))
        by_iri = _by_iri(found.raw, shape.variable, written)
        missing = [h for h in hits if not (by_iri.get(h.iri) or by_iri.get(h.document or ""))]
        if missing:
            # Every hit was admitted, so a hit without a solution is the engine's: Virtuoso 7
            # joins a `*` or `+` path with a VALUES list of several rows to nothing. Asked
            # again, as written, the hits tested by a FILTER instead of joined as rows.
            found = select(kg, shape.solutions_text(_tested(shape.variable, terms, missing)),
                           scopes=list(scopes))
            by_iri |= _by_iri(found.raw, shape.variable, written)
        beside = _first_solutions(kg, shape.prologue, unrelated, terms, scopes, written)
    except (SparqlError, ValueError) as exc:  # the search answered; its explanation must not fail it
        log.warning("could not tell why the hits were admitted: %s", exc)
        return [{} for _ in hits]
    solutions = [by_iri.get(h.iri) or by_iri.get(h.document or "") or {} for h in hits]
    return [dict(sorted({**found, **beside}.items())) if found else {} for found in solutions]


def _first_solutions(kg: KnowledgeGraph, prologue: str,
                     groups: Sequence[tuple[Triple | Other, ...]], terms: Mapping[str, str],
                     scopes: Sequence[str], written: set[str]) -> dict[str, str]:
    """The first solution in term order of each of ``groups`` (``terms``: the bindings, as
    N-Triples terms), together: each group is read once, not joined with the hits."""
    first: dict[str, str] = {}
    for group in groups:
        named = set().union(*(item.variables for item in group))
        bound = [name for name in terms if name in named]
        values = (f"VALUES ({' '.join(f'?{n}' for n in bound)}) "
                  f"{{ ({' '.join(terms[n] for n in bound)}) }}\n  " if bound else "")
        body = "\n  ".join(item.text for item in group)
        found = select(kg, f"{prologue}SELECT * WHERE {{\n  {values}{body}\n}}",
                       scopes=list(scopes))
        solutions: list[dict[str, str]] = [
            {k: str(v) for k, v in row.items() if k in written and v is not None}
            for row in found.raw]
        if solutions:
            chosen = min(solutions, key=lambda solution: sorted(solution.items()))
            first.update(chosen)
    return first


def _by_iri(raw: Sequence[Mapping[str, Any]], variable: str,
            written: set[str]) -> dict[str, dict[str, str]]:
    """Each selected IRI's solution (the first in term order), of the variables written."""
    by_iri: dict[str, dict[str, str]] = {}
    solutions = [{k: v for k, v in row.items() if k in written} for row in raw]
    for row in sorted(solutions, key=lambda r: sorted((k, str(v)) for k, v in r.items())):
        selected = row.get(variable)
        if isinstance(selected, ox.NamedNode) and selected.value not in by_iri:
            by_iri[selected.value] = {name: str(term) for name, term in sorted(row.items())
                                      if term is not None}
    return by_iri


def _tested(variable: str, terms: Mapping[str, str], hits: Sequence[RetrievalHit]) -> str:
    """The bindings as one VALUES row (none: nothing) and a FILTER keeping ``hits``' IRIs
    and their documents'."""
    iris = sorted({h.iri for h in hits} | {h.document for h in hits if h.document})
    listed = ", ".join(str(ox.NamedNode(i)) for i in iris)
    row = (f"VALUES ({' '.join(f'?{name}' for name in terms)}) {{ ({' '.join(terms.values())}) }}\n  "
           if terms else "")
    return f"{row}FILTER(?{variable} IN ({listed}))"


def _started_from_hits(shape: FilterShape) -> FilterShape:
    """``shape`` with each ``VALUES ?v { ... }`` list (no ``UNDEF``) on a variable its triple
    patterns bind written as ``FILTER(sameTerm(?v, a) || ...)``: the same solutions, once per
    distinct value (each solution binds ``?v`` to one term), tested on the hits' solutions
    instead of joined whole with them."""
    bound = set().union(*(i.variables for i in shape.items if isinstance(i, Triple)))
    items: list[Triple | Other] = []
    for at, item in enumerate(shape.items):
        listed = _VALUES.match(item.text) if isinstance(item, Other) and item.kind == "values" \
            and not _reading_after(shape.items[at + 1 :]) else None
        tokens = _tokens(listed["terms"]) if listed is not None else None
        if listed is None or listed["name"] not in bound or not tokens or any(
                t.keyword == "UNDEF" or t.kind == "punct" for t in tokens):
            items.append(item)
            continue
        terms = dict.fromkeys(_terms(listed["terms"], tokens))
        tests = " || ".join(f"sameTerm(?{listed['name']}, {term})" for term in terms)
        items.append(Other("filter", f"FILTER({tests or 'false'})", item.variables))
    return dataclasses.replace(shape, items=tuple(items))


def _reading_after(items: Sequence[Triple | Other]) -> bool:
    """Whether one of ``items`` (what follows a VALUES list) reads the solutions so far, as an
    OPTIONAL, a MINUS or a BIND does: there the list's values are bound, a test at the
    group's end is too late."""
    return any(isinstance(i, Other) and i.kind in ("optional", "minus", "bind") for i in items)


def _terms(text: str, tokens: Sequence[Token]) -> list[str]:
    """The terms of a VALUES list as written: a literal keeps its language or datatype."""
    terms: list[str] = []
    for token in tokens:
        if token.kind in ("lang", "datatype") or (terms and terms[-1].endswith("^^")):
            terms[-1] += token.text
        else:
            terms.append(token.text)
    return terms
