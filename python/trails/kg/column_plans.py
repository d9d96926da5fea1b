"""How a filter's group splits for the graph's columns (``kg/filter_index.py``, ADR 0029).

:func:`column_plan` reads a group lifted to documents (``SELECT ?doc`` over triple patterns,
FILTERs and VALUES) into the document variable's patterns, the FILTERs on their values alone,
``FILTER NOT EXISTS`` of one such pattern, and the patterns beyond the documents that join one
value each (a taxonomy, a VALUES list); None for any other shape. It reads text only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trails.kg.planning import RDF_TYPE, Other, Triple, parse_filter

__all__ = ["ColumnPlan", "column_plan"]

# EXISTS or NOT EXISTS anywhere in a FILTER (a graph pattern inside it).
_EXISTS = re.compile(r"\bEXISTS\b", re.IGNORECASE)
_NOT_EXISTS = re.compile(r"^FILTER\s+NOT\s+EXISTS\s*\{(?P<body>.*)\}\s*$", re.DOTALL | re.IGNORECASE)


@dataclass
class ColumnPlan:
    patterns: list[Triple]  # the document variable's patterns (subject), all must hold
    absent: list[Triple]  # FILTER NOT EXISTS { one such pattern }
    conditions: dict[str, list[Other]]  # value variable -> the FILTERs on it alone
    satellites: dict[str, list[Triple | Other]]  # value variable -> patterns that join it


def column_plan(variable: str, items: Sequence[Triple | Other], terms: Mapping[str, object],
          prefixes: Mapping[str, str]) -> ColumnPlan | None:
    """How the group splits into the document variable's patterns, the FILTERs on their
    values and the patterns beyond; None for any other shape."""
    if variable in terms:
        return None
    mine = [i for i in items if isinstance(i, Triple) and variable in i.variables]
    others = [i for i in items if i not in mine]
    if not mine or any(not _simple(t, variable) for t in mine):
        return None
    value_of = {t.object[1:]: t for t in mine if t.object[:1] in "?$" and t.object[1:] not in terms}
    if len(value_of) != sum(1 for t in mine if t.object[:1] in "?$" and t.object[1:] not in terms):
        return None  # one variable as the value of two patterns: a join, not a column test
    if any(t.predicate == RDF_TYPE for t in value_of.values()):
        return None  # ?doc a ?class: a column of every type, a row per chunk; the graph joins it
    plan = ColumnPlan([], [], {}, {})
    plan.patterns = list(mine)
    loose = []
    for item in others:
        if isinstance(item, Other) and item.kind == "values" and variable in item.variables:
            return None  # VALUES (?doc ?v): which value goes with which document
        if isinstance(item, Other) and item.kind == "filter":
            found = _absent(item, variable, prefixes, terms)
            if found is not None:
                absent, tests = found
                if _correlated(absent, item, others, value_of, terms):
                    return None
                plan.absent.append(absent)
                if tests:  # FILTER NOT EXISTS { ?doc P ?k FILTER(test of ?k) }
                    plan.conditions.setdefault(absent.object[1:], []).extend(tests)
                continue
            free = item.variables - set(terms)
            if variable in item.variables or len(free) != 1 or _EXISTS.search(item.text):
                return None  # an EXISTS reads the graph: the values alone cannot answer it
            (name,) = free
            if name in value_of:
                plan.conditions.setdefault(name, []).append(item)
                continue
        loose.append(item)
    if not _satellites(loose, value_of, plan, terms):
        return None
    if any(name in plan.satellites for name in plan.conditions):
        return None
    return plan


def _correlated(absent: Triple, item: Other, others: Sequence[Triple | Other],
                value_of: Mapping[str, Triple], terms: Mapping[str, object]) -> bool:
    """Whether ``FILTER NOT EXISTS { ?doc P ?x }`` (``item``) shares ``?x`` with the rest of
    the group (then it is no test of ``P`` alone)."""
    name = absent.object[1:]
    if absent.object[:1] not in "?$" or name in terms:
        return False
    return name in value_of or any(name in o.variables for o in others if o is not item)


def _satellites(loose: list[Triple | Other], value_of: Mapping[str, Triple], plan: ColumnPlan,
                terms: Mapping[str, object]) -> bool:
    """Group the patterns beyond the documents by the one value variable each joins; False
    when a part joins none or several of them, or is not a triple pattern or FILTER."""
    parts: list[tuple[set[str], list[Triple | Other]]] = []
    for item in loose:
        if isinstance(item, Other) and not (item.kind == "filter" or _values(item)):
            return False
        names = set(item.variables) - set(terms)
        joined_names, members = set(names), [item]
        for part in [p for p in parts if p[0] & names]:
            parts.remove(part)
            joined_names |= part[0]
            members += part[1]
        parts.append((joined_names, members))
    for names, group in parts:
        joined = names & set(value_of)
        if len(joined) != 1 or not any(isinstance(i, Triple) or _values(i) for i in group):
            return False
        plan.satellites[joined.pop()] = group
    return True


def _values(item: Triple | Other) -> bool:
    """A VALUES block in which every variable always has a value (no ``UNDEF``, which joins
    with any value and so is no list of them)."""
    return isinstance(item, Other) and item.kind == "values" and not re.search(
        r"\bUNDEF\b", item.text, re.IGNORECASE)


def _simple(triple: Triple, variable: str) -> bool:
    """``?variable <predicate> object`` with one predicate IRI and the variable nowhere else."""
    return (triple.subject[1:] == variable and triple.subject[:1] in "?$"
            and triple.predicate is not None and not (triple.object[:1] in "?$"
                                                       and triple.object[1:] == variable))


def _absent(item: Other, variable: str, prefixes: Mapping[str, str],
            terms: Mapping[str, object]) -> tuple[Triple, list[Other]] | None:
    """The pattern of ``FILTER NOT EXISTS { ?variable <P> object }``, with the FILTERs that
    test its value variable alone inside it (``{ ?doc P ?k FILTER(?k > 5) }``), or None."""
    match = _NOT_EXISTS.match(item.text.strip())
    if match is None:
        return None
    inner = parse_filter(f"SELECT ?{variable} WHERE {{ {match['body']} }}", prefixes)
    if inner is None:
        return None
    triples = [i for i in inner.items if isinstance(i, Triple)]
    tests = [i for i in inner.items if isinstance(i, Other)]
    if len(triples) != 1 or not _simple(triples[0], variable):
        return None
    value = triples[0].object[1:] if triples[0].object[:1] in "?$" else None
    if tests and (value is None or value in terms or any(
            t.kind != "filter" or t.variables - set(terms) != {value} or _EXISTS.search(t.text)
            for t in tests)):
        return None
    return triples[0], tests
