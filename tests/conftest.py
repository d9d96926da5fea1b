"""Shared fixtures. Every test runs inside an isolated kernel: no state leaks between tests.

The fixtures themselves are the trails pytest plugin's (trails.testing.pytest_plugin,
docs/testing.md); only what is private to this repository is here.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PLUGIN = "trails.testing.pytest_plugin"
# An install made from this pyproject registers the plugin (entry point pytest11); an older
# install of the package does not, and then this checkout loads it itself. Loading it both
# ways would register it twice, which pytest refuses.
if not any(point.value == PLUGIN for point in entry_points(group="pytest11")):
    pytest_plugins = [PLUGIN]

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def _pytest_basetemp_outside_kernels(tmp_path_factory):
    """Fix pytest's temporary root before any kernel runs.

    pytest picks its base temporary directory lazily from ``tempfile.gettempdir()``, which
    ``isolated_kernel()`` points at its own directory and deletes on exit: without this, the
    first ``tmp_path`` would live inside one test's kernel and vanish for every later test.
    """
    base = tmp_path_factory.getbasetemp()
    # One ONNX export for the whole run (both xdist workers; the export is locked and
    # atomic), instead of one per test's private TRAILS_HOME.
    os.environ.setdefault("TRAILS_ONNX_CACHE", str(base.parent / "onnx-cache"))
    return base


@pytest.fixture(autouse=True)
def _isolated(trails_ctx):
    """Every test of this repository runs in the plugin's isolated kernel."""
    return trails_ctx


@pytest.fixture
def ctx(_isolated):
    """The isolated kernel's fresh in-memory context (MockEmbedder, dim 64)."""
    return _isolated


# The contract suites' names for the plugin's store factories (trails.testing.stores).
@pytest.fixture
def store_factory(trails_store_factory):
    return trails_store_factory


@pytest.fixture
def persistent_store_factory(trails_persistent_store_factory):
    return trails_persistent_store_factory
