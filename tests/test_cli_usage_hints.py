"""Mistakes a newcomer makes on the command line, each refused with what to do: an empty
query (an unset shell variable) was read as the path "" (the working directory) and refused
as "a folder"; ``--filter`` for ``trails query``'s ``--sparql`` got click's suggestion of
``--caller``; ``-db DIR`` got "No such option: -d" and, after a command, only the advice for
a value starting with "-"."""

from __future__ import annotations

from pathlib import Path

import pytest

from _cli import run_trails


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    db = tmp_path / "kb"
    assert run_trails("--db", db, "init", "--model", "mock:16").returncode == 0
    return db


def error_line(result) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize(("args", "option"), [
    (("query", "deploy", "--sparql", ""), "--sparql"),
    (("sparql", ""), "QUERY_OR_FILE"),
])
def test_an_empty_query_is_said_to_be_empty_not_a_folder(kb, args, option):
    line = error_line(run_trails("--db", kb, *args))
    assert line == (f"Error: {option} is empty (a variable that is not set?): give the query "
                    "itself, a file holding it, or - for stdin")


def test_filter_for_sparql_names_the_option_that_takes_the_filter(kb):
    line = error_line(run_trails("--db", kb, "query", "deploy", "--filter",
                                 "SELECT ?iri WHERE { ?iri a trails:Chunk }"))
    assert "--caller" not in line
    assert line.startswith("Error: No such option: --filter; the filter is --sparql "
                           "QUERY_OR_FILE")


def test_one_dash_db_names_the_option_with_two_dashes(kb):
    line = error_line(run_trails("-db", kb, "stats"))
    assert line == ("Error: No such option: -d; the context directory is --db, with two dashes, "
                    "before the command: trails --db DIR COMMAND ...")


def test_one_dash_db_after_the_command_says_both_what_it_may_be(kb):
    line = error_line(run_trails("query", "deploy", "-db", kb))
    assert "trails --db DIR query ..." in line
    assert "a value that starts with '-' goes after '--'" in line  # a query "-deploy", say
