"""The scanners that judge an update's text (ADR 0036): written for speed, they find exactly
what the grammar's terminals, as the SPARQL 1.1 grammar writes them, find.

The reference patterns below are the terminals written the plain way (``(char|escape)*``,
keywords under ``re.IGNORECASE`` with a lookbehind): the fast forms must match the same spans
on any text, so the audit graph's guard (trails.kg.reserved) refuses exactly what it did.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from trails.kg import reserved, sparql_text

REFERENCE_OPAQUE = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\[\s\S]|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\[^\n\r])*"'
    r"|'(?:[^'\\\n\r]|\\[^\n\r])*'"
    r'|<(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>'
    r"|#[^\n\r]*"
)
REFERENCE_PREFIX = re.compile(r"PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>", re.IGNORECASE)
REFERENCE_INSERT = re.compile(r"(?<![?$:@\w-])INSERT(?![\w:-])", re.IGNORECASE)
REFERENCE_VARIABLE_GRAPH = re.compile(r"(?<![?$:@\w-])GRAPH\s+[?$]", re.IGNORECASE)

# Texts made of the pieces these scanners turn on: quotes of both kinds (tripled too),
# escapes, IRIs' brackets and forbidden characters, comments, line breaks, keywords in any
# case (the Turkish I's included: IGNORECASE matches them for I), variables and prefixes.
PIECES = st.sampled_from([
    '"', "'", '"""', "'''", "\\", "\\u00e9", "\\U0001F600", "\\u12", "<", ">", "{", "}", "|",
    "^", "`", " ", "\t", "\n", "\r", "#", "a", "Z", "0", "_", "-", ":", "@", "?", "$", ".",
    "é", "İ", "ı", "insert", "INSERT", "InSeRt", "ınsert", "İNSERT", "graph", "GRAPH", "Graph",
    "prefix", "PREFIX", "Prefix", "p:", "urn:trails:audit", "?g", "$g", "x", "data",
])
TEXTS = st.lists(PIECES, max_size=40).map("".join)


def spans(pattern: re.Pattern[str], text: str) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_opaque_scanner_matches_the_grammars_terminals(text: str) -> None:
    assert spans(sparql_text._OPAQUE, text) == spans(REFERENCE_OPAQUE, text)


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_keyword_scanners_match_the_case_insensitive_forms(text: str) -> None:
    assert spans(reserved._PREFIX, text) == spans(REFERENCE_PREFIX, text)
    assert spans(reserved._INSERT, text) == spans(REFERENCE_INSERT, text)
    assert spans(reserved._VARIABLE_GRAPH, text) == spans(REFERENCE_VARIABLE_GRAPH, text)


def test_long_literals_and_iris_scan_whole() -> None:
    """The texts an ingest sends: long literals with escapes, many IRIs, one pass each."""
    literal = '"' + "word \\\"quoted\\\" \\n " * 2_000 + '"'
    text = f"INSERT DATA {{ <urn:a> <urn:b> {literal} . <urn:c\\u00e9> <urn:d> '''x''' }}"
    found = [m.group() for m in sparql_text._OPAQUE.finditer(text)]
    assert found == ["<urn:a>", "<urn:b>", literal, "<urn:c\\u00e9>", "<urn:d>", "'''x'''"]
