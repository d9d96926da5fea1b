"""A filter written in another form of the same question, brought to the form the planner reads.

Analysts write one condition many ways. The planner (``kg/planning.py``: the lift to documents;
``kg/filter_index.py``: the graph's columns) reads one form of each, so the others ran as
Oxigraph scans, seconds at a million chunks for the same answer. :func:`equivalent_form`
rewrites a parsed filter's group into the planner's forms:

- **Sequence and inverse paths.** ``?iri schema:isPartOf/schema:dateCreated ?d`` becomes
  ``?iri schema:isPartOf ?v . ?v schema:dateCreated ?d`` with a fresh ``?v``, and ``?doc
  ^schema:isPartOf ?iri`` becomes ``?iri schema:isPartOf ?doc``: SPARQL 1.1 defines these
  paths as those patterns (section 18.2.2.4), solution for solution. A step may carry ``*``,
  ``+`` or ``?``; alternatives, negated sets and groups are left as written.
- **MINUS** ``{ patterns }`` becomes ``FILTER NOT EXISTS { patterns }`` when every variable
  it shares with the group is bound by a triple pattern before it (or by a binding, placed
  first): MINUS then removes exactly the solutions NOT EXISTS rejects. A MINUS sharing no
  variable removes nothing and stays as written.
- **A UNION of one pattern per branch**, ``{ ?doc P "a" } UNION { ?doc P "b" }``, with the same
  subject and predicate and constant objects, becomes ``?doc P ?v . VALUES ?v { "a" "b" }``:
  each branch's solutions are the join's with that value.
- **OPTIONAL** ``{ patterns } FILTER(!BOUND(?c))``, SPARQL 1.0's way to say "has none",
  becomes ``FILTER NOT EXISTS { patterns }`` when ``?c`` is bound by the patterns and used
  nowhere else, what they share with the group is bound before the OPTIONAL, and a FILTER
  among the patterns reads only their variables (or bindings).
- **FILTER EXISTS** ``{ patterns }`` becomes the patterns themselves, when the variables they
  share with the group are bound by its triple patterns (or bindings) and their other
  variables appear nowhere else, the projection included (EXISTS binds nothing). This one keeps the *set* of solutions, not how many times
  each comes (a join repeats a solution per way it matches).

The caller rewrites only where the answer is used as a set (retrieval's candidates, never graph
mode's ordered list), and runs a rewritten filter that fails as written
(``retrieval/candidates.py``). Nothing here evaluates anything; any shape not fully understood
is left as it is.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping, Sequence

from trails.kg.expressions import conjuncts, without_binds
from trails.kg.planning import FilterShape, Other, Token, Triple, _predicate, _tokens, parse_filter
from trails.kg.sparql_text import WORD_CHAR
from trails.kg.unions import branches

__all__ = ["equivalent_form"]

_GROUP = {"minus": re.compile(r"^MINUS\s*\{(?P<body>.*)\}\s*$", re.DOTALL | re.IGNORECASE),
          "filter": re.compile(r"^FILTER\s+EXISTS\s*\{(?P<body>.*)\}\s*$",
                               re.DOTALL | re.IGNORECASE)}
_MODIFIERS = frozenset("*+?")
_OPTIONAL = re.compile(r"^OPTIONAL\s*\{(?P<body>.*)\}\s*$", re.DOTALL | re.IGNORECASE)
_NOT_BOUND = re.compile(rf"^FILTER\s*\(\s*!\s*BOUND\s*\(\s*[?$](?P<name>{WORD_CHAR}+)"
                        r"\s*\)\s*\)$", re.IGNORECASE)


def equivalent_form(shape: FilterShape, bound: Collection[str] = (), *,
                    sets: bool = True) -> FilterShape:
    """``shape`` with its group in the forms the planner reads (see the module docstring);
    ``shape`` itself when nothing applies. Without ``sets``, only the rewrites that keep every
    solution as many times as the filter as written gives it (no FILTER EXISTS as a join)."""
    fresh = _Fresh(shape, bound)
    items: list[Triple | Other] = []
    for item in shape.items:
        if isinstance(item, Triple) and item.predicate is None:
            items.extend(_path_steps(item, shape.prefixes, fresh) or [item])
        elif isinstance(item, Other) and item.kind == "group":
            items.extend(_union_values(item, shape.prefixes, fresh) or [item])
        elif isinstance(item, Other) and item.kind == "filter":
            items.extend(conjuncts(item))
        else:
            items.append(item)
    if sets:
        items = without_binds(items, shape, set(bound)) or items
    items = _without_unbound_optional(items, shape, set(bound), fresh) or items
    for index, item in enumerate(items):
        if isinstance(item, Other) and item.kind in _GROUP and (sets or item.kind == "minus"):
            rewritten = _without_group(items, index, shape, set(bound), fresh)
            if rewritten is not None:
                items[index : index + 1] = rewritten
    if items == list(shape.items):
        return shape
    simple = all(isinstance(i, Triple) or i.kind == "filter" for i in items)
    return dataclasses.replace(shape, items=tuple(items), simple=simple)


class _Fresh:
    """Variable names the filter does not use, nor a binding (a binding's VALUES block would
    join a fresh variable of that name)."""

    def __init__(self, shape: FilterShape, bound: Collection[str] = ()) -> None:
        self._used = set(re.findall(rf"[?$]({WORD_CHAR}+)",
                                    shape.prologue + shape.text())) | set(bound)
        self._next = 0

    def __call__(self) -> str:
        while f"trails_via{self._next}" in self._used:
            self._next += 1
        name = f"trails_via{self._next}"
        self._used.add(name)
        return name


def _path_steps(triple: Triple, prefixes: Mapping[str, str], fresh: _Fresh,
                ) -> list[Triple] | None:
    """The patterns a sequence of plain steps (``p``, ``^p``, each maybe with ``*``, ``+`` or
    ``?``) or one inverse step stands for; None for any other verb."""
    tokens = _tokens(triple.verb)
    if not tokens:
        return None
    steps: list[list[Token]] = [[]]
    for token in tokens:
        if token.kind == "punct" and token.text == "/":
            steps.append([])
        else:
            steps[-1].append(token)
    parsed = [_step(step) for step in steps]
    plain = [found for found in parsed if found is not None]
    if len(plain) != len(parsed) or (len(plain) == 1 and not plain[0][0]):
        return None  # not plain steps, or one step that is no inverse (a path like p*)
    ends = [triple.subject, *(f"?{fresh()}" for _ in plain[1:]), triple.object]
    triples = []
    for at, (inverse, name, modifier) in enumerate(plain):
        subject, obj = ends[at], ends[at + 1]
        if inverse:
            subject, obj = obj, subject
        if _literal(subject):
            return None  # a literal as a subject: valid, but leave such a filter as written
        verb = name.text + modifier
        triples.append(Triple(
            subject, verb, obj,
            frozenset(t[1:] for t in (subject, obj) if t[:1] in "?$"),
            int(subject[:1] not in "?$") + int(obj[:1] not in "?$"),
            None if modifier else _predicate([name], prefixes)))
    return triples


def _step(tokens: Sequence[Token]) -> tuple[bool, Token, str] | None:
    """(inverse, predicate token, modifier) of ``^? predicate modifier?``."""
    inverse = bool(tokens) and tokens[0].kind == "punct" and tokens[0].text == "^"
    rest = list(tokens[1:] if inverse else tokens)
    modifier = ""
    if len(rest) == 2 and rest[1].kind == "punct" and rest[1].text in _MODIFIERS:
        modifier = rest.pop().text
    if len(rest) != 1 or not (rest[0].kind in ("iri", "pname") or rest[0].text == "a"):
        return None
    return inverse, rest[0], modifier


def _literal(term: str) -> bool:
    tokens = _tokens(term)
    return not tokens or tokens[0].kind in ("string", "number") or \
        tokens[0].keyword in ("TRUE", "FALSE")


def _union_values(item: Other, prefixes: Mapping[str, str], fresh: _Fresh,
                  ) -> list[Triple | Other] | None:
    """``?s P ?v . VALUES ?v { o1 o2 }`` for ``{ ?s P o1 } UNION { ?s P o2 }``, or None."""
    parts = branches(item, prefixes)
    if parts is None or any(len(p) != 1 or not isinstance(p[0], Triple) for p in parts):
        return None
    patterns = [p[0] for p in parts if isinstance(p[0], Triple)]
    first = patterns[0]
    if (len(patterns) < 2 or first.subject[:1] not in "?$" or first.predicate is None
            or any(p.subject != first.subject or p.predicate != first.predicate
                   or p.object[:1] in "?$" or p.object.startswith("_:")
                   for p in patterns)):
        return None
    name = fresh()
    return [Triple(first.subject, first.verb, f"?{name}", first.variables | {name}, 0,
                   first.predicate),
            Other("values", f"VALUES ?{name} {{ {' '.join(p.object for p in patterns)} }}",
                  frozenset({name}))]


def _without_group(items: Sequence[Triple | Other], index: int, shape: FilterShape,
                   bound: set[str], fresh: _Fresh) -> list[Triple | Other] | None:
    """What ``MINUS { ... }`` or ``FILTER EXISTS { ... }`` at ``items[index]`` becomes, or
    None when it is not safely one of the rewrites of the module docstring."""
    item = items[index]
    assert isinstance(item, Other)
    match = _GROUP[item.kind].match(item.text.strip())
    if match is None:
        return None
    inner = parse_filter(f"SELECT ?{fresh()} WHERE {{ {match['body']} }}", shape.prefixes)
    if inner is None or not inner.simple:
        return None
    inner_variables = set().union(*(i.variables for i in inner.items))
    matched = set().union(*(i.variables for i in inner.items if isinstance(i, Triple)))
    if item.kind == "minus" and inner_variables - matched:
        return None  # a FILTER inside MINUS reading a variable its patterns do not bind
    others = [i for at, i in enumerate(items) if at != index]
    if any(not (isinstance(i, Triple) or i.kind in ("filter", "minus")) for i in others):
        return None  # OPTIONAL, BIND, VALUES, subgroups: what binds a variable is not plain
    before = items[:index] if item.kind == "minus" else others
    binding = bound | {v for i in before if isinstance(i, Triple) for v in i.variables}
    elsewhere = set().union(*(i.variables for i in others)) | bound
    if item.kind == "filter":  # EXISTS binds nothing: the projected variable stays unbound
        elsewhere.add(shape.variable)
    shared = inner_variables & elsewhere
    if not shared or not shared <= binding:
        return None
    if item.kind == "minus":
        return [Other("filter", f"FILTER NOT EXISTS {{ {match['body']} }}", item.variables)]
    return list(inner.items)


def _without_unbound_optional(items: Sequence[Triple | Other], shape: FilterShape,
                              bound: set[str], fresh: _Fresh) -> list[Triple | Other] | None:
    """``FILTER NOT EXISTS { patterns }`` for SPARQL 1.0's ``OPTIONAL { patterns }
    FILTER(!BOUND(?c))``, or None. The two are one test when ``?c`` is bound by the patterns
    and used nowhere else, and every variable the patterns share with the group is bound by a
    triple pattern before the OPTIONAL (or a binding): the left join then extends a solution,
    binding ``?c``, exactly when the patterns match it, and the FILTER drops those."""
    optionals = [i for i, item in enumerate(items)
                 if isinstance(item, Other) and item.kind == "optional"]
    if len(optionals) != 1:
        return None
    index = optionals[0]
    match = _OPTIONAL.match(items[index].text.strip())
    inner = None if match is None else parse_filter(
        f"SELECT ?{fresh()} WHERE {{ {match['body']} }}", shape.prefixes)
    if match is None or inner is None or not inner.simple:
        return None
    inner_variables = set().union(*(i.variables for i in inner.items))
    matched = set().union(*(i.variables for i in inner.items if isinstance(i, Triple)))
    if inner_variables - matched - bound or re.search(r"\bEXISTS\b", match["body"], re.IGNORECASE):
        return None  # the left join's FILTER would read the group's solution: not one test
    tests = [(i, found["name"]) for i, item in enumerate(items) if isinstance(item, Other)
             and (found := _NOT_BOUND.match(item.text.strip())) is not None
             and found["name"] in inner_variables]
    if len(tests) != 1:
        return None
    (at, name), = tests
    others = [item for i, item in enumerate(items) if i not in (index, at)]
    if any(not (isinstance(i, Triple) or i.kind in ("filter", "minus")) for i in others):
        return None
    elsewhere = set().union(*(i.variables for i in others)) | bound | {shape.variable}
    before = bound | {v for i in items[:index] if isinstance(i, Triple) for v in i.variables}
    shared = inner_variables & elsewhere
    if name in elsewhere or not shared or not shared <= before:
        return None
    test = Other("filter", f"FILTER NOT EXISTS {{ {match['body']} }}", items[index].variables)
    return [test if i == index else item for i, item in enumerate(items) if i != at]
