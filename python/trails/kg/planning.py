"""Filters written naturally run like the best hand-ordered form (ADR 0013).

Oxigraph evaluates a group's triple patterns in the order written when its own estimates tie,
so ``?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d . FILTER(?d >= ?since)`` walks
every chunk before it looks at a single date. Two rewrites of a retrieval filter's text fix
that before it reaches the store; both keep its answer exactly:

- :func:`reorder` puts the group's triple patterns in a greedy join order driven by
  statistics (how many triples each pattern matches, capped: see ``retrieval/candidates.py``)
  and places each FILTER just after the pattern that binds its last variable. Only a group
  made of triple patterns and FILTERs (and the VALUES of bindings) is reordered: a join is
  commutative, and a FILTER applies to its whole group wherever it is written. OPTIONAL,
  MINUS, BIND, UNION and subgroups would make the order part of the meaning, so such a
  filter is left as written.
- :func:`lift_to_documents` evaluates document-level conditions once per document instead of
  once per chunk: when the candidate variable appears only in ``?iri schema:isPartOf ?doc``,
  the filter is rewritten to select ``?doc`` and the store expands each document to its
  chunks by row. That is exact while every ``schema:isPartOf`` triple is the link trails
  minted from a chunk to its document, which the caller checks (``retrieval/candidates.py``).

Nothing here evaluates anything: it reads the filter's text with a tokenizer that knows
SPARQL's terminals, and returns None (leave the filter as written) for any shape it does not
fully understand.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from trails.kg.sparql import PREFIXES, STRING
from trails.kg.sparql_text import NAME_CHAR, WIDE_CHAR

__all__ = ["ESTIMATE_CAP", "FilterShape", "Lift", "Triple", "lift_to_documents", "parse_filter",
           "reorder"]

IS_PART_OF = "https://schema.org/isPartOf"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
DOCUMENT = "https://trails.dev/ns#Document"
# Pattern counts are taken up to this many matches: enough to tell a selective pattern from
# a scan, at a bounded cost per pattern.
ESTIMATE_CAP = 10_000

_OPEN, _CLOSE = "{([", "})]"
_GROUP_KEYWORDS = {"FILTER", "OPTIONAL", "MINUS", "GRAPH", "SERVICE", "BIND", "VALUES"}
_PATH_PUNCT = set("/|^*+?()!")
# An IRI with a scheme: one a BASE cannot resolve to another.
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@functools.cache
def _token() -> re.Pattern[str]:
    """The tokenizer, compiled at its first use (a few milliseconds a process)."""
    return re.compile(
        rf"(?P<string>{STRING})"
        r'|(?P<iri><(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>)'
        r"|(?P<comment>#[^\n\r]*)"
        r"|(?P<space>\s+)"
        r"|(?P<datatype>\^\^)"
        r"|(?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)"
        rf"|(?P<var>[?$]{NAME_CHAR}+)"
        rf"|(?P<pname>(?:(?:[A-Za-z]|{WIDE_CHAR})(?:{NAME_CHAR}|[.-])*)?:"
        rf"(?:(?:{NAME_CHAR}|[:%-])(?:(?:{NAME_CHAR}|[.:%-])*(?:{NAME_CHAR}|[:%-]))?)?)"
        r"|(?P<number>[+-]?(?:\d*\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?))"
        r"|(?P<word>[A-Za-z_][A-Za-z_0-9]*)"
        r"|(?P<punct>&&|\|\||!=|<=|>=|[{}()\[\].;,*+/|^!=<>?-])"
    )


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int

    @property
    def keyword(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


@dataclass(frozen=True)
class Triple:
    """One triple pattern of the group (a statement ``s p o ; p o`` gives several)."""

    subject: str
    verb: str
    object: str
    variables: frozenset[str]
    constants: int  # how many of subject and object are not variables
    predicate: str | None  # the predicate's full IRI when it is one IRI (not a path)

    def unbounded(self, bound: Collection[str]) -> bool:
        """Whether counting it would walk every term: a path that may be empty (``*``, ``?``)
        between two variables that nothing binds."""
        ends = {self.subject[1:], self.object[1:]} if self.subject[:1] in "?$" and \
            self.object[:1] in "?$" else set()
        return bool(ends) and not ends & set(bound) and any(c in self.verb for c in "*?")

    @property
    def text(self) -> str:
        return f"{self.subject} {self.verb} {self.object} ."


@dataclass(frozen=True)
class Other:
    """A part of the group kept as written: a FILTER (kind "filter") or anything else."""

    kind: str
    text: str
    variables: frozenset[str]


@dataclass(frozen=True)
class FilterShape:
    """A filter ``PREFIX... SELECT [DISTINCT] ?v WHERE { items }`` with nothing after."""

    prologue: str
    variable: str
    items: tuple[Triple | Other, ...]
    simple: bool  # every item is a triple pattern or a FILTER: the group may be reordered
    occurrences: int  # how often the projected variable's name appears in the raw text
    prefixes: Mapping[str, str] = field(default_factory=dict)

    def text(self, variable: str | None = None, items: Sequence[Triple | Other] | None = None,
             ) -> str:
        body = "\n  ".join(item.text for item in (self.items if items is None else items))
        return (f"{self.prologue}SELECT ?{variable or self.variable} WHERE {{\n"
                f"  {body}\n}}")

    def solutions_text(self, values: str) -> str:
        """The filter as written, every variable projected, its solutions limited by
        ``values`` (a VALUES block): which solution admitted which IRI."""
        body = "\n  ".join(item.text for item in self.items)
        return f"{self.prologue}SELECT * WHERE {{\n  {values}\n  {body}\n}}"

    def pattern_query(self, triple: Triple, values: str = "") -> str:
        """A query counting ``triple``'s matches, up to :data:`ESTIMATE_CAP` (``values``: a
        VALUES block binding some of its variables)."""
        return (f"{self.prologue}SELECT (COUNT(*) AS ?n) WHERE {{ SELECT * WHERE {{ {values} "
                f"{triple.text} }} LIMIT {ESTIMATE_CAP} }}")


def _tokens(query: str) -> list[Token] | None:
    tokens, at = [], 0
    while at < len(query):
        found = _token().match(query, at)
        if found is None or found.end() == at:
            return None  # a character no terminal starts with: leave the filter alone
        kind = found.lastgroup or ""
        if kind not in ("space", "comment"):
            tokens.append(Token(kind, found.group(), at, found.end()))
        at = found.end()
    return tokens


def _closing(tokens: Sequence[Token], at: int) -> int | None:
    """The index of the bracket closing the one at ``at``."""
    depth = 0
    for index in range(at, len(tokens)):
        text = tokens[index].text if tokens[index].kind == "punct" else ""
        if text and text in _OPEN:
            depth += 1
        elif text and text in _CLOSE:
            depth -= 1
            if depth == 0:
                return index
    return None


def _variables(tokens: Sequence[Token]) -> frozenset[str]:
    return frozenset(t.text[1:] for t in tokens if t.kind == "var")


def parse_filter(query: str, prefixes: Mapping[str, str] | None = None) -> FilterShape | None:
    """The filter's shape, or None when it is not one this module rewrites."""
    tokens = _tokens(query)
    if not tokens:
        return None
    known = dict(PREFIXES if prefixes is None else prefixes)
    at = 0
    while at < len(tokens) and tokens[at].keyword == "PREFIX":
        if at + 2 >= len(tokens) or tokens[at + 1].kind != "pname" or tokens[at + 2].kind != "iri":
            return None
        known[tokens[at + 1].text[:-1]] = tokens[at + 2].text[1:-1]
        at += 3
    prologue = query[: tokens[at].start] if at < len(tokens) else ""
    if at >= len(tokens) or tokens[at].keyword != "SELECT":
        return None
    at += 1
    if at < len(tokens) and tokens[at].keyword in ("DISTINCT", "REDUCED"):
        at += 1
    if at + 1 >= len(tokens) or tokens[at].kind != "var":
        return None
    variable = tokens[at].text[1:]
    at += 1
    if tokens[at].keyword == "WHERE":
        at += 1
    if at >= len(tokens) or tokens[at].text != "{" or _closing(tokens, at) != len(tokens) - 1:
        return None  # a dataset clause, a modifier (LIMIT, ORDER BY...) or trailing VALUES
    items = _items(tokens[at + 1 : -1], query, known)
    if items is None:
        return None
    simple = all(isinstance(i, Triple) or i.kind == "filter" for i in items)
    occurrences = len(re.findall(rf"[?$]{re.escape(variable)}(?!{NAME_CHAR})", query))
    return FilterShape(prologue, variable, tuple(items), simple, occurrences, known)


def _items(body: Sequence[Token], query: str, prefixes: Mapping[str, str],
           ) -> list[Triple | Other] | None:
    items: list[Triple | Other] = []
    at = 0
    while at < len(body):
        token = body[at]
        if token.kind == "punct" and token.text == ".":
            at += 1
            continue
        end = _group_part_end(body, at)
        if end is None:
            return None
        if token.keyword in _GROUP_KEYWORDS or token.text == "{":
            kind = "filter" if token.keyword == "FILTER" else token.keyword.lower() or "group"
            items.append(Other(kind, query[token.start : body[end - 1].end],
                               _variables(body[at:end])))
        else:
            triples = _statement(body[at:end], query, prefixes)
            if triples is None:
                return None
            items.extend(triples)
        at = end
    return items


def _group_part_end(body: Sequence[Token], at: int) -> int | None:
    """Where the part of the group that starts at ``at`` ends (exclusive)."""
    token = body[at]
    if token.keyword in ("FILTER", "OPTIONAL", "MINUS", "GRAPH", "BIND", "VALUES") or token.text == "{":
        first_open = next((i for i in range(at, len(body)) if body[i].kind == "punct"
                           and body[i].text in _OPEN), None)
        if token.keyword == "VALUES":  # VALUES ?x { ... } or VALUES (?x ?y) { ... }
            first_open = next((i for i in range(at, len(body)) if body[i].text == "{"), None)
        if first_open is None:
            return None
        close = _closing(body, first_open)
        if close is None:
            return None
        end = close + 1
        while token.text == "{" and end < len(body) and body[end].keyword == "UNION":
            if end + 1 >= len(body) or body[end + 1].text != "{":
                return None
            close = _closing(body, end + 1)
            if close is None:
                return None
            end = close + 1
        return end
    if token.keyword == "SERVICE":
        return None
    depth = 0
    for index in range(at, len(body)):
        text = body[index].text if body[index].kind == "punct" else ""
        if text and text in _OPEN:
            depth += 1
        elif text and text in _CLOSE:
            depth -= 1
        elif depth == 0 and (text == "." or body[index].keyword in _GROUP_KEYWORDS):
            return index
    return len(body)


def _statement(tokens: Sequence[Token], query: str, prefixes: Mapping[str, str],
               ) -> list[Triple] | None:
    """The triple patterns of ``s p o ; p o , o`` with plain terms, or None."""
    if not tokens or tokens[0].kind not in ("var", "iri", "pname"):
        return None
    if any(t.kind == "punct" and t.text in "[]" for t in tokens):
        return None
    subject = tokens[0]
    triples: list[Triple] = []
    for part in _split(tokens[1:], ";"):
        if not part:
            continue
        pieces = _split(part, ",")
        first = pieces[0]
        obj = _object(first)
        if obj is None or obj == len(first) or obj == 0:
            return None
        verb = first[:obj]
        if not all(t.kind in ("var", "iri", "pname") or t.text == "a"
                   or (t.kind == "punct" and t.text in _PATH_PUNCT) for t in verb):
            return None
        objects = [first[obj:]]
        for piece in pieces[1:]:
            if _object(piece) != 0:
                return None
            objects.append(piece)
        verb_text = query[verb[0].start : verb[-1].end]
        predicate = _predicate(verb, prefixes)
        for term in objects:
            text = query[term[0].start : term[-1].end]
            terms = [subject, *verb, *term]
            triples.append(Triple(
                query[subject.start : subject.end], verb_text, text, _variables(terms),
                int(subject.kind != "var") + int(term[0].kind != "var"), predicate))
    return triples or None


def _split(tokens: Sequence[Token], separator: str) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        text = token.text if token.kind == "punct" else ""
        if text and text in _OPEN:
            depth += 1
        elif text and text in _CLOSE:
            depth -= 1
        if depth == 0 and text == separator:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _object(piece: Sequence[Token]) -> int | None:
    """Where the object term at the end of ``piece`` starts, or None if it is no plain term."""
    n = len(piece)
    if n >= 2 and piece[-1].kind == "lang" and piece[-2].kind == "string":
        return n - 2
    if n >= 3 and piece[-2].kind == "datatype" and piece[-3].kind == "string" and \
            piece[-1].kind in ("iri", "pname"):
        return n - 3
    if n >= 1 and (piece[-1].kind in ("var", "iri", "pname", "string", "number")
                   or piece[-1].keyword in ("TRUE", "FALSE")):
        return n - 1
    return None


def _predicate(verb: Sequence[Token], prefixes: Mapping[str, str]) -> str | None:
    """The IRI of a single predicate, when its text is that IRI as Oxigraph reads it (the
    key of its kept column): an escape (``\\u0061``) or a relative IRI names another IRI
    than its text, and is left to the graph."""
    if len(verb) != 1:
        return None
    token = verb[0]
    iri = None
    if token.kind == "iri":
        iri = token.text[1:-1]
    elif token.text == "a":
        return RDF_TYPE
    elif token.kind == "pname":
        prefix, _, local = token.text.partition(":")
        if prefix in prefixes:
            iri = prefixes[prefix] + local
    return iri if iri is not None and "\\" not in iri and _ABSOLUTE.match(iri) else None


def reorder(shape: FilterShape, estimate: Callable[[Triple], int],
            bound: Collection[str] = (), items: Sequence[Triple | Other] | None = None,
            ) -> list[Triple | Other] | None:
    """The group's items in a greedy join order, or None when the group may not be reordered.

    Starting from the variables ``bound`` (the filter's bindings), it takes next the pattern
    sharing a variable with what is bound (any pattern when none does) that matches fewest
    triples (``estimate``; halved again when a FILTER can then run on it), more constants
    first, then as written. Each FILTER follows the pattern that binds the last of its
    variables that the group binds at all.
    """
    items = list(shape.items if items is None else items)
    if not all(isinstance(i, Triple) or i.kind == "filter" for i in items):
        return None
    triples = [i for i in items if isinstance(i, Triple)]
    filters = [i for i in items if isinstance(i, Other)]
    known = set(bound)
    pattern_vars = set().union(*(t.variables for t in triples)) | known
    needs = {f: f.variables & pattern_vars for f in filters}
    estimates = {index: estimate(t) for index, t in enumerate(triples)}
    order: list[Triple | Other] = [f for f in filters if needs[f] <= known]
    left = list(range(len(triples)))

    def cost(index: int, known: set[str]) -> tuple[float, int, int]:
        triple = triples[index]
        after = known | triple.variables
        filtered = any(needs[f] and needs[f] <= after and not needs[f] <= known for f in filters)
        return (estimates[index] * (0.3 if filtered else 1.0), -triple.constants, index)

    while left:
        joined = [i for i in left if triples[i].variables & known] or left
        chosen = min(joined, key=lambda index: cost(index, known))
        left.remove(chosen)
        before = set(known)
        known |= triples[chosen].variables
        order.append(triples[chosen])
        order += [f for f in filters if needs[f] <= known and not needs[f] <= before]
    return order


@dataclass(frozen=True)
class Lift:
    """The filter evaluated over documents: select ``variable`` with these ``items``;
    ``typed`` when ``?doc a trails:Document`` stands in for the link."""

    variable: str
    items: list[Triple | Other]
    typed: bool


def lift_to_documents(shape: FilterShape, bound: Collection[str] = ()) -> Lift | None:
    """The filter evaluated over documents, or None.

    Applies when the candidate variable ``?iri`` appears nowhere but in the projection and in
    one pattern ``?iri schema:isPartOf ?doc``: that pattern is dropped (or, when nothing else
    in the group binds ``?doc``, replaced by ``?doc a trails:Document``) and the filter selects
    ``?doc``. The caller expands each document to its chunks."""
    if shape.variable in bound or shape.occurrences != 2:
        return None
    links = [i for i in shape.items if isinstance(i, Triple) and shape.variable in i.variables]
    if len(links) != 1:
        return None
    link = links[0]
    if (link.predicate != IS_PART_OF or link.subject[1:] != shape.variable
            or link.object[:1] not in "?$" or link.object[1:] == shape.variable):
        return None
    document = link.object[1:]
    others = [i for i in shape.items if i is not link]
    if any(isinstance(i, Other) and shape.variable in i.variables for i in others):
        return None
    if any(isinstance(i, Triple) and document in i.variables for i in others):
        # Only if ?doc is bound before anything that reads the group so far (OPTIONAL, MINUS,
        # BIND, a subgroup): dropping the link would leave it unbound there.
        for item in others:
            if isinstance(item, Triple) and document in item.variables:
                return Lift(document, others, typed=False)
            if isinstance(item, Other) and item.kind != "filter":
                break
    typed = Triple(f"?{document}", f"<{RDF_TYPE}>", f"<{DOCUMENT}>", frozenset({document}), 1,
                   RDF_TYPE)
    return Lift(document, [typed if i is link else i for i in shape.items], typed=True)
