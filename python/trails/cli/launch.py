"""The ``trails`` console script: a query that a running service can answer goes to it.

``trails serve`` keeps the model warm; ``trails query`` pays seconds to load it. So when the
directory has a live service (``service.json``, :mod:`trails.service.discovery`) and the
command line is a plain ``query``, this module sends it to the service and prints the answer
exactly as the command would, loading no engine, model or HTTP package: the whole call takes a
fraction of a second. Anything else (another command, ``--help``, an option this reader does
not know, ``--local``, a service that is gone or not ready) runs the full command line, which
answers in this process. The typer command stays the one definition of the options: this
reader only recognises the ones it forwards, and ``tests/test_cli_service.py`` checks that
both paths print the same.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any

from trails._lazy import import_target
from trails.cli.arguments import bindings, read_query
from trails.cli.exits import EXIT_BROKEN_CONTEXT, EXIT_USER_ERROR, fail
from trails.cli.output import print_hits, print_json
from trails.errors import InvalidArgumentError, StorageError, TrailsError
from trails.records import RetrievalResult
from trails.service.client import NotAnswered, ServiceClient, json_term
from trails.service.discovery import read_service

__all__ = ["answer_through_service", "main", "service_request"]

# Options forwarded to the service: the ones that take a value, and the flags.
_VALUED = {"--mode": "mode", "--k": "k", "-k": "k", "--sparql": "sparql", "--bind": "bind",
           "--scope": "scope", "--fusion": "fusion", "--min-score": "min_score"}
_FLAGS = {"--why": "why", "--json": "json"}
_REPEATED = ("bind", "scope")


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
    if not args or db is None:
        return None
    options: dict[str, Any] = {"bind": [], "scope": []}
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
            if key in _REPEATED:
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
    if len(texts) != 1 or not _numbers_parse(options):
        return None
    options["text"] = texts[0]
    return db, options


def _numbers_parse(options: dict[str, Any]) -> bool:
    """Whether ``-k`` and ``--min-score`` read as numbers (else the command line says why)."""
    try:
        int(options.get("k", "10"))
        float(options.get("min_score", "0"))
    except ValueError:
        return False
    return True


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
    try:
        query = None if "sparql" not in options else read_query(options["sparql"], "--sparql")
    except (TrailsError, ValueError) as exc:
        return fail(str(exc) or type(exc).__name__, EXIT_USER_ERROR)
    try:
        answer = client.retrieve(_request(options, query))
    except NotAnswered:
        if options.get("sparql") == "-":  # the command line reads the filter from stdin again
            sys.stdin = io.StringIO(query or "")
        return None
    except StorageError as exc:
        return fail(str(exc), EXIT_BROKEN_CONTEXT)
    except (TrailsError, ValueError) as exc:
        return fail(str(exc) or type(exc).__name__, EXIT_USER_ERROR)
    result = RetrievalResult.from_dict(answer, query=options["text"])
    if options.get("json"):
        for note in result.notes:
            if note.startswith("min_score"):
                sys.stderr.write(note + "\n")
        print_json(result.to_dict())
    else:
        print_hits(result, bool(options.get("why")))
    return 0


def _request(options: dict[str, Any], sparql_filter: str | None) -> dict[str, Any]:
    """The ``POST /retrieve`` body for the command line's options, read as the command
    reads them (``sparql_filter`` from a file, stdin or inline; ``--bind`` values typed)."""
    mode = options.get("mode", "hybrid")
    if mode == "graph" and "sparql" not in options:
        raise InvalidArgumentError(
            "--mode graph needs --sparql QUERY_OR_FILE, a filter selecting the IRIs")
    bound = bindings(options["bind"]) or {}
    request: dict[str, Any] = {
        "query": options["text"], "mode": mode, "k": int(options.get("k", 10)),
        "filter": sparql_filter,
        "bindings": {name: json_term(value) for name, value in bound.items()} or None,
        "scopes": options["scope"] or None, "fusion": options.get("fusion", "auto"),
        "why": bool(options.get("why")),
    }
    if "min_score" in options:
        request["min_score"] = float(options["min_score"])
    return request
