"""Why a SPARQL text does not parse, in one line a person can act on.

pyoxigraph's parser says what token it expected, listing Unicode ranges (a typo'd prefix gives
some 500 characters of them) and, for an update sent as a query, "expected CONSTRUCT". The
commonest mistakes are named instead: a prefix nobody declared, an update keyword where a
query was expected, and a relative IRI (``<isPartOf>``) with no BASE; a misspelt keyword
(``LIMT``) is named with the one meant. Anything else keeps the parser's words, ranges shortened.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from trails.kg.sparql_text import code_only, iris_only

__all__ = ["is_update", "parse_problem", "parse_reason"]

_UPDATE_WORDS = re.compile(
    r"\b(INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY|WITH)\b", re.IGNORECASE)
_PROLOGUE = re.compile(r"(?is)^\s*((PREFIX\s+[\w.-]*:|BASE)\s*)*")
_DECLARED = re.compile(r"PREFIX\s+([A-Za-z][\w.-]*)?:", re.IGNORECASE)
# A prefixed name: a prefix (possibly empty) and a colon, not inside an IRI, string or
# variable, and not a declaration.
_PREFIXED = re.compile(r"(?<![\w?$:.-])([A-Za-z][\w.-]*)?:(?=[\w%\\]|\s|$)")
_POSITION = re.compile(r"error at (\d+):(\d+)")
_RANGES = re.compile(r"\[[^\]]*\\u\{[^\]]*\](\s*\|\s*\[[^\]]*\])*|\['[^\]]*\]")


def is_update(text: str) -> bool:
    """Whether ``text`` starts (after its prologue) with an update's keyword."""
    body = _PROLOGUE.sub("", code_only(text))  # IRIs blanked: a prologue is keywords, names
    return bool(_UPDATE_WORDS.match(body))


def parse_problem(text: str, prefixes: Mapping[str, str], error: str) -> str:
    """One line saying why ``text`` does not parse ("SPARQL query does not parse: ..."),
    given the parser's ``error`` and the prefixes the graph declares for every query."""
    return "SPARQL query does not parse: " + parse_reason(text, prefixes, error)


def parse_reason(text: str, prefixes: Mapping[str, str], error: str) -> str:
    """Why ``text`` does not parse, after "does not parse: " (a query's or a filter's)."""
    if not code_only(text).strip():  # the parser would expect "[_]" at its end
        return ("the text is empty (or only comments); write a SELECT, ASK, CONSTRUCT or "
                "DESCRIBE query")
    if is_update(text):
        word = _UPDATE_WORDS.match(_PROLOGUE.sub("", code_only(text)))
        keyword = word.group(1).upper() if word else "an update"
        return (f"this is a SPARQL update ({keyword}), not a query: queries are read-only. "
                "Change documents with ingest and delete, or the graph with kg.update()")
    code = code_only(text)
    declared = set(prefixes) | {m.group(1) or "" for m in _DECLARED.finditer(code)}
    for match in _PREFIXED.finditer(code):
        name = match.group(1) or ""
        if name in declared or _is_declaration(code, match.start()):
            continue
        line = code.count("\n", 0, match.start()) + 1
        close = difflib.get_close_matches(name, sorted(declared), n=1)
        hint = f"did you mean `{close[0]}:`? " if close else ""
        return (f"unknown prefix `{name}:` (line {line}); {hint}declare it with PREFIX "
                f"{name}: <...>, or use one of {', '.join(f'{p}:' for p in sorted(declared))}")
    position = _POSITION.search(error)
    where = f"at line {position.group(1)}, column {position.group(2)}: " if position else ""
    relative = _relative_iri(text, _offset(text, position) if position else len(text))
    if relative is not None:
        return (f"{where}<{relative}> is a relative IRI, and the query declares no BASE to "
                f"resolve it against; write the whole IRI (<https://...>), a prefixed name "
                f"(schema:..., trails:..., or one you declare with PREFIX), or BASE <...>")
    words = re.sub(r"(a name character, )+a name character", "a name character",
                   _RANGES.sub("a name character", _POSITION.sub("", error)))
    return where + " ".join(words.replace("error :", "").split()).lstrip(": ") + _misspelt(code)


# SPARQL's keywords, then its functions:
# a bare word that is none of them, but close to one, is named with the one meant.
_KEYWORDS = (
    "BASE", "PREFIX", "SELECT", "CONSTRUCT", "DESCRIBE", "ASK", "WHERE", "FROM", "NAMED",
    "GRAPH", "OPTIONAL", "UNION", "MINUS", "FILTER", "BIND", "VALUES", "SERVICE", "SILENT",
    "UNDEF", "AS", "ORDER", "GROUP", "BY", "ASC", "DESC", "LIMIT", "OFFSET", "HAVING",
    "DISTINCT", "REDUCED", "EXISTS", "NOT", "IN", "LATERAL", "VERSION",
)
_FUNCTIONS = (
    "COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT", "SEPARATOR", "STR", "LANG",
    "LANGMATCHES", "DATATYPE", "BOUND", "IRI", "URI", "BNODE", "RAND", "ABS", "CEIL", "FLOOR",
    "ROUND", "CONCAT", "STRLEN", "UCASE", "LCASE", "ENCODE_FOR_URI", "CONTAINS", "STRSTARTS",
    "STRENDS", "STRBEFORE", "STRAFTER", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS",
    "TIMEZONE", "TZ", "NOW", "UUID", "STRUUID", "MD5", "SHA1", "SHA256", "SHA384", "SHA512",
    "COALESCE", "IF", "STRLANG", "STRDT", "SAMETERM", "ISIRI", "ISURI", "ISBLANK", "ISLITERAL",
    "ISNUMERIC", "REGEX", "SUBSTR", "REPLACE", "TRIPLE", "SUBJECT", "PREDICATE", "OBJECT",
    "ISTRIPLE", "LANGDIR", "STRLANGDIR", "HASLANG", "HASLANGDIR",
)
_KNOWN = {*_KEYWORDS, *_FUNCTIONS, "A", "TRUE", "FALSE"}
# A bare word: not a variable, a prefixed name, a language tag or part of a number.
_BARE = re.compile(r"(?<![\w?$:@.\-])([A-Za-z_][A-Za-z0-9_]*)(?![\w.\-]*:)")


def _misspelt(code: str) -> str:
    """``; `LIMT` is no SPARQL keyword: did you mean LIMIT?`` for the first bare word of
    ``code`` (strings, IRIs and comments blanked) close to a keyword or function; else ""."""
    for match in _BARE.finditer(code):
        word = match.group(1)
        if word.upper() in _KNOWN:
            continue
        close = difflib.get_close_matches(word.upper(), [*_KEYWORDS, *_FUNCTIONS], n=1,
                                          cutoff=0.75)
        if close:
            return f"; `{word}` is no SPARQL keyword: did you mean {close[0]}?"
    return ""


def _relative_iri(text: str, before: int) -> str | None:
    """The first IRI written in ``text`` without a scheme before offset ``before`` (where
    the parser stopped), when no BASE is declared: the parser cannot read it, whatever it
    says it expected there."""
    code = iris_only(text)  # strings and comments blanked: no "<b>" inside a literal
    if re.search(r"\bBASE\s*<", code, re.IGNORECASE):
        return None
    return next((m.group(1) for m in _IRI.finditer(code, 0, before + 1)
                 if not _SCHEME.match(m.group(1))), None)


def _offset(text: str, position: re.Match[str]) -> int:
    """The offset of the parser's 1-based line and column in ``text``."""
    lines = text.split("\n")
    line = min(int(position.group(1)), len(lines))
    return sum(len(x) + 1 for x in lines[:line - 1]) + int(position.group(2))


_IRI = re.compile(r"<([^<>\"{}|^`\\\s]*)>")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _is_declaration(code: str, start: int) -> bool:
    return bool(re.search(r"PREFIX\s+$", code[:start], re.IGNORECASE))
