"""The package's import structure: layers point one way, no cycles, no hidden imports.

Read from the source with ``ast`` (nothing is imported), so a new upward import, a cycle or a
trails import tucked inside a function fails here with the file and line that did it.
docs/architecture.md draws the same layers.
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trails._lazy import OPTIONAL_MODULES

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "trails"

# Bottom to top. A module may import from its own layer or below, never above. The most
# specific prefix wins. docs/architecture.md explains each layer.
LAYERS: list[tuple[str, ...]] = [
    ("trails", "trails.errors", "trails.faults", "trails.records", "trails._lazy", "trails._state",
     "trails.circuit", "trails.resilience", "trails.deadline",
     "trails.tracing",
     "trails.scopes", "trails.registry", "trails.recorded", "trails.text", "trails._openai", "trails.display"),
    ("trails.kg", "trails.vector"),
    ("trails.parts", "trails.similarity", "trails.config", "trails.backends", "trails.integrity",
     "trails.audit"),
    ("trails.ingest", "trails.rank"),
    ("trails.context",),
    ("trails.retrieval",),
    ("trails.cli", "trails.testing", "trails.evaluation", "trails.integrations", "trails.service",
     "trails.__main__"),
]

# Optional third-party packages may be imported where they are used (so that `import trails`
# and a light install never load them); everything else is imported at the top of a module.
OPTIONAL_ROOTS = {name.split(".")[0] for name in OPTIONAL_MODULES} | {
    # Installed with an optional package above, used only with it.
    "torch", "transformers", "tokenizers", "onnx", "onnxruntime", "huggingface_hub",
    "portalocker", "ir_measures", "uvicorn", "fastapi", "starlette", "langchain_core", "httpcore",
    "llama_index", "IPython",
    # A base dependency, but slow to import and needed only to load HTML.
    "bs4",
    # A base dependency, but slow to import (asyncio) and needed only by a remote call's
    # retries (trails.resilience, ADR 0049).
    "tenacity",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best, level = "", -1
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, number
    assert level >= 0, f"{module} is in no layer: add it to LAYERS and docs/architecture.md"
    return level


class Import:
    def __init__(self, target: str, line: int, in_function: bool, mirror: bool = False) -> None:
        self.target, self.line, self.in_function = target, line, in_function
        # A package's `if TYPE_CHECKING:` block that mirrors its lazy names for type checkers:
        # it never runs, and test_type_checkers_see_what_lazy_names_resolve_to holds it to the
        # lazy map, so it may name any layer.
        self.mirror = mirror


def is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
        and node.test.id == "TYPE_CHECKING"


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for every test here."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imports(path: Path, name: str) -> Iterator[Import]:
    """Every import in the module, type-only ones included, with whether it sits in a function."""
    tree = parsed(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST, in_function: bool, mirror: bool = False) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
            mirrors = mirror or (node is tree and path.name == "__init__.py"
                                 and is_type_checking_block(child))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(alias.name, child.lineno, in_function, mirror)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base]
                if base == "trails" or base.startswith("trails."):
                    # `from trails.vector import stores` imports the submodule, and
                    # `from trails import retrieve` the module a lazy name stands for.
                    targets = [_imported_by_name(base, a.name) for a in child.names]
                for target in dict.fromkeys(targets):
                    yield Import(target, child.lineno, in_function, mirror)
            yield from visit(child, inside, mirrors)

    yield from visit(tree, False)


def _imported_by_name(package: str, name: str) -> str:
    qualified = f"{package}.{name}"
    if qualified in MODULES:
        return qualified
    return LAZY.get(qualified, package)


def lazy_names() -> dict[str, str]:
    """``package.Name -> module`` for every name a package resolves on first access
    (``lazy_attributes(__name__, {"Name": "module:attribute"}, ...)``): taking the name
    imports that module."""
    found = {}
    for name, path in MODULES.items():
        for node in ast.walk(parsed(path)):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_attributes"
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Dict)):
                for key, value in zip(node.args[1].keys, node.args[1].values, strict=True):
                    assert isinstance(key, ast.Constant) and isinstance(value, ast.Constant), (
                        f"{path}: lazy_attributes takes a literal name -> 'module:attribute' map")
                    found[f"{name}.{key.value}"] = value.value.partition(":")[0]
    return found


MODULES = modules()
LAZY = lazy_names()


def trails_imports() -> Iterator[tuple[str, Import]]:
    for name, path in MODULES.items():
        for found in imports(path, name):
            if (found.target == "trails" or found.target.startswith("trails.")) \
                    and not found.mirror:
                yield name, found


def test_every_module_is_in_a_layer():
    for name in MODULES:
        layer_of(name)


def test_imports_point_down_the_layers():
    upward = [
        f"{MODULES[name].relative_to(PACKAGE.parent)}:{found.line}: {name} (layer "
        f"{layer_of(name)}) imports {found.target} (layer {layer_of(found.target)})"
        for name, found in trails_imports()
        if layer_of(found.target) > layer_of(name)
    ]
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def test_no_import_cycle():
    """Every module imports first in a fresh interpreter, whatever the order: an import
    fails on its order only by reaching a module still being initialised, that is through a
    cycle of this graph (type-only imports included, so it is stricter than Python)."""
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, found in trails_imports():
        target = found.target
        while target not in MODULES and "." in target:
            target = target.rpartition(".")[0]  # `from pkg.mod import name`
        if target in MODULES:
            edges[name].add(target)
    cycle = find_cycle(import_graph(edges))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _packages_above(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:n]) for n in range(1, len(parts))}


def import_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """What importing each module runs: its imports, and the packages above each of them
    (Python runs a package's ``__init__`` before its submodule), except the importer's own
    packages, which are already in ``sys.modules`` when its body runs."""
    return {name: {module for target in targets for module in {target} | _packages_above(target)
                   if module != name and module not in _packages_above(name)}
            for name, targets in edges.items()}


def test_the_import_graph_runs_the_packages_above_an_import():
    # p.a imports q.b: q's __init__ runs first, and it imports q.c, which imports p.a.
    assert find_cycle(import_graph({"p": set(), "p.a": {"q.b"}, "q": {"q.c"}, "q.b": set(),
                                    "q.c": {"p.a"}})) == ["p.a", "q", "q.c", "p.a"]
    # A package re-exporting its submodules is no cycle.
    assert find_cycle(import_graph({"p": {"p.a"}, "p.a": {"p.b"}, "p.b": set()})) is None


def test_a_lazy_name_is_an_import_of_its_module():
    assert LAZY["trails.retrieve"] == "trails.retrieval.retrieve"
    assert _imported_by_name("trails", "retrieve") == "trails.retrieval.retrieve"
    assert _imported_by_name("trails.vector", "stores") == "trails.vector.stores"
    assert _imported_by_name("trails", "__version__") == "trails"


def test_a_package_with_lazy_names_loads_a_submodule_when_it_is_first_reached():
    """``import trails.kg`` loads no store; ``trails.kg.rdfio.X`` still works, as it did
    when the package imported its submodules eagerly; what is no submodule stays absent."""
    probe = ("import sys, trails.kg; loaded = 'trails.kg.oxigraph' in sys.modules; "
             "limit = trails.kg.rdfio.MAX_RDF_BYTES; "
             "print(loaded, limit, hasattr(trails.kg, 'no_such_module'), "
             "hasattr(trails.kg, '_private'), type(trails.kg.oxigraph).__name__)")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", str(2**30), "False", "False", "module"]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, as a path that returns to its start, or None.

    A package importing its own submodules (``pkg/__init__`` re-exporting ``pkg.mod``) is not
    a cycle unless the submodule imports the package back.
    """
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_imports_inside_functions_are_only_of_optional_packages():
    hidden = []
    for name, path in MODULES.items():
        for found in imports(path, name):
            root = found.target.split(".")[0]
            if found.in_function and root not in OPTIONAL_ROOTS:
                hidden.append(f"{path.relative_to(PACKAGE.parent)}:{found.line}: {found.target}")
    assert not hidden, ("imports inside functions (move them to the top of the module; only "
                        "optional packages load late):\n" + "\n".join(hidden))


def test_optional_roots_are_not_the_standard_library():
    assert not OPTIONAL_ROOTS & set(sys.stdlib_module_names)


@pytest.mark.parametrize("limit", [450])
def test_no_module_is_a_grab_bag(limit):
    long = {str(p.relative_to(PACKAGE.parent)): n for p in MODULES.values()
            if (n := len(p.read_text().splitlines())) > limit}
    assert not long, f"modules over {limit} lines (split them by concern): {long}"


def lazy_map(tree: ast.Module) -> dict[str, str] | None:
    """The ``name -> "module:attribute"`` map a package passes to ``lazy_attributes``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_attributes":
            return ast.literal_eval(node.args[1])
    return None


def type_checking_names(tree: ast.Module) -> dict[str, str]:
    """What the package's top-level ``if TYPE_CHECKING:`` block imports, as name -> target."""
    names: dict[str, str] = {}
    for node in tree.body:
        if is_type_checking_block(node):
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                for alias in statement.names:
                    names[alias.asname or alias.name] = f"{statement.module}:{alias.name}"
    return names


def test_type_checkers_see_what_lazy_names_resolve_to():
    # A lazy name is `object` to a user's type checker unless the package also imports it
    # under TYPE_CHECKING; both must name the same thing, or the checker is told a lie.
    packages = 0
    for path in MODULES.values():
        tree = parsed(path)
        targets = lazy_map(tree)
        if path.name != "__init__.py" or targets is None:
            continue
        packages += 1
        assert type_checking_names(tree) == targets, (
            f"{path.relative_to(PACKAGE.parent)}: its `if TYPE_CHECKING:` imports must be "
            "exactly its lazy names")
    assert packages >= 6


# The harness users run (benchmarks/) and the research that chose the defaults (studies/) sit
# beside the package: studies may use the harness's helpers, never the other way round, and
# neither reaches into trails' private names (a study that needs one needs a public function).
SCRIPTS = PACKAGE.parents[1]


def _script_imports(folder: str) -> Iterator[tuple[Path, int, str, list[str]]]:
    for path in sorted((SCRIPTS / folder).glob("**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                yield path, node.lineno, node.module, [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, node.lineno, alias.name, []


def test_the_harness_never_imports_a_study():
    studies = {path.stem for path in (SCRIPTS / "studies").glob("*.py")}
    wrong = [f"{path.relative_to(SCRIPTS)}:{line} imports {module}"
             for path, line, module, _ in _script_imports("benchmarks")
             if module.split(".")[0] in studies]
    assert studies and not wrong, wrong


@pytest.mark.parametrize("folder", ["benchmarks", "studies", "examples"])
def test_scripts_use_only_public_names_of_trails(folder):
    wrong = [f"{path.relative_to(SCRIPTS)}:{line} imports {module}: {names}"
             for path, line, module, names in _script_imports(folder)
             if module.split(".")[0] == "trails"
             and (any(part.startswith("_") for part in module.split("."))
                  or any(name.startswith("_") for name in names))]
    assert not wrong, wrong


def test_no_module_needs_a_platform_lock_module():
    """Locks go through portalocker (ADR 0044), so `import trails.context` and the audit trail
    work on Windows too: no module imports fcntl or msvcrt itself."""
    wrong = [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path in MODULES.values()
             for node in ast.walk(parsed(path))
             if isinstance(node, ast.Import | ast.ImportFrom)
             and {(a.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
                  for a in node.names} & {"fcntl", "msvcrt"}]
    assert not wrong, wrong
