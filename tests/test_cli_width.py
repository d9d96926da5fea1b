"""Tables fit where they are printed: a pipe gets PIPE_WIDTH columns (COLUMNS when set), the
passage column gets the room the others leave, and run ids never wrap. Through the ``trails``
command's entry point, its output captured as a pipe captures it (not a terminal)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _cli import run_trails
from trails.cli.output import PIPE_WIDTH

PASSAGE = ("Auto fusion weighs each ranking by its evidence of quality, so that a poor "
           "ranking cannot drag a good one down; the weights are kept with every run.")


def run(*args: object, columns: int | None = None) -> str:
    env = {"COLUMNS": None if columns is None else str(columns), "LINES": None}
    done = run_trails(*args, env=env)  # captured: never a terminal
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("width")
    notes = root / "notes"
    notes.mkdir()
    for number in range(3):
        (notes / f"fusion-weights-and-their-provenance-{number}.md").write_text(
            f"---\ntitle: Fusion weights and their provenance, part {number}\n"
            f"date: 2024-05-0{number + 1}\n---\n{PASSAGE}\n")
    db = root / "kb"
    run("--db", db, "init", "--model", "mock:16")
    run("--db", db, "ingest", notes, "--quiet")
    for query in ("fusion weights", "ranking quality"):
        run("--db", db, "query", query)
    return db


@pytest.mark.parametrize("columns", [None, 80, 100, 200])
def test_every_table_fits_the_pipe_and_the_passage_gets_the_room(kb, columns):
    width = PIPE_WIDTH if columns is None else columns
    assert PIPE_WIDTH >= 120  # 80 folds a seven-column table's passage one word a line
    printed = {
        "query": run("--db", kb, "query", "fusion weights", columns=columns),
        "sparql": run("--db", kb, "sparql", "SELECT ?doc ?name WHERE { ?doc schema:name ?name }",
                      columns=columns),
        "audit": run("--db", kb, "audit", columns=columns),
        "stats": run("--db", kb, "stats", columns=columns),
    }
    for command, text in printed.items():
        assert text.strip(), command
        assert max(len(line) for line in text.splitlines()) <= width, (command, text)
    # The passage column gets the room the other columns leave: whole phrases on a line,
    # not one word a line; the wider the pipe, the more words a line.
    passage_lines = [line.split("│")[-2].strip() for line in printed["query"].splitlines()
                     if line.count("│") >= 8 and line.split("│")[-2].strip()]
    words = max(len(line.split()) for line in passage_lines)
    assert words >= (3 if width < 100 else 4 if width < 140 else 6), printed["query"]


@pytest.mark.parametrize("columns", [None, 100, 120])
def test_run_ids_never_wrap(kb, columns):
    ids = [record["run_id"] for record in json.loads(run("--db", kb, "audit", "--json"))]
    assert len(ids) >= 2
    listed = run("--db", kb, "audit", columns=columns)
    for run_id in ids:
        assert any(run_id in line for line in listed.splitlines()), (run_id, listed)
