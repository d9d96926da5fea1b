"""A filter's expressions in the parts the planner reads (``kg/equivalent_forms.py``, ADR 0029).

Three ways analysts write one condition that the columns could not read as written:

- **A conjunction in one FILTER**, ``FILTER(?j = "eu" && ?d >= ?since)``: the group's FILTERs
  are one conjunction (SPARQL 1.1, section 18.2.2.6: a group's filters are joined by ``&&``),
  and ``A && B`` keeps a solution exactly when both keep it (an error in either drops it, as
  a FILTER dropping it does), so :func:`conjuncts` splits it into one FILTER per test.
- **A disjunction**, ``FILTER(?j = "uk" || ?d >= ?since)``: :func:`disjuncts` reads its parts;
  ``A || B`` keeps a solution exactly when one of them is true (``true || error`` is true), so
  the column planner (``kg/column_plans.py``) answers it as a union of the parts' answers
  when each part reads one value variable of its own.
- **A computed value**, ``BIND(YEAR(?d) AS ?y) FILTER(?y = 2024)``: :func:`without_binds`
  writes the expression in the FILTERs in place of ``?y`` when everything it reads is bound
  by a triple pattern before the BIND (or a binding), and ``?y`` is read by FILTERs alone,
  without ``BOUND`` or ``EXISTS``. Evaluated on the same solution it gives the same value,
  and where it fails (``?y`` left unbound) the FILTER's expression fails as it would on an
  unbound ``?y``. Expressions that give another value each time (``RAND()``, ``BNODE()``,
  ``UUID()``) are left as written.

And :func:`unordered`: an ``ORDER BY`` ending a filter (with no ``LIMIT``, ``OFFSET``, or
aggregate) changes the order of the solutions, never which they are; for candidates, a set,
it is dropped. Nothing here evaluates anything; a shape not fully understood is left as it is.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from trails.kg.planning import FilterShape, Other, Token, Triple, _closing, _tokens, _variables

__all__ = ["conjuncts", "disjuncts", "iri_list", "unbound_test", "unordered", "volatile",
           "without_binds"]

_VOLATILE = frozenset({"RAND", "BNODE", "UUID", "STRUUID"})
_AGGREGATES = frozenset({"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"})


def _expression(text: str) -> tuple[str, list[Token]] | None:
    """The expression of ``FILTER ( expression )`` and its tokens, or None."""
    tokens = _tokens(text)
    if (not tokens or len(tokens) < 4 or tokens[0].keyword != "FILTER" or tokens[1].text != "("
            or _closing(tokens, 1) != len(tokens) - 1):
        return None
    inner = text[tokens[1].end : tokens[-1].start]
    return inner, tokens[2:-1]


def _parts(text: str, operator: str) -> list[str]:
    """``text`` (an expression) split at its top-level ``operator`` (``&&`` or ``||``),
    brackets around a whole part dropped and each part split again; ``[text]`` when there is
    nothing to split, or (for ``&&``) a top-level ``||`` binds looser than it."""
    tokens = _tokens(text)
    if not tokens:
        return [text]
    if tokens[0].text == "(" and _closing(tokens, 0) == len(tokens) - 1:
        return _parts(text[tokens[0].end : tokens[-1].start], operator)
    parts, depth, start = [], 0, 0
    for token in tokens:
        if token.kind == "punct" and token.text in "([{":
            depth += 1
        elif token.kind == "punct" and token.text in ")]}":
            depth -= 1
        elif depth == 0 and token.kind == "punct" and token.text == "||" != operator:
            return [text]  # ``A && B || C`` is ``(A && B) || C``: no conjunction
        elif depth == 0 and token.kind == "punct" and token.text == operator:
            parts.append(text[start : token.start])
            start = token.end
    if not parts:
        return [text]
    parts.append(text[start:])
    return [piece for part in parts for piece in _parts(_closed(part), operator)]


def _closed(text: str) -> str:
    """``text`` (a part of an expression) stripped, with a line end after a comment that ends
    it: a bracket written after the part would be in the comment."""
    stripped = text.strip()
    tokens = _tokens(stripped)
    return stripped if tokens and tokens[-1].end == len(stripped) else stripped + "\n"


def conjuncts(item: Other) -> list[Other]:
    """``FILTER(A && B)`` as ``FILTER(A)`` and ``FILTER(B)``; ``[item]`` for anything else."""
    found = _expression(item.text.strip())
    if found is None:
        return [item]
    parts = _parts(found[0], "&&")
    if len(parts) < 2:
        return [item]
    filters = []
    for part in parts:
        tokens = _tokens(part)
        if not tokens:
            return [item]
        filters.append(Other("filter", f"FILTER({part})", _variables(tokens)))
    return filters


def disjuncts(item: Other) -> list[Other] | None:
    """``FILTER(A || B)`` as ``FILTER(A)`` and ``FILTER(B)`` (a solution passes when one of
    them keeps it), or None when it is no disjunction."""
    found = _expression(item.text.strip())
    if found is None:
        return None
    parts = _parts(found[0], "||")
    if len(parts) < 2:
        return None
    filters = []
    for part in parts:
        tokens = _tokens(part)
        if not tokens:
            return None
        filters.append(Other("filter", f"FILTER({part})", _variables(tokens)))
    return filters


def iri_list(item: Other) -> tuple[str, list[str]] | None:
    """The variable and IRIs of ``FILTER(?b IN (<a>, <b>))``, ``FILTER(?b = <a>)`` or
    ``FILTER(<a> = ?b)``, each IRI as written; None for anything else."""
    found = _expression(item.text.strip())
    if found is None:
        return None
    tokens = _parts_tokens(found[0])
    if tokens is None:
        return None
    if len(tokens) == 3 and tokens[1].text == "=":
        variable, iris = ((tokens[0], [tokens[2]]) if tokens[0].kind == "var"
                          else (tokens[2], [tokens[0]]))
    elif (len(tokens) >= 5 and tokens[1].keyword == "IN" and tokens[2].text == "("
          and _closing(tokens, 2) == len(tokens) - 1):
        variable, iris = tokens[0], tokens[3:-1:2]
        if any(t.text != "," for t in tokens[4:-1:2]):
            return None
    else:
        return None
    if variable.kind != "var" or not iris or any(t.kind not in ("iri", "pname") for t in iris):
        return None
    return variable.text[1:], [t.text for t in iris]


def unbound_test(item: Other) -> str | None:
    """The variable of ``FILTER(!BOUND(?x))`` (brackets around the test or its argument
    allowed), or None for any other FILTER."""
    found = _expression(item.text.strip())
    tokens = None if found is None else _parts_tokens(found[0])
    if not tokens or tokens[0].kind != "punct" or tokens[0].text != "!":
        return None
    rest = tokens[1:]
    while rest and rest[0].text == "(" and _closing(rest, 0) == len(rest) - 1:
        rest = rest[1:-1]
    if (len(rest) == 4 and rest[0].keyword == "BOUND" and rest[1].text == "("
            and rest[2].kind == "var" and rest[3].text == ")"):
        return rest[2].text[1:]
    return None


def volatile(item: Other) -> bool:
    """Whether ``item`` calls a function that gives another value each time (``RAND()``,
    ``BNODE()``, ``UUID()``, ``STRUUID()``)."""
    return any(t.keyword in _VOLATILE for t in _tokens(item.text) or [])


def _parts_tokens(text: str) -> list[Token] | None:
    """The tokens of ``text``, brackets around the whole of it dropped."""
    tokens = _tokens(text)
    while tokens and tokens[0].text == "(" and _closing(tokens, 0) == len(tokens) - 1:
        tokens = tokens[1:-1]
    return tokens or None


def without_binds(items: Sequence[Triple | Other], shape: FilterShape, bound: Collection[str],
                  ) -> list[Triple | Other] | None:
    """``items`` with each ``BIND(expression AS ?y)`` that only FILTERs read written into
    them (see the module docstring), or None when there is none to write."""
    if any(isinstance(i, Other) and i.kind not in ("filter", "bind") for i in items):
        return None  # OPTIONAL, MINUS, VALUES, subgroups: what is bound where is not plain
    result = list(items)
    changed = False
    for item in list(result):
        if not (isinstance(item, Other) and item.kind == "bind"):
            continue
        rewritten = _without_bind(result, result.index(item), shape, bound)
        if rewritten is not None:
            result, changed = rewritten, True
    return result if changed else None


def _without_bind(items: list[Triple | Other], index: int, shape: FilterShape,
                  bound: Collection[str]) -> list[Triple | Other] | None:
    item = items[index]
    tokens = _tokens(item.text.strip())
    if (not tokens or len(tokens) < 6 or tokens[1].text != "(" or tokens[-3].keyword != "AS"
            or tokens[-2].kind != "var" or _closing(tokens, 1) != len(tokens) - 1):
        return None
    text = item.text.strip()
    expression, name = _closed(text[tokens[2].start : tokens[-3].start]), tokens[-2].text[1:]
    reads = _variables(tokens[2:-3])
    if any(t.keyword in _VOLATILE | _AGGREGATES | {"EXISTS"} for t in tokens[2:-3]):
        return None
    before = set(bound) | {v for i in items[:index] if isinstance(i, Triple) for v in i.variables}
    if not reads <= before or name in bound or name == shape.variable or name in reads:
        return None  # the expression reads what the BIND's place leaves unbound
    readers = [i for i in items if i is not item and name in i.variables]
    if any(not (isinstance(i, Other) and i.kind == "filter") for i in readers):
        return None  # ?y joins a pattern or feeds another BIND: no computed value alone
    result: list[Triple | Other] = []
    for other in items:
        if other is item:
            continue
        if other in readers:
            assert isinstance(other, Other)
            written = _substituted(other.text, name, expression)
            if written is None:
                return None
            other = Other("filter", written, (other.variables - {name}) | reads)
        result.append(other)
    return result


def _substituted(text: str, name: str, expression: str) -> str | None:
    """``text`` (a FILTER) with ``(expression)`` for each ``?name``; None when it tests
    whether ``?name`` is bound or holds a graph pattern."""
    tokens = _tokens(text)
    if not tokens or any(t.keyword in ("BOUND", "EXISTS") for t in tokens):
        return None
    pieces, at = [], 0
    for token in tokens:
        if token.kind == "var" and token.text[1:] == name:
            pieces += [text[at : token.start], f"({expression})"]
            at = token.end
    return "".join(pieces) + text[at:]


def unordered(query: str, bound: Collection[str] = ()) -> str | None:
    """``query`` without an ``ORDER BY`` that ends it, or None when it has none, or has
    anything after it or in it that may change which solutions it gives (``LIMIT``,
    ``OFFSET``, a ``VALUES`` block, an aggregate, a graph pattern), or reads a variable of
    ``bound`` (bindings must be used by the query run)."""
    tokens = _tokens(query)
    if not tokens:
        return None
    at = next((i for i in range(1, len(tokens) - 1) if tokens[i].keyword == "ORDER"
               and tokens[i + 1].keyword == "BY" and tokens[i - 1].text == "}"), None)
    if at is None or at + 2 >= len(tokens):
        return None
    if any(t.keyword in _AGGREGATES | _VOLATILE | {"LIMIT", "OFFSET", "VALUES", "EXISTS"}
           or t.text in "{}" or (t.kind == "var" and t.text[1:] in bound)
           for t in tokens[at + 2 :]):
        return None
    return query[: tokens[at].start]
