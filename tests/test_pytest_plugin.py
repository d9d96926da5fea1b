"""The trails pytest plugin (trails.testing.pytest_plugin): registered by the installed entry
point, free for projects that do not use it, and its fixtures isolate and clean up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import trails.testing.pytest_plugin as plugin
from trails.errors import InvalidArgumentError
from trails.testing import stores

LIGHT = {"trails", "trails._lazy", "trails.errors", "trails.testing",
         "trails.testing.pytest_plugin"}


def run_pytest(tmp_path, env, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run pytest on one test file in an empty project, as a user of the installed kit."""
    (tmp_path / "test_it.py").write_text(textwrap.dedent(source))
    env = {k: v for k, v in env.items() if not k.startswith("TRAILS_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rA", *args, "test_it.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_a_project_that_uses_no_fixture_loads_nothing_of_the_engine(tmp_path, installed_trails):
    run = run_pytest(tmp_path, installed_trails, """
        import json, sys

        def test_modules(request):
            assert request.config.pluginmanager.get_plugin("trails") is not None
            loaded = sorted(m for m in sys.modules
                            if m.split(".")[0] in ("trails", "pyoxigraph", "sqlite_vec", "apsw"))
            print("LOADED", json.dumps(loaded))
        """, "-s")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    (line,) = [x for x in run.stdout.splitlines() if x.startswith("LOADED")]
    assert set(json.loads(line.split(" ", 1)[1])) <= LIGHT


def test_the_fixtures_isolate_each_test_and_close_what_they_opened(tmp_path, installed_trails):
    run = run_pytest(tmp_path, installed_trails, """
        import os, tempfile
        import pytest
        from trails import retrieve
        from trails.context import Context, default_context
        from trails.errors import ConfigurationError

        SAVED = {}

        def test_ctx_is_the_default_context_in_a_private_home(trails_ctx):
            assert default_context() is trails_ctx and trails_ctx.directory is None
            home = os.environ["TRAILS_HOME"]
            assert tempfile.gettempdir() == home and os.path.isdir(home)
            SAVED.update(ctx=trails_ctx, home=home)

        def test_after_it_the_kernel_is_gone():
            assert "TRAILS_HOME" not in os.environ
            assert not os.path.exists(SAVED["home"])
            with pytest.raises(ConfigurationError, match="closed"):
                retrieve("x", SAVED["ctx"], mode="vector")

        def test_dir_is_a_context_in_the_test_s_directory(trails_dir, trails_ctx, tmp_path):
            assert trails_dir.directory is not None
            assert trails_dir.directory.parent == tmp_path
            assert trails_dir.embedder is trails_ctx.embedder and not trails_dir.read_only
            SAVED["dir"] = trails_dir

        def test_after_it_the_directory_context_is_closed_and_reopens():
            with pytest.raises(ConfigurationError, match="closed"):
                retrieve("x", SAVED["dir"], mode="vector")
            with Context.open(SAVED["dir"].directory, embedder=SAVED["dir"].embedder) as again:
                assert again.directory == SAVED["dir"].directory

        def test_store(trails_store, trails_store_factory):
            assert trails_store.dim == 64
            trails_store.add(id="x", vector=[1.0] * 64, metadata={})
            assert [h.id for h in trails_store.search([1.0] * 64, k=5)] == ["x"]

        def test_persistent(trails_persistent_store_factory):
            store = trails_persistent_store_factory.new(3)
            store.add(id="x", vector=[1.0, 0.0, 0.0], metadata={})
            store.close()
            again = trails_persistent_store_factory.reopen()
            assert [h.id for h in again.search([1.0, 0.0, 0.0], k=1)] == ["x"]
        """)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = [line.split("::")[1] for line in run.stdout.splitlines()
              if line.startswith("PASSED")]
    assert sorted(p for p in passed if p.startswith("test_store")) == sorted(
        f"test_store[{name}]" for name in plugin.BACKENDS)
    assert sorted(p for p in passed if p.startswith("test_persistent")) == sorted(
        f"test_persistent[{name}]" for name in plugin.PERSISTENT_BACKENDS)
    assert len(passed) == 4 + len(plugin.BACKENDS) + len(plugin.PERSISTENT_BACKENDS)


def test_under_xdist_each_test_has_its_own_kernel_and_leaves_no_directory(tmp_path,
                                                                          installed_trails):
    """Two workers, eight tests that each ingest into the fixtures: every test starts from
    empty contexts in its own private home, and every home is gone afterwards."""
    seen = tmp_path / "seen"
    seen.mkdir()
    run = run_pytest(tmp_path, {**installed_trails, "SEEN": str(seen)}, """
        import json, os, pathlib, tempfile
        import pytest
        from trails import retrieve
        from trails.context import default_context
        from trails.ingest import Document, ingest_all

        @pytest.mark.parametrize("i", range(8))
        def test_one(i, trails_ctx, trails_dir):
            assert default_context() is trails_ctx
            for ctx in (trails_ctx, trails_dir):
                assert ctx.stats()["documents"] == 0
                ingest_all([Document(id=f"d{i}", source=f"d{i}", text=f"note {i}")], ctx=ctx)
                assert [h.document for h in retrieve("note", ctx, mode="vector", k=9)] == [
                    f"trails://local/doc/d{i}"]
            (pathlib.Path(tempfile.gettempdir()) / "scratch").write_text("x")
            record = {"home": os.environ["TRAILS_HOME"], "dir": str(trails_dir.directory),
                      "worker": os.environ.get("PYTEST_XDIST_WORKER")}
            (pathlib.Path(os.environ["SEEN"]) / f"{i}.json").write_text(json.dumps(record))
        """, "-n", "2")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    records = [json.loads(p.read_text()) for p in sorted(seen.iterdir())]
    assert len(records) == 8
    assert {r["worker"] for r in records} == {"gw0", "gw1"}
    assert len({r["home"] for r in records}) == 8 and len({r["dir"] for r in records}) == 8
    assert not any(os.path.exists(r["home"]) for r in records)


def test_the_plugin_names_the_kit_s_backends():
    assert plugin.BACKENDS == [f.name for f in stores.FACTORIES]
    assert plugin.PERSISTENT_BACKENDS == [f.name for f in stores.PERSISTENT]
    assert {"sqlite-vec-memory", "sqlite-vec-file"} <= set(plugin.BACKENDS)


def test_an_unknown_backend_and_reopening_memory_say_what_to_use(tmp_path):
    with pytest.raises(InvalidArgumentError, match="sqlite-vec-memory"):
        stores.factory_named("faiss")
    memory = stores.factory_named("sqlite-vec-memory")(tmp_path)
    with pytest.raises(InvalidArgumentError, match="persistent"):
        memory.reopen()


def test_this_repository_s_tests_run_on_the_plugin(ctx, trails_ctx, request):
    assert ctx is trails_ctx
    assert request.config.pluginmanager.has_plugin(plugin.__name__) or (
        request.config.pluginmanager.get_plugin("trails") is plugin)
