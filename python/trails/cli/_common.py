"""What every command shares: exit codes, the context directory and the model spec.

Bindings and query text are read in :mod:`trails.cli.arguments`, output written in
:mod:`trails.cli.output`: both stay light, for the query that a service answers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from trails.backends import DEFAULT_MODEL, Settings, new_embedder
from trails.cli.exits import (
    EXIT_BROKEN_CONTEXT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PARTIAL,
    EXIT_USER_ERROR,
)
from trails.config import CONFIG_FILE, Scalar
from trails.context import Context
from trails.errors import ConfigurationError, ContextLockedError, InvalidArgumentError
from trails.integrity import is_context_file
from trails.service.discovery import read_service
from trails.vector.embedders.base import Embedder

__all__ = [
    "DEFAULT_MODEL",
    "EXIT_BROKEN_CONTEXT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_PARTIAL",
    "EXIT_USER_ERROR",
    "MAX_DIM",
    "context",
    "db_option",
    "has_context",
    "make_embedder",
    "model_choice",
    "no_context",
    "open_context",
]

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


def cut_short(db: Path) -> bool:
    """Whether the directory ``db`` holds only what a context writes (or nothing): what an
    init or a first open killed before it wrote ``trails.json`` leaves, which ``trails
    init`` finishes as ``Context.open`` does. Hidden files are someone's, here."""
    return all(is_context_file(p.name) and not p.name.startswith(".") for p in db.iterdir())


def no_context(db: Path) -> ConfigurationError:
    """The error for a --db that holds no context, saying what it is when it exists: a file,
    or a folder of other files (the documents, named where the context should be), would not
    take the ``trails init`` the plain message suggests."""
    if db.is_file():
        return ConfigurationError(
            f"{db} is a file, not a trails context directory: --db names the directory "
            f"`trails --db DIR init` made (files to ingest go after the command: "
            f"`trails --db DIR ingest {db}`)")
    if db.is_dir() and any(db.iterdir()) and cut_short(db):
        return ConfigurationError(
            f"{db} holds no trails context: its creation was cut short ({CONFIG_FILE} is "
            f"missing); run `trails --db {db} init` again to finish it")
    if db.is_dir() and any(db.iterdir()):
        return ConfigurationError(
            f"{db} holds no trails context (it holds other files: if they are your "
            f"documents, make the context elsewhere: `trails --db ./kb init`, then "
            f"`trails --db ./kb ingest {db}`)")
    return ConfigurationError(f"{db} holds no trails context; create it with "
                              f"`trails --db {db} init`")


@contextmanager
def open_context(ctx: typer.Context, *, write: bool = False) -> Iterator[Context]:
    """Open the existing context named by --db; read-only unless ``write``."""
    db = db_option(ctx)
    if not has_context(db):
        raise no_context(db)
    with context(db, read_only=not write) as opened:
        yield opened


def context(db: Path, **options: Any) -> Context:
    """``Context.open``, with the other-writer error reworded for the command line."""
    try:
        return Context.open(db, **options)
    except ContextLockedError as exc:
        reworded = locked(db, exc)
        if reworded is exc:
            raise
        raise reworded from exc


def locked(db: Path, exc: ContextLockedError) -> ContextLockedError:
    """The other-writer error ``exc`` as the command line says it: the service that holds
    ``db``, or another process to wait for (one this process forgot to close: as is)."""
    if "this process" in str(exc) or "already served" in str(exc):
        return exc
    service = read_service(db)
    if service is not None:  # a service never finishes: waiting would be forever
        return ContextLockedError(
            f"{db} is served for writing by `trails serve` (pid {service.pid}, "
            f"{service.url}), which runs until it is stopped. Stop it (Ctrl-C where it "
            f"runs, or kill -TERM {service.pid}) and run this command again, or send the "
            f"write to the service: POST {service.url}/ingest, DELETE "
            f"{service.url}/documents/IRI (docs/service.md). Read-only commands (query, "
            "sparql, stats, verify) work meanwhile.")
    return ContextLockedError(
        f"{db} is open for writing in another process (one writer at a time); wait for it "
        "to finish. Read-only commands (query, sparql, stats, verify) work meanwhile.")


# -- the embedder ------------------------------------------------------------------------------

def model_choice(spec: str, *, openai_base_url: str | None = None,
                 openai_dim: int | None = None,
                 resilience: Mapping[str, Scalar] | None = None) -> tuple[str, Settings]:
    """The embedder backend and settings a ``--model`` value names.

    ``mock`` or ``mock:DIM``; ``openai:MODEL`` (with the OpenAI options); anything else is a
    sentence-transformers model name or directory. ``resilience``: the policy of an
    OpenAI-compatible endpoint (``trails init --resilience``).

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
        if resilience:
            settings["resilience"] = dict(resilience)
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
                  openai_dim: int | None = None,
                  resilience: Mapping[str, Scalar] | None = None) -> Embedder:
    """The embedder a ``--model`` value names (see :func:`model_choice`).

    >>> make_embedder("mock:8").identity.describe()
    'trails-mock-bow:seed=0 (dim=8, normalized=True)'
    """
    return new_embedder(*model_choice(spec, openai_base_url=openai_base_url,
                                      openai_dim=openai_dim, resilience=resilience))
