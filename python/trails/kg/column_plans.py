"""How a filter's group splits for the graph's columns (``kg/filter_index.py``, ADR 0029).

:func:`column_plan` reads a group lifted to documents (``SELECT ?doc`` over triple patterns,
FILTERs and VALUES) into the document variable's patterns, the FILTERs on their values alone,
``FILTER NOT EXISTS`` of one such pattern, ``OPTIONAL { ?doc P ?d } FILTER(!BOUND(?d) || test
of ?d)``, and the patterns beyond the documents that join one value each (a taxonomy, a VALUES
list); None for any other shape. It reads text only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trails.kg.expressions import disjuncts, iri_list, unbound_test, volatile
from trails.kg.planning import RDF_TYPE, Other, Triple, parse_filter

__all__ = ["ColumnPlan", "column_plan"]

# EXISTS or NOT EXISTS anywhere in a FILTER (a graph pattern inside it).
_EXISTS = re.compile(r"\bEXISTS\b", re.IGNORECASE)
_NOT_EXISTS = re.compile(r"^FILTER\s+NOT\s+EXISTS\s*\{(?P<body>.*)\}\s*$", re.DOTALL | re.IGNORECASE)
_OPTIONAL = re.compile(r"^OPTIONAL\s*\{(?P<body>.*)\}\s*$", re.DOTALL | re.IGNORECASE)


@dataclass
class ColumnPlan:
    patterns: list[Triple]  # the document variable's patterns (subject), all must hold
    absent: list[list[Triple]]  # FILTER NOT EXISTS { such patterns, each its own values }
    conditions: dict[str, list[Other]]  # value variable -> the FILTERs on it alone
    satellites: dict[str, list[Triple | Other]]  # value variable -> patterns that join it
    # FILTER(A || B || ...): each part's value variable -> the part's test of it alone; a
    # document passes when it passes one of them
    either: list[dict[str, Other]] = field(default_factory=list)
    # OPTIONAL { ?doc P ?d } FILTER(!BOUND(?d) || test of ?d): the pattern and the test; a
    # document passes with no value of P, or with a value of P passing the test
    unless: list[tuple[Triple, Other]] = field(default_factory=list)
    # Patterns joined to neither the document nor its values (``?claim ex:filed ?c``), with
    # the FILTERs on their variables alone; ``outer_tested``: those the conditions also read
    # (``FILTER(?d >= ?c)``). The group's solutions are the cross join: a document passes
    # under one of the outer patterns' solutions.
    outer: list[Triple | Other] = field(default_factory=list)
    outer_tested: set[str] = field(default_factory=set)
    prefixes: Mapping[str, str] = field(default_factory=dict)  # the group's prefixed names


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
    plan = ColumnPlan([], [], {}, {}, prefixes=prefixes)
    plan.patterns = list(mine)
    first = min(items.index(t) for t in mine)
    for at, item in enumerate(items):
        if isinstance(item, Other) and item.kind == "optional":
            unless = _absent_or(item, at > first, items, variable, terms, prefixes)
            if unless is not None:
                plan.unless.append(unless[:2])
                others = [o for o in others if o is not item and o is not unless[2]]
    outer_names = _outer_names(others, variable, value_of, terms)
    loose = []
    for item in others:
        if isinstance(item, Other) and item.kind == "values" and variable in item.variables:
            return None  # VALUES (?doc ?v): which value goes with which document
        if isinstance(item, Other) and item.kind == "filter":
            found = _absent(item, variable, prefixes, terms)
            if found is not None:
                absent, tests = found
                if any(_correlated(a, item, others, value_of, terms) for a in absent):
                    return None
                plan.absent.append(absent)
                for test in tests:  # FILTER NOT EXISTS { ?doc P ?k FILTER(test of ?k) }
                    (name,) = test.variables - set(terms)
                    plan.conditions.setdefault(name, []).append(test)
                continue
            free = item.variables - set(terms)
            if len(free) > 1 and variable not in item.variables:
                parts = _either(item, value_of, terms)
                if parts is not None:
                    plan.either.append(parts)
                    continue
            if free and free <= outer_names and not _EXISTS.search(item.text):
                plan.outer.append(item)  # a test of the outer patterns' solutions alone
                continue
            values = free & set(value_of)
            if (variable not in item.variables and len(values) == 1 and len(free) > 1
                    and free - values <= outer_names and not _EXISTS.search(item.text)
                    and not volatile(item)):
                # FILTER(?d >= ?c), ?c an outer value: a test of ?d under each outer solution
                plan.conditions.setdefault(next(iter(values)), []).append(item)
                plan.outer_tested |= free & outer_names
                continue
            if variable in item.variables or len(free) != 1 or _EXISTS.search(item.text):
                return None  # an EXISTS reads the graph: the values alone cannot answer it
            (name,) = free
            if name in value_of:
                plan.conditions.setdefault(name, []).append(item)
                continue
        if not (isinstance(item, Triple) or _values(item)) or not item.variables - set(terms) \
                <= outer_names:
            loose.append(item)
        else:
            plan.outer.append(item)
    if not _satellites(loose, value_of, plan, terms):
        return None
    if any(name in plan.satellites for name in plan.conditions):
        return None
    if any(t.predicate == RDF_TYPE and (name not in plan.satellites or name in plan.conditions)
           for name, t in value_of.items()):
        # ?doc a ?class tested alone: a column of every type, a row per chunk; the graph joins
        # it. Joined to a taxonomy (?class rdfs:subClassOf* ?broad) it is the members of the
        # few classes the taxonomy names, each read on its own.
        return None
    tested = [name for parts in plan.either for name in parts]
    if len(set(tested)) != len(tested) or set(tested) & (set(plan.conditions)
                                                         | set(plan.satellites)):
        return None  # one value tested in two places: which value passes which is a join
    return plan


def _outer_names(others: Sequence[Triple | Other], variable: str,
                 value_of: Mapping[str, Triple], terms: Mapping[str, object]) -> set[str]:
    """The variables of the triple patterns and VALUES among ``others`` that join neither
    ``?variable`` nor any of its values, directly or through one another."""
    patterns = [item for item in others if isinstance(item, Triple) or _values(item)]
    return {name for names, _ in _joined(patterns, terms)
            if variable not in names and not names & set(value_of) for name in names}


def _joined(items: Sequence[Triple | Other], terms: Mapping[str, object],
            ) -> list[tuple[set[str], list[Triple | Other]]]:
    """``items`` in groups joined by their unbound variables, directly or through one
    another: each group's variables and members, in the order of the items."""
    parts: list[tuple[set[str], list[Triple | Other]]] = []
    for item in items:
        names = set(item.variables) - set(terms)
        joined_names, members = set(names), [item]
        for part in [p for p in parts if p[0] & names]:
            parts.remove(part)
            joined_names |= part[0]
            members += part[1]
        parts.append((joined_names, members))
    return parts


def _either(item: Other, value_of: Mapping[str, Triple], terms: Mapping[str, object],
            ) -> dict[str, Other] | None:
    """``FILTER(A(?x) || B(?y) || ...)`` by value variable: each part reads one value
    variable of the document's patterns (a part per variable, joined by ``||`` again), and
    none holds a graph pattern; None for any other FILTER."""
    parts = disjuncts(item)
    if parts is None or _EXISTS.search(item.text):
        return None
    by_name: dict[str, list[Other]] = {}
    for part in parts:
        free = part.variables - set(terms)
        if len(free) != 1 or not free <= set(value_of):
            return None
        by_name.setdefault(next(iter(free)), []).append(part)
    if len(by_name) < 2:
        return None
    return {name: group[0] if len(group) == 1 else Other(
        "filter", "FILTER(" + " || ".join(f"({g.text[7:-1]})" for g in group) + ")",
        frozenset().union(*(g.variables for g in group))) for name, group in by_name.items()}


def _absent_or(item: Other, after: bool, items: Sequence[Triple | Other], variable: str,
               terms: Mapping[str, object], prefixes: Mapping[str, str],
               ) -> tuple[Triple, Other, Other] | None:
    """The pattern of ``OPTIONAL { ?variable <P> ?d }`` (``item``, ``after`` a pattern on
    ``?variable``), the test of ``?d`` in ``FILTER(!BOUND(?d) || test)`` and that FILTER, or
    None. The left join gives a document with no value of P once, ``?d`` unbound (the FILTER
    true), and otherwise once per value (the FILTER is then the test on it: ``false ||
    x`` is ``x``); so a document passes with no value, or with a value passing the test.
    Only when ``?d`` is read nowhere else and every part of the FILTER reads ``?d`` alone (or
    bindings), without a graph pattern or a value that changes per evaluation."""
    match = _OPTIONAL.match(item.text.strip())
    inner = None if match is None or not after else parse_filter(
        f"SELECT ?{variable} WHERE {{ {match['body']} }}", prefixes)
    if inner is None or len(inner.items) != 1 or not isinstance(inner.items[0], Triple):
        return None
    pattern = inner.items[0]
    name = pattern.object[1:]
    if (not _simple(pattern, variable) or pattern.predicate in (None, RDF_TYPE)
            or pattern.object[:1] not in "?$" or name in terms or name == variable):
        return None
    readers = [i for i in items if i is not item and name in i.variables]
    if len(readers) != 1 or not isinstance(readers[0], Other) or readers[0].kind != "filter":
        return None
    test = readers[0]
    parts = disjuncts(test)
    if parts is None or _EXISTS.search(test.text) or volatile(test) or any(
            not part.variables - set(terms) <= {name} for part in parts):
        return None
    rest = [part for part in parts if unbound_test(part) != name]
    if len(rest) == len(parts) or not rest:
        return None
    condition = rest[0] if len(rest) == 1 else Other(
        "filter", "FILTER(" + " || ".join(f"({g.text[7:-1]})" for g in rest) + ")",
        frozenset().union(*(g.variables for g in rest)))
    return pattern, condition, test


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
    if any(isinstance(item, Other) and not (item.kind == "filter" or _values(item))
           for item in loose):
        return False
    for names, group in _joined(loose, terms):
        joined = names & set(value_of)
        if len(joined) != 1 or not any(isinstance(i, Triple) or _values(i) for i in group):
            return False
        plan.satellites[joined.pop()] = _listed_first(group, terms)
    return True


def _listed_first(group: list[Triple | Other], terms: Mapping[str, object],
                  ) -> list[Triple | Other]:
    """``group`` with each ``FILTER(?b IN (<a>, <b>))`` (or ``?b = <a>``) on a variable its
    triple patterns bind as ``VALUES ?b { <a> <b> }``, first. An IRI equals exactly itself
    (``=`` with an IRI is never an error), so the join keeps the solutions the FILTER keeps;
    given first, the values start the walk (``?t rdfs:subClassOf* ?b`` from every term of
    the graph otherwise)."""
    bound = {v for i in group if isinstance(i, Triple) for v in i.variables} - set(terms)
    listed: list[Triple | Other] = []
    rest: list[Triple | Other] = []
    for item in group:
        found = iri_list(item) if isinstance(item, Other) and item.kind == "filter" else None
        if found is not None and found[0] in bound:
            listed.append(Other("values", f"VALUES ?{found[0]} {{ {' '.join(found[1])} }}",
                                frozenset({found[0]})))
        else:
            rest.append(item)
    return listed + rest


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
            terms: Mapping[str, object]) -> tuple[list[Triple], list[Other]] | None:
    """The patterns of ``FILTER NOT EXISTS { ?variable <P> object . ?variable <Q> object }``,
    each object a term or a variable of its own, with the FILTERs that test one such value
    alone inside it (``{ ?doc P ?k FILTER(?k > 5) }``), or None. A document matches the
    patterns together exactly when it matches each: they share nothing else."""
    match = _NOT_EXISTS.match(item.text.strip())
    if match is None:
        return None
    inner = parse_filter(f"SELECT ?{variable} WHERE {{ {match['body']} }}", prefixes)
    if inner is None:
        return None
    triples = [i for i in inner.items if isinstance(i, Triple)]
    tests = [i for i in inner.items if isinstance(i, Other)]
    if not triples or any(not _simple(t, variable) for t in triples):
        return None
    values = [t.object[1:] for t in triples if t.object[:1] in "?$" and t.object[1:] not in terms]
    if len(set(values)) != len(values):
        return None  # a value shared by two patterns: a join within the group
    if any(t.kind != "filter" or len(t.variables - set(terms)) != 1
           or not t.variables - set(terms) <= set(values) or _EXISTS.search(t.text)
           for t in tests):
        return None
    return triples, tests
