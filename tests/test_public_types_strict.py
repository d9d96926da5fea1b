"""A user's strict type checker on the documented calls: what it reveals, what it refuses.

tests/test_public_types.py checks that the public names carry their types at all; here a
user program covering the documented API (ingest, its events, every retrieval mode, the
async forms, the records a search returns) is checked with ``mypy --strict``, and each
``reveal_type`` must be a precise type, never ``Any``. A user's mistakes in the calls whose
options travel as keywords (``aretrieve``'s, the file loader's) must be refused by the
checker, as ``retrieve``'s own are.
"""

from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]

# (expression, the type mypy --strict must reveal for it) in a program where `ctx` is a
# Context, `result` a RetrievalResult and `hit` a RetrievalHit.
REVEALED = [
    ('await aretrieve("q", ctx, mode="vector", k=3)', "trails.records.RetrievalResult"),
    ("await VectorRetriever(ctx, k=3).aretrieve('q')", "trails.records.RetrievalResult"),
    ("result.to_dict()", "TypedDict(trails.records.ResultDict, {..."),  # its keys follow
    ('result.to_dict()["hits"][0]["score"]', "float | None"),
    ('result.to_dict()["candidates"]', "int | None"),
    ("hit.to_dict()", "TypedDict(trails.records.HitDict, {..."),
    ('hit.to_dict()["components"]', "dict[str, float]"),
    ("RetrievalResult.from_dict(result.to_dict())", "trails.records.RetrievalResult"),
    ("result.to_context(max_tokens=500).hits[0]", "trails.records.RetrievalHit"),
    ("result.to_polars()", "polars.dataframe.frame.DataFrame"),  # trails[polars]; dev installs it
    ('ctx.stats()["scopes"]', "list[str]"),
    ('SearchRequest(query="q", fusion="none").fusion',
     "Literal['rrf'] | Literal['weighted'] | Literal['auto'] | (def (..."),  # or a FusionFn
    ('SearchRequest(query="q").fallback',
     "Literal['auto'] | Literal['keyword'] | Literal['skip'] | None"),
    ("hit.metadata", "dict[str, Any]"),  # a document's own metadata: any JSON value
]

REVEAL_PROGRAM = """
    from trails import (Context, RetrievalHit, RetrievalResult, SearchRequest, VectorRetriever,
                        aretrieve)


    async def use(ctx: Context, result: RetrievalResult, hit: RetrievalHit) -> None:
{reveals}"""

MISTAKES = [
    ('await aretrieve("q", ctx, kk=3)', 'Unexpected keyword argument "kk"'),
    ('await aretrieve("q", ctx, mode="fuzzy")', 'Argument "mode" to "aretrieve"'),
    ('await aretrieve("q", ctx, k="3")', 'Argument "k" to "aretrieve" has incompatible type "str"'),
    ("await VectorRetriever(ctx).aretrieve('q', k=3)", 'Argument "k" to "aretrieve"'),
    ('ingest_all("docs/", ctx=ctx, includ=["*.md"])', 'Unexpected keyword argument "includ"'),
    ('ingest_all("docs/", ctx=ctx, include=3)', 'Argument "include" has incompatible type "int"'),
    ('list(ingest("docs/", ctx=ctx, exclud=["x"]))', 'Unexpected keyword argument "exclud"'),
    ('[e async for e in aingest("docs/", ctx=ctx, includ=["*.md"])]',
     'Unexpected keyword argument "includ"'),
    ('retrieve("q", ctx, fusion="rfr")', 'Argument "fusion" to "retrieve"'),
    ('HybridRetriever(ctx, fusion="rfr")', 'Argument "fusion" to "HybridRetriever"'),
    ('retrieve("q", ctx, fallback="keywords")', 'Argument "fallback" to "retrieve"'),
    ('SearchRequest(qury="q")', 'Unexpected keyword argument "qury"'),
    ('SearchRequest(query="q", mode="fuzzy")', 'Argument "mode" to "SearchRequest"'),
]

# The LangChain adapter's (checked when langchain_core is installed): its fields are typed
# for the checker, though pydantic reads the retriever as Any.
ADAPTER_MISTAKES = [
    ("TrailsRetriever(retriever=ctx)",
     'Argument "retriever" to "TrailsRetriever" has incompatible type "Context"; expected "Retr'),
    ("TrailsRetriever(retriever=VectorRetriever(ctx), kk=3)", 'Unexpected keyword argument "kk"'),
    ("n: int = TrailsRetriever(retriever=VectorRetriever(ctx)).retriever",
     'expression has type "Retriever"'),
]

MISTAKE_PROGRAM = """
    from trails import (Context, HybridRetriever, SearchRequest, VectorRetriever, aretrieve,
                        ingest_all, retrieve)
    from trails.ingest import aingest, ingest
    {adapter}

    async def use(ctx: Context) -> None:
        {mistake}
"""
LANGCHAIN = importlib.util.find_spec("langchain_core") is not None

# What the documented calls take, written as a user would: must check with no error.
CORRECT_PROGRAM = """
    import datetime as dt
    import functools
    import json

    from trails import (Context, HybridRetriever, RetrievalResult, SearchRequest, aretrieve,
                        ingest_all, retrieve)
    from trails.ingest import aingest
    from trails.kg import IRI
    from trails.rank.fusion import rrf


    async def use(ctx: Context) -> str:
        ingest_all(["docs/", "notes.jsonl"], ctx=ctx, scope="legal", include=["*.md", "*.jsonl"],
                   exclude="drafts/*", root="docs", jsonl_text_field="body", jsonl_id_field="key")
        async for _ in aingest("docs/", ctx=ctx, include="*.md"):
            pass
        for fusion in ("auto", "rrf", "weighted", None, functools.partial(rrf, constant=30)):
            retrieve("q", ctx, fusion=fusion, bindings={"since": dt.date(2024, 1, 1),
                                                         "t": IRI("https://example.org/t")})
        HybridRetriever(ctx, fusion="rrf", k=3)
        request = SearchRequest(query="q", mode="hybrid", scopes="legal", fusion="none",
                                fallback="keyword", now="2026-01-01T00:00:00+00:00")
        retrieve(request.query, ctx, **request.options())
        result = await aretrieve("q", ctx, mode="graph", sparql_filter="SELECT ?iri WHERE {}")
        saved = json.dumps(result.to_dict())
        again = RetrievalResult.from_dict(json.loads(saved))
        score = again.to_dict()["hits"][0]["score"] if again else None
        return f"{score} {result.to_context(max_tokens=500)}"
"""


# The examples, each with the package it needs beyond trails: checked when it is installed.
EXAMPLES = {"demo.py": "rich", "langchain_retriever.py": "langchain_core",
            "llamaindex_retriever.py": "llama_index"}


def _examples() -> list[Path]:
    return [ROOT / "examples" / name for name, package in EXAMPLES.items()
            if importlib.util.find_spec(package) is not None]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """mypy --strict's report on each program, by file name, from one run over them all."""
    folder = tmp_path_factory.mktemp("strict_user_programs")
    reveals = "\n".join(f"        reveal_type({expression})" for expression, _ in REVEALED)
    programs = {"reveals.py": textwrap.dedent(REVEAL_PROGRAM.format(reveals=reveals)),
                "correct.py": textwrap.dedent(CORRECT_PROGRAM)} | {
        f"mistake_{n}.py": textwrap.dedent(MISTAKE_PROGRAM).format(mistake=mistake, adapter="")
        for n, (mistake, _) in enumerate(MISTAKES)} | {
        f"adapter_mistake_{n}.py": textwrap.dedent(MISTAKE_PROGRAM).format(
            mistake=mistake, adapter="from trails.integrations.langchain import TrailsRetriever")
        for n, (mistake, _) in enumerate(ADAPTER_MISTAKES) if LANGCHAIN}
    for name, program in programs.items():
        (folder / name).write_text(program)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # pyproject's mypy_path ("python") is relative to the working directory
        out, err, _status = mypy_api.run([
            "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(ROOT / ".venv" / ".mypy_cache"),
            "--strict", *(str(folder / name) for name in programs),
            *(str(example) for example in _examples())])
    assert "note: Revealed type" in out, out + err
    return {name: "\n".join(line for line in (out + err).splitlines() if f"/{name}:" in line)
            for name in [*programs, *EXAMPLES]}


def _revealed(report: str) -> dict[int, str]:
    return {int(line): kind for line, kind in
            re.findall(r'reveals\.py:(\d+): note: Revealed type is "(.*)"', report)}


@pytest.mark.parametrize(("number", "expected"),
                         [(n, kind) for n, (_, kind) in enumerate(REVEALED)],
                         ids=[expression for expression, _ in REVEALED])
def test_a_documented_value_reveals_its_precise_type(
    reports: dict[str, str], number: int, expected: str
) -> None:
    first = 1 + REVEAL_PROGRAM.splitlines().index("{reveals}")  # the first reveal's line
    revealed = _revealed(reports["reveals.py"]).get(first + number, "")
    if expected.endswith("..."):  # its start (a TypedDict's keys, a callable's whole type)
        assert revealed.startswith(expected[:-3]), reports["reveals.py"]
    else:
        assert revealed == expected, reports["reveals.py"]


def test_the_reveals_program_has_no_other_error(reports: dict[str, str]) -> None:
    assert "error:" not in reports["reveals.py"], reports["reveals.py"]


def test_the_documented_calls_check_strictly(reports: dict[str, str]) -> None:
    assert reports["correct.py"] == "", reports["correct.py"]


@pytest.mark.parametrize(("number", "message"),
                         [(n, message) for n, (_, message) in enumerate(MISTAKES)],
                         ids=[mistake for mistake, _ in MISTAKES])
def test_a_mistake_in_a_keyword_option_is_caught(
    reports: dict[str, str], number: int, message: str
) -> None:
    assert message in reports[f"mistake_{number}.py"], reports[f"mistake_{number}.py"]


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_an_example_checks_strictly(reports: dict[str, str], example: str) -> None:
    """What a user copies from examples/ checks under their strict checker as it is (a
    graph query's rows read through ``trails.kg.select``, typed, not ``kg.query``'s union)."""
    if ROOT / "examples" / example not in _examples():
        pytest.skip(f"{EXAMPLES[example]} is not installed")
    assert reports[example] == "", reports[example]


@pytest.mark.skipif(not LANGCHAIN, reason="langchain_core is not installed")
@pytest.mark.parametrize(("number", "message"),
                         [(n, message) for n, (_, message) in enumerate(ADAPTER_MISTAKES)],
                         ids=[mistake for mistake, _ in ADAPTER_MISTAKES])
def test_a_mistake_wrapping_a_retriever_for_langchain_is_caught(
    reports: dict[str, str], number: int, message: str
) -> None:
    report = reports[f"adapter_mistake_{number}.py"]
    assert message in report, report
