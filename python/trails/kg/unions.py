"""A group with a UNION, read as one group per branch (ADR 0029).

``P {A} UNION {B} Q`` selects what ``P A Q`` and ``P B Q`` select together: a join
distributes over a union, a left join and a FILTER of the group act on each solution alone,
so in SPARQL's algebra ``Join(P, Union(A, B)) = Union(Join(P, A), Join(P, B))``. A filter
that asks for documents matching either of two conditions ("in this jurisdiction, or about
any subclass of that topic") is then two groups the graph's columns answer, where as written
it ran in Oxigraph: seconds at a million chunks.

A branch is a group of its own, though, evaluated before the join: its FILTERs see only what
its own patterns bind (a binding's VALUES block is outside it), and a blank node's label
belongs to its own group. So a branch is moved into the group only when that changes
nothing: it holds triple patterns and FILTERs alone, without blank nodes, and each variable
its FILTERs share with the rest of the query (the other items, the bindings, the projected
variable) is bound by its own patterns. Anything else is left as written.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from trails.kg.planning import Other, Triple, _closing, _tokens, parse_filter

__all__ = ["branches", "distributed"]

Item = Triple | Other


def branches(item: Other, prefixes: Mapping[str, str]) -> list[tuple[Item, ...]] | None:
    """The items of each branch of ``{ ... } UNION { ... } ...``, or None when ``item`` is
    not such a chain or a branch is not a group the planner reads."""
    tokens = _tokens(item.text)
    if not tokens:
        return None
    bodies: list[str] = []
    at = 0
    while at < len(tokens):
        if bodies:
            if tokens[at].keyword != "UNION":
                return None
            at += 1
        if at >= len(tokens) or tokens[at].text != "{":
            return None
        close = _closing(tokens, at)
        if close is None:
            return None
        bodies.append(item.text[tokens[at].end : tokens[close].start])
        at = close + 1
    parsed = []
    for body in bodies:
        inner = parse_filter(f"SELECT ?trails_branch WHERE {{ {body} }}", prefixes)
        if inner is None:
            return None
        parsed.append(inner.items)
    return parsed if len(parsed) > 1 else None


def distributed(items: Sequence[Item], projected: str, bound: Collection[str],
                prefixes: Mapping[str, str]) -> list[list[Item]] | None:
    """One group per branch of the one UNION among ``items`` (each branch's items in the
    UNION's place), whose answers together are the group's; None when ``items`` hold no
    UNION, more than one, or one whose branches cannot be moved into the group unchanged
    (``bound``: the bindings' names; ``projected``: the variable the group selects)."""
    unions = [i for i, item in enumerate(items) if isinstance(item, Other)
              and item.kind == "group" and "UNION" in item.text.upper()]
    if len(unions) != 1:
        return None
    at = unions[0]
    chain = items[at]
    assert isinstance(chain, Other)
    parts = branches(chain, prefixes)
    if parts is None:
        return None
    outside = {projected, *bound}.union(*(i.variables for i in items if i is not chain))
    for part in parts:
        own = frozenset().union(*(i.variables for i in part if isinstance(i, Triple)))
        for item in part:
            if isinstance(item, Triple):
                if "_:" in item.text:
                    return None
            elif item.kind != "filter" or "_:" in item.text or (
                    item.variables & outside) - own:
                return None
    return [[*items[:at], *part, *items[at + 1:]] for part in parts]

