"""What a user's own type checker sees: the public names with their real types.

`import trails` resolves its names lazily (``__getattr__``), which a type checker reads as
``object``; the packages mirror each lazy name under ``TYPE_CHECKING`` (tests/test_layers.py
holds the mirror to the lazy map). Here a user program is checked with ``mypy --strict`` under
the project's own settings, so it shares the cache ``make typecheck`` has just filled.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]

USER_PROGRAM = """
    from trails import Context, Document, MockEmbedder, RetrievalResult, ingest_all, retrieve
    from trails.kg import SparqlEndpointGraph
    from trails.testing import fresh_context
    from trails.vector import SqliteVecStore


    def best(ctx: Context) -> str:
        ingest_all([Document(id="a", source="a", text="Rails.")], ctx=ctx)
        result: RetrievalResult = retrieve("rails", ctx, k=3, mode="hybrid")
        return result[0].iri if result else ""


    def stores() -> tuple[type[SqliteVecStore], type[SparqlEndpointGraph], int]:
        return SqliteVecStore, SparqlEndpointGraph, MockEmbedder(dim=8).dim


    with fresh_context() as ctx:
        print(best(ctx))
"""


MISTAKES = [
    ('n: int = retrieve("q", ctx)', 'expression has type "RetrievalResult"'),
    ('retrieve("q", ctx, kk=3)', 'Unexpected keyword argument "kk"'),
    ('retrieve("q", ctx, mode="fuzzy")', '"mode"'),
    ('ctx.nothing_here()', '"Context" has no attribute "nothing_here"'),
    ('ingest_all([], ctx=ctx, batch_size="64")', 'Argument "batch_size" has incompatible type "str"'),
]

MISTAKE_PROGRAM = """
    from trails import Context, ingest_all, retrieve


    def use(ctx: Context) -> None:
        {mistake}
"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """mypy --strict's report on each program, by file name, from one run over them all (one
    run loads the package's types once: a run per program cost ~10 s each)."""
    folder = tmp_path_factory.mktemp("user_programs")
    programs = {"user_program.py": USER_PROGRAM} | {
        f"mistake_{n}.py": MISTAKE_PROGRAM.format(mistake=mistake)
        for n, (mistake, _) in enumerate(MISTAKES)}
    for name, program in programs.items():
        (folder / name).write_text(textwrap.dedent(program))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # pyproject's mypy_path ("python") is relative to the working directory
        out, err, _status = mypy_api.run([
            "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(ROOT / ".venv" / ".mypy_cache"),
            "--strict", *(str(folder / name) for name in programs)])
    assert "error: " in out, out + err  # the mistakes were seen at all
    return {name: "\n".join(line for line in (out + err).splitlines() if f"{name}:" in line)
            for name in programs}


def test_a_user_program_type_checks_strictly(reports: dict[str, str]) -> None:
    assert reports["user_program.py"] == ""


@pytest.mark.parametrize(("number", "message"),
                         [(n, message) for n, (_, message) in enumerate(MISTAKES)],
                         ids=[mistake for mistake, _ in MISTAKES])
def test_a_users_mistake_is_caught_by_their_type_checker(
    reports: dict[str, str], number: int, message: str
) -> None:
    # Were the names `object` or `Any`, these would pass silently or fail for another reason.
    assert message in reports[f"mistake_{number}.py"], reports[f"mistake_{number}.py"]


def test_the_declared_python_is_the_one_checked() -> None:
    # The library uses typing.Self, tomllib and datetime.UTC (3.11); mypy checks it as 3.11, so
    # pip must not install it on an older interpreter.
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    checked = project["tool"]["mypy"]["python_version"]
    assert project["project"]["requires-python"] == f">={checked}"


def test_each_public_name_is_what_it_says_once_its_package_is_loaded() -> None:
    """`trails.ingest` names the function and a package: once the package is imported (any
    context opens it), Python binds the name to the package. It still ingests when called, so
    `from trails import ingest` works (and is what type checkers see) in any order."""
    import importlib

    import trails
    from trails.ingest import DocumentIngested
    from trails.testing import fresh_context

    for name in trails.__all__:
        importlib.util.find_spec(f"trails.{name}") and importlib.import_module(f"trails.{name}")
    from trails import Document, ingest

    with fresh_context() as ctx:
        events = list(ingest([Document(id="a", source="a", text="Rails is a framework.")],
                             ctx=ctx))
        assert any(isinstance(event, DocumentIngested) for event in events)
        assert len(trails.retrieve("rails", ctx, k=1)) == 1


def test_the_top_level_lists_what_a_newcomer_needs_and_keeps_the_names_it_used_to() -> None:
    """`trails.__all__` (and `dir(trails)`) names the entry points and the values they take
    and give, not the parts, which live in their packages; the parts' names listed there
    before still import, as the very same objects."""
    import trails
    from trails.kg import KnowledgeGraph, OxigraphGraph
    from trails.vector import MockEmbedder, SqliteVecStore, VectorHit, VectorStore

    assert {"retrieve", "ingest", "Context", "Document", "SearchRequest", "RetrievalResult",
            "TrailsError"} <= set(trails.__all__)
    kept = {"MockEmbedder": MockEmbedder, "SqliteVecStore": SqliteVecStore,
            "VectorHit": VectorHit, "VectorStore": VectorStore,
            "KnowledgeGraph": KnowledgeGraph, "OxigraphGraph": OxigraphGraph}
    for name, value in kept.items():
        assert name not in trails.__all__ and name not in dir(trails)
        assert getattr(trails, name) is value
    assert len(trails.__all__) <= 21  # it goes down, never up
