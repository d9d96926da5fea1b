"""Shared fixtures. Every test runs inside an isolated kernel: no state leaks between tests.

The fixtures themselves are the trails pytest plugin's (trails.testing.pytest_plugin,
docs/testing.md); only what is private to this repository is here.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from importlib.util import find_spec
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

# The tiers' markers that a test's module, parameters, fixtures or name decide (pyproject.toml
# registers them): `server` for a test that starts a server process or an HTTP server (the
# service, MCP, PostgreSQL, Virtuoso, Jena, `oxigraph serve`, the OpenAI-compatible stand-in),
# `browser` for one that drives a headless browser.
SERVER_MODULES = {"test_cli_service", "test_mcp", "test_pgvector", "test_pgvector_crash",
                  "test_remote_virtuoso", "test_service_hardening", "test_service_jena",
                  "test_service_live", "test_w3c_protocol", "test_graph_io_remote",
                  "test_remote_endpoint", "test_pg_writer_lock", "test_slow_peers",
                  "test_backend_equivalence"}
SERVER_PARAMETERS = {"pgvector", "virtuoso", "remote"}
# A test that asks for a fixture named `server` or `..._server` starts one (or shares one).
SERVER_FIXTURE = re.compile(r"(^|_)server$")
# Tests that start a server of their own in their body.
SERVER_TESTS = {"test_a_stopped_endpoint_opens_its_circuit_and_a_probe_closes_it_after_restart",
                "test_a_probe_that_finds_the_server_still_down_keeps_the_circuit_open",
                "test_queries_during_a_restart_under_load_fail_cleanly_and_then_all_succeed",
                "test_the_graph_failing_is_an_error_never_an_unfiltered_answer",
                "test_a_remote_graph_excludes_and_prunes_expired_documents",
                "test_a_graph_on_a_server_takes_from_clauses_that_name_its_scopes"}
BROWSER_MODULES = {"test_display_browser"}
# Tests about real processes (a writer killed at random moments, Ctrl-C, readers and writers
# in several processes, a project's own pytest run, a fresh interpreter's imports, a context
# reopened by a process that knows only its directory, a process under a disk quota): the
# process is the point, so they cannot run in this one. Marked `process`: the whole module, a
# test whose name says so, or one listed by name.
PROCESS_MODULES = {"test_vector_file_crash", "test_mentions_crash", "test_concurrency",
                   "test_audit_concurrency", "test_pytest_plugin", "test_example_project",
                   "test_compliance_doc", "test_context_locking", "test_storage_faults",
                   "test_light_install", "test_packaging", "test_cli_backends",
                   "test_context_backends", "test_writer_lock"}
PROCESS_NAMES = re.compile(r"kill|ctrl_c|real_process|crash|console_script|fresh_process"
                           r"|another_process|across_processes")
PROCESS_TESTS = {"test_the_registry_line_puts_the_store_into_the_contract_suite",
                 "test_hostile_files_fail_alone_and_the_folder_still_ingests",
                 "test_docs_cli_md_is_the_current_help_output",
                 "test_version_prints_the_installed_version",
                 "test_build_script_exits_1_with_a_message_when_the_mirror_is_absent",
                 "test_the_example_retrieves_only_what_its_filter_admits",
                 "test_the_llamaindex_example_shows_a_model_the_text_and_provenance_only",
                 "test_trails_load_refuses_them_in_one_line_with_exit_1",
                 "test_xml_entities_that_expand_past_the_bound_are_refused_before_parsing",
                 "test_readers_during_a_load_see_all_of_the_file_or_nothing",
                 "test_the_package_and_the_engine_load_no_framework",
                 "test_without_its_package_a_module_names_its_extra",
                 "test_a_reader_beside_a_publishing_writer_sees_one_committed_state_per_answer",
                 "test_a_notebook_awaits_aretrieve_and_shows_an_html_progress_bar",
                 "test_concurrent_exports_make_one_whole_file",
                 "test_trails_vector_does_not_import_openai",
                 "test_the_terminal_bar_shows_the_counted_total_on_stderr_and_stdout_stays_the_summary",
                 "test_a_folder_open_in_another_process_is_a_clear_error",
                 "test_point_ids_are_the_same_in_another_process",
                 "test_readme_quickstart_prints_rails_chunks_above_the_elephant",
                 "test_read_service_is_none_when_the_process_is_gone",
                 "test_a_full_disk_while_appending_is_a_storage_error_and_commits_nothing",
                 "test_without_opentelemetry_retrieval_and_ingest_work_and_nothing_is_imported",
                 "test_the_rewriter_and_the_package_work_without_httpx",
                 # a fresh interpreter's imports
                 "test_the_cli_imports_no_heavy_package",
                 "test_the_context_imports_nothing_above_it",
                 "test_importing_trails_vector_does_not_import_qdrant_client",
                 "test_loading_a_backend_imports_only_that_backend",
                 "test_the_registry_module_imports_no_backend",
                 "test_import_trails_kg_does_not_import_httpx",
                 "test_discovery_imports_nothing_heavy",
                 "test_import_trails_does_not_import_opentelemetry",
                 "test_a_package_with_lazy_names_loads_a_submodule_when_it_is_first_reached"}

# Fixtures that load a model through transformers or sentence-transformers (the tiny
# cross-encoder, the packaged MiniLM's tokenizer): importing those packages costs ~10 s of
# CPU in each process, so their tests are `slow` like the real model's.
MODEL_FIXTURES = {"model_dir", "logit", "minilm"}

# The markers a whole module gets from the lists above: a run whose -m expression deselects
# them (`make test-fast`) does not import the module at all (see pytest_ignore_collect).
MODULE_MARKERS = {**{name: {"server"} for name in SERVER_MODULES},
                  **{name: {"browser"} for name in BROWSER_MODULES},
                  **{name: {"process"} for name in PROCESS_MODULES}}


def needs(*modules: str, reason: str) -> pytest.MarkDecorator:
    """Skip a module's tests unless every one of ``modules`` is installed, decided without
    importing them: ``pytest.importorskip`` at module level imports the package (torch, for
    sentence-transformers: seconds) in every worker that collects the module, even in a run
    that deselects all of its tests. Tests import what they use where they use it."""
    missing = [name for name in modules if not _installed(name)]
    return pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} missing: {reason}")


def _installed(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        return False


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


# The everyday tier starts no process: a test of it (marked neither `process`, `server`,
# `browser` nor `slow`) that starts one, in its body or its fixtures, is missing its marker and
# fails in every run, `make test` included, naming what it started. Tools that start in
# milliseconds are allowed: git, and the probes libraries run once a process (the openai
# client's platform.processor() runs uname; ctypes.util.find_library runs ldconfig), whichever
# test happens to be the first to need them.
QUICK_TOOLS = {"git", "uname", "ldconfig"}
OTHER_TIERS = ("process", "server", "browser", "slow")
_spawned: list[str] = []
_watch = {"test": False}


def _record_spawns(event: str, args: tuple) -> None:
    if not _watch["test"]:
        return
    if event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        first = executable or (argv if isinstance(argv, (str, bytes)) else argv[0])
        name = Path(os.fsdecode(first).split()[0]).name
        if name not in QUICK_TOOLS:
            _spawned.append(name)
    elif event in ("os.posix_spawn", "os.fork", "os.forkpty"):
        _spawned.append(event)


def pytest_configure(config):
    sys.addaudithook(_record_spawns)


def _selects(expression: str, markers: set[str]) -> bool:
    """Whether pytest's -m ``expression`` selects a test carrying ``markers``."""
    from _pytest.mark.expression import Expression  # how pytest itself evaluates -m

    return Expression.compile(expression).evaluate(lambda name, **_: name in markers)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    _spawned.clear()
    _watch["test"] = not any(next(item.iter_markers(name), None) for name in OTHER_TIERS)
    return (yield)


@pytest.fixture(autouse=True)
def _no_process_in_the_everyday_tier():
    yield
    _watch["test"] = False
    if _spawned:
        started = ", ".join(sorted(set(_spawned)))
        pytest.fail(f"this test starts a process ({started}), which the everyday tier does not: "
                    "mark it process or server (tests/conftest.py, docs/testing.md), or run the "
                    "command line in this process (tests/_cli.py)", pytrace=False)


def pytest_ignore_collect(collection_path, config):
    """Leave out a module none of whose tests the run's -m expression can select, given the
    markers its name gives all of them: collecting it would only import what it needs. A test
    may carry more markers than its module's, so the module is left out only when the
    expression is false whatever other markers it names are added."""
    markers = MODULE_MARKERS.get(collection_path.stem)
    expression = config.getoption("markexpr")
    if not markers or not expression:
        return None
    others = sorted(set(re.findall(r"\w+", expression)) - {"and", "or", "not"} - markers)
    for extra in itertools.product((False, True), repeat=len(others)):
        added = {name for name, on in zip(others, extra, strict=True) if on}
        if _selects(expression, markers | added):
            return None
    return True


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__ if item.module else ""
        parameters = set(item.callspec.id.split("-")) if hasattr(item, "callspec") else set()
        fixtures = getattr(item, "fixturenames", ())
        if (module in SERVER_MODULES or parameters & SERVER_PARAMETERS
                or getattr(item, "originalname", "") in SERVER_TESTS
                or any(SERVER_FIXTURE.search(name) for name in fixtures)):
            item.add_marker(pytest.mark.server)
        if MODEL_FIXTURES.intersection(fixtures):
            item.add_marker(pytest.mark.slow)
        if module in BROWSER_MODULES:
            item.add_marker(pytest.mark.browser)
        if (module in PROCESS_MODULES or PROCESS_NAMES.search(item.name)
                or getattr(item, "originalname", "") in PROCESS_TESTS):
            item.add_marker(pytest.mark.process)
        if settings.get_current_profile_name() == "fast":
            _at_most_fast_examples(item)
    items[:] = heavy_modules_first(items)


def heavy_modules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The run's order: the modules holding a ``slow`` test first, each kept whole, the rest
    as collected. ``--dist worksteal`` gives each worker a contiguous share and, when one runs
    dry, moves tests from the *end* of the other's queue: a module that starts a share keeps
    its expensive module fixture (a notebook kernel, an ONNX export, a model) on one worker,
    and no worker finishes the run alone on a minute-long test."""
    heavy = {item.path for item in items if item.get_closest_marker("slow")}
    return sorted(items, key=lambda item: item.path not in heavy)  # stable: order kept within


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
