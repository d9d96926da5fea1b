"""OpenTelemetry spans (trails.tracing, docs/tracing.md): the span tree and attributes of a
search and of an ingest, no text unless TRAILS_LOG_TEXT is set, errors on the span, and
nothing at all without opentelemetry.

Spans go to the SDK's in-memory exporter, on a processor this module adds to the process's
tracer provider and shuts down when it is done.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from trails import aretrieve, retrieve
from trails.errors import InvalidArgumentError, SparqlError
from trails.ingest import Document, ingest
from trails.ingest.events import DocumentIngested
from trails.kg import IRI
from trails.testing import fresh_context
from trails.tracing import traced

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

MARKER = "zebrafinchquux"  # a word no attribute name, backend or plan name contains


@pytest.fixture(scope="module")
def exporter():
    memory = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, sdk_trace.TracerProvider):
        provider = sdk_trace.TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory
    memory.shutdown()  # spans of later test modules are dropped, not kept


@pytest.fixture
def spans(exporter):
    exporter.clear()
    return exporter


def ingested(ctx, documents, **options):
    return [e.doc_iri for e in ingest(documents, ctx=ctx, **options)
            if isinstance(e, DocumentIngested)]


def by_name(finished):
    named = {}
    for span in finished:
        named.setdefault(span.name, []).append(span)
    return named


def children(finished, parent):
    return [s for s in finished if s.parent is not None
            and s.parent.span_id == parent.context.span_id]


def every_value(finished):
    """Every attribute and event attribute value of every span, as text."""
    for span in finished:
        yield from (str(v) for v in span.attributes.values())
        for event in span.events:
            yield from (str(v) for v in event.attributes.values())
        yield span.status.description or ""


def rerank_nothing(query, hits, ctx):
    return hits


def test_a_hybrid_filtered_search_makes_one_tree_with_its_attributes(spans):
    ctx = fresh_context()
    iris = ingested(ctx, [Document(f"d{n}", "mem", f"Elephants and {MARKER} number {n}.")
                          for n in range(3)], scope="zoo")
    spans.clear()
    result = retrieve(
        "elephants", ctx, k=1, scope="zoo", steps=[rerank_nothing],
        sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?doc FILTER(?doc != ?not) }",
        bindings={"not": IRI(iris[0])})
    assert len(result) == 1
    finished = spans.get_finished_spans()
    named = by_name(finished)
    [root] = named["trails.retrieve"]
    assert root.parent is None
    assert sorted(s.name for s in children(finished, root)) == [
        "trails.embed", "trails.filter", "trails.fusion", "trails.rank.keyword",
        "trails.rank.vector", "trails.step"]
    assert root.attributes["gen_ai.operation.name"] == "retrieval"
    assert root.attributes["gen_ai.request.top_k"] == 1.0
    assert root.attributes["trails.retrieve.mode"] == "hybrid"
    assert root.attributes["trails.retrieve.has_filter"] is True
    assert root.attributes["trails.retrieve.bindings"] == 1
    assert root.attributes["trails.retrieve.scopes"] == 1
    assert root.attributes["trails.retrieve.fusion"] == "auto"
    assert root.attributes["trails.retrieve.steps"] == 1
    assert root.attributes["trails.retrieve.candidates"] == 2  # three documents, one excluded
    assert root.attributes["trails.retrieve.hits"] == 1
    assert root.attributes["trails.retrieve.exhaustive"] is True
    assert isinstance(root.attributes["trails.retrieve.plan"], str)
    [graph] = named["trails.filter"]
    assert graph.attributes["db.system.name"] == "oxigraph"
    assert graph.attributes["db.operation.name"] == "SELECT"
    assert graph.attributes["db.response.returned_rows"] == 2  # the two documents admitted
    [embed] = named["trails.embed"]
    assert embed.attributes["gen_ai.operation.name"] == "embeddings"
    assert embed.attributes["gen_ai.request.model"] == ctx.embedder.identity.model
    assert embed.attributes["gen_ai.embeddings.dimension.count"] == 64
    [vector] = named["trails.rank.vector"]
    assert vector.attributes["db.system.name"] == "sqlite"
    assert vector.attributes["db.operation.name"] == "vector_search"
    assert vector.attributes["db.response.returned_rows"] == 2
    [keyword] = named["trails.rank.keyword"]
    assert keyword.attributes["db.operation.name"] == "keyword_search"
    assert keyword.attributes["db.response.returned_rows"] == 2
    [fusion] = named["trails.fusion"]
    assert fusion.attributes["trails.fusion.name"] == "auto"
    assert fusion.attributes["trails.fusion.rankings"] == 2
    assert named["trails.step"][0].attributes["trails.step.name"] == "rerank_nothing"
    # Children run inside the search, in the order of the work.
    order = [s.name for s in sorted(children(finished, root), key=lambda s: s.start_time)]
    assert order.index("trails.filter") < order.index("trails.rank.vector") < order.index(
        "trails.fusion") < order.index("trails.step")
    assert all(root.start_time <= s.start_time and s.end_time <= root.end_time
               for s in children(finished, root))


def test_a_search_nests_under_the_callers_span(spans):
    ctx = fresh_context()
    ingested(ctx, [Document("a", "mem", "Elephants.")])
    tracer = trace.get_tracer("the-application")
    with tracer.start_as_current_span("handle request") as outer:
        retrieve("elephants", ctx, mode="vector")
    [root] = by_name(spans.get_finished_spans())["trails.retrieve"]
    assert root.parent.span_id == outer.get_span_context().span_id


def test_an_awaited_search_nests_under_the_callers_span(spans):
    ctx = fresh_context()
    ingested(ctx, [Document("a", "mem", "Elephants.")])
    tracer = trace.get_tracer("the-application")

    async def handler():
        with tracer.start_as_current_span("handle request") as outer:
            await aretrieve("elephants", ctx, mode="vector")
        return outer

    outer = asyncio.run(handler())
    [root] = by_name(spans.get_finished_spans())["trails.retrieve"]
    assert root.parent.span_id == outer.get_span_context().span_id


def test_an_ingest_makes_load_chunk_embed_and_commit_children_per_batch(spans):
    ctx = fresh_context()
    documents = [Document(f"d{n}", "mem", f"Document {n} about {MARKER}.") for n in range(5)]
    iris = ingested(ctx, documents, batch_size=2)
    assert len(iris) == 5
    finished = spans.get_finished_spans()
    named = by_name(finished)
    [root] = named["trails.ingest"]
    assert root.parent is None
    assert {s.name for s in children(finished, root)} == {
        "trails.ingest.load", "trails.ingest.chunk", "trails.ingest.embed",
        "trails.ingest.commit"}
    assert len(children(finished, root)) == len(finished) - 1  # every span is a child
    assert len(named["trails.ingest.chunk"]) == 5  # one per document
    assert [s.attributes["trails.ingest.chunks"] for s in named["trails.ingest.chunk"]] == [1] * 5
    # Five one-chunk documents in batches of two: 2 + 2 + 1.
    assert sorted(s.attributes["trails.ingest.chunks"] for s in named["trails.ingest.embed"]) \
        == [1, 2, 2]
    assert len(named["trails.ingest.embed"]) == math.ceil(5 / 2)
    assert all(s.attributes["gen_ai.operation.name"] == "embeddings"
               for s in named["trails.ingest.embed"])
    assert sum(s.attributes["trails.ingest.documents"] for s in named["trails.ingest.commit"]) == 5
    assert sum(s.attributes["trails.ingest.documents"] for s in named["trails.ingest.load"]) == 5
    assert root.attributes["trails.ingest.ingested"] == 5
    assert root.attributes["trails.ingest.chunks"] == 5
    assert root.attributes["trails.ingest.failed"] == 0
    assert root.attributes["trails.ingest.scope"] == "default"
    assert root.status.status_code != trace.StatusCode.ERROR


def test_the_callers_spans_between_ingest_events_do_not_nest_under_the_ingest(spans):
    """The run yields at every event: the consumer's code runs in its own context."""
    ctx = fresh_context()
    tracer = trace.get_tracer("the-application")
    with tracer.start_as_current_span("outer") as outer:
        for _ in ingest([Document(f"d{n}", "mem", "text") for n in range(3)], ctx=ctx):
            with tracer.start_as_current_span("consumer"):
                pass
        assert trace.get_current_span() is outer  # the context is the caller's again
    named = by_name(spans.get_finished_spans())
    assert {s.parent.span_id for s in named["consumer"]} == {outer.get_span_context().span_id}


def test_no_text_in_any_span_by_default(spans, monkeypatch):
    monkeypatch.delenv("TRAILS_LOG_TEXT", raising=False)
    ctx = fresh_context()
    ingested(ctx, [Document("a", "mem", f"The {MARKER} sings at dawn.", title=MARKER)])
    retrieve(f"where does the {MARKER} sing", ctx,
             sparql_filter=f'SELECT ?iri WHERE {{ ?iri ?p ?o FILTER(?o != "{MARKER}") }}')
    with pytest.raises(SparqlError):
        retrieve(MARKER, ctx, sparql_filter=f"SELECT ?iri WHERE {{ {MARKER} broken")
    finished = spans.get_finished_spans()
    assert len(finished) > 5
    leaked = [value for value in every_value(finished) if MARKER in value]
    assert leaked == []


def test_a_digest_level_keeps_its_query_out_of_every_span(spans, monkeypatch, tmp_path):
    """Under TRAILS_LOG_TEXT a search of a scope whose security level keeps only digests
    (AuditConfig.digest_levels) puts its query in no span; another scope's search does."""
    from trails.config import AuditConfig
    from trails.context import Context
    from trails.testing import MockEmbedder

    monkeypatch.setenv("TRAILS_LOG_TEXT", "1")
    audit = AuditConfig(levels={"hr": "protected"}, digest_levels=["protected"])
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16), audit=audit) as ctx:
        for scope in ("hr", "default"):
            ingested(ctx, [Document(scope, "mem", "Salaries rose.")], scope=scope)
        spans.clear()
        retrieve(f"what does the {MARKER} earn", ctx, scope=["default", "hr"])
        assert [v for v in every_value(spans.get_finished_spans()) if MARKER in v] == []
        spans.clear()
        retrieve(f"what does the {MARKER} earn", ctx)
    [root] = by_name(spans.get_finished_spans())["trails.retrieve"]
    assert root.attributes["gen_ai.retrieval.query.text"] == f"what does the {MARKER} earn"


def test_trails_log_text_adds_the_query_the_filter_and_the_hits(spans, monkeypatch):
    monkeypatch.setenv("TRAILS_LOG_TEXT", "1")
    ctx = fresh_context()
    [iri] = ingested(ctx, [Document("a", "mem", f"The {MARKER} sings.")])
    text = f"SELECT ?iri WHERE {{ ?iri schema:isPartOf <{iri}> }}"
    result = retrieve(f"the {MARKER}", ctx, sparql_filter=text)
    named = by_name(spans.get_finished_spans())
    [root] = named["trails.retrieve"]
    assert root.attributes["gen_ai.retrieval.query.text"] == f"the {MARKER}"
    assert named["trails.filter"][0].attributes["db.query.text"] == text
    documents = json.loads(root.attributes["gen_ai.retrieval.documents"])
    assert [d["id"] for d in documents] == [hit.iri for hit in result]


def test_a_failed_search_marks_its_span_with_the_error(spans, monkeypatch):
    monkeypatch.delenv("TRAILS_LOG_TEXT", raising=False)
    ctx = fresh_context()
    with pytest.raises(SparqlError):
        retrieve("q", ctx, sparql_filter="SELECT ?iri WHERE { ?iri ")
    named = by_name(spans.get_finished_spans())
    for name in ("trails.retrieve", "trails.filter"):
        [span] = named[name]
        assert span.status.status_code == trace.StatusCode.ERROR
        assert span.attributes["error.type"] == "SparqlError"
        [event] = [e for e in span.events if e.name == "exception"]
        assert event.attributes["exception.type"] == "trails.errors.SparqlError"
        assert "exception.message" not in event.attributes  # messages may quote the query


def test_an_ingest_whose_source_fails_ends_its_span_as_an_error(spans):
    def documents():
        yield Document("a", "mem", "first")
        raise OSError("the disk went away")

    ctx = fresh_context()
    with pytest.raises(OSError):
        list(ingest(documents(), ctx=ctx))
    named = by_name(spans.get_finished_spans())
    [root] = named["trails.ingest"]
    assert root.status.status_code == trace.StatusCode.ERROR
    assert root.attributes["error.type"] == "OSError"
    assert any(s.status.status_code == trace.StatusCode.ERROR
               for s in named["trails.ingest.load"])


def test_an_ingest_stopped_early_by_its_consumer_is_no_error(spans):
    ctx = fresh_context()
    events = ingest([Document(f"d{n}", "mem", "text") for n in range(3)], ctx=ctx)
    next(events)
    events.close()
    [root] = by_name(spans.get_finished_spans())["trails.ingest"]
    assert root.status.status_code != trace.StatusCode.ERROR
    assert root.end_time is not None


def test_describing_a_call_never_fails_it(spans):
    def broken(_):
        raise RuntimeError("a bug in an attribute function")

    @traced("trails.test", arguments=broken, result=broken)
    def double(x: int) -> int:
        return 2 * x

    assert double(21) == 42
    [span] = by_name(spans.get_finished_spans())["trails.test"]
    assert span.status.status_code != trace.StatusCode.ERROR
    with pytest.raises(TypeError, match="unexpected keyword"):  # the function's own refusal
        double(1, nope=2)


def test_a_retrieve_refusing_its_arguments_says_so_itself(spans):
    ctx = fresh_context()
    with pytest.raises(InvalidArgumentError, match="k must"):
        retrieve("q", ctx, k="ten")
    [root] = by_name(spans.get_finished_spans())["trails.retrieve"]
    assert root.attributes["error.type"] == "InvalidArgumentTypeError"
    assert "gen_ai.request.top_k" not in root.attributes


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.text(alphabet="abcdefghijklmnopqrstuvwxyzäö ", min_size=1, max_size=30))
def test_no_query_text_reaches_a_span_whatever_the_query(spans, monkeypatch, words):
    monkeypatch.delenv("TRAILS_LOG_TEXT", raising=False)
    spans.clear()
    ctx = fresh_context()
    ingested(ctx, [Document("a", "mem", "some text")])
    query = f"{MARKER}{words}"
    retrieve(query, ctx, sparql_filter=f'SELECT ?iri WHERE {{ ?iri ?p "{query}" }}')
    retrieve(query, ctx, mode="vector")
    assert not [v for v in every_value(spans.get_finished_spans()) if MARKER in v]


HIDDEN = """
import sys
sys.modules["opentelemetry"] = None  # as if not installed: importing it fails
"""


def run_python(code: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, check=False,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.splitlines()


def test_without_opentelemetry_retrieval_and_ingest_work_and_nothing_is_imported():
    lines = run_python(HIDDEN + textwrap.dedent("""
        import trails.tracing
        from trails import aretrieve, retrieve
        from trails.ingest import Document, ingest_all
        from trails.testing import fresh_context
        ctx = fresh_context()
        print(ingest_all([Document("a", "mem", "Elephants are large."),
                          Document("b", "mem", "Cats purr.")], ctx=ctx).ingested)
        result = retrieve("elephants", ctx, k=1,
                          sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }")
        print(len(result), "Elephants" in result[0].snippet)
        print(trails.tracing.enabled())
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m]))
    """))
    assert lines == ["2", "1 True", "False", "[]"]


def test_import_trails_does_not_import_opentelemetry():
    lines = run_python("""
        import sys
        import trails
        from trails import aretrieve, retrieve
        import trails.tracing
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """)
    assert lines == ["[]"]
