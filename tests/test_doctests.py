"""Every docstring example in python/trails (and in the benchmarks' helpers) runs, as a doctest
per module.

A module (or an example) that needs an optional package that is not installed is skipped:
importing it, or running the example, raises MissingExtraError. Any other failure fails.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import types

import pytest

import trails
from conftest import ROOT
from trails.errors import MissingExtraError

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def trails_modules() -> list[str]:
    found = ["trails"]
    found += [m.name for m in pkgutil.walk_packages(trails.__path__, "trails.",
                                                    onerror=lambda name: None)]
    return sorted(set(found))


class _Runner(doctest.DocTestRunner):
    """Collects failures as text, and notes examples that need a missing extra."""

    def __init__(self) -> None:
        super().__init__(optionflags=FLAGS, verbose=False)
        self.missing_extras: list[str] = []
        self.reports: list[str] = []

    def report_failure(self, out, test, example, got):
        self.reports.append(f"{test.name} (line {_line(test, example)}):\n"
                            f"  {example.source.strip()}\n  expected: {example.want.strip()}\n"
                            f"  got:      {got.strip()}")

    def report_unexpected_exception(self, out, test, example, exc_info):
        if issubclass(exc_info[0], MissingExtraError):
            self.missing_extras.append(str(exc_info[1]))
            return
        self.reports.append(f"{test.name} (line {_line(test, example)}):\n"
                            f"  {example.source.strip()}\n  raised {exc_info[0].__name__}: "
                            f"{exc_info[1]}")


def _line(test: doctest.DocTest, example: doctest.Example) -> object:
    return "?" if test.lineno is None else test.lineno + example.lineno + 1


def run_doctests(module: types.ModuleType) -> tuple[int, _Runner]:
    """Run a module's doctests; returns (examples attempted, runner with any failures)."""
    runner = _Runner()
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__):
        runner.run(test, out=lambda text: None)
    return runner.tries, runner


@pytest.mark.parametrize("name", trails_modules())
def test_docstring_examples_run(name):
    try:
        module = importlib.import_module(name)
    except MissingExtraError as exc:
        pytest.skip(f"{name} needs an optional package: {exc}")
    _tries, runner = run_doctests(module)
    if runner.reports:
        pytest.fail(f"{len(runner.reports)} doctest failure(s) in {name}:\n\n"
                    + "\n\n".join(runner.reports), pytrace=False)
    if runner.missing_extras:
        pytest.skip(f"{name}: examples need an optional package: {runner.missing_extras[0]}")


def test_the_benchmark_helpers_examples_run(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    tries, runner = run_doctests(importlib.import_module("_lab"))
    assert tries >= 2
    assert runner.reports == [] and runner.missing_extras == []


def test_the_package_has_doctests_to_run():
    total = sum(run_doctests(importlib.import_module(n))[0] for n in
                ("trails", "trails.kg.bindings", "trails.rank.fusion", "trails.vector.embedders.mock"))
    assert total >= 8


def test_a_failing_example_is_reported():
    module = types.ModuleType("trails_test_fake_module")
    module.__doc__ = ">>> 1 + 1\n3\n>>> int('x')\n2\n"
    tries, runner = run_doctests(module)
    assert tries == 2
    assert len(runner.reports) == 2
    assert "expected: 3" in runner.reports[0] and "ValueError" in runner.reports[1]


def test_an_example_needing_a_missing_extra_is_noted_not_failed():
    module = types.ModuleType("trails_test_fake_extra")
    module.__doc__ = (">>> from trails.errors import MissingExtraError\n"
                      ">>> raise MissingExtraError('qdrant-client', 'vector-qdrant', 'QdrantStore')\n")
    _, runner = run_doctests(module)
    assert runner.reports == []
    assert runner.missing_extras and "vector-qdrant" in runner.missing_extras[0]
