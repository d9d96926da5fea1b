"""Every command given hostile arguments exits 1, 2 or 3 with one line on stderr, never a
traceback and never exit 4 (an internal error): numbers out of range, bad --bind values and
dates, IRIs that are none, text UTF-8 cannot hold (a shell passes undecodable bytes as lone
surrogates), files that fail to parse.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trails.cli import app

runner = CliRunner()

HUGE = "99999999999999999999"
DATES = "SELECT ?c WHERE { ?d schema:dateCreated ?c FILTER(?c >= ?since) }"
SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?c "
         "FILTER(?c >= ?since) }")


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A context holding one dated note (and a note whose front matter fails)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\ndate: 2024-01-01\n---\n# A\n\nRails is a framework.")
    db = tmp_path / "kb"
    assert runner.invoke(app, ["--db", str(db), "init", "--model", "mock:16"]).exit_code == 0
    assert runner.invoke(app, ["--db", str(db), "ingest", str(notes)]).exit_code == 0
    (tmp_path / "since.rq").write_text(SINCE)
    return db


def _fails_cleanly(*args: object, codes: tuple[int, ...] = (1,)) -> str:
    """Run ``trails ARGS``; it must exit with one of ``codes`` and one line, no traceback."""
    result = runner.invoke(app, [str(a) for a in args])
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in codes, output
    if result.exit_code == 1:
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1, result.stderr
        return errors[0]
    return output


@pytest.mark.parametrize("value", [HUGE, "-1", "0", "1000001", "1.5", "x", "", "1e3"])
def test_query_k_out_of_range_names_the_option(kb, value):
    line = _fails_cleanly("--db", kb, "query", "rails", "-k", value)
    assert line.startswith("Error: k must be an int from 1 to 1000000, got ")


@pytest.mark.parametrize("bind", [
    "since=2024-13-45", "since:date=2024-02-30", "since:datetime=yesterday",
    "since:int=1.5", "since:int=", "since:float=abc", "since:bool=maybe", "since:nope=1",
    "since:iri=<not an iri>", "since=<a b>", "since=<http://x/<y>>", "bad name=1", "=1",
    "since", "since=\udcff", "1x=3",
])
def test_a_bad_bind_value_is_one_line_naming_the_binding(kb, bind):
    for command in (["query", "rails", "--sparql", kb.parent / "since.rq"],
                    ["sparql", DATES]):
        line = _fails_cleanly("--db", kb, *command, "--bind", bind)
        assert "--bind" in line or "binding" in line


@pytest.mark.parametrize("bind", [f"since:int={HUGE}", "since:float=nan", "since:float=-inf"])
def test_extreme_but_valid_bind_values_run(kb, bind):
    result = runner.invoke(app, ["--db", str(kb), "sparql", DATES, "--bind", bind])
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("args", [
    ["query", "\udcff"],
    ["query", "rails", "--scope", "\udcff"],
    ["query", "rails", "--scope", "bad scope"],
    ["query", "rails", "--mode", "graph"],
    ["query", "rails", "--mode", "nope"],
    ["query", "rails", "--fusion", "nope"],
    ["query", "rails", "--sparql", "missing.rq"],
    ["sparql", "SELECT \udcff"],
    ["sparql", f"SELECT ?s WHERE {{ ?s ?p ?o }} LIMIT {HUGE}0000"],
    ["sparql", "DELETE WHERE { ?s ?p ?o }"],
    ["sparql", "missing.rq"],
    ["ingest", "{notes}", "--base-iri", "not an iri"],
    ["ingest", "{notes}", "--base-iri", ""],
    ["ingest", "{notes}", "--scope", "no spaces"],
    ["delete", "not an iri"],
    ["delete", "\udcff"],
    ["export", "--format", "nope"],
    ["export", "--scope", "\udcff"],
    ["load", "{notes}/a.md"],
    ["load", "{notes}/a.md", "--format", "turtle"],
    ["eval", "nowhere", "--limit", "0"],
    ["eval", "nowhere", "--limit", HUGE],
    ["verify", "--repair", "--json", "extra"],
])
def test_hostile_arguments_to_every_command_fail_cleanly(kb, args):
    notes = kb.parent / "notes"
    _fails_cleanly("--db", kb, *(a.replace("{notes}", str(notes)) for a in args))


@pytest.mark.parametrize("args", [
    ["--model", f"mock:{HUGE}"], ["--model", "mock:0"], ["--model", "mock:-3"],
    ["--model", "mock:16384"],  # more than the embedded store holds
    ["--model", "openai:x", "--openai-dim", HUGE], ["--model", "openai:x", "--openai-dim", "0"],
    ["--model", "mock:16", "--base-iri", "not an iri"],
    ["--model", "mock:16", "--base-iri", "http://x/#a#"],
    ["--model", "mock:16", "--map-metadata", "author"],
    ["--model", "mock:16", "--map-metadata", "author=not a curie"],
])
def test_init_refuses_bad_options_before_making_anything(tmp_path, args):
    _fails_cleanly("--db", tmp_path / "new", "init", *args)
    assert not (tmp_path / "new").exists() or not any((tmp_path / "new").iterdir())


@pytest.mark.parametrize("args", [("query", "-0"), ("keys", "add", "-reader")])
def test_a_value_that_looks_like_an_option_says_to_put_it_after_double_dash(kb, args):
    """`trails query -0` or a key labelled "-reader": click reads an option; the line says how
    to pass the value. A mistyped --flag gets click's own line."""
    line = _fails_cleanly("--db", kb, *args)
    assert line.startswith(f"Error: No such option: {args[-1][:2]}"), line
    assert f"goes after '--': trails {' '.join(args[:-1])} [OPTIONS] -- VALUE" in line, line


def test_a_mistyped_long_option_gets_no_double_dash_hint(kb):
    line = _fails_cleanly("--db", kb, "query", "rails", "--bogus")
    assert line.startswith("Error: No such option: --bogus") and "'--'" not in line, line


def test_a_folder_with_files_that_fail_is_a_partial_failure(kb):
    notes = kb.parent / "notes"
    (notes / "laughs.md").write_text("---\na: &a [1, *a]\n---\nbody")
    (notes / "bad.jsonl").write_text("[" * 5000 + "]" * 5000 + "\n")
    output = _fails_cleanly("--db", kb, "ingest", notes, codes=(2,))
    assert "laughs.md" in output and "bad.jsonl" in output


def test_a_real_process_given_a_huge_k_prints_one_line(kb):
    done = subprocess.run([sys.executable, "-m", "trails.cli", "--db", str(kb), "query",
                           "rails", "-k", HUGE], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line == f"Error: k must be an int from 1 to 1000000, got {HUGE}"
