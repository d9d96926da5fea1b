"""The framework adapters and the test kit's strategies are extras: without them trails
imports and works, importing a module that needs one says which extra to install, and nothing
loads a framework until an adapter is used."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib

import pytest

from conftest import ROOT

FRAMEWORKS = ("langchain_core", "llama_index")

BLOCKER = textwrap.dedent("""
    import sys

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
""")


def run(code: str, blocked: tuple[str, ...] = ()) -> list[str]:
    """Run ``code`` in a fresh interpreter where the ``blocked`` packages are not installed."""
    script = f"BLOCKED = {blocked!r}\n" + BLOCKER + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.parametrize("module, extra, missing", [
    ("trails.integrations.langchain", "langchain", "langchain_core"),
    ("trails.integrations.llamaindex", "llamaindex", "llama_index"),
    ("trails.testing.strategies", "testing", "hypothesis"),
])
def test_without_its_package_a_module_names_its_extra(module, extra, missing):
    (message,) = run(f"""
        from trails.errors import MissingExtraError
        try:
            import {module}
        except MissingExtraError as exc:
            print(exc)
        """, blocked=(missing,))
    assert f'pip install "trails[{extra}]"' in message and module in message


def test_the_package_and_the_engine_load_no_framework():
    (loaded,) = run(f"""
        import json, sys
        import trails.integrations, trails.integrations.hits
        from trails import HybridRetriever, retrieve
        from trails.testing import fresh_context
        with fresh_context() as ctx:
            HybridRetriever(ctx).retrieve("x")
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {FRAMEWORKS!r})))
        """)
    assert json.loads(loaded) == []


def test_each_adapter_extra_installs_its_framework():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert any(r.startswith("langchain-core") for r in extras["langchain"])
    assert any(r.startswith("llama-index-core") for r in extras["llamaindex"])
    assert any(r.startswith("hypothesis") for r in extras["testing"])
