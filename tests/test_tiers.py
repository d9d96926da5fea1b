"""The test tiers (docs/testing.md): what tests/conftest.py marks, and the fast profile's cap."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conftest
from _cli import run_trails
from conftest import (
    BROWSER_MODULES,
    FAST_EXAMPLES,
    PROCESS_MODULES,
    PROCESS_TESTS,
    ROOT,
    SERVER_MODULES,
    SERVER_TESTS,
    _at_most_fast_examples,
    heavy_modules_first,
)

FAST_TIER = "not slow and not server and not browser and not process"  # the Makefile's


def test_every_module_the_markers_name_is_a_test_module():
    """A renamed module would silently join the everyday tier."""
    for name in sorted(SERVER_MODULES | BROWSER_MODULES | PROCESS_MODULES):
        assert (ROOT / "tests" / f"{name}.py").is_file(), name


def test_every_test_the_markers_name_exists():
    """A renamed test would silently join the everyday tier, with its process or server."""
    defined = set(re.findall(r"^def (test_\w+)\(", "\n".join(
        path.read_text() for path in (ROOT / "tests").glob("test_*.py")), re.MULTILINE))
    assert sorted((PROCESS_TESTS | SERVER_TESTS) - defined) == []


def test_the_makefile_runs_the_everyday_tier_this_file_checks():
    assert f'FAST_TIER := {FAST_TIER}' in (ROOT / "Makefile").read_text()


def _ignored(module: str, expression: str) -> bool | None:
    config = SimpleNamespace(getoption=lambda name: expression)
    return conftest.pytest_ignore_collect(Path(f"tests/{module}.py"), config)


def test_a_run_leaves_out_only_modules_none_of_whose_tests_it_can_select():
    assert _ignored("test_mcp", FAST_TIER) is True  # a server module: not imported at all
    assert _ignored("test_concurrency", FAST_TIER) is True
    # test_concurrency is a process module whose pgvector tests are server tests too.
    assert _ignored("test_concurrency", "server") is None
    assert _ignored("test_mcp", "server") is None
    assert _ignored("test_mcp", "not process") is None
    assert _ignored("test_mcp", "") is None
    assert _ignored("test_search_request", FAST_TIER) is None  # no module marker


@pytest.fixture
def watching(monkeypatch):
    monkeypatch.setitem(conftest._watch, "test", True)
    spawned: list[str] = []
    monkeypatch.setattr(conftest, "_spawned", spawned)
    return spawned


def test_the_everyday_tier_notices_a_python_or_a_server_started_and_lets_git_run(watching):
    conftest._record_spawns("subprocess.Popen", (None, ["git", "status"], None, None))
    conftest._record_spawns("subprocess.Popen", (sys.executable, [sys.executable, "-c", ""],
                                                 None, None))
    conftest._record_spawns("subprocess.Popen", (None, "oxigraph serve --location x", None,
                                                 None))
    conftest._record_spawns("os.fork", ())
    assert watching == [Path(sys.executable).name, "oxigraph", "os.fork"]


def test_a_test_of_another_tier_is_not_watched(monkeypatch):
    """Whatever the run, only a test of the everyday tier is watched (pytest_runtest_setup
    unsets the watch for one marked process, server, browser or slow)."""
    spawned: list[str] = []
    monkeypatch.setattr(conftest, "_spawned", spawned)
    monkeypatch.setitem(conftest._watch, "test", False)
    conftest._record_spawns("subprocess.Popen", (sys.executable, [sys.executable], None, None))
    assert spawned == []
    assert set(conftest.OTHER_TIERS) == {"process", "server", "browser", "slow"}
    assert conftest._selects(FAST_TIER, {"process"}) is False
    assert conftest._selects("not slow", {"process"}) is True


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


def test_modules_holding_a_slow_test_run_first_each_whole_in_their_order():
    def item(path: str, slow: bool = False) -> SimpleNamespace:
        marks = {"slow": pytest.mark.slow.mark} if slow else {}
        return SimpleNamespace(path=Path(path), name=f"{path}-{len(order)}",
                               get_closest_marker=marks.get)

    order = []
    for path, slow in [("a", False), ("b", False), ("b", True), ("c", False), ("d", True),
                       ("d", False), ("e", False)]:
        order.append(item(path, slow))
    ran = heavy_modules_first(order)
    assert [str(i.path) for i in ran] == ["b", "b", "d", "d", "a", "c", "e"]
    assert [i.name for i in ran if str(i.path) == "d"] == ["d-4", "d-5"]
