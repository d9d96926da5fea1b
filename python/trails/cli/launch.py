"""The ``trails`` console script: a query that a running service can answer goes to it.

``trails serve`` keeps the model warm; ``trails query`` pays seconds to load it. So when the
directory has a live service (``service.json``, :mod:`trails.service.discovery`) and the
command line is a plain ``query``, this module sends it to the service and prints the answer
exactly as the command would, loading no engine, model or HTTP package: the whole call takes a
fraction of a second. Anything else (another command, ``--help``, an option this reader does
not know, ``--local``, a ``--now`` before the clock, which the service refuses and the owner may
ask, a service that is gone or not ready) runs the full command line, which answers in this
process. Both paths read the search's options with one function
(:func:`trails.cli.arguments.search_fields`) and leave every check to ``trails.SearchRequest``
(here, the service's): a mistake is refused in the same words either way.
``tests/test_cli_service.py`` checks that both paths print the same.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trails._lazy import import_target
from trails.cli.arguments import FLAG, REPEATED, SEARCH_FLAGS, search_fields
from trails.cli.exits import EXIT_BROKEN_CONTEXT, EXIT_USER_ERROR, fail
from trails.cli.output import empty_context_note, print_result
from trails.errors import StorageError, TrailsError
from trails.records import RetrievalResult
from trails.service.client import NotAnswered, ServiceClient, json_term
from trails.service.discovery import read_service

__all__ = ["answer_through_service", "main", "service_request"]

# The options forwarded to the service: the search's (trails.cli.arguments), and --json.
_VALUED = {flag: field for flag, field in SEARCH_FLAGS.items() if field != FLAG}
_FLAGS = {**{flag: field for flag, field in SEARCH_FLAGS.items() if field == FLAG},
          "--json": "json"}


def main() -> None:
    """``trails ...``: through the service when it can answer, else the full command line."""
    code = answer_through_service(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    run_command_line: Any = import_target("trails.cli.commands:main")
    run_command_line()


def service_request(argv: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """``(directory, options)`` when ``argv`` is a plain ``[--db DIR] query TEXT [options]``
    whose every option the service takes; None for anything else."""
    args = list(argv)
    db = os.environ.get("TRAILS_DB") or None
    while args and args[0] != "query":
        head = args.pop(0)
        if head == "--db" and args:
            db = args.pop(0)
        elif head.startswith("--db="):
            db = head[len("--db="):]
        else:
            return None
    if not args or db is None or not db.strip():  # an empty --db: the command refuses it
        return None
    options: dict[str, Any] = {field: [] for field in REPEATED}
    texts: list[str] = []
    rest = iter(args[1:])
    for token in rest:
        if token == "--":
            texts.extend(rest)
            break
        name, sep, inline = token.partition("=")
        if name in _VALUED and token.startswith("--") or token in _VALUED:
            value = inline if sep else next(rest, None)
            if value is None:
                return None
            key = _VALUED[name if sep else token]
            if key in REPEATED:
                options[key].append(value)
            elif key in options:  # given twice: the command line says which one wins
                return None
            else:
                options[key] = value
        elif token in _FLAGS:
            options[_FLAGS[token]] = True
        elif token.startswith("-") and token != "-":
            # --local, --help, -k5 or anything else: the full command line. So is --caller:
            # the service records its key's label as the caller, not a name the client gives.
            return None
        else:
            texts.append(token)
    if len(texts) != 1 or _looks_back(options.get("now")):
        return None
    options["text"] = texts[0]
    return db, options


def _looks_back(now: object) -> bool:
    """``--now`` names a moment before the clock: the service refuses it (its keys may not
    see again what retention removed), while the terminal's user owns the directory and may
    look back, so the command answers it here, as it does without a service."""
    try:
        moment = dt.datetime.fromisoformat(now) if isinstance(now, str) else None
        return moment is not None and moment < dt.datetime.now(dt.UTC)
    except (ValueError, TypeError):  # no moment, or one without an offset: the request's
        return False                 # refusal, in the same words either way


def answer_through_service(argv: Sequence[str]) -> int | None:
    """Answer ``argv`` through the directory's service and return the exit code, or None
    when it is no plain query, there is no ready service, or the service cannot be reached."""
    parsed = service_request(argv)
    if parsed is None:
        return None
    db, options = parsed
    info = read_service(db)
    if info is None:
        return None
    try:
        client = ServiceClient(info)
    except NotAnswered:
        return None
    health = client.health()
    if health.get("status") != "ready":
        return None
    try:  # read as the command reads them; the service checks them as the command does
        fields = search_fields(options["text"], {
            name: value for name, value in options.items() if name not in ("text", "json")})
    except (TrailsError, ValueError) as exc:
        return _failed(exc, EXIT_USER_ERROR, options)
    try:
        answer = client.retrieve(_body(fields))
    except NotAnswered:
        if options.get("filter") == "-":  # the command line reads the filter from stdin again
            sys.stdin = io.StringIO(fields.get("filter", ""))
        return None
    except StorageError as exc:
        return _failed(exc, EXIT_BROKEN_CONTEXT, options)
    except (TrailsError, ValueError) as exc:
        return _failed(exc, EXIT_USER_ERROR, options)
    result = RetrievalResult.from_dict(answer, query=options["text"])
    if not result and answer.get("context_empty") is True:  # as the command says it
        print(empty_context_note(str(Path(db))), file=sys.stderr)
    print_result(result, bool(options.get(FLAG)), bool(options.get("json")))
    return 0


def _failed(exc: Exception, code: int, options: dict[str, Any]) -> int:
    """The failure said as the command line says it: on stderr, and as JSON with --json."""
    return fail(str(exc) or type(exc).__name__, code, kind=type(exc).__name__,
                as_json=bool(options.get("json")))


def _body(fields: dict[str, Any]) -> dict[str, Any]:
    """The ``POST /retrieve`` body for the fields of a search (its bindings as JSON terms)."""
    bound = fields.get("bindings") or {}
    return {**fields, "bindings": {name: json_term(v) for name, v in bound.items()} or None}
