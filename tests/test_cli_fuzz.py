"""Whatever a user types, and whatever a hand edit leaves in a context's trails.json, every
command exits 0, 1, 2 or 3 with its error on one line starting "Error:": never a traceback,
never exit 4 (an internal error, "a bug in trails").
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from trails.cli import app

runner = CliRunner()


def _clean(*args: object) -> tuple[int, str]:
    """Run ``trails ARGS``: no traceback, no exit 4, and a failure's last stderr line is its
    one "Error:" line. The exit code and that line (or "") back."""
    result = runner.invoke(app, [str(a) for a in args])
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1, 2, 3), output
    if result.exit_code in (1, 3):
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1, result.stderr
        return result.exit_code, errors[0]
    return result.exit_code, ""


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A context holding one note."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("# A\n\nRails is a framework.")
    db = root / "kb"
    for command in (["init", "--model", "mock:16"], ["ingest", str(root / "notes")]):
        assert runner.invoke(app, ["--db", str(db), *command]).exit_code == 0
    return db


def _edited(kb: Path, where: Path, edit: dict[str, dict[str, object]]) -> Path:
    """A copy of ``kb`` whose trails.json has the parts in ``edit`` replaced."""
    shutil.copytree(kb, where)
    config = json.loads((where / "trails.json").read_text())
    for part, value in edit.items():
        config[part] = {**config[part], **value}
    (where / "trails.json").write_text(json.dumps(config))
    return where


@pytest.mark.parametrize(("edit", "named"), [
    ({"embedder": {"settings": {"dim": None, "seed": 0}}}, "dim"),
    ({"embedder": {"settings": {"dim": "16", "seed": 0}}}, "dim"),
    ({"embedder": {"settings": {"dim": True, "seed": 0}}}, "dim"),
    ({"embedder": {"settings": {"dim": -2, "seed": 0}}}, "dim"),
    ({"embedder": {"settings": {"dim": 16, "seed": None}}}, "seed"),
    ({"embedder": {"settings": {"dim": 16, "seed": {}}}}, "seed"),
    ({"graph": {"backend": "sparql", "settings": {}}}, "query_url"),
    ({"graph": {"backend": "sparql", "settings": {"query_url": 5}}}, "URL"),
    ({"graph": {"backend": "sparql", "settings": {"query_url": "http://127.0.0.1:9/q",
                                                  "resilience": 5}}}, "resilience"),
])
@pytest.mark.parametrize("command", [["stats"], ["query", "rails"]])
def test_a_trails_json_setting_of_the_wrong_type_is_a_user_error_naming_it(
        kb, tmp_path, edit, named, command):
    db = _edited(kb, tmp_path / "edited", edit)
    code, line = _clean("--db", db, *command)
    assert code == 1, line
    assert "trails.json" in line and named in line, line


TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\x00", "\udcff", "a" * 100_000, "x=", "=y", "x==y",
                     "x=<not an iri>", 'x="unterminated', "2024-02-30", "nan", "-inf",
                     "-1", "0", "99999999999999999999", "SELECT", "<http://x/a>", "é𝄞"]))

COMMANDS = [
    lambda v: ["query", v],
    lambda v: ["query", "rails", "--scope", v],
    lambda v: ["query", "rails", "-k", v],
    lambda v: ["query", "rails", "--bind", v, "--sparql", "SELECT ?iri WHERE { ?iri ?p ?o }"],
    lambda v: ["sparql", v],
    lambda v: ["sparql", "SELECT * WHERE { ?s ?p ?o } LIMIT 1", "--bind", v],
    lambda v: ["delete", v],
    lambda v: ["export", "--scope", v],
    lambda v: ["export", "--format", v],
    lambda v: ["audit", "--since", v],
    lambda v: ["audit", "--scope", v, "--limit", "1"],
    lambda v: ["audit", "show", v],
    lambda v: ["replay", v],
    lambda v: ["link", "--scope", v],
    lambda v: ["link", "--min-length", v],
    lambda v: ["stats", v],
]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), value=TEXT)
def test_no_argument_makes_a_read_only_command_fail_uncleanly(kb, command, value):
    _clean("--db", kb, *command(value))


@pytest.mark.parametrize("state", ["missing", "file", "empty dir", "empty json", "list json",
                                   "newer format", "no graph", "vectors truncated"])
@pytest.mark.parametrize("command", [["stats"], ["query", "rails"], ["verify"], ["audit"],
                                     ["export"], ["link"], ["sparql", "ASK { ?s ?p ?o }"]])
def test_a_context_directory_in_an_odd_state_fails_cleanly(kb, tmp_path, state, command):
    db = tmp_path / "db"
    if state == "file":
        db.write_text("x")
    elif state == "empty dir":
        db.mkdir()
    elif state != "missing":
        shutil.copytree(kb, db)
        config = db / "trails.json"
        if state == "empty json":
            config.write_text("")
        elif state == "list json":
            config.write_text("[]")
        elif state == "newer format":
            config.write_text(json.dumps({**json.loads(config.read_text()), "format": 99}))
        elif state == "no graph":
            shutil.rmtree(db / "graph")
        else:
            vectors = db / "vectors.db"
            vectors.write_bytes(vectors.read_bytes()[: vectors.stat().st_size // 2])
    code, _line = _clean("--db", db, *command)
    assert code in (1, 3)
