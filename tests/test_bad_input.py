"""Bad input fails alone, early and in trails' words.

A bad document (invalid Unicode, metadata RDF cannot hold, a chunker's broken answer, NaN
from the embedder, a YAML bomb) fails with a ``DocumentFailed``/``EmbeddingFailed`` event
naming it, while the good documents of the same run and batch are committed, and nothing is
left for repair. Wrong arguments raise an ``InvalidArgumentError`` naming the argument.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.context import Context
from trails.errors import ConfigurationError, InvalidArgumentError, TrailsError
from trails.ingest import Document, ingest_all
from trails.ingest.document import Chunk
from trails.ingest.formats import parse_html, parse_markdown
from trails.kg import IRI
from trails.testing import fresh_context
from trails.vector import MockEmbedder

GOOD = [Document(f"good{i}.md", f"good{i}.md", f"harbour memo number {i}") for i in range(3)]
FILTER = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc }"


def run(bad: Document | object, **options) -> tuple[Context, object]:
    """Ingest the good documents with ``bad`` in the middle of the same batch."""
    ctx = options.pop("ctx", None) or fresh_context(dim=16)
    stats = ingest_all([GOOD[0], bad, GOOD[1], GOOD[2]], ctx=ctx, batch_size=64, **options)
    return ctx, stats


def assert_failed_alone(ctx: Context, stats, reason: str) -> None:
    assert stats.ingested == 3 and stats.failed == 1, stats
    assert reason in stats.failures[0][1], stats.failures
    shown = {h.metadata["doc_iri"].rsplit("/", 1)[-1] for h in retrieve("harbour memo", ctx, k=50)}
    assert shown == {"good0.md", "good1.md", "good2.md"}
    report = ctx.verify()
    assert report.ok, report.summary()


@pytest.mark.parametrize("bad", [
    Document("bad.md", "bad.md", "text with a lone \ud800 surrogate"),
    Document("bad\udfff.md", "bad.md", "text"),
    Document("bad.md", "bad\ud800.md", "text"),
    Document("bad.md", "bad.md", "text", title="title \udc00"),
    Document("bad.md", "bad.md", "text", metadata={"k\ud800": "v"}),
    Document("bad.md", "bad.md", "text", metadata={"k": ["ok", {"deep": "\ud800"}]}),
], ids=["text", "id", "source", "title", "metadata key", "nested metadata value"])
def test_a_lone_surrogate_fails_its_document_alone(bad):
    ctx, stats = run(bad)
    assert_failed_alone(ctx, stats, "lone surrogate")


@pytest.mark.parametrize("bad, reason", [
    (Document("bad.md", "bad.md", "text", metadata=[1, 2]), "must be a mapping"),  # type: ignore[arg-type]
    (Document(123, "bad.md", "text"), "id must be a string"),  # type: ignore[arg-type]
    (Document("bad.md", "bad.md", None), "text must be a string"),  # type: ignore[arg-type]
    (Document("", "bad.md", "text"), "id is empty"),
    (Document("bad.md", "bad.md", "text", metadata={"n": float("nan")}), "RDF cannot hold"),
    (42, "expected a Document"),
])
def test_a_malformed_document_fails_alone(bad, reason):
    ctx, stats = run(bad)
    assert_failed_alone(ctx, stats, reason)


def test_metadata_that_contains_itself_fails_alone():
    loop: list[object] = []
    loop.append(loop)
    ctx, stats = run(Document("bad.md", "bad.md", "text", metadata={"loop": loop}))
    assert_failed_alone(ctx, stats, "contains itself")


def test_very_large_integers_are_written_exactly():
    ctx = fresh_context(dim=16)
    ingest_all([Document("n.md", "n.md", "text", metadata={"n": 2**80 + 1})], ctx=ctx)
    value = ctx.kg.query("SELECT ?n WHERE { ?d <https://trails.dev/meta#n> ?n }").rows[0]["n"]
    assert value == 2**80 + 1
    bound = ctx.kg.query("SELECT ?d WHERE { ?d <https://trails.dev/meta#n> ?n }",
                         {"n": 2**80 + 1})
    assert len(bound.rows) == 1
    assert not ctx.kg.query("SELECT ?d WHERE { ?d <https://trails.dev/meta#n> ?n }",
                            {"n": 2**80}).rows


class Chunker:
    """A custom chunker answering ``answer(document)`` for documents named bad*."""

    def __init__(self, answer):
        self.answer = answer

    def chunk(self, document):
        if document.id.startswith("bad"):
            return self.answer(document)
        return [Chunk(document.text, 0, len(document.text), 0)]


@pytest.mark.parametrize("answer, reason", [
    (lambda d: [Chunk("te", 0, 2, 0), Chunk("xt", 2, 4, 0)], "position 0 twice"),
    (lambda d: [Chunk("text", 0, 4, -1)], "non-negative int"),
    (lambda d: [Chunk("text", 3, 2, 0)], "not inside the text"),
    (lambda d: [Chunk("text", 0, 400, 0)], "not inside the text"),
    (lambda d: [Chunk("text", 0, 4, "0")], "non-negative int"),  # type: ignore[arg-type]
    (lambda d: ["text"], "not a Chunk"),
    (lambda d: None, "not a list of Chunk"),
])
def test_a_chunkers_broken_answer_fails_its_document_alone(answer, reason):
    ctx, stats = run(Document("bad.md", "bad.md", "text"), chunker=Chunker(answer))
    assert_failed_alone(ctx, stats, reason)


class PoisonEmbedder(MockEmbedder):
    """NaN, infinity or zeros for texts holding 'poison'."""

    def __init__(self, value: float, **kwargs):
        super().__init__(**kwargs)
        self.value = value

    def embed_batch(self, texts):
        out = super().embed_batch(texts)
        return [np.full_like(v, self.value) if "poison" in t else v for v, t in zip(out, texts)]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0])
def test_an_unusable_vector_fails_its_document_alone(value):
    ctx = fresh_context(embedder=PoisonEmbedder(value, dim=16))
    ctx, stats = run(Document("bad.md", "bad.md", "a poison text"), ctx=ctx)
    assert_failed_alone(ctx, stats, "NaN, infinity or a zero vector")


YAML_BOMB = ("---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
             + "".join(f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
                       for p, c in zip("abcdefgh", "bcdefghi"))
             + "---\nbody\n")


@pytest.mark.parametrize("front, reason", [
    (YAML_BOMB, "alias"),
    ("---\na: &a [*a]\n---\nbody\n", "alias"),
    ("---\na: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n", "front matter"),
    ("---\nbig: " + "x" * 300_000 + "\n---\nbody\n", "over"),
])
def test_hostile_front_matter_fails_its_file_alone_and_fast(tmp_path: Path, front, reason):
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "bad.md").write_text(front)
    for document in GOOD:
        (folder / document.id).write_text(document.text)
    ctx = fresh_context(dim=16)
    started = time.perf_counter()
    stats = ingest_all(folder, ctx=ctx)
    assert time.perf_counter() - started < 60  # a bound, not a benchmark: the bomb took minutes
    assert stats.ingested == 3 and stats.failed == 1
    assert reason in stats.failures[0][1]
    assert ctx.verify().ok


def test_deeply_nested_html_is_read_in_linear_time():
    for depth in (1_000, 100_000):
        page = "<div>x " * depth + "</div>" * depth
        started = time.perf_counter()
        parsed = parse_html(page)
        assert parsed.text.split() == ["x"] * depth
        if depth == 1_000:
            small = time.perf_counter() - started
    # 100 times the page, well under 100 times 100 the time (quadratic took 10,000 times)
    assert time.perf_counter() - started < max(60.0, small * 2_000)


def test_markdown_front_matter_still_reads_plain_yaml():
    parsed = parse_markdown("---\ntitle: T\ntags: [a, b]\ndate: 2024-05-01\n---\nbody\n")
    assert parsed.title == "T" and parsed.metadata["tags"] == ["a", "b"]


@pytest.mark.parametrize("base", ["not a base", "no-scheme/", "https://exa mple.org/", 42])
def test_an_invalid_base_iri_is_refused_before_anything_is_written(tmp_path: Path, base):
    with pytest.raises(ConfigurationError, match="base_iri"):
        Context.open(tmp_path / "new", embedder=MockEmbedder(dim=16), base_iri=base)
    assert not (tmp_path / "new").exists()
    with pytest.raises(ConfigurationError, match="base_iri"):
        Context.memory(MockEmbedder(dim=16), base_iri=base)
    ctx = fresh_context(dim=16)
    with pytest.raises(ConfigurationError, match="base_iri"):
        ingest_all(GOOD, ctx=ctx, base_iri=base)
    assert len(ctx.kg) == 0 and ctx.vectors.count() == 0


# -- wrong arguments to retrieve -------------------------------------------------------------

@pytest.fixture(scope="module")
def ingested():
    ctx = fresh_context(dim=16)
    ingest_all(GOOD, ctx=ctx)
    return ctx


@pytest.mark.parametrize("options, argument", [
    ({"query": None}, "query"), ({"query": b"bytes"}, "query"), ({"query": 5}, "query"),
    ({"k": 2**63}, "k"), ({"k": -1}, "k"), ({"k": 1.5}, "k"), ({"k": True}, "k"),
    ({"k": "3"}, "k"), ({"scope": 123}, "scope"), ({"scope": [None]}, "scope"),
    ({"mode": "x"}, "mode"), ({"mode": None}, "mode"),
    ({"mode": "hybrid", "sparql_filter": 123}, "sparql_filter"),
    ({"mode": "hybrid", "sparql_filter": FILTER, "bindings": [1]}, "bindings"),
    ({"mode": "hybrid", "sparql_filter": FILTER, "bindings": {"?doc": IRI("https://x/")}},
     "doc"),
    ({"mode": "hybrid", "sparql_filter": FILTER, "bindings": {"doc": IRI("not an iri")}},
     "binding 'doc'"),
    ({"mode": "hybrid", "sparql_filter": FILTER, "bindings": {"doc": IRI("https://x/<y>")}},
     "binding 'doc'"),
    ({"mode": "hybrid", "sparql_filter": FILTER, "bindings": {"doc": object()}},
     "binding 'doc'"),
])
def test_wrong_arguments_name_themselves(ingested, options, argument):
    options = {"query": "harbour", **options}
    with pytest.raises(InvalidArgumentError, match=argument.replace("?", r"\?")):
        retrieve(options.pop("query"), ingested, **options)


arbitrary = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                      st.binary(max_size=5), st.lists(st.integers(), max_size=2),
                      st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(query=arbitrary, k=arbitrary, scope=arbitrary, mode=arbitrary, bindings=arbitrary,
       sparql_filter=st.one_of(st.none(), st.just(FILTER), arbitrary))
def test_retrieve_answers_any_arguments_with_a_result_or_a_trails_error(
        ingested, query, k, scope, mode, bindings, sparql_filter):
    try:
        retrieve(query, ingested, k=k, scope=scope, mode=mode, bindings=bindings,
                 sparql_filter=sparql_filter)
    except TrailsError:
        pass
