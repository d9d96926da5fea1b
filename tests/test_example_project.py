"""examples/test-project, the example docs/testing.md walks through, passes when copied out of
this repository and run with pytest, the plugin found through trails' installed entry point."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

PROJECT = ROOT / "examples" / "test-project"
DOC = ROOT / "docs" / "testing.md"


@pytest.fixture(scope="module")
def project_run(tmp_path_factory, installed_trails):
    """The project copied to a temporary directory, the Python examples of docs/testing.md
    added to its tests as a user would add them, and one pytest run of it all (a run pays
    pytest's start-up and its plugins' loading, which neither test is about): each test
    reads its own files' lines of the report."""
    copy = tmp_path_factory.mktemp("project") / "notes-search"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache",
                                                                 ".hypothesis"))
    assert not (copy / "conftest.py").exists() and not (copy / "tests" / "conftest.py").exists()
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 3
    for number, block in enumerate(blocks):
        (copy / "tests" / f"test_doc_{number}.py").write_text(block)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"],
                          cwd=copy, env=installed_trails, capture_output=True, text=True,
                          timeout=600, check=False)


def passed_in(run: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    """The PASSED lines of ``run``'s report for the test files whose path starts ``prefix``."""
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    return [line for line in run.stdout.splitlines() if line.startswith(f"PASSED {prefix}")]


def test_the_example_project_passes_from_a_temporary_directory(project_run):
    passed = passed_in(project_run, "tests/test_search.py::")
    names = {line.split("::")[1].split("[")[0] for line in passed}
    # Every test ran (none skipped for want of a fixture), trails_store once per backend.
    assert names == {"test_search_keeps_the_topic_and_the_date",
                     "test_notes_survive_reopening_their_directory",
                     "test_every_backend_finds_its_nearest_vector",
                     "test_search_returns_exactly_the_notes_on_the_topic_since_the_date"}
    backends = [line for line in passed if "test_every_backend" in line]
    assert {line.split("[")[1].rstrip("]") for line in backends} >= {"sqlite-vec-memory",
                                                                     "sqlite-vec-file"}


def test_the_examples_in_docs_testing_md_pass_in_a_user_s_project(project_run):
    passed = {line.split("::")[1] for line in passed_in(project_run, "tests/test_doc_")}
    assert {"test_recent_notes_only", "test_hybrid_ranks_exactly_the_filtered_documents",
            "test_the_search_is_recorded_the_same_every_time"} <= passed
