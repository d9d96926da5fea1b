"""A keyword argument the function does not take is refused naming the one meant."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect

import pytest

import trails
from trails import Context, Document, TrailsError, ingest_all, retrieve
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest import Chunk
from trails.ingest.checks import FILE_OPTIONS, INGEST_ARGUMENTS
from trails.ingest.loaders import FileLoader
from trails.ingest.pipeline import ingest
from trails.keywords import named_keywords
from trails.kg.sparql import TRAILS
from trails.retrieval.arguments import KEYWORDS_MEANT
from trails.testing import MockEmbedder, fresh_context, isolated_kernel

FILTER = f"SELECT ?iri WHERE {{ ?iri a <{TRAILS}Chunk> }}"


@pytest.fixture(scope="module")
def ctx():
    context = fresh_context()
    ingest_all([Document("a", "mem", "alpha beta gamma"), Document("b", "mem", "delta")],
               ctx=context)
    return context


@pytest.mark.parametrize(("given", "meant"), [
    ("filter", "sparql_filter"), ("where", "sparql_filter"), ("top_k", "k"), ("limit", "k"),
    ("params", "bindings"), ("scopes", "scope"), ("threshold", "min_score"),
    ("sparql_fitler", "sparql_filter"), ("binding", "bindings"), ("min_scor", "min_score"),
])
def test_retrieve_names_the_argument_meant(ctx, given, meant):
    with pytest.raises(InvalidArgumentTypeError) as caught:
        retrieve("alpha", ctx, **{given: FILTER if meant == "sparql_filter" else 3})
    message = str(caught.value)
    assert f"takes no argument {given}:" in message
    assert f"did you mean {meant}=...?" in message
    # Still what Python raises for a bad keyword, so existing handlers keep working.
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, TrailsError)


def test_an_unknown_name_with_nothing_close_lists_what_retrieve_takes(ctx):
    with pytest.raises(InvalidArgumentTypeError, match="qqq \\(it takes bindings, caller, ctx"):
        retrieve("alpha", ctx, qqq=1)


def test_two_unknown_names_are_both_named(ctx):
    with pytest.raises(InvalidArgumentTypeError,
                       match="takes no arguments filter: did you mean sparql_filter=...\\?; "
                             "top_k: did you mean k=...\\?"):
        retrieve("alpha", ctx, top_k=1, filter=FILTER)


def test_the_right_names_still_search(ctx):
    result = retrieve("alpha", ctx, k=1, sparql_filter=FILTER, mode="hybrid")
    assert [hit.snippet for hit in result] == ["alpha beta gamma"]


def test_aretrieve_passes_the_refusal_on(ctx):
    with pytest.raises(InvalidArgumentTypeError, match="did you mean k="):
        asyncio.run(trails.aretrieve("alpha", ctx, top_k=2))


def test_every_name_meant_is_an_argument_of_retrieve():
    taken = set(inspect.signature(retrieve).parameters)
    assert set(KEYWORDS_MEANT.values()) <= taken
    assert not set(KEYWORDS_MEANT) & taken


@pytest.mark.parametrize(("given", "meant"), [
    ("scopes", "scope"), ("context", "ctx"), ("includ", "include"), ("batchsize", "batch_size"),
])
def test_ingest_names_the_argument_meant(given, meant):
    context = fresh_context()
    with pytest.raises(InvalidArgumentTypeError, match=f"ingest\\(\\) takes no argument {given}: "
                                                       f"did you mean {meant}="):
        ingest_all([Document("a", "mem", "alpha")], ctx=context, **{given: "x"})
    assert context.vectors.count() == 0  # nothing was written before the refusal


def test_ingest_arguments_are_ingests_own_and_the_file_loaders():
    own = {name for name, p in inspect.signature(ingest).parameters.items()
           if p.kind is not inspect.Parameter.VAR_KEYWORD}
    assert own == INGEST_ARGUMENTS
    options = {f.name for f in dataclasses.fields(FileLoader) if f.init} - {"paths"}
    assert options == FILE_OPTIONS


def test_a_function_with_its_own_kwargs_is_left_alone():
    def anything(**options: object) -> dict[str, object]:
        return options

    assert named_keywords({})(anything) is anything


def test_an_alias_for_no_argument_is_a_mistake_at_definition():
    with pytest.raises(ValueError, match="takes no"):
        @named_keywords({"top_k": "limit"})
        def search(query: str, *, k: int = 10) -> int:
            return k


@pytest.mark.parametrize(("make", "given", "meant"), [
    (trails.HybridRetriever, "top_k", "k"), (trails.HybridRetriever, "filter", "sparql_filter"),
    (trails.HybridRetriever, "scopes", "scope"), (trails.VectorRetriever, "limit", "k"),
    (trails.VectorRetriever, "min_scor", "min_score"),
])
def test_a_retrievers_constructor_names_the_argument_meant(ctx, make, given, meant):
    with pytest.raises(InvalidArgumentTypeError,
                       match=f"^{make.__name__}\\(\\) takes no argument {given}: "
                             f"did you mean {meant}=...\\?$"):
        make(ctx, **{given: FILTER if meant == "sparql_filter" else 3})


def test_a_retriever_takes_only_the_names_it_has(ctx):
    # VectorRetriever has no filter: no alias points at one it lacks.
    with pytest.raises(InvalidArgumentTypeError, match="filter \\(it takes caller, ctx, fallback, k"):
        trails.VectorRetriever(ctx, filter=FILTER)
    # What it takes, as a caller may pass it: never self, which no call names.
    with pytest.raises(InvalidArgumentTypeError) as caught:
        trails.HybridRetriever(ctx, xyzzy=1)
    assert str(caught.value) == (
        "HybridRetriever() takes no argument xyzzy (it takes bindings, caller, ctx, fallback, "
        "fusion, k, min_score, query_variable, rewriter, scope, sparql_filter, steps, why)")
    made = trails.HybridRetriever(ctx, k=2, sparql_filter=FILTER)
    assert [hit.snippet for hit in made.retrieve("alpha")][:1] == ["alpha beta gamma"]
    assert dataclasses.replace(made, k=1).k == 1


def _open_kb(tmp_path, **given):
    return Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), **given)


def _a_result(ctx):
    return retrieve("alpha", ctx, k=1)


@pytest.mark.parametrize(("call", "name", "given", "meant"), [
    (lambda tmp, ctx, kw: _open_kb(tmp, **kw), "Context.open", "readonly", "read_only"),
    (lambda tmp, ctx, kw: _open_kb(tmp, **kw), "Context.open", "vector_store", "vectors"),
    (lambda tmp, ctx, kw: _open_kb(tmp, **kw), "Context.open", "graph", "kg"),
    (lambda tmp, ctx, kw: Context.memory(**kw), "Context.memory", "model", "embedder"),
    (lambda tmp, ctx, kw: _a_result(ctx).to_context(**kw), "RetrievalResult.to_context",
     "max_token", "max_tokens"),
    (lambda tmp, ctx, kw: _a_result(ctx).to_context(**kw), "RetrievalResult.to_context",
     "budget", "max_tokens"),
    (lambda tmp, ctx, kw: trails.replay(ctx, "run", **kw), "replay", "querry", "query"),
    (lambda tmp, ctx, kw: fresh_context(**kw), "fresh_context", "dims", "dim"),
    (lambda tmp, ctx, kw: isolated_kernel(**kw).__enter__(), "isolated_kernel", "dims", "dim"),
    (lambda tmp, ctx, kw: Document("a", "mem", "x", **kw), "Document", "meta", "metadata"),
    (lambda tmp, ctx, kw: Document(id="a", source="mem", **kw), "Document", "content", "text"),
    (lambda tmp, ctx, kw: Document(id="a", source="mem", **kw), "Document", "page_content",
     "text"),
    (lambda tmp, ctx, kw: Chunk(start=0, end=1, position=0, **kw), "Chunk", "txt", "text"),
])
def test_the_rest_of_the_api_names_the_argument_meant(tmp_path, ctx, call, name, given,
                                                      meant):
    # Python's own TypeError ("got an unexpected keyword argument") named no fix and was no
    # TrailsError; every public call a user makes refuses a wrong name as retrieve() does.
    with pytest.raises(InvalidArgumentTypeError) as caught:
        call(tmp_path, ctx, {given: 3})
    assert str(caught.value) == f"{name}() takes no argument {given}: did you mean {meant}=...?"
    assert list(tmp_path.iterdir()) == []  # Context.open made nothing before refusing


def test_a_document_and_a_chunk_still_copy_pickle_and_take_their_names():
    import copy
    import pickle

    doc = Document(id="a", source="mem", text="x", metadata={"k": 1})
    chunk = Chunk(text="x", start=0, end=1, position=0)
    assert pickle.loads(pickle.dumps(doc)) == doc == copy.deepcopy(doc)
    assert pickle.loads(pickle.dumps(chunk)) == chunk == copy.deepcopy(chunk)
    assert dataclasses.replace(chunk, end=1) == chunk
    assert dataclasses.replace(doc, text="y").text == "y"


@pytest.mark.parametrize("run", [
    lambda docs, ctx: list(ingest(docs, ctx)), lambda docs, ctx: ingest_all(docs, ctx),
    lambda docs, ctx: ingest_all(ctx, docs),
    lambda docs, ctx: asyncio.run(_drain(trails.ingest.aingest(docs, ctx))),
])
def test_a_context_given_by_position_to_ingest_is_refused_naming_ctx(run):
    # retrieve(query, ctx) takes the context by position, ingest only as ctx=: Python's
    # "takes 1 positional argument but 2 were given" named neither ctx= nor the fix.
    context = fresh_context()
    with pytest.raises(InvalidArgumentTypeError,
                       match=r"^ingest\(\) takes the context as ctx=: "
                             r"ingest_all\(documents, ctx=ctx\), got 2 positional arguments"):
        run([Document("a", "mem", "alpha")], context)
    assert context.vectors.count() == 0


async def _drain(events):
    return [event async for event in events]


@pytest.mark.parametrize("call", [
    lambda made, kw: made.retrieve("alpha", **kw),
    lambda made, kw: asyncio.run(made.aretrieve("alpha", **kw)),
])
def test_a_retrievers_options_given_per_call_are_refused_naming_where_they_go(ctx, call):
    # HybridRetriever(ctx).retrieve("q", k=3) raised Python's bare "got an unexpected
    # keyword argument 'k'": a retriever's options are fixed when it is made.
    made = trails.HybridRetriever(ctx)
    with pytest.raises(InvalidArgumentTypeError) as caught:
        call(made, {"k": 1})
    assert str(caught.value) == (
        "HybridRetriever.retrieve() takes the query and messages only, not k: a retriever's "
        "options are fixed when it is made (HybridRetriever(..., k=...), or "
        "dataclasses.replace(retriever, k=...))")
    with pytest.raises(InvalidArgumentTypeError,
                       match=r"^HybridRetriever.retrieve\(\) takes no argument top_k: "
                             r"did you mean k=\.\.\.\? \(set when the retriever is made"):
        call(made, {"top_k": 1})
    assert [hit.snippet for hit in call(made, {"messages": None})][:1] == ["alpha beta gamma"]


@pytest.mark.parametrize(("given", "meant"), [
    ("top_k", "k"), ("limit", "k"), ("sparql_filter", "filter"), ("where", "filter"),
    ("scope", "scopes"), ("threshold", "min_score"), ("min_scor", "min_score"),
])
def test_a_search_request_names_the_field_meant(given, meant):
    # SearchRequest (and the service's JSON body, which shares its refusal) listed every
    # field but named none: top_k is k, and sparql_filter (retrieve's name) is filter here.
    with pytest.raises(InvalidArgumentError,
                       match=rf"^{given} is no option of a search \(did you mean {meant}\?\); "
                             r"a search takes query, mode, k, "):
        trails.SearchRequest(query="alpha", **{given: 3})


@pytest.mark.parametrize("run", [
    lambda docs: list(ingest(docs)), lambda docs: ingest_all(docs),
    lambda docs: asyncio.run(_drain(trails.ingest.aingest(docs))),
])
def test_ingest_without_a_context_is_refused_naming_ctx_even_with_a_default_set(run):
    # Python's "missing 1 required keyword-only argument: 'ctx'" was no TrailsError; with a
    # default context set, retrieve() uses it and ingest does not: the refusal says so.
    with isolated_kernel() as default:
        with pytest.raises(InvalidArgumentTypeError,
                           match=r"^ingest\(\) needs ctx=, the context to write into: "
                                 r"ingest_all\(documents, ctx=ctx\) \(it never writes into the "
                                 r"default context unasked\)"):
            run([Document("a", "mem", "alpha")])
        assert default.vectors.count() == 0


@pytest.mark.parametrize(("call", "said"), [
    (lambda tmp, ctx: retrieve("alpha", ctx, "vector"),
     "retrieve() takes query and ctx by position, the rest by name (mode=..., k=..., "),
    (lambda tmp, ctx: Context.open(tmp / "kb", MockEmbedder(dim=8)),
     ("Context.open() takes directory by position, the rest by name (embedder=..., "
      "read_only=..., ")),
    (lambda tmp, ctx: Context.memory(MockEmbedder(dim=8), "https://example.org/kb/"),
     "Context.memory() takes embedder by position, the rest by name (base_iri=...)"),
    (lambda tmp, ctx: trails.replay(ctx, "run", "the query"),
     "replay() takes ctx and run by position, the rest by name (query=..., caller=...)"),
    (lambda tmp, ctx: fresh_context(8),
     "fresh_context() takes no argument by position: name each (dim=..., seed=..., "),
])
def test_too_many_arguments_by_position_are_refused_naming_the_keywords(tmp_path, ctx, call,
                                                                        said):
    # Python's "takes from 1 to 2 positional arguments but 3 were given" named no keyword.
    with pytest.raises(InvalidArgumentTypeError) as caught:
        call(tmp_path, ctx)
    assert str(caught.value).startswith(said), str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_retrievers_options_by_position_are_refused_naming_them(ctx):
    # HybridRetriever(ctx, 3): Python's "takes 2 positional arguments but 3 were given".
    with pytest.raises(InvalidArgumentTypeError,
                       match=r"^HybridRetriever\(\) takes ctx by position, the rest by name "
                             r"\(k=\.\.\., sparql_filter=\.\.\., "):
        trails.HybridRetriever(ctx, 3)
    assert trails.VectorRetriever(ctx, 2).k == 2  # its k goes by position, as it always did
