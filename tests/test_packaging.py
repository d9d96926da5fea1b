"""Packaging: a light import, a public API that resolves, and extras that exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib

import pytest

import trails
import trails.ingest
import trails.kg
import trails.vector
from conftest import ROOT
from trails import _lazy as _extras
from trails.errors import ConfigurationError, MissingExtraError, TrailsError

HEAVY = ["torch", "openai", "qdrant_client", "sentence_transformers", "transformers", "tiktoken",
         "tenacity"]


def loaded_after(code: str) -> list[str]:
    script = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    return json.loads(out.splitlines()[-1])


def test_import_trails_loads_no_heavy_package():
    assert loaded_after("import trails") == []


def test_the_test_kit_and_a_mock_retrieval_load_no_heavy_package():
    assert loaded_after("""
        import trails.vector
        from trails import retrieve
        from trails.testing import fresh_context
        ctx = fresh_context()
        ctx.vectors.add("trails://a", ctx.embedder.embed("rails"))
        assert retrieve("rails", ctx)[0].iri == "trails://a"
    """) == []


def test_a_resilience_policy_loads_its_retry_library_only_to_make_a_call():
    # trails init and trails.json validate policies; only a remote call runs the retry loop.
    assert loaded_after("""
        from trails.resilience import Resilience, breaker_for
        policy = Resilience.from_settings({"attempts": 2, "jitter": 0.5})
        breaker_for("the SPARQL endpoint", "https://example.org/sparql", policy)
    """) == []
    assert loaded_after("""
        from trails.resilience import Resilience, breaker_for
        circuit = breaker_for("the SPARQL endpoint", "https://example.org/sparql", Resilience())
        Resilience().call(lambda: 1, lambda exc: None, circuit)
    """) == ["tenacity"]


def test_the_import_check_can_see_a_heavy_import():
    assert loaded_after("import tiktoken") == ["tiktoken"]


# That every module imports, and first in a fresh interpreter whatever the order, is checked
# without starting one: test_doctests imports each module, test_layers.test_no_import_cycle
# reads the import graph (with the packages each import runs first and the lazy names).


@pytest.mark.parametrize("module", [trails, trails.vector, trails.kg, trails.ingest],
                         ids=lambda m: m.__name__)
def test_every_public_name_resolves(module):
    assert module.__all__
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_the_lazy_names_are_the_real_objects():
    from trails.retrieval.retrieve import retrieve
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    assert trails.retrieve is retrieve and trails.vector.retrieve is retrieve
    assert trails.SqliteVecStore is SqliteVecStore and trails.vector.SqliteVecStore is SqliteVecStore
    with pytest.raises(AttributeError):
        trails.no_such_name  # noqa: B018


def test_lazy_attributes_import_a_name_on_first_access_and_list_it():
    getattr_, dir_ = _extras.lazy_attributes(
        "some.module", {"Lazy": "trails.errors:ConfigurationError"}, ["Eager", "Lazy"])
    assert getattr_("Lazy") is ConfigurationError
    assert dir_() == ["Eager", "Lazy"]
    with pytest.raises(AttributeError, match="'some.module' has no attribute 'Eager'"):
        getattr_("Eager")  # an eager name is a module global, never looked up here


@pytest.mark.parametrize("target", ["trails.errors", "trails.errors:", ":TrailsError"])
def test_an_import_target_needs_a_module_and_an_attribute(target):
    with pytest.raises(ValueError, match="module:attribute"):
        _extras.import_target(target)


@pytest.mark.parametrize("module", [trails, trails.vector, trails.kg, trails.ingest],
                         ids=lambda m: m.__name__)
def test_dir_lists_the_lazy_names(module):
    assert set(module.__all__) <= set(dir(module))


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9._-]+", r).group().lower().replace("_", "-") for r in requirements}


def test_every_registered_extra_exists_in_pyproject_and_installs_the_package():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert _extras.OPTIONAL_MODULES
    for module, (package, extra) in _extras.OPTIONAL_MODULES.items():
        assert extra in extras, f"{module}: extra {extra!r} is not in pyproject.toml"
        assert package.lower() in _requirement_names(extras[extra]), (
            f"{module}: trails[{extra}] does not install {package!r}")


@pytest.mark.parametrize("module", sorted(_extras.OPTIONAL_MODULES))
def test_each_registered_module_when_missing_names_its_pip_command(module, monkeypatch):
    package, extra = _extras.OPTIONAL_MODULES[module]
    monkeypatch.setitem(sys.modules, module, None)  # import now fails as if not installed
    with pytest.raises(MissingExtraError) as error:
        _extras.require(module, "Some feature")
    message = str(error.value)
    assert f'pip install "trails[{extra}]"' in message
    assert package in message and "Some feature" in message


def test_require_of_a_missing_module_raises_missing_extra_error(monkeypatch):
    monkeypatch.setitem(_extras.OPTIONAL_MODULES, "trails_test_never_installed",
                        ("never-installed", "vector-qdrant"))
    with pytest.raises(MissingExtraError) as error:
        _extras.require("trails_test_never_installed", "The frobnicator")
    assert isinstance(error.value, ImportError) and isinstance(error.value, TrailsError)
    assert 'pip install "trails[vector-qdrant]"' in str(error.value)
    assert (error.value.package, error.value.extra) == ("never-installed", "vector-qdrant")


def test_require_returns_an_installed_module():
    import numpy

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(_extras.OPTIONAL_MODULES, "numpy", ("numpy", "vector"))
        assert _extras.require("numpy", "x") is numpy


BROKEN = {
    "missing_dependency": "import trails_test_absent_dependency_xyz\n",
    "missing_submodule": "import {name}._absent_submodule\n",  # its own submodule: a bug
    "bad_name": "from os import no_such_function_xyz\n",
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_an_import_error_inside_an_installed_module_is_not_a_missing_extra(
    kind, tmp_path, monkeypatch
):
    name = f"trails_test_broken_{kind}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text(BROKEN[kind].format(name=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(_extras.OPTIONAL_MODULES, name, ("broken", "vector"))
    with pytest.raises(ImportError) as error:
        _extras.require(name, "The broken backend")
    assert not isinstance(error.value, MissingExtraError)
    assert "pip install" not in str(error.value)
