"""Shared fixtures. Every test runs inside an isolated kernel: no state leaks between tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

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
def _isolated():
    from trails.testing import isolated_kernel

    with isolated_kernel() as ctx:
        yield ctx


@pytest.fixture
def ctx(_isolated):
    """The isolated kernel's fresh in-memory context (MockEmbedder, dim 64)."""
    return _isolated


# Vector store backends for the contract suite; a new backend is one more class in stores.py.
from stores import FACTORIES, PERSISTENT


@pytest.fixture(params=FACTORIES, ids=lambda factory: factory.name)
def store_factory(request, tmp_path):
    """Makes empty vector stores of each backend (see tests/stores.py) and closes them after."""
    factory = request.param(tmp_path)
    yield factory
    factory.close_all()


@pytest.fixture(params=PERSISTENT, ids=lambda factory: factory.name)
def persistent_store_factory(request, tmp_path):
    """Like ``store_factory``, for the backends whose data can be reopened."""
    factory = request.param(tmp_path)
    yield factory
    factory.close_all()
