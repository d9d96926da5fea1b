"""A command run with ``--json`` that fails prints one JSON object on stdout, ``{"error":
{"type", "message", "exit_code"}}``, as well as its line on stderr: a script piping it to
``jq`` has something to read instead of nothing. Mistakes in the command line itself (an
unknown option, a missing argument) are ``UsageError``; a ``--json`` after ``--`` is a value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _cli import run_trails
from trails.cli import launch
from trails.errors import UnknownScopeError


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nRails is a framework.\n")
    db = tmp_path / "kb"
    assert run_trails("--db", db, "init", "--model", "mock:16").returncode == 0
    assert run_trails("--db", db, "ingest", notes, "-q").returncode == 0
    return db


def failed_json(*args: object, code: int = 1) -> dict:
    """Run ``trails ARGS``; it must fail with ``code``, its one line on stderr and the same
    error as the only JSON object on stdout; that object back."""
    result = run_trails(*args)
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    printed = json.loads(result.stdout)  # the whole of stdout, or this raises
    error = printed["error"]
    assert set(error) == {"type", "message", "exit_code"}
    assert error["exit_code"] == code
    assert result.stderr.strip().splitlines()[-1] == f"Error: {error['message']}"
    return printed


def test_an_unknown_scope(kb):
    printed = failed_json("--db", kb, "query", "rails", "--scope", "nope", "--json")
    assert printed["error"]["type"] == "UnknownScopeError"
    assert "'nope'" in printed["error"]["message"]


def test_a_directory_that_holds_no_context(tmp_path):
    printed = failed_json("--db", tmp_path / "none", "stats", "--json")
    assert printed == {"error": {
        "type": "ConfigurationError", "exit_code": 1,
        "message": f"{tmp_path / 'none'} holds no trails context; create it with "
                   f"`trails --db {tmp_path / 'none'} init`"}}


def test_no_context_directory_at_all(tmp_path):
    printed = failed_json("export", "--json", code=1)
    assert printed["error"]["type"] == "ConfigurationError"
    assert "--db DIR" in printed["error"]["message"]


def test_a_sparql_syntax_error(kb):
    printed = failed_json("--db", kb, "sparql", "SELEC ?x", "--json")
    assert printed["error"]["type"] == "SparqlError"


def test_an_unknown_audit_run(kb):
    printed = failed_json("--db", kb, "audit", "show", "0" * 32, "--json")
    assert printed["error"]["type"] == "UnknownRunError"


@pytest.mark.parametrize(("args", "said"), [
    (("query", "rails", "--bogus", "--json"), "No such option: --bogus"),
    (("sparql", "--json"), "Missing argument 'QUERY_OR_FILE'"),
    (("query", "--json", "rails", "-k"), "Option '-k' requires an argument"),
    (("stat", "--json"), "No such command 'stat'"),
])
def test_a_usage_error(kb, args, said):
    printed = failed_json("--db", kb, *args)
    assert printed["error"]["type"] == "UsageError"
    assert said in printed["error"]["message"]


def test_a_bug_is_said_as_json_with_its_exit_code(kb, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("trails.cli.query.retrieve", broken)
    printed = failed_json("--db", kb, "query", "rails", "--local", "--json", code=4)
    assert printed["error"]["type"] == "RuntimeError"
    assert "this is a bug in trails" in printed["error"]["message"]


def test_without_json_stdout_stays_empty(kb):
    result = run_trails("--db", kb, "query", "rails", "--scope", "nope")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("Error: unknown scope 'nope'")


def test_json_after_a_double_dash_is_a_value_not_the_option(tmp_path):
    result = run_trails("--db", tmp_path / "none", "query", "--", "--json")
    assert result.returncode == 1 and result.stdout == ""


def test_success_prints_no_error(kb):
    printed = json.loads(run_trails("--db", kb, "stats", "--json").stdout)
    assert "error" not in printed


def test_a_query_a_service_refuses_is_said_as_json_too(kb, monkeypatch):
    class Refusing:
        def __init__(self, _info: object) -> None:
            pass

        def health(self) -> dict:
            return {"status": "ready"}

        def retrieve(self, _body: dict) -> dict:
            raise UnknownScopeError("unknown scope 'nope'; the scopes that exist: default")

    monkeypatch.setattr(launch, "read_service", lambda _db: object())
    monkeypatch.setattr(launch, "ServiceClient", Refusing)
    printed = failed_json("--db", kb, "query", "rails", "--scope", "nope", "--json")
    assert printed == {"error": {"type": "UnknownScopeError", "exit_code": 1,
                                 "message": "unknown scope 'nope'; the scopes that exist: "
                                            "default"}}
