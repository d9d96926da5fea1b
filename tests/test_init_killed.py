"""`trails init` killed part way (SIGKILL, a power cut) leaves the context's own files without
its `trails.json`: the graph's folder, the writer's lock, `vectors.db`. `trails init` again
finishes the creation, as `Context.open` does, where it said "exists and is not an empty
directory; choose a new one", and every other command called the folder one of "other
files: if they are your documents, make the context elsewhere". A folder holding anything
else is still refused."""

from __future__ import annotations

import os
import random
import shutil

import pytest
from typer.testing import CliRunner

import killing
from trails.cli.commands import app
from trails.context import Context

INIT = """
import sys
from trails.cli.commands import main
print("ready", flush=True)
sys.argv = ["trails", "--db", sys.argv[1], "init", "--model", "mock:32"]
main()
"""
KILLS = int(os.environ.get("TRAILS_CRASH_KILLS", "8"))


def cli(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def a_killed_init(tmp_path):
    """A directory as an init killed after creating the graph leaves it."""
    made = tmp_path / "made"
    assert cli("--db", made, "init", "--model", "mock:32").exit_code == 0
    left = tmp_path / "kb"
    left.mkdir()
    shutil.copytree(made / "graph", left / "graph")
    return left


def test_init_finishes_a_creation_cut_short(tmp_path):
    kb = a_killed_init(tmp_path)
    refused = cli("--db", kb, "stats")
    assert refused.exit_code == 1
    assert "cut short" in refused.output and "init" in refused.output, refused.output
    assert "your documents" not in refused.output
    result = cli("--db", kb, "init", "--model", "mock:32")
    assert result.exit_code == 0, result.output
    assert cli("--db", kb, "stats").exit_code == 0


def test_init_with_another_model_over_a_creation_cut_short_says_what_to_do(tmp_path):
    # The store the killed init made holds 32 dimensions: another model's init failed with
    # the store's own advice ("a new store path"), which names nothing a user of init has.
    made = tmp_path / "made"
    assert cli("--db", made, "init", "--model", "mock:32").exit_code == 0
    (made / "trails.json").unlink()
    result = cli("--db", made, "init", "--model", "mock:16")
    assert result.exit_code == 1
    assert "creation was cut short (trails.json is missing)" in result.output, result.output
    assert "naming the model it was begun with" in result.output
    assert "holds 32-dimensional vectors" in result.output
    assert "Traceback" not in result.output
    assert not (made / "trails.json").exists()
    assert cli("--db", made, "init", "--model", "mock:32").exit_code == 0


def test_init_still_refuses_a_folder_with_files_of_its_own(tmp_path):
    kb = a_killed_init(tmp_path)
    (kb / "notes.md").write_text("Mine.")
    result = cli("--db", kb, "init", "--model", "mock:32")
    assert result.exit_code == 1 and "not an empty directory" in result.output
    assert sorted(p.name for p in kb.iterdir()) == ["graph", "notes.md"]


@pytest.mark.slow
def test_init_killed_at_random_moments_is_finished_by_init_again(tmp_path):
    duration = killing.time_worker(INIT, [tmp_path / "timing"])
    rng = random.Random(20261201)
    interrupted = 0
    for n in range(3 * KILLS):
        if interrupted == KILLS // 2 and n >= KILLS:
            break
        kb = tmp_path / f"kill{n}"
        interrupted += not killing.run_worker(INIT, [kb], rng.uniform(0.0, duration))
        result = cli("--db", kb, "init", "--model", "mock:32")
        assert result.exit_code == 0, (sorted(p.name for p in kb.iterdir()), result.output)
        with Context.open(kb) as ctx:
            assert ctx.verify().ok and ctx.embedder.dim == 32
    assert interrupted >= KILLS // 2, "kills should land while init runs"
