"""What every command shares: the context directory, the model spec, bindings and output."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from trails.backends import DEFAULT_MODEL, Settings, new_embedder
from trails.config import CONFIG_FILE
from trails.context import Context
from trails.errors import ConfigurationError, ContextLockedError, InvalidArgumentError
from trails.kg.bindings import check_bindings
from trails.kg.terms import IRI
from trails.vector.embedders.base import Embedder

__all__ = [
    "DEFAULT_MODEL",
    "EXIT_BROKEN_CONTEXT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_PARTIAL",
    "EXIT_USER_ERROR",
    "MAX_DIM",
    "bindings",
    "context",
    "db_option",
    "has_context",
    "make_embedder",
    "model_choice",
    "open_context",
    "parse_binding",
    "print_json",
    "table",
]

EXIT_USER_ERROR = 1      # a mistake in the command, its arguments or its input
EXIT_PARTIAL = 2         # some documents or checks failed, the rest succeeded
EXIT_BROKEN_CONTEXT = 3  # the context's files cannot be read or written (StorageError)
EXIT_INTERNAL = 4        # a bug in trails: one line on stderr, TRAILS_DEBUG=1 for the traceback
EXIT_INTERRUPTED = 130   # Ctrl-C (SIGINT), as shells report 128 + the signal's number

# The most dimensions --model mock:DIM and --openai-dim take (Qdrant's own limit; the
# embedded sqlite-vec store holds at most 8192, which `trails init` checks).
MAX_DIM = 65_536


# -- the context directory ---------------------------------------------------------------------

def db_option(ctx: typer.Context) -> Path:
    """The directory ``--db`` (or ``$TRAILS_DB``) names; a user error when there is none."""
    db: Path | None = ctx.find_root().obj
    if db is None:
        raise ConfigurationError("no context directory: pass --db DIR or set TRAILS_DB")
    return db


def has_context(db: Path) -> bool:
    """Whether ``db`` holds a trails context (its ``trails.json``)."""
    return (db / CONFIG_FILE).is_file()


@contextmanager
def open_context(ctx: typer.Context, *, write: bool = False) -> Iterator[Context]:
    """Open the existing context named by --db; read-only unless ``write``."""
    db = db_option(ctx)
    if not has_context(db):
        raise ConfigurationError(f"{db} holds no trails context; create it with "
                                 f"`trails --db {db} init`")
    with context(db, read_only=not write) as opened:
        yield opened


def context(db: Path, **options: Any) -> Context:
    """``Context.open``, with the other-writer error reworded for the command line."""
    try:
        return Context.open(db, **options)
    except ContextLockedError as exc:
        if "this process" in str(exc):  # a handle this process forgot to close: said as is
            raise
        raise ContextLockedError(
            f"{db} is open for writing in another process (one writer at a time); wait for it "
            "to finish. Read-only commands (query, sparql, stats, verify) work meanwhile.") from exc


# -- the embedder ------------------------------------------------------------------------------

def model_choice(spec: str, *, openai_base_url: str | None = None,
                 openai_dim: int | None = None) -> tuple[str, Settings]:
    """The embedder backend and settings a ``--model`` value names.

    ``mock`` or ``mock:DIM``; ``openai:MODEL`` (with the OpenAI options); anything else is a
    sentence-transformers model name or directory.

    >>> model_choice("openai:text-embedding-3-small", openai_dim=256)
    ('openai', {'model': 'text-embedding-3-small', 'dim': 256})
    """
    kind, sep, rest = spec.partition(":")
    if kind == "openai" and sep:
        settings: Settings = {"model": rest}
        if openai_dim is not None:
            settings["dim"] = openai_dim
        if openai_base_url is not None:
            settings["base_url"] = openai_base_url
        return "openai", settings
    if openai_base_url is not None or openai_dim is not None:
        raise InvalidArgumentError("--openai-base-url and --openai-dim apply to --model openai:MODEL")
    if kind == "mock":
        if not sep:
            return "mock", {}
        if not rest.isdigit() or not 1 <= int(rest) <= MAX_DIM:
            raise InvalidArgumentError(f"--model mock:DIM needs an integer DIM from 1 to "
                                       f"{MAX_DIM}, got {spec!r}")
        return "mock", {"dim": int(rest)}
    return "sentence-transformers", {"model": spec}


def make_embedder(spec: str, *, openai_base_url: str | None = None,
                  openai_dim: int | None = None) -> Embedder:
    """The embedder a ``--model`` value names (see :func:`model_choice`).

    >>> make_embedder("mock:8").identity.describe()
    'trails-mock-bow:seed=0 (dim=8, normalized=True)'
    """
    return new_embedder(*model_choice(spec, openai_base_url=openai_base_url,
                                      openai_dim=openai_dim))


# -- SPARQL bindings ---------------------------------------------------------------------------

_BIND_TYPES = ("str", "int", "float", "bool", "date", "datetime", "iri")
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
    try:
        value = _typed(raw, kind or _guess_type(raw))
        check_bindings({name: value})  # a name or value no query could take: said here
    except (ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"--bind {text!r}: {exc}") from None
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
    """The ``--bind`` options as a bindings mapping (None when there are none)."""
    return dict(parse_binding(v) for v in values) or None


# -- output ------------------------------------------------------------------------------------

def _jsonable(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout (dates in ISO form, anything else as text)."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable))


class _TextTable(Table):
    """A rich table whose text cells are shown as they are: a title, a snippet or a SPARQL
    literal holding ``[red]`` or ``[/x]`` is data, not rich markup (which would restyle the
    output, or fail to render at all)."""

    def add_row(self, *renderables: Any, **options: Any) -> None:
        super().add_row(*(Text(r) if isinstance(r, str) else r for r in renderables),
                        **options)


def table(*columns: str) -> Table:
    """A table whose cells fold instead of being cut with an ellipsis (IRIs stay whole) and
    whose text, headers included, is never read as rich markup."""
    made = _TextTable()
    for column in columns:
        made.add_column(Text(column), overflow="fold")
    return made


def cell(value: Any) -> str:
    """A value as a table cell: None empty, dates in ISO form."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(_jsonable(value))
