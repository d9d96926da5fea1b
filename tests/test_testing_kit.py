"""The test kit (``trails.testing``) stays out of the engine, and exports what tests use."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import trails.testing
from conftest import ROOT
from trails import _state

PACKAGE = ROOT / "python" / "trails"
KIT = PACKAGE / "testing"
# A string naming the kit as a module, as a lazy-import table or import_module would.
KIT_NAME = re.compile(r"trails\.testing(\.[\w.]+)?(:\w+)?")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an ``from ... import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def kit_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Where ``source`` (the module ``module``) imports or names ``trails.testing``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, is_package)
            names = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if KIT_NAME.fullmatch(node.value) else []
        found += [f"line {node.lineno}: {name}" for name in names
                  if name == "trails.testing" or name.startswith(("trails.testing.",
                                                                  "trails.testing:"))]
    return found


def test_no_engine_module_imports_the_test_kit():
    engine = [p for p in PACKAGE.rglob("*.py") if KIT not in p.parents]
    assert len(engine) > 30
    offenders = {}
    for path in engine:
        found = kit_imports(path.read_text(encoding="utf-8"), _module_name(path),
                            path.name == "__init__.py")
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


@pytest.mark.parametrize("source", [
    "import trails.testing",
    "import trails.testing.servers.openai as server",
    "from trails.testing import fresh_context",
    "from trails import testing",
    "from .testing.models import tiny_cross_encoder",
    "def f():\n    from trails.testing.servers import oxigraph\n",
    "LAZY = {'fresh_context': 'trails.testing'}",
    "importlib.import_module('trails.testing.models')",
])
def test_the_import_check_sees_every_way_to_reach_the_kit(source):
    assert kit_imports(source, "trails.context") != []


def test_the_import_check_ignores_a_docstring_example_and_other_modules():
    source = ('"""Use it in tests.\n\n>>> from trails.testing import fresh_context\n"""\n'
              "import trails.testing_helpers\nfrom trails import context\n")
    assert kit_imports(source, "trails.context") == []


def test_a_relative_import_inside_a_package_resolves_from_the_package():
    # In trails/rank/__init__.py "." is trails.rank itself; in trails/rank/fusion.py too.
    assert kit_imports("from .testing import models", "trails.rank", is_package=True) == []
    assert kit_imports("from ..testing import models", "trails.rank", is_package=True) != []
    assert kit_imports("from .testing import models", "trails.rank.fusion") == []
    assert kit_imports("from .testing import models", "trails", is_package=True) != []


def test_the_kit_exports_what_tests_use():
    assert set(trails.testing.__all__) >= {"fresh_context", "isolated_kernel", "MockEmbedder",
                                           "tiny_cross_encoder"}
    for name in trails.testing.__all__:
        assert callable(getattr(trails.testing, name)), name


def test_fresh_context_takes_any_embedder():
    from trails.vector.embedders.mock import MockEmbedder

    embedder = MockEmbedder(dim=12, seed=3)
    with trails.testing.fresh_context(embedder=embedder) as ctx:
        assert ctx.embedder is embedder and ctx.vectors.dim == 12
    with trails.testing.isolated_kernel(embedder=embedder) as ctx:
        assert ctx.embedder is embedder


@pytest.mark.parametrize(("given", "named"), [
    ({"dim": 128}, "dim=128 was given with an embedder of dimension 12"),
    ({"seed": 7}, "seed=7 was given with an embedder"),
    ({"dim": "64"}, "dim='64' was given"),
])
@pytest.mark.parametrize("make", [
    lambda where, **kw: trails.testing.fresh_context(**kw),
    lambda where, **kw: trails.testing.isolated_kernel(**kw).__enter__(),
    lambda where, **kw: trails.testing.context_directory(where, **kw).__enter__(),
], ids=["fresh_context", "isolated_kernel", "context_directory"])
def test_a_size_or_seed_beside_another_embedder_is_refused_not_dropped(make, given, named,
                                                                       tmp_path):
    # They were dropped without a word: fresh_context(embedder=MockEmbedder(dim=12), dim=128,
    # seed=7) ran on 12 dimensions and seed 3.
    from trails.errors import InvalidArgumentError
    from trails.vector.embedders.mock import MockEmbedder

    before = _state.default_context
    with pytest.raises(InvalidArgumentError, match=re.escape(named)) as refused:
        make(tmp_path / "context", embedder=MockEmbedder(dim=12, seed=3), **given)
    assert "leave" in str(refused.value)
    assert _state.default_context is before
    assert not (tmp_path / "context").exists()


def test_a_size_or_seed_the_embedder_has_may_be_repeated():
    from trails.vector.embedders.mock import MockEmbedder

    embedder = MockEmbedder(dim=12, seed=3)
    with trails.testing.fresh_context(embedder=embedder, dim=12, seed=3) as ctx:
        assert ctx.embedder is embedder


@pytest.mark.parametrize("make", [
    lambda: trails.testing.fresh_context(embedder="mock"),
    lambda: trails.testing.isolated_kernel(embedder=64).__enter__(),
    lambda: trails.testing.context_directory("unused", embedder=object()).__enter__(),
], ids=["fresh_context", "isolated_kernel", "context_directory"])
def test_something_that_is_no_embedder_is_refused_by_name(make):
    # It reached the store as an embedder and failed there: AttributeError: 'str' object has
    # no attribute 'dim'.
    from trails.errors import InvalidArgumentTypeError

    with pytest.raises(InvalidArgumentTypeError, match="embedder must be an Embedder"):
        make()


@pytest.mark.parametrize("where", ["file", "file/context"])
def test_a_context_directory_where_a_file_is_says_so(tmp_path, where):
    # mkdir's FileExistsError and NotADirectoryError came out raw.
    from trails.errors import StorageError

    (tmp_path / "file").write_text("notes")
    with pytest.raises(StorageError, match="a file stands where a directory must be"), \
            trails.testing.context_directory(tmp_path / where):
        pass
    assert (tmp_path / "file").read_text() == "notes"


def test_a_store_factory_given_an_embedder_says_to_pass_its_identity(tmp_path):
    # new(dim, embedder=...) takes what a store records of an embedder; an embedder itself
    # failed deep in the store: AttributeError: 'MockEmbedder' object has no attribute
    # 'describe'.
    from trails.errors import InvalidArgumentTypeError
    from trails.testing.stores import factory_named

    factory = factory_named("sqlite-vec-file")(tmp_path)
    embedder = trails.testing.MockEmbedder(dim=16)
    try:
        with pytest.raises(InvalidArgumentTypeError, match=r"pass its \.identity"):
            factory.new(16, embedder=embedder)
        store = factory.new(16, embedder=embedder.identity)
        assert store.embedder_identity == embedder.identity
    finally:
        factory.close_all()


@pytest.mark.parametrize("how", ["memory", "new directory", "existing directory"])
def test_a_context_given_something_that_is_no_embedder_refuses_it_by_name(tmp_path, how):
    # Context.open and Context.memory failed deep inside: 'str' object has no attribute 'dim'.
    from trails.context import Context
    from trails.errors import InvalidArgumentTypeError
    from trails.vector import MockEmbedder

    if how == "existing directory":
        Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    with pytest.raises(InvalidArgumentTypeError, match="embedder must be an Embedder.*--model"):
        if how == "memory":
            Context.memory("mock")  # type: ignore[arg-type]
        else:
            Context.open(tmp_path / "kb", embedder="mock")  # type: ignore[arg-type]
    if how == "new directory":
        assert not (tmp_path / "kb").exists()  # refused before anything was written
    if how == "existing directory":  # and nothing left locked
        Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()


def test_a_fresh_context_mints_under_the_base_iri_a_test_gives():
    # A test of a project's own IRIs needed Context.memory(MockEmbedder(...), base_iri=...)
    # by hand; the kit takes the base as Context.memory does, and refuses the same bases.
    from trails.errors import InvalidArgumentError
    from trails.ingest import Document, ingest_all
    from trails.testing import fresh_context, isolated_kernel

    with fresh_context(base_iri="https://example.org/kb/") as ctx:
        ingest_all([Document("a", "mem", "alpha")], ctx=ctx)
        assert ctx.kg.select_iris("SELECT ?d WHERE { ?d a trails:Document }") == [
            "https://example.org/kb/doc/a"]
    with isolated_kernel(base_iri="urn:x:kb#") as ctx:
        assert ctx.base_iri == "urn:x:kb#"
    with pytest.raises(InvalidArgumentError, match="does not end in / or #"):
        fresh_context(base_iri="https://example.org/kb")
