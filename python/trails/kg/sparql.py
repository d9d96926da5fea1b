"""SPARQL text handling: predeclared prefixes and the check that a retrieval filter is safe."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import pyoxigraph as ox

from trails.errors import SparqlError, UnsafeFilterError
from trails.kg.parse_errors import parse_reason
from trails.kg.sparql_text import STRING, code_only, iri_refs, iris_only, terms_only

__all__ = [
    "ANY_QUERY_LIMITS",
    "META",
    "PREFIXES",
    "SCOPED_LIMITS",
    "SIMILARITY",
    "STRING",
    "TRAILS",
    "ShapeLimits",
    "check_filter",
    "check_limits",
    "code_only",
    "iri_refs",
    "iris_only",
    "iris_or_error",
    "looks_like_update",
    "parser_sees_service",
    "parses",
    "refuse_service",
    "uses_similarity",
]

TRAILS = "https://trails.dev/ns#"
# User metadata keys become predicates in this namespace: front matter `author` -> meta:author.
META = "https://trails.dev/meta#"
# trails:similarity(?chunk, "text"): vector similarity inside SPARQL (trails.similarity).
SIMILARITY = TRAILS + "similarity"
_PREFIX_DECLARATION = re.compile(r"PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>", re.IGNORECASE)

PREFIXES: dict[str, str] = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "schema": "https://schema.org/",
    "prov": "http://www.w3.org/ns/prov#",
    "audit": "https://trails.dev/ns/audit#",
    "dcterms": "http://purl.org/dc/terms/",
    "trails": TRAILS,
    "meta": META,
}

# Limits on a query's shape, checked before the parser sees it: its recursive descent
# overflows the stack on deep nesting or a long chain of operators (a crash, not an error), and
# planning grows steeply with the clauses, the triple patterns of one group (a star of 128
# takes 16 s to plan, of 300 minutes) and the operators. Length is no danger in itself (a
# VALUES list of 40,000 IRIs parses in a tenth of a second); MAX_FILTER_CHARS is a last resort.
MAX_FILTER_CHARS = 4_000_000
MAX_NESTING = 64
MAX_CLAUSES = 256
MAX_PATH_STEPS = 128
MAX_GROUP_PATTERNS = 48
MAX_PATTERNS = 1024
MAX_OPERATORS = 512


class ShapeLimits(NamedTuple):
    """The most of each part of a query's shape (None: not counted)."""

    chars: int | None = MAX_FILTER_CHARS
    nesting: int = MAX_NESTING
    clauses: int = MAX_CLAUSES
    path_steps: int = MAX_PATH_STEPS
    group_patterns: int | None = MAX_GROUP_PATTERNS
    patterns: int | None = MAX_PATTERNS
    operators: int = MAX_OPERATORS


# A scoped caller's query and every filter: bounded in the time the planner takes.
SCOPED_LIMITS = ShapeLimits()
# Any query, the owner's too: only what crashes the parser (a stack overflow at ~3,000
# nested groups or ~10,000 chained operators or UNIONs) or runs away (a path of 600 steps
# took 9 s on an empty graph), with room for large queries a filter may not be.
ANY_QUERY_LIMITS = ShapeLimits(chars=None, nesting=256, clauses=4096, path_steps=256,
                               group_patterns=None, patterns=None, operators=4096)
# Keywords only: not a variable (?filter) or a prefixed name (schema:values, graph:x).
_CLAUSES = re.compile(r"(?<![?$:\w-])(OPTIONAL|FILTER|UNION|MINUS|SELECT|GRAPH|VALUES|BIND|EXISTS)"
                      r"(?![\w:-])", re.IGNORECASE)
# The tokens of a query's code (strings, IRIs and comments blanked) that its shape is made of.
# Names, variables, numbers, blank nodes and language tags are matched whole first, so a dot,
# a hyphen or a sign inside one is no separator or operator.
# A run of blanks goes in the token's match (scanning them one by one is slow), and only from
# its start, taken whole: retried from each blank of a run that no token ends (a comment or
# blanks at the end) the scan was quadratic, a minute for a filter's 30,000-character comment.
_SHAPE = re.compile(r"""(?<!\s)\s*+
    (?:(?P<term>[?$]\w+
      | \d+\.\d*[eE][+-]?\d+ | \.?\d+(?:[eE][+-]?\d+)? | \d*\.\d+(?:[eE][+-]?\d+)?
      | _:[\w-]+(?:[\w.-]*[\w-])? | @[A-Za-z]+(?:-[A-Za-z0-9]+)*
      | (?:[A-Za-z_][\w-]*(?:[\w.-]*[\w-])?)?:(?:[\w%\\:-](?:[\w.%\\:-]*[\w%\\:-])?)?
      | [A-Za-z_][\w-]*)
    | (?P<datatype>\^\^)
    | (?P<path>(?<![|^])[/|^](?![|^]))
    | (?P<operator>\|\||&&|!=|<=|>=|[=<>+*!?-])
    | (?P<separator>[.;,])
    | (?P<open>[({\[])
    | (?P<close>[)}\]]))
""", re.VERBOSE)
# Keywords only: not ``?add``, ``$copy``, ``schema:copy`` or a prefix ``move:`` (those are a
# malformed query's names, and the error must then say "does not parse", not "update").
_UPDATE_WORDS = re.compile(
    r"(?<![?$:\w-])(INSERT|DELETE|LOAD|CLEAR|CREATE|DROP|COPY|MOVE|ADD|WITH)(?![\w:-])",
    re.IGNORECASE,
)
_EMPTY = ox.Store()
# Every spelling of the word, wherever it is (a keyword cannot be written with escapes).
_SERVICE_WORD = re.compile(r"service(?:\s+silent(?![\w:-]))?", re.IGNORECASE | re.ASCII)


_NEUTRAL = "zqxq"  # a name no SPARQL keyword position takes


def _syntax_error(query: str, prefixes: dict[str, str] | None) -> SyntaxError | None:
    """Oxigraph's parse error for ``query``, or None when it parses (only call it on a query
    that cannot contain SERVICE: the empty store evaluates what it parses)."""
    try:
        _EMPTY.query(query, prefixes=prefixes or PREFIXES)
    except SyntaxError as exc:
        return exc
    except (RuntimeError, ValueError, OSError):  # it parsed; evaluation is not the question
        return None
    return None


def parser_sees_service(query: str, prefixes: dict[str, str] | None = None) -> bool:
    """Whether Oxigraph's own parser could read a SERVICE keyword in ``query``.

    The query itself is never parsed here (the empty store would evaluate the SERVICE call).
    Its rewrite is, with every occurrence of the word "service" (a keyword cannot be written
    with escapes) replaced by a plain name that no keyword position takes: an occurrence in
    an IRI, a string, a comment, a variable or a prefixed name parses as well either way, the
    keyword does not. So if the rewrite parses, the parser saw no SERVICE; if it does not, the
    query used SERVICE or does not parse at all, and is refused either way
    (:func:`service_refusal` says which). The parser's view, not a second lexer's.

    >>> parser_sees_service("SELECT ?s WHERE { SERVICE <http://x/> { ?s ?p ?o } }")
    True
    >>> parser_sees_service('SELECT ?service WHERE { ?service ?p "service" } # SERVICE')
    False
    """
    if not _SERVICE_WORD.search(query):
        return False
    return _syntax_error(_SERVICE_WORD.sub(_NEUTRAL, query), prefixes) is not None


def parses(query: str, prefixes: dict[str, str] | None = None) -> bool:
    """Whether ``query`` parses as a SPARQL query (False for one whose SERVICE the parser
    could read: it is never parsed here, see :func:`parser_sees_service`).

    >>> parses("SELECT ?s WHERE { ?s ?p ?o }"), parses("SELECT ?s WHERE { FILTER(?s }")
    (True, False)
    """
    return not parser_sees_service(query, prefixes) and _syntax_error(query, prefixes) is None


def service_refusal(query: str, prefixes: dict[str, str] | None = None) -> SparqlError | None:
    """The error to raise for a query the parser may read SERVICE in: UnsafeFilterError when
    its GRAPH form (GRAPH has SERVICE's syntax) parses, else the parse error; None when it
    uses no SERVICE."""
    if not parser_sees_service(query, prefixes):
        return None
    error = _syntax_error(_SERVICE_WORD.sub("GRAPH", query), prefixes)
    if error is not None:
        return _unparsed("query", query, prefixes, error)
    return UnsafeFilterError(
        "the SPARQL query uses SERVICE, which would send it to another endpoint; queries "
        "are evaluated locally only. Remove the SERVICE clause.")


def _unparsed(what: str, query: str, prefixes: dict[str, str] | None,
              error: SyntaxError) -> SparqlError:
    """The error for a ``what`` (query, filter) that does not parse, its mistake named as a
    query's is (:mod:`trails.kg.parse_errors`), not listed as the parser's Unicode ranges."""
    reason = parse_reason(query, prefixes or PREFIXES, str(error))
    return SparqlError(f"the SPARQL {what} does not parse: {reason}")


def looks_like_update(query: str) -> bool:
    """Whether ``query`` uses an update keyword (INSERT, DELETE, LOAD, CLEAR...) outside its
    strings, IRIs and comments: what to say when a read-only query does not parse.

    >>> looks_like_update("INSERT DATA { <a:s> <a:p> 1 }"), looks_like_update("SELECT ?add {}")
    (True, False)
    """
    return _UPDATE_WORDS.search(code_only(query)) is not None


def check_filter(
    query: str, prefixes: dict[str, str] | None = None, *, functions: Iterable[str] = ()
) -> str:
    """Check that ``query`` is a read-only SELECT projecting one variable; return its name.

    Nothing is evaluated: the query is parsed against an empty store. ``functions`` are the
    IRIs of custom functions the graph provides (``trails:similarity``); calling any other
    non-standard function is a SparqlError.

    Raises:
        UnsafeFilterError: an update, a SERVICE clause (it would reach another endpoint), a
            query form other than SELECT, or a projection of zero or several variables.
        SparqlError: the text does not parse (the message carries line and column).

    >>> check_filter("SELECT ?iri WHERE { ?iri a schema:CreativeWork }")
    'iri'
    """
    if not isinstance(query, str) or not query.strip():
        raise UnsafeFilterError("the SPARQL filter is empty; pass a SELECT query projecting ?iri")
    code = code_only(query)
    check_limits(query, code)
    refusal = service_refusal(query, prefixes)
    if isinstance(refusal, UnsafeFilterError):
        raise UnsafeFilterError(
            "the SPARQL filter uses SERVICE, which would send the query to another endpoint; "
            "retrieval filters must be evaluated locally only. Remove the SERVICE clause."
        )
    if refusal is not None:
        raise SparqlError(str(refusal).replace("SPARQL query", "SPARQL filter"))
    try:
        parsed = _EMPTY.query(query, prefixes=prefixes or PREFIXES,
                              custom_functions={ox.NamedNode(f): _unbound for f in functions})
    except RuntimeError as exc:  # an unknown custom function
        raise SparqlError(f"the SPARQL filter cannot run on this graph: {exc}") from exc
    except SyntaxError as exc:
        if _UPDATE_WORDS.search(code):
            raise UnsafeFilterError(
                "the SPARQL filter looks like an update (INSERT/DELETE/LOAD/CLEAR/...); "
                "retrieval filters must be read-only SELECT queries"
            ) from exc
        raise _unparsed("filter", query, prefixes, exc) from exc
    # The answer is read here and dropped before any refusal: the error's traceback would keep
    # it, and a service raising in a worker thread cannot drop it in another one.
    names = ([v.value for v in parsed.variables] if isinstance(parsed, ox.QuerySolutions)
             else None)
    boolean = isinstance(parsed, ox.QueryBoolean)
    del parsed
    if names is None:
        kind = "an ASK" if boolean else "a CONSTRUCT/DESCRIBE"
        raise UnsafeFilterError(
            f"the SPARQL filter is {kind} query; it must be a SELECT projecting one variable, "
            "e.g. SELECT ?iri WHERE { ... }"
        )
    if len(names) != 1:
        raise UnsafeFilterError(
            f"the SPARQL filter projects {len(names)} variables ({', '.join('?' + n for n in names) or 'none'}); "
            "it must project exactly one, the candidate IRI, e.g. SELECT ?iri WHERE { ... }"
        )
    return names[0]


def check_limits(query: str, code: str | None = None, *, unscoped: bool = False) -> None:
    """Refuse a query whose shape the parser and planner do not handle in bounded time: nesting,
    clauses, triple patterns (in one group and in all), operators and property-path steps;
    and, as a last resort, over :data:`MAX_FILTER_CHARS` characters.

    ``unscoped``: a query of every graph (the owner's), held only to
    :data:`ANY_QUERY_LIMITS`.

    Raises:
        UnsafeFilterError: naming the limit that was passed.
    """
    limits = ANY_QUERY_LIMITS if unscoped else SCOPED_LIMITS
    if limits.chars is not None and len(query) > limits.chars:
        raise UnsafeFilterError(f"the SPARQL query is {len(query):,} characters long; the limit "
                                f"is {limits.chars:,}")
    code = code_only(query) if code is None else code
    clauses = len(_CLAUSES.findall(code))
    if clauses > limits.clauses:
        raise UnsafeFilterError(f"the SPARQL query has {clauses} clauses (OPTIONAL, FILTER, "
                                f"UNION, SELECT...); the limit is {limits.clauses}")
    _check_shape(terms_only(query), limits)


def _check_shape(code: str, limits: ShapeLimits) -> None:
    """One pass over the tokens of ``code``, stopping at the first limit passed.

    A VALUES block holds data, not expressions (a sign there belongs to its number). Brackets
    holding only terms are a collection, ``(1 2 3)``, two triple patterns an item; those
    holding an operator or a comma, or opened by a keyword or a function's name
    (``FILTER(?x)``, ``STR(?x)``), or inside such an expression, are an expression. A triple
    pattern is counted where it starts: a term (or a bracket) where a group's next pattern may
    begin (after ``{``, ``.``, a nested group or a FILTER's brackets), or after ``;`` or
    ``,``; so a trailing ``.`` or ``;`` counts nothing, and ``{}`` between patterns does not
    hide them."""
    stack: list[str | list[int]] = []  # the open brackets; [terms, expression?] for a "("
    in_group: list[int] = []  # triple patterns so far in each open { group
    fresh: list[bool] = []  # whether each open { group's next term starts a triple pattern
    joins: list[bool] = []  # whether each open { group is joined to its parent (no UNION branch)
    counts = {"operator": 0, "path": 0, "patterns": 0}
    values_next = pending = False  # pending: after a ";" or "," (a pattern if a term follows)
    previous = ""
    for token in _SHAPE.finditer(code):
        kind = token.lastgroup
        if kind is None:  # blanks at the end
            break
        text = token.group(kind)
        top = stack[-1] if stack else None
        starts = kind in ("term", "open") and text != "{" and "V" not in stack and (
            pending or (top == "{" and fresh[-1]))
        if starts:
            if pending or not _KEYWORD.fullmatch(text):
                _add_patterns(in_group, counts, 1, limits)
            if top == "{":
                fresh[-1] = False
            pending = False
        if kind in ("separator", "close"):
            pending = False
        if kind == "open":
            called = isinstance(top, list) and top[1] or bool(_KEYWORD.fullmatch(previous))
            stack.append(([0, 1] if called else [0, 0]) if text == "(" else
                         "V" if values_next and text == "{" else text)
            values_next = values_next and text != "{"  # VALUES (?a ?b) { ... }
            if len(stack) > limits.nesting:
                raise UnsafeFilterError(
                    f"the SPARQL query nests groups or parentheses more than {limits.nesting} "
                    "deep; flatten it")
            if stack[-1] == "{":
                in_group.append(0)
                fresh.append(True)
                joins.append(previous.upper() != "UNION")
        elif kind == "close":
            closed = stack.pop() if stack else None
            if closed == "{":
                in_group.pop()
                fresh.pop()
                if joins.pop() and stack and stack[-1] == "{":  # one more operand to order
                    _add_patterns(in_group, counts, 1, limits, joined=True)
            elif isinstance(closed, list) and not closed[1] and in_group and "V" not in stack:
                _add_patterns(in_group, counts, 2 * closed[0], limits)
            if stack and stack[-1] == "{" and closed not in ("[", None) and (
                    not isinstance(closed, list) or closed[1]):
                fresh[-1] = True  # after a nested group, VALUES or FILTER(...)
        elif "V" in stack:
            continue
        elif isinstance(top, list):
            top[0 if kind == "term" else 1] += 1
        elif kind == "term":
            values_next = values_next or text.upper() == "VALUES"
        elif kind == "separator" and in_group and top in ("{", "["):
            if text == "." and top == "{":
                fresh[-1] = True
            else:
                pending = True
        if kind in ("operator", "path") and "V" not in stack:
            _count_operator(counts, kind, limits)
        previous = text


# A word where a triple's subject could start is a keyword (FILTER, OPTIONAL, GRAPH, ORDER...)
# or a function's name, never a subject: those are variables, IRIs, prefixed names, blank
# nodes, literals and true/false.
_KEYWORD = re.compile(r"(?!(?:a|true|false)$)[A-Za-z_][\w-]*", re.IGNORECASE)


def _count_operator(counts: dict[str, int], kind: str, limits: ShapeLimits) -> None:
    counts[kind] += 1
    if counts["operator"] > limits.operators:
        raise UnsafeFilterError(
            f"the SPARQL query has over {limits.operators} operators (||, &&, =, <, +, ...); "
            "use VALUES or IN (...) for a long list of alternatives")
    if counts["path"] > limits.path_steps:
        raise UnsafeFilterError(f"the SPARQL query's property paths have over "
                                f"{limits.path_steps} steps (/, | or ^) in all; the limit is "
                                f"{limits.path_steps}")


def _add_patterns(in_group: list[int], counts: dict[str, int], added: int,
                  limits: ShapeLimits, joined: bool = False) -> None:
    """Count ``added`` more triple patterns in the innermost group (``joined``: a nested
    group, which the planner orders among the group's patterns, but holds none itself)."""
    in_group[-1] += added
    counts["patterns"] += 0 if joined else added
    if limits.group_patterns is not None and in_group[-1] > limits.group_patterns:
        raise UnsafeFilterError(
            f"a group of the SPARQL query has over {limits.group_patterns} triple patterns and "
            "nested groups (OPTIONAL, GRAPH, MINUS, { }), more than the planner orders in "
            "bounded time; use fewer, VALUES for alternative values, or UNION branches (each "
            "counted apart)")
    if limits.patterns is not None and counts["patterns"] > limits.patterns:
        raise UnsafeFilterError(f"the SPARQL query has over {limits.patterns} triple patterns; "
                                f"the limit is {limits.patterns}")


def refuse_service(query: str, prefixes: dict[str, str] | None = None) -> None:
    """Refuse a query that calls SERVICE (it would send a request to another endpoint), as
    the parser reads it (:func:`parser_sees_service`)."""
    refusal = service_refusal(query, prefixes)
    if refusal is not None:
        raise refusal


def iris_or_error(variable: str, iris: list[str], others: Sequence[str]) -> list[str]:
    """A filter's candidate ``iris``, unless its ``?variable`` bound values (``others``: the
    literals and blank nodes, as text) but no IRI: then the wrong variable is projected, and
    an empty answer would read as "nothing matched".

    Raises:
        SparqlError: values, none an IRI.
    """
    if iris or not others:
        return iris
    raise SparqlError(
        f"the filter's ?{variable} bound values and none is an IRI (such as {others[0][:80]}):"
        " a filter selects chunk or document IRIs; project the variable that holds them")


def _unbound(*terms: object) -> None:
    return None


def uses_similarity(sparql: str, prefixes: dict[str, str] | None = None) -> bool:
    """Whether ``sparql`` calls ``trails:similarity`` (a lexical check: under any prefix bound
    to the trails namespace, or as the full IRI).

    >>> uses_similarity('SELECT ?c WHERE { ?c ?p ?o } ORDER BY trails:similarity(?c, "x")')
    True
    >>> uses_similarity('SELECT ?c WHERE { ?c ?p "trails:similarity(" }')
    False
    """
    if f"<{SIMILARITY}>" in sparql:
        return True
    names = {name for name, iri in (prefixes or {"trails": TRAILS}).items() if iri == TRAILS}
    names |= {m.group(1) or "" for m in _PREFIX_DECLARATION.finditer(sparql) if m.group(2) == TRAILS}
    if not names:
        return False
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    return re.search(rf"(?<![\w:.-])(?:{alternatives}):similarity\b", code_only(sparql)) is not None
