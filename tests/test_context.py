"""Context.open persistence and the isolated_kernel test harness."""

from __future__ import annotations

import datetime as dt
import os
import re
import tempfile
from pathlib import Path

import pytest

import trails
from trails import _state, retrieve
from trails.context import Context, set_default_context
from trails.errors import ConfigurationError, EmbeddingModelMismatchError
from trails.testing import fresh_context, isolated_kernel
from trails.vector.embedders.mock import MockEmbedder

TEXTS = {
    "trails://t/c1": "Rails is a web framework",
    "trails://t/c2": "Ruby gems and bundler",
    "trails://t/c3": "Elephants are grey",
}
FILTER = "SELECT ?iri WHERE { ?iri schema:dateCreated ?d FILTER(?d < ?before) }"


def fill(ctx) -> None:
    ids = list(TEXTS)
    ctx.vectors.add_many(ids, ctx.embedder.embed_many([TEXTS[i] for i in ids]),
                         [{"snippet": TEXTS[i]} for i in ids])
    ctx.kg.update('INSERT DATA { <trails://t/c1> schema:dateCreated "2024-01-01"^^xsd:date . '
                  '<trails://t/c3> schema:dateCreated "2020-01-01"^^xsd:date }')


def search(ctx):
    vector = retrieve("rails framework", ctx, mode="vector", k=3)
    hybrid = retrieve("rails framework", ctx, k=3, sparql_filter=FILTER,
                      bindings={"before": dt.date(2030, 1, 1)})
    return [(h.iri, h.score) for h in vector], [(h.iri, h.score) for h in hybrid]


def test_open_persists_graph_vectors_and_embedder_identity(tmp_path):
    root = tmp_path / "ctx"
    ctx = Context.open(root, embedder=MockEmbedder(dim=32, seed=7))
    fill(ctx)
    before = search(ctx)
    assert len(before[0]) == 3 and len(before[1]) == 2
    original_vector = ctx.embedder.embed("rails framework")
    ctx.close()
    assert (root / "trails.json").is_file()

    again = Context.open(root)
    try:
        assert isinstance(again.embedder, MockEmbedder)
        assert (again.embedder.dim, again.embedder.seed) == (32, 7)
        assert again.embedder.identity.model == "trails-mock-bow:seed=7"
        assert again.embedder.embed("rails framework") == original_vector
        assert again.vectors.count() == 3
        assert again.vectors.embedder_identity == again.embedder.identity
        assert search(again) == before
        assert again.kg.query("SELECT ?s WHERE { ?s schema:dateCreated ?d } ORDER BY ?s").column(
            "s") == ["trails://t/c1", "trails://t/c3"]
    finally:
        again.close()


def test_reopening_with_another_embedder_refuses_to_retrieve(tmp_path):
    Context.open(tmp_path, embedder=MockEmbedder(dim=32, seed=7)).close()
    other = Context.open(tmp_path, embedder=MockEmbedder(dim=32, seed=8))
    try:
        with pytest.raises(EmbeddingModelMismatchError, match="seed=7"):
            retrieve("rails", other, mode="vector")
    finally:
        other.close()


def test_read_only_open_of_a_missing_directory_is_a_configuration_error(tmp_path):
    missing = tmp_path / "nothing-here"
    with pytest.raises(ConfigurationError, match="no trails context"):
        Context.open(missing, read_only=True)
    assert not missing.exists()


def test_read_only_open_reads_but_refuses_writes(tmp_path):
    ctx = Context.open(tmp_path, embedder=MockEmbedder(dim=32, seed=7))
    fill(ctx)
    before = search(ctx)
    ctx.close()
    reader = Context.open(tmp_path, read_only=True)
    try:
        assert search(reader) == before
        with pytest.raises(ConfigurationError):
            reader.vectors.add("trails://t/c9", [1.0] * 32)
        with pytest.raises(ConfigurationError):
            reader.kg.update("INSERT DATA { <trails://t/c9> a trails:Chunk }")
    finally:
        reader.close()


# -- isolated_kernel ---------------------------------------------------------------------


def test_the_kernel_context_is_the_default_for_retrieve(ctx):
    ctx.vectors.add("trails://outer", ctx.embedder.embed("outer words"))
    with isolated_kernel() as inner:
        assert inner is not ctx
        inner.vectors.add("trails://inner", inner.embedder.embed("inner words"))
        assert [h.iri for h in retrieve("words", mode="vector")] == ["trails://inner"]
    assert [h.iri for h in retrieve("words", mode="vector")] == ["trails://outer"]


def test_the_kernel_restores_the_previous_default_context():
    previous = fresh_context(dim=8)
    set_default_context(previous)
    try:
        with isolated_kernel(dim=16) as inner:
            assert _state.default_context is inner
            assert inner.embedder.dim == 16
        assert _state.default_context is previous
        assert inner._closed
        with pytest.raises(RuntimeError), isolated_kernel():
            raise RuntimeError("boom")
        assert _state.default_context is previous
    finally:
        previous.close()


def test_the_kernel_hides_api_keys_and_restores_them(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-outside")
    monkeypatch.delenv("QDRANT_URL", raising=False)
    with isolated_kernel():
        assert "OPENAI_API_KEY" not in os.environ
        os.environ["OPENAI_API_KEY"] = "sk-inside"
        os.environ["QDRANT_URL"] = "http://inside"
    assert os.environ["OPENAI_API_KEY"] == "sk-outside"
    assert "QDRANT_URL" not in os.environ


def engine_variables() -> set[str]:
    """Every TRAILS_/OPENAI_/QDRANT_ variable name written in the engine's source."""
    package = Path(trails.__file__).parent
    return {name for path in package.rglob("*.py") if "testing" not in path.parts
            for name in re.findall(r"\b(?:TRAILS|OPENAI|QDRANT)_[A-Z][A-Z_]*[A-Z]\b",
                                   path.read_text(encoding="utf-8"))}


def test_the_kernel_hides_every_variable_the_engine_reads_and_restores_them(monkeypatch):
    # A credential (TRAILS_SPARQL_AUTH) or setting left out of a fixed list reached every
    # test from the shell; the exports' shared cache is the one variable kept on purpose.
    names = engine_variables() | {"TRAILS_NOT_YET_READ"}
    assert {"TRAILS_SPARQL_AUTH", "TRAILS_MODEL_PROGRESS", "OPENAI_API_KEY"} <= names
    for name in names:
        monkeypatch.setenv(name, f"outside-{name}")
    with isolated_kernel():
        seen = {name: os.environ.get(name) for name in names}
        os.environ["TRAILS_SET_INSIDE"] = "inside"
    assert {name for name, value in seen.items() if value is not None} == {
        "TRAILS_HOME", "TRAILS_ONNX_CACHE"}
    assert seen["TRAILS_ONNX_CACHE"] == "outside-TRAILS_ONNX_CACHE"
    assert {name: os.environ.get(name) for name in names} == {
        name: f"outside-{name}" for name in names}
    assert "TRAILS_SET_INSIDE" not in os.environ


def test_the_kernel_uses_a_private_temp_dir_and_removes_it(tmp_path):
    outer_tempdir = tempfile.tempdir
    with isolated_kernel():
        home = os.environ["TRAILS_HOME"]
        assert os.path.isdir(home)
        assert tempfile.gettempdir() == home
        with open(os.path.join(tempfile.mkdtemp(), "scratch.txt"), "w") as f:
            f.write("x")
    assert not os.path.exists(home)
    assert tempfile.tempdir == outer_tempdir
    assert os.environ.get("TRAILS_HOME") != home


def test_the_kernel_empties_the_model_cache_and_restores_it():
    _state.model_cache[("outer-model", None)] = "loaded"
    try:
        with isolated_kernel():
            assert _state.model_cache == {}
            _state.model_cache[("inner-model", None)] = "loaded"
        assert _state.model_cache == {("outer-model", None): "loaded"}
    finally:
        _state.model_cache.pop(("outer-model", None), None)


def test_fresh_contexts_are_independent():
    with fresh_context(dim=8, seed=3) as one, fresh_context(dim=8, seed=3) as two:
        one.vectors.add("trails://x", one.embedder.embed("x"))
        assert two.vectors.count() == 0
        assert one.embedder.embed("rails") == two.embedder.embed("rails")
        assert one.directory is None


# -- layering ------------------------------------------------------------------------------


def test_the_context_imports_nothing_above_it():
    import subprocess
    import sys

    code = ("import sys, trails.context; print(sorted({m.split('.')[1] for m in sys.modules "
            "if m.startswith('trails.') and m.split('.')[1] in ('retrieval', 'cli', "
            "'evaluation', 'testing')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_context_modules_import_only_at_the_top():
    import ast
    from pathlib import Path

    import trails

    package = Path(trails.__file__).parent
    for name in ("context.py", "backends.py", "config.py", "registry.py", "_lazy.py"):
        tree = ast.parse((package / name).read_text())
        inner = [node.lineno for function in ast.walk(tree)
                 if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                 for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)]
        assert inner == [], f"{name} imports inside functions at lines {inner}"
