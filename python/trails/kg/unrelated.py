"""Groups of a filter that share nothing with its candidates: asked once, not joined (ADR 0013).

A filter such as ``?iri schema:isPartOf ?doc . ?rule ex:appliesFrom ?from`` joins two groups
that share no variable: its solutions are every pair, so Oxigraph walks the candidates times
the rules (and times a third group again), which at a million chunks is hours for a question
whose answer is simple. A group sharing no variable, directly or through others, with the
candidate variable changes which candidates pass in one way only: when it has no solution,
none does; when it has one, it changes nothing. So it is asked once (``ASK``) and left out.

That holds for a join of triple patterns and FILTERs (a FILTER belongs to its group wherever it
is written, and joins with the groups its variables reach). Anything else (OPTIONAL, MINUS,
BIND, UNION, subgroups, blank nodes, paths of other shapes) makes the order or the sharing
part of the meaning: such a filter is not split. Variables are shared by name, whatever reads
them (a FILTER's EXISTS included, a binding included), so sharing is over-counted, never
missed: a group wrongly taken as related is only joined as written.
"""

from __future__ import annotations

import dataclasses

from trails.kg.planning import FilterShape, Other, Triple

__all__ = ["ask_text", "split_unrelated"]


def split_unrelated(shape: FilterShape,
                    ) -> tuple[FilterShape, list[tuple[Triple | Other, ...]]] | None:
    """``shape`` without the groups that share no variable with its candidate variable, and
    those groups (each in the order written); None when there is none, or the filter is not
    a plain join whose groups may be taken apart."""
    if not shape.simple:
        return None
    items = shape.items
    parent = list(range(len(items)))

    def root(at: int) -> int:
        while parent[at] != at:
            parent[at] = parent[parent[at]]
            at = parent[at]
        return at

    first_reader: dict[str, int] = {}
    for index, item in enumerate(items):
        for name in item.variables:
            seen = first_reader.setdefault(name, index)
            parent[root(index)] = root(seen)
    if shape.variable not in first_reader:
        return None  # a candidate variable nothing binds: left to the checks as written
    kept_root = root(first_reader[shape.variable])
    groups: dict[int, list[Triple | Other]] = {}
    for index, item in enumerate(items):
        if root(index) != kept_root:
            groups.setdefault(root(index), []).append(item)
    if not groups:
        return None
    kept = tuple(item for index, item in enumerate(items) if root(index) == kept_root)
    return dataclasses.replace(shape, items=kept), [tuple(g) for g in groups.values()]


def ask_text(shape: FilterShape, group: tuple[Triple | Other, ...]) -> str:
    """Whether ``group`` (one :func:`split_unrelated` gave) has a solution, as a query."""
    body = "\n  ".join(item.text for item in group)
    return f"{shape.prologue}ASK {{\n  {body}\n}}"
