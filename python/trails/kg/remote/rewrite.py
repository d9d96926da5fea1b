"""SPARQL text rewrites for an endpoint: predeclared prefixes, and confining a query to scopes.

Pure functions of query text (pyoxigraph parses; nothing here talks to a server).

Confining a query to the default scope without a protocol dataset
-----------------------------------------------------------------

A server that cannot name its default graph in the SPARQL protocol (``oxigraph serve``) gets a
query in the default scope **without** a dataset (its default graph is then the store's
default graph) after :func:`default_scope_only` has removed every way out of it from the text:
``FROM`` and ``FROM NAMED`` clauses are deleted (embedded, the scope's dataset overrides them)
and each ``GRAPH t { ... }`` becomes an empty group binding no solution (embedded, the default
scope has no named graphs, so ``GRAPH`` matches nothing). The rewrite does not rely on its own
reading of the text: the SPARQL parser (pyoxigraph's, the parser of ``oxigraph serve``) checks
it. Every ``graph``/``from``/``service`` in the final text, wherever it stands, has one letter
changed (a letter for a letter, so strings, IRIs and comments keep their extent) and the result
must still parse, which it does only if none of them was a keyword. A text the rewrite cannot
handle is refused (:class:`UnsafeFilterError`), never sent.

``SERVICE`` is refused in every scoped query (:func:`refuse_service`): the server would send the
inner pattern to any endpoint, itself included, without the dataset.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pyoxigraph as ox

from trails.errors import SparqlError, UnsafeFilterError
from trails.kg.sparql import uses_similarity

__all__ = [
    "PROLOGUE_MARK",
    "QUERY_FORM",
    "caller_positions",
    "default_scope_only",
    "exclude_graphs",
    "graph_terms",
    "hoist_base",
    "query_form",
    "refuse_service",
    "refuse_similarity",
    "uses_graph",
    "whole_store_operations",
    "with_prefixes",
    "without_dataset_clauses",
]

# The predeclared prefixes take two lines before the caller's text (this mark, then them).
PROLOGUE_MARK = "#trails-prefixes\n"
_ERROR_AT = re.compile(r"error at (\d+):(\d+)")
# Virtuoso's parser: "SPARQL compiler, line 4: syntax error".
_COMPILER_LINE = re.compile(r"(SPARQL compiler, line )(\d+)")
# Parses texts locally; queries run on it only when they hold no SERVICE (nothing leaves).
_EMPTY = ox.Store()

# Strings (the four SPARQL forms), IRIs and comments: their content is never a keyword.
_OPAQUE = re.compile(
    r'"""(?:(?:"|"")?(?:[^"\\]|\\.))*"""'
    r"|'''(?:(?:'|'')?(?:[^'\\]|\\.))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r'|<(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>'
    r"|#[^\n\r]*"
)


def _keyword(word: str) -> re.Pattern[str]:
    # A keyword, not part of ?var, $var, prefix:name, a language tag or a longer word.
    return re.compile(rf"(?<![?$:@\w-]){word}(?![\w:-])", re.IGNORECASE)


_PREFIX_DECL = re.compile(r"(?<![?$:@\w-])PREFIX\s+([^\s:]*):", re.IGNORECASE)
_GRAPH = _keyword("GRAPH")
_FROM = _keyword("FROM")
_NAMED = re.compile(r"NAMED(?![\w:-])", re.IGNORECASE)
_VARIABLE = re.compile(r"[?$](\w+)")
_PNAME = re.compile(r"[^\s{}()<>\"'#,;]*:[^\s{}()<>\"'#,;]*")
# One letter of each word changes (a letter for a letter: the text's tokens keep their extent).
_MUTATIONS = {"graph": 3, "from": 2, "service": 3}
# The query form: the first of these keywords outside the prologue (no prologue word matches).
QUERY_FORM = re.compile(r"(?<![?$:@\w-])(SELECT|ASK|CONSTRUCT|DESCRIBE)(?![\w:-])", re.IGNORECASE)
# Updates on every graph at once: DROP/CLEAR ALL/NAMED.
_WHOLE_STORE = re.compile(r"(?<![?$:@\w-])(DROP|CLEAR)\s+(?:SILENT\s+)?(ALL|NAMED)(?![\w:-])",
                          re.IGNORECASE)
_SWAP = {"p": "q", "P": "Q", "o": "u", "O": "U", "v": "w", "V": "W"}

# Where blanked spans start and end in a text: {start: end}.
Spans = dict[int, int]


# -- prefixes and positions -----------------------------------------------------------------------

def with_prefixes(text: str, prefixes: Mapping[str, str]) -> str:
    """``text`` after one line declaring the ``prefixes`` it does not declare itself.

    A later declaration of the same prefix wins, so a text that declares one of them itself
    keeps its own meaning even where the check misses it.

    >>> with_prefixes("ASK { ?s ex:p ?o }", {"ex": "http://example.org/"})
    '#trails-prefixes\\nPREFIX ex: <http://example.org/>\\nASK { ?s ex:p ?o }'
    """
    declared = {m.group(1) for m in _PREFIX_DECL.finditer(_code(text)[0])}
    missing = [f"PREFIX {p}: <{iri}>" for p, iri in prefixes.items() if p not in declared]
    return PROLOGUE_MARK + " ".join(missing) + "\n" + text if missing else text


def caller_positions(message: str) -> str:
    """A parser message about a text with the prefix lines, with the caller's line numbers.

    >>> caller_positions("error at 3:7: expected a variable")
    'error at 1:7: expected a variable'
    """
    message = _ERROR_AT.sub(
        lambda m: f"error at {max(int(m.group(1)) - 2, 1)}:{m.group(2)}", message)
    return _COMPILER_LINE.sub(lambda m: f"{m.group(1)}{max(int(m.group(2)) - 2, 1)}", message)


def _message(error: SyntaxError, text: str) -> str:
    """The parser's message, in the caller's line numbers when ``text`` has the prefix lines."""
    return caller_positions(str(error)) if text.startswith(PROLOGUE_MARK) else str(error)


def query_form(text: str) -> str:
    """``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``: the form of the query ``text``
    (``SELECT`` when none is found; the server's parser then has the last word).

    >>> query_form('PREFIX ask: <https://x/> # ASK\\nconstruct { ?s ?p "SELECT" } WHERE { ?s ?p ?o }')
    'CONSTRUCT'
    """
    match = QUERY_FORM.search(_code(text)[0])
    return match.group(1).upper() if match else "SELECT"


def whole_store_operations(text: str) -> list[str]:
    """The ``DROP ALL``/``CLEAR NAMED``-like operations of the update ``text``, as written.

    >>> whole_store_operations('CLEAR SILENT ALL ; INSERT DATA { <x:a> <x:b> "DROP ALL" }')
    ['CLEAR SILENT ALL']
    """
    return [m.group() for m in _WHOLE_STORE.finditer(_code(text)[0])]


# -- refusals ------------------------------------------------------------------------------------

def refuse_similarity(text: str, prefixes: dict[str, str]) -> None:
    """Raise if ``text`` calls ``trails:similarity``, which only the embedded graph provides.

    Raises:
        SparqlError: it does.
    """
    if uses_similarity(text, prefixes):
        raise SparqlError(
            "trails:similarity is evaluated in this Python process and is only available on the "
            "embedded graph (OxigraphGraph): a SPARQL endpoint cannot call it. Rank by meaning "
            "with retrieve(..., mode='hybrid', sparql_filter=...) instead: the endpoint filters, "
            "trails ranks the candidates")


def refuse_service(text: str) -> None:
    """Raise unless the parser sees no SERVICE keyword in ``text``.

    Raises:
        UnsafeFilterError: ``text`` uses SERVICE (or does not parse).
    """
    if "service" not in text.lower():
        return
    error = _parses(_mutate(text, ["service"]))
    if error is not None:
        raise UnsafeFilterError(
            "a query confined to scopes cannot use SERVICE: the server would send its pattern "
            "to another endpoint (or to itself) outside the scopes; remove the SERVICE clause "
            f"(or the query does not parse: {_message(error, text)})")


# -- the default scope without a dataset ---------------------------------------------------------

def default_scope_only(text: str) -> str:
    """The query confined to the store's default graph when sent without a dataset.

    ``FROM``/``FROM NAMED`` clauses are removed and each ``GRAPH t { P }`` becomes
    ``{ VALUES (vars of t and P) { } }``, which, like GRAPH over no named graphs, has no
    solution. The result must parse with no ``graph``/``from``/``service`` keyword left.

    >>> default_scope_only("SELECT ?s FROM <g> WHERE { GRAPH ?g { ?s ?p ?o } }")
    'SELECT ?s   WHERE { { VALUES (?g ?s ?p ?o) { } } }'

    Raises:
        SparqlError: the query does not parse.
        UnsafeFilterError: it uses GRAPH or FROM in a form the rewrite cannot remove.
    """
    rewritten = _apply(text, _edits(text))
    if _parses(_mutate(rewritten, _MUTATIONS)) is None:
        return rewritten
    original = _parses(_mutate(text, ["service"]))
    if original is not None:
        raise SparqlError(f"SPARQL query does not parse: {_message(original, text)}")
    raise UnsafeFilterError(
        "this query uses GRAPH or FROM in a form that trails cannot confine to the default "
        "scope on an endpoint that cannot name its default graph; in the default scope "
        "GRAPH matches nothing and FROM is ignored, so remove them")


def without_dataset_clauses(text: str) -> str:
    """The query without its ``FROM``/``FROM NAMED`` clauses, checked by the parser.

    For a server that adds a text's dataset clauses to the protocol's dataset (Virtuoso)
    instead of letting the protocol's replace them: embedded, a scope's dataset overrides
    them, so removing them keeps the meaning. The result must parse with no ``from`` or
    ``service`` keyword left.

    >>> without_dataset_clauses("SELECT ?s FROM <g> FROM NAMED <h> WHERE { ?s ?p ?o }")
    'SELECT ?s     WHERE { ?s ?p ?o }'

    Raises:
        SparqlError: the query does not parse (as SPARQL 1.1: server extensions such as
            Virtuoso's ``DEFINE`` are not accepted in a scoped query).
        UnsafeFilterError: it uses FROM in a form the rewrite cannot remove.
    """
    code, spans = _code(text)
    edits = [(match.start(), end, " ") for match in _FROM.finditer(code)
             if (end := _dataset_clause_end(text, code, spans, match.end())) is not None]
    rewritten = _apply(text, edits)
    if _parses(_mutate(rewritten, ["from", "service"])) is None:
        return rewritten
    original = _parses(_mutate(text, ["service"]))
    if original is not None:
        raise SparqlError(f"SPARQL query does not parse: {_message(original, text)}")
    raise UnsafeFilterError(  # pragma: no cover - every FROM keyword starts a dataset clause
        "this query uses FROM in a form that trails cannot remove; a scoped query's dataset "
        "is its scopes, so remove the FROM clauses")


def uses_graph(text: str) -> bool:
    """Whether the query ``text`` may use the GRAPH keyword: true unless the parser proves it
    does not (a text it cannot parse may).

    >>> uses_graph('SELECT ?graph WHERE { ?graph <x:graph> "graph" }'), uses_graph("ASK{GRAPH ?g{}}")
    (False, True)
    """
    return "graph" in text.lower() and _parses(_mutate(text, ["graph", "service"])) is not None


def graph_terms(text: str) -> list[str]:
    """The term after each GRAPH keyword of ``text``, as written (an IRI, a prefixed name or a
    variable; ``""`` where none is found); strings, IRIs and comments are no keywords.

    >>> graph_terms('INSERT { GRAPH <urn:a> { ?s ?p "GRAPH <x>" } } WHERE { GRAPH ?g { } }')
    ['<urn:a>', '?g']
    """
    code, spans = _code(text)
    terms = []
    for match in _GRAPH.finditer(code):
        start = _skip_space(text, code, spans, match.end())
        end = _term_end(text, code, spans, start)
        terms.append("" if end is None else text[start:end])
    return terms


def exclude_graphs(text: str, excluded: list[str]) -> str:
    """Each ``GRAPH t { P }`` of the query as ``{ GRAPH t { P } FILTER(t NOT IN (excluded)) }``,
    for a server whose ``GRAPH`` reaches graphs that are not named graphs of the store
    (Virtuoso: its own graphs, and the graph that holds the default scope).

    Only insertions: nested patterns are wrapped each in turn, and a constant ``t``, prefixed
    or relative, is compared by the server as it reads it. The parser checks that every
    ``graph`` keyword left is one that was wrapped.

    >>> exclude_graphs("ASK { GRAPH ?g { ?s ?p ?o } }", ["urn:a"])
    'ASK { { GRAPH ?g { ?s ?p ?o } FILTER(!BOUND(?g) || ?g NOT IN (<urn:a>)) } }'

    Raises:
        SparqlError: the query does not parse.
        UnsafeFilterError: it uses GRAPH in a form the rewrite cannot wrap.
    """
    if "graph" not in text.lower():
        return text
    code, spans = _code(text)
    listed = ", ".join(f"<{g}>" for g in excluded)
    inserts: list[tuple[int, str]] = []
    wrapped: list[int] = []
    for match in _GRAPH.finditer(code):
        term_start = _skip_space(text, code, spans, match.end())
        term_end = _term_end(text, code, spans, term_start)
        found = _graph_pattern_end(text, code, spans, match.end())
        if term_end is None or found is None:
            continue
        term = text[term_start:term_end]
        # A variable the pattern leaves unbound (a nested GRAPH <g> in Oxigraph) names no graph.
        test = f"!BOUND({term}) || {term}" if term[0] in "?$" else term
        inserts += [(match.start(), "{ "), (found[0], f" FILTER({test} NOT IN ({listed})) }}")]
        wrapped.append(match.start())
    out, last = [], 0
    for position, piece in sorted(inserts, key=lambda item: item[0]):
        out += [text[last:position], piece]
        last = position
    rewritten = "".join(out) + text[last:]
    # Where the wrapped keywords are now: after every piece inserted at or before them.
    kept = sorted(p + sum(len(piece) for at, piece in inserts if at <= p) for p in wrapped)
    parts, last = [], 0
    for start in kept:  # the text between wrapped keywords has every graph keyword changed
        parts += [_mutate(rewritten[last:start], ["graph", "service"]), rewritten[start:start + 5]]
        last = start + 5
    if _parses("".join(parts) + _mutate(rewritten[last:], ["graph", "service"])) is None:
        return rewritten
    original = _parses(_mutate(text, ["service"]))
    if original is not None:
        raise SparqlError(f"SPARQL query does not parse: {_message(original, text)}")
    raise UnsafeFilterError(
        "this query uses GRAPH in a form that trails cannot rewrite for this endpoint; write "
        "GRAPH followed by an IRI, a prefixed name or a variable, then { ... }")


def hoist_base(text: str) -> tuple[str, str]:
    """``(BASE declaration, text without it)`` when ``text`` starts with one (after white
    space and comments), else ``("", text)``; the declaration's place is left blank, so
    positions in the text stay where they were.

    >>> hoist_base("BASE <https://x/> SELECT * { <a> ?p ?o }")
    ('BASE <https://x/>', '                  SELECT * { <a> ?p ?o }')
    """
    code, spans = _code(text)
    start = _skip_space(text, code, spans, 0)
    if code[start:start + 4].upper() != "BASE":
        return "", text
    iri = _skip_space(text, code, spans, start + 4)
    if iri not in spans or text[iri] != "<":
        return "", text
    end = spans[iri]
    return text[start:end], text[:start] + " " * (end - start) + text[end:]


def _edits(text: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) of each dataset clause and each GRAPH group in ``text``."""
    code, spans = _code(text)
    edits: list[tuple[int, int, str]] = []
    for match in _FROM.finditer(code):
        end = _dataset_clause_end(text, code, spans, match.end())
        if end is not None:
            edits.append((match.start(), end, " "))
    for match in _GRAPH.finditer(code):
        if any(start <= match.start() < end for start, end, _ in edits):
            continue  # inside a GRAPH group already replaced
        found = _graph_pattern_end(text, code, spans, match.end())
        if found is not None:
            end, variables = found
            names = " ".join(f"?{v}" for v in variables)
            empty = f"{{ VALUES ({names}) {{ }} }}" if variables else "{ FILTER(false) }"
            edits.append((match.start(), end, empty))
    return edits


def _apply(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with each non-overlapping edit applied (the first of overlapping ones wins)."""
    out, last = [], 0
    for start, end, replacement in sorted(edits):
        if start < last:
            continue
        out += [text[last:start], replacement]
        last = end
    return "".join(out) + text[last:]


def _code(text: str) -> tuple[str, Spans]:
    """``text`` with strings, IRIs and comments blanked, and {start: end} of each blank."""
    spans: Spans = {}

    def blank(match: re.Match[str]) -> str:
        spans[match.start()] = match.end()
        return " " * len(match.group())

    return _OPAQUE.sub(blank, text), spans


def _mutate(text: str, words: Iterable[str]) -> str:
    """Every occurrence (any case, anywhere) of ``words`` with one letter changed."""
    pattern = re.compile("|".join(words), re.IGNORECASE)

    def change(match: re.Match[str]) -> str:
        word = match.group()
        i = _MUTATIONS[word.lower()]
        return word[:i] + _SWAP[word[i]] + word[i + 1 :]

    return pattern.sub(change, text)


def _parses(text: str) -> SyntaxError | None:
    """Parse ``text`` locally (evaluated on an empty store: call only on SERVICE-free text)."""
    try:
        _EMPTY.query(text)
    except SyntaxError as exc:
        return exc
    except (RuntimeError, ValueError, OSError):  # parsed; evaluation on nothing failed
        return None
    return None


def _skip_space(text: str, code: str, spans: Spans, pos: int) -> int:
    """The next position that is not white space or a comment (an IRI, blanked, counts)."""
    while pos < len(code) and code[pos].isspace():
        if pos in spans and text[pos] == "<":
            break
        pos = spans.get(pos, pos + 1)
    return pos


def _term_end(text: str, code: str, spans: Spans, pos: int) -> int | None:
    """End of the variable, IRI or prefixed name at ``pos``, or None."""
    if pos in spans and text[pos] == "<":
        return spans[pos]
    for pattern in (_VARIABLE, _PNAME):
        match = pattern.match(code, pos)
        if match and match.end() > pos:
            return match.end()
    return None


def _dataset_clause_end(text: str, code: str, spans: Spans, pos: int) -> int | None:
    pos = _skip_space(text, code, spans, pos)
    named = _NAMED.match(code, pos)
    if named:
        pos = _skip_space(text, code, spans, named.end())
    return _term_end(text, code, spans, pos)


def _graph_pattern_end(text: str, code: str, spans: Spans,
                       pos: int) -> tuple[int, list[str]] | None:
    start = _skip_space(text, code, spans, pos)
    term_end = _term_end(text, code, spans, start)
    if term_end is None:
        return None
    brace = _skip_space(text, code, spans, term_end)
    if brace >= len(code) or code[brace] != "{":
        return None
    depth = 0
    for i in range(brace, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                variables = dict.fromkeys(_VARIABLE.findall(code, start, i))
                return i + 1, list(variables)
    return None
