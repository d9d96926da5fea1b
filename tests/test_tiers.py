"""The test tiers (docs/testing.md): what tests/conftest.py marks, and the fast profile's cap."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run_trails
from conftest import (
    BROWSER_MODULES,
    FAST_EXAMPLES,
    PROCESS_MODULES,
    ROOT,
    SERVER_MODULES,
    _at_most_fast_examples,
)


def test_every_module_the_markers_name_is_a_test_module():
    """A renamed module would silently join the everyday tier."""
    for name in sorted(SERVER_MODULES | BROWSER_MODULES | PROCESS_MODULES):
        assert (ROOT / "tests" / f"{name}.py").is_file(), name


def _counting(max_examples: int) -> tuple[list[int], object]:
    seen: list[int] = []

    @settings(max_examples=max_examples, database=None)
    @given(st.integers())
    def test(number: int) -> None:
        seen.append(number)

    return seen, test


def test_the_fast_profile_caps_a_tests_own_examples_and_keeps_fewer():
    many, capped = _counting(200)
    _at_most_fast_examples(SimpleNamespace(obj=capped))
    capped()
    assert 0 < len(many) <= FAST_EXAMPLES
    uncapped_seen, uncapped = _counting(200)
    uncapped()
    assert len(uncapped_seen) > FAST_EXAMPLES  # the cap, not hypothesis, stopped it
    _, small = _counting(3)
    _at_most_fast_examples(SimpleNamespace(obj=small))
    assert small._hypothesis_internal_use_settings.max_examples == 3


def test_the_in_process_command_reports_what_a_process_would(tmp_path):
    ok = run_trails("--db", tmp_path / "kb", "init", "--model", "mock:8")
    assert (ok.returncode, ok.stderr) == (0, "")
    unknown = run_trails("--db", tmp_path / "kb", "stats", "--frobnicate")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.startswith("Error: ") and "--frobnicate" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    query = run_trails("--db", tmp_path / "kb", "sparql", "-", input="ASK { ?s ?p ?o }")
    assert (query.returncode, query.stdout) == (0, "false\n")
