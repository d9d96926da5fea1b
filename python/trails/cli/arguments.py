"""What the command line reads from its arguments: SPARQL text (inline, a file, or stdin),
``--bind`` values typed as RDF terms, and ``trails query``'s options as the fields of a
search (``trails.SearchRequest``, which checks them). Light on purpose: a query a service
answers (:mod:`trails.cli.launch`) reads its arguments with these and loads no engine."""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trails.errors import ConfigurationError, InvalidArgumentError
from trails.kg.bindings import check_bindings, ill_typed
from trails.kg.terms import IRI

__all__ = ["SEARCH_FLAGS", "SEARCH_OPTIONS", "bindings", "parse_binding", "read_query",
           "search_fields"]

# `trails query`'s options that are fields of a search (trails.SearchRequest), by field: the
# command declares these, the console script forwards them to a service (trails.cli.launch).
SEARCH_OPTIONS: dict[str, tuple[str, ...]] = {
    "mode": ("--mode",), "k": ("--k", "-k"), "filter": ("--sparql",), "bindings": ("--bind",),
    "scopes": ("--scope",), "fusion": ("--fusion",), "min_score": ("--min-score",),
    "fallback": ("--fallback",), "now": ("--now",), "why": ("--why",)}
# The field each flag sets.
SEARCH_FLAGS = {flag: field for field, flags in SEARCH_OPTIONS.items() for flag in flags}
# The fields given as repeated options, and the one given as a flag.
REPEATED = ("bindings", "scopes")
FLAG = "why"


def read_query(argument: str, option: str = "QUERY_OR_FILE") -> str:
    """The query itself, the text of the file it names, or stdin for ``-``.

    A UTF-8 byte-order mark at the start of a file or stdin is skipped.

    Raises:
        ConfigurationError: ``argument`` is empty, or names a query file (``.rq``,
            ``.sparql``) that does not exist, or a folder; or the file or stdin cannot be read as UTF-8 text.
    """
    if not argument:  # as a path, "" would be the working directory: "a folder"
        raise ConfigurationError(f"{option} is empty (a variable that is not set?): give the "
                                 "query itself, a file holding it, or - for stdin")
    if argument == "-":
        stream = getattr(sys.stdin, "buffer", None)
        return (sys.stdin.read() if stream is None
                else _utf8(stream.read(), "stdin", option).removeprefix("\ufeff"))
    path = Path(argument)
    try:
        is_file = "{" not in argument and path.is_file()
        is_folder = "{" not in argument and path.is_dir()
    except (OSError, ValueError):  # a long query is not a valid path
        is_file = is_folder = False
    if is_folder:
        raise ConfigurationError(f"{option}: {argument} is a folder, not a query file; give "
                                 "the file that holds the query (.rq), or the query itself")
    if is_file:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"{option}: cannot read the query file {argument} "
                                     f"({exc}); give a readable UTF-8 file, or the query "
                                     "itself") from None
        return _utf8(data, argument, option).removeprefix("\ufeff")  # a BOM, as the service skips
    if path.suffix in (".rq", ".sparql") and " " not in argument:
        raise ConfigurationError(f"no such query file: {argument} ({option} takes a file or "
                                 "the query itself)")
    return argument


def _utf8(data: bytes, what: str, option: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{option}: {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); convert the query to UTF-8") from None


# -- SPARQL bindings ---------------------------------------------------------------------------

_BIND_TYPES = ("str", "int", "float", "bool", "date", "datetime", "iri")
# The XML Schema type each --bind type is bound as: a value that is none is refused in the
# words a literal of that type is (trails.kg.bindings.ill_typed).
_XSD_TYPES = {"int": "integer", "float": "double", "bool": "boolean", "date": "date",
              "datetime": "dateTime"}
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*")


def parse_binding(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` or ``NAME:TYPE=VALUE`` -> (name, typed value) for a SPARQL binding.

    Without a type: ``<iri>`` is an IRI, ``true``/``false`` a bool, then int, float, ISO date,
    ISO datetime, and anything else a string. TYPE is one of str, int, float, bool, date,
    datetime, iri.

    >>> parse_binding("since=2024-01-01"), parse_binding("n:str=42")
    (('since', datetime.date(2024, 1, 1)), ('n', '42'))

    Raises:
        InvalidArgumentError: the option is malformed, names no variable, or its value does
            not parse as its type (a date that is no date, an IRI that is not one).
    """
    target, sep, raw = text.partition("=")
    name, _, kind = target.partition(":")
    if not sep or not name:
        raise InvalidArgumentError(f"--bind needs NAME=VALUE or NAME:TYPE=VALUE, got {text!r}")
    if kind and kind not in _BIND_TYPES:
        raise InvalidArgumentError(f"--bind type {kind!r} is not one of {', '.join(_BIND_TYPES)}")
    kind = kind or _guess_type(raw)
    try:
        value = _typed(raw, kind)
    except (ValueError, OverflowError) as exc:
        said = ill_typed(raw, _XSD_TYPES[kind]) if kind in _XSD_TYPES else str(exc)
        raise InvalidArgumentError(f"--bind {text!r}: {said}") from None
    check_bindings({name: value})  # a name or value no query could take: said as retrieve() says it
    return name, value


def _guess_type(raw: str) -> str:
    if raw.startswith("<") and raw.endswith(">"):
        return "iri"
    if raw in ("true", "false"):
        return "bool"
    for kind, pattern in (("int", _INT), ("float", _FLOAT), ("date", _DATE),
                          ("datetime", _DATETIME)):
        if pattern.fullmatch(raw):
            return kind
    return "str"


_PARSERS: dict[str, Callable[[str], Any]] = {
    "str": str, "int": int, "float": float, "date": dt.date.fromisoformat,
    "datetime": dt.datetime.fromisoformat, "iri": lambda value: IRI(value.strip("<>"))}


def _typed(raw: str, kind: str) -> Any:
    if kind == "bool":
        if raw not in ("true", "false"):
            raise ValueError("a bool is true or false")
        return raw == "true"
    return _PARSERS[kind](raw)


def bindings(values: list[str]) -> dict[str, Any] | None:
    """The ``--bind`` options as a bindings mapping (None when there are none).

    Raises:
        InvalidArgumentError: a malformed ``--bind``, or a name given twice (one would be
            dropped, and two values read like "either").
    """
    found: dict[str, Any] = {}
    given: dict[str, str] = {}
    for value in values:
        name, term = parse_binding(value)
        if name in found:
            raise InvalidArgumentError(
                f"--bind {name} is given twice ({given[name]!r} and {value!r}): a variable is "
                f"bound to one value; to match any of several, write VALUES ?{name} "
                "{ ... } in the query")
        found[name], given[name] = term, value
    return found or None


# -- a search --------------------------------------------------------------------------------

def search_fields(text: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of the search ``trails query TEXT`` asks for, from its options by field
    name (None, ``[]`` or ``False``: not given, the request's default holds).

    Read, not checked: trails.SearchRequest checks every field, so a mistake is refused with
    the message Python, HTTP and MCP give for it. The filter is read from its file or stdin,
    ``--bind`` values are typed, and a number is read as JSON reads one (``-k 1.5`` is the
    float 1.5, ``-k ten`` the text ``'ten'``).

    >>> search_fields("rails", {"k": "3", "min_score": "nan", "scopes": [], "why": False})
    {'query': 'rails', 'k': 3, 'min_score': nan}

    Raises:
        InvalidArgumentError, ConfigurationError: a malformed ``--bind``, an unreadable
            filter file.
    """
    fields: dict[str, Any] = {"query": text}
    for name, value in options.items():
        if value is None or value is False or value == []:
            continue
        if name == "filter":
            value = read_query(value, "--sparql")
        elif name == "bindings":
            value = bindings(value)
        elif name in ("k", "min_score"):
            value = _number(value)
        fields[name] = value
    return fields


def _number(text: str) -> int | float | str:
    """``text`` as the number it spells, else itself (for the request to refuse, naming it)."""
    try:
        if _INT.fullmatch(text):
            return int(text)
        if _FLOAT.fullmatch(text) or text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            return float(text)
    except ValueError:  # an int too long to convert
        pass
    return text
