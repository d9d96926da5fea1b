"""SPARQL text as code: its strings, IRIs and comments blanked, so that a keyword, a name or a
prefix is looked for only where the parser would read one (:mod:`trails.kg.sparql`,
:mod:`trails.kg.parse_errors` and the bindings, planning and rewriting read queries so)."""

from __future__ import annotations

import re

__all__ = ["NAME_CHAR", "STRING", "WIDE_CHAR", "WORD_CHAR", "code_only", "iri_refs", "iris_only",
           "terms_only"]

# Strings, IRIs and comments can contain any word; blank them before looking for keywords.
# Each alternative is the SPARQL 1.1 grammar's own terminal (STRING_LITERAL_LONG1/2 with
# escapes, STRING_LITERAL1/2 without raw line breaks, IRIREF with \u/\U escapes, a comment
# ending at LF *or* CR), so the scanner never hides text the parser reads as code. Each is
# written "unrolled" (a run of plain characters, then escapes each followed by such a run):
# the same text as ``(plain|escape)*``, which ``re`` walks one character and one
# alternation at a time, 2-3x slower on the long literals of an ingest's updates.
# The four string terminals alone: the tokenizers of kg/planning.py and kg/hand_links.py.
STRING = (
    r'"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""'
    r"|'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''"
    r'|"[^"\\\n\r]*(?:\\[^\n\r][^"\\\n\r]*)*"'
    r"|'[^'\\\n\r]*(?:\\[^\n\r][^'\\\n\r]*)*'")
# One character of a name (a variable's, a prefixed name's) as the tokenizers read one:
# [A-Za-z_0-9\u00b7\u00c0-\ufffd]; [\u00c0-\ufffd] alone; and [\w\u00b7\u00c0-\ufffd]. Each
# is written through the complement of the wide range, whatever the pattern's flags: ``re``
# compiles a range one code point at a time, ~3 ms for these 65,000 each time a pattern names
# them (tens of milliseconds in a process's first filter), and a complement in ~0.2 ms. They
# match the same code points (tests/test_sparql_text.py checks every one).
NAME_CHAR = r"(?-i:[^\x00-/:-@\[-^`{-\xb6\xb8-\xbf\ufffe-\U0010ffff])"
WIDE_CHAR = r"(?-i:[^\x00-\xbf\ufffe-\U0010ffff])"
WORD_CHAR = rf"(?:[\w\u00b7]|{WIDE_CHAR})"
_OPAQUE = re.compile(
    STRING
    + r'|<[^<>"{}|^`\\\x00-\x20]*(?:(?:\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})'
    r'[^<>"{}|^`\\\x00-\x20]*)*>'
    r"|#[^\n\r]*"
)


def code_only(query: str) -> str:
    """``query`` with strings, IRIs and comments blanked (same length, same positions)."""
    return _OPAQUE.sub(lambda m: " " * len(m.group()), query)


def terms_only(query: str) -> str:
    """``query`` with each string and IRI one short name, ``x:``, and each comment a blank:
    where a triple pattern made of IRIs and strings alone still has tokens to count.

    >>> terms_only('{ <a:s> <a:p> "o" } # c').split()
    ['{', 'x:', 'x:', 'x:', '}']
    """
    return _OPAQUE.sub(lambda m: " " if m.group()[:1] == "#" else " x: ", query)


def iris_only(query: str) -> str:
    """``query`` with strings and comments blanked, its IRIs kept (same length and positions):
    where ``PREFIX`` and ``BASE`` declarations can be read, whatever lies between their parts.

    >>> iris_only('PREFIX # p: <x:>\\n p: <y:> "z"').split()
    ['PREFIX', 'p:', '<y:>']
    """
    return _OPAQUE.sub(lambda m: m.group() if m.group()[:1] == "<" else " " * len(m.group()), query)


def iri_refs(query: str) -> list[str]:
    """The IRIs written out in ``query`` (not those in its strings or comments).

    >>> iri_refs('INSERT DATA { <x:a> <x:b> "<x:c>" } # <x:d>')
    ['x:a', 'x:b']
    """
    return [m.group()[1:-1] for m in _OPAQUE.finditer(query) if m.group().startswith("<")]
