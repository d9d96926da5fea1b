"""The backend registry: names to classes, extras that exist, missing packages named, and a
backend imported only when it is chosen."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib

import pytest

from conftest import ROOT
from trails import _lazy
from trails.errors import ConfigurationError, MissingExtraError
from trails.registry import EMBEDDERS, GRAPHS, VECTOR_STORES, Backend, Backends

TABLES = [GRAPHS, VECTOR_STORES, EMBEDDERS]
ENTRIES = [(table, name) for table in TABLES for name in table]


def entry_id(entry: tuple[Backends, str]) -> str:
    return f"{entry[0].kind}:{entry[1]}"


def _pyproject_extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _distributions(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9._-]+", r).group().lower().replace("_", "-")
            for r in requirements}


def test_the_three_kinds_hold_the_backends_trails_ships():
    assert set(GRAPHS) == {"oxigraph", "sparql"}
    assert set(VECTOR_STORES) == {"sqlite-vec", "qdrant", "pgvector"}
    assert set(EMBEDDERS) == {"mock", "sentence-transformers", "openai"}


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_every_extra_the_registry_names_exists_in_pyproject(entry):
    table, name = entry
    backend = table[name]
    extras = _pyproject_extras()
    if backend.extra is not None:
        assert backend.extra in extras, f"{name}: extra {backend.extra!r} is not in pyproject"
    for module in backend.requires:
        package, extra = _lazy.OPTIONAL_MODULES[module]
        # The MissingExtraError a user sees names this backend's extra, which installs it.
        assert extra == backend.extra, f"{name}: {module} is installed by trails[{extra}]"
        assert package.lower() in _distributions(extras[extra])


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_every_backend_loads_its_class(entry):
    table, name = entry
    cls = table.load(name)
    assert isinstance(cls, type)
    assert f"{cls.__module__}:{cls.__qualname__}".startswith(table[name].target.split(":")[0])
    assert table.name_of(cls) == name


REQUIRING = [(table, name, module) for table in TABLES for name in table
             for module in table[name].requires]


@pytest.mark.parametrize("entry", REQUIRING, ids=lambda e: f"{e[1]}-without-{e[2]}")
def test_a_missing_package_names_the_pip_command(entry, monkeypatch):
    table, name, module = entry
    monkeypatch.setitem(sys.modules, module, None)  # import now fails as if not installed
    with pytest.raises(MissingExtraError) as error:
        table.load(name)
    assert f'pip install "trails[{table[name].extra}]"' in str(error.value)
    assert name in str(error.value)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.kind)
def test_an_unknown_name_lists_the_valid_ones(table):
    with pytest.raises(ConfigurationError) as error:
        table.load("no-such-backend")
    message = str(error.value)
    assert table.kind in message and "no-such-backend" in message
    assert all(name in message for name in table)


def test_a_target_that_is_not_a_class_is_refused():
    odd = Backends("graph", {"function": Backend("trails._lazy:require")})
    with pytest.raises(ConfigurationError, match="not a class"):
        odd.load("function")


def test_name_of_is_exact_and_imports_nothing():
    mock = EMBEDDERS.load("mock")

    class Derived(mock):
        pass

    assert EMBEDDERS.name_of(mock) == "mock"
    assert EMBEDDERS.name_of(Derived) is None
    assert VECTOR_STORES.name_of(mock) is None


def test_loading_a_backend_imports_only_that_backend():
    script = textwrap.dedent("""
        import json, sys
        from trails.registry import EMBEDDERS, GRAPHS, VECTOR_STORES
        VECTOR_STORES.load("sqlite-vec"); GRAPHS.load("oxigraph"); EMBEDDERS.load("mock")
        others = ["trails.vector.stores.qdrant", "trails.kg.remote", "qdrant_client", "httpx",
                  "trails.vector.embedders.openai", "trails.vector.embedders.sentence_transformer",
                  "openai", "torch"]
        print(json.dumps([m for m in others if m in sys.modules]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert json.loads(out.splitlines()[-1]) == []


def test_the_registry_module_imports_no_backend():
    script = ("import json, sys, trails.registry; print(json.dumps(sorted(m for m in sys.modules "
              "if m.startswith(('trails.vector', 'trails.kg')))))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert json.loads(out.splitlines()[-1]) == []
