"""Shared fixtures. Every test runs inside an isolated kernel: no state leaks between tests.

The fixtures themselves are the trails pytest plugin's (trails.testing.pytest_plugin,
docs/testing.md); only what is private to this repository is here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Hypothesis profiles (docs/testing.md): `make test` runs each property test with the examples
# it asks for; `make test-fast` (HYPOTHESIS_PROFILE=fast) runs at most FAST_EXAMPLES of each.
FAST_EXAMPLES = 10
settings.register_profile("thorough", deadline=None)
settings.register_profile("fast", max_examples=FAST_EXAMPLES, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))

# The tiers' markers that a test's module or parameters decide (pyproject.toml registers
# them): `server` for a test that starts a server process or an HTTP server (the service,
# MCP, PostgreSQL, Virtuoso, Jena), `browser` for one that drives a headless browser.
SERVER_MODULES = {"test_cli_service", "test_mcp", "test_pgvector", "test_pgvector_crash",
                  "test_remote_virtuoso", "test_service_hardening", "test_service_jena",
                  "test_service_live", "test_w3c_protocol"}
SERVER_PARAMETERS = {"pgvector", "virtuoso"}
BROWSER_MODULES = {"test_display_browser"}
# Tests about real processes of trails (a writer killed at random moments, Ctrl-C, readers and
# writers in several processes, a project's own pytest run): the process is the point, so
# they cannot run in this one. Marked `process`: the whole module, or a test whose name says.
PROCESS_MODULES = {"test_vector_file_crash", "test_mentions_crash", "test_concurrency",
                   "test_audit_concurrency", "test_pytest_plugin", "test_example_project",
                   "test_compliance_doc", "test_context_locking"}
PROCESS_NAMES = re.compile(r"kill|ctrl_c|real_process|crash|console_script")

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


@pytest.fixture(scope="session")
def installed_trails(tmp_path_factory):
    """Environment variables for a subprocess in which this checkout is *installed*: its
    package metadata, entry points included (the pytest plugin), are this pyproject's.

    When the environment's trails is an install of this checkout with the plugin's entry
    point (CI: ``make test`` installs it editable), that install; otherwise (an install made
    from another checkout or before the entry point existed) this checkout is built and
    installed into a private directory put first on the subprocess's path.
    """
    env = {**os.environ}
    try:
        dist = distribution("trails")
        url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
        registered = any(p.value == PLUGIN for p in dist.entry_points if p.group == "pytest11")
    except PackageNotFoundError:
        url, registered = "", False
    if registered and url.rstrip("/") == ROOT.as_uri():
        env["PYTHONPATH"] = str(ROOT / "python")
        return env
    work = tmp_path_factory.mktemp("trails-install")
    source, site = work / "source", work / "site"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "python", source / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    # Offline, with the environment's setuptools (pyproject's build backend).
    built = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                            "--no-index", "--no-build-isolation", "--target", str(site),
                            str(source)], check=False, capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, f"installing this checkout failed:\n{built.stderr[-3000:]}"
    env["PYTHONPATH"] = str(site)
    return env


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__ if item.module else ""
        parameters = set(item.callspec.id.split("-")) if hasattr(item, "callspec") else set()
        if module in SERVER_MODULES or parameters & SERVER_PARAMETERS:
            item.add_marker(pytest.mark.server)
        if module in BROWSER_MODULES:
            item.add_marker(pytest.mark.browser)
        if module in PROCESS_MODULES or PROCESS_NAMES.search(item.name):
            item.add_marker(pytest.mark.process)
        if settings.get_current_profile_name() == "fast":
            _at_most_fast_examples(item)


def _at_most_fast_examples(item: pytest.Item) -> None:
    """Cap a property test's own ``@settings(max_examples=...)`` at the fast profile's count:
    a profile only fills the settings a test leaves out. hypothesis keeps a test's settings
    on the function it wraps (``given`` reads them from there when the test runs)."""
    test = getattr(item, "obj", None)
    if getattr(test, "hypothesis", None) is None:  # not a @given test
        return
    own = test._hypothesis_internal_use_settings
    if own.max_examples > FAST_EXAMPLES:
        test._hypothesis_internal_use_settings = settings(own, max_examples=FAST_EXAMPLES)
