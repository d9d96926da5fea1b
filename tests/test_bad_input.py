"""Bad input never aborts a run, never leaves work for repair to destroy, never shows a raw
Python error.

- one bad document (text UTF-8 cannot hold, metadata with no RDF form, a chunker's or an
  embedder's bad output) fails alone, named, before it joins a commit: the rest commits and
  ``verify()`` finds nothing to repair;
- front matter, HTML, JSON and Markdown are read with bounded, linear work;
- a bad ``base_iri`` is refused before anything is written;
- wrong arguments on the public API raise ``InvalidArgumentError`` naming the argument;
- SPARQL bindings either bind exactly or name the binding they cannot bind.

Heavy inputs run in a subprocess with a generous timeout: the bound is "finishes at all",
never a timing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import subprocess
import sys
import textwrap
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trails._lazy import import_target
from trails.context import Context
from trails.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    SparqlError,
    TrailsError,
)
from trails.evaluation.run import make_searcher
from trails.ingest import (
    Chunk,
    Document,
    DocumentFailed,
    FileLoader,
    IngestionStats,
    ingest,
    ingest_all,
)
from trails.ingest.chunkers import SentenceChunker, TokenChunker
from trails.ingest.formats import parse_html, parse_markdown
from trails.ingest.frontmatter import MAX_DEPTH, MAX_VALUES, load_front_matter
from trails.ingest.sanitize import RegexRedactor
from trails.kg import IRI
from trails.kg.bindings import apply_bindings
from trails.rank.fusion import GuardedFusion, Ranking, rrf, weighted
from trails.rank.mmr import mmr
from trails.rank.rewrite import OpenAIQueryRewriter, check_messages
from trails.retrieval.retrieve import retrieve
from trails.retrieval.retrievers import (
    CompositeRetriever,
    GraphRetriever,
    HybridRetriever,
    VectorRetriever,
)
from trails.testing import MockEmbedder, fresh_context
from trails.vector import OpenAIEmbedder, QdrantStore

XSD = "http://www.w3.org/2001/XMLSchema#"
META = "https://trails.dev/meta#"
GOOD = [Document("good-1", "mem:good-1", "Rails is a web framework written in Ruby."),
        Document("good-2", "mem:good-2", "Django is a web framework written in Python.")]
ALL_CHUNKS = "SELECT ?iri WHERE { ?iri a trails:Chunk }"


def _forced(document: Document, **fields: object) -> Document:
    """``document`` with fields set past its own type checks (as a buggy sanitizer might)."""
    for name, value in fields.items():
        object.__setattr__(document, name, value)
    return document


def _bad(**fields: object) -> Document:
    return _forced(Document("bad", "mem:bad", "Some text about frameworks."), **fields)


def _cyclic() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    return loop


def _deep(levels: int) -> list[object]:
    value: list[object] = ["leaf"]
    for _ in range(levels):
        value = [value]
    return value


BAD_DOCUMENTS = {
    "surrogate in text": lambda: Document("bad", "mem:bad", "caf\ud800 au lait"),
    "surrogate in id": lambda: Document("b\udcff", "mem:bad", "Some text."),
    "surrogate in title": lambda: Document("bad", "mem:bad", "Some text.", title="t\ud800"),
    "surrogate in source": lambda: Document("bad", "mem:b\udcff", "Some text."),
    "surrogate in a metadata key": lambda: Document("bad", "mem:bad", "Text.",
                                                     metadata={"k\ud800": 1}),
    "surrogate in a metadata value": lambda: Document("bad", "mem:bad", "Text.",
                                                       metadata={"k": ["ok", "v\ud800"]}),
    "surrogate in a nested dict": lambda: Document("bad", "mem:bad", "Text.",
                                                    metadata={"k": {"a": "\udfff"}}),
    "metadata not a mapping": lambda: _bad(metadata=[("k", "v")]),
    "id not a str": lambda: _bad(id=123),
    "text not a str": lambda: _bad(text=b"bytes"),
    "title not a str": lambda: _bad(title=7),
    "empty id": lambda: _bad(id=""),
    "an object as a metadata value": lambda: _bad(metadata={"k": object()}),
    "bytes as a metadata value": lambda: _bad(metadata={"k": b"\x00\x01"}),
    "a fraction as a metadata value": lambda: _bad(metadata={"k": Fraction(1, 3)}),
    "a list that holds itself": lambda: _bad(metadata={"k": _cyclic()}),
    "metadata nested 500 deep": lambda: _bad(metadata={"k": _deep(500)}),
    "an IRI that is none": lambda: _bad(metadata={"k": IRI("not an iri")}),
    "a NaN Decimal": lambda: _bad(metadata={"k": Decimal("NaN")}),
    "a dict with int keys": lambda: _bad(metadata={"k": {1: "a", "b": 2}}),
    "a million metadata values": lambda: _bad(metadata={"k": list(range(1_000_000))}),
    # Its chunks' IRIs would be over the 2,000 bytes every store keeps of an id: the commit
    # of the whole batch failed.
    "an id of 2,000 bytes": lambda: _bad(id="x" * 2000),
    "an id of 700 three-byte characters": lambda: _bad(id="€" * 700),
}


def _chunk_iris(ctx: Context) -> set[str]:
    return set(ctx.kg.select_iris(ALL_CHUNKS))


def _documents(ctx: Context) -> set[str]:
    return set(ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d"))


def _assert_only_the_good_ones_committed(ctx: Context, stats) -> None:
    assert stats.ingested == len(GOOD)
    assert stats.failed == 1
    assert _documents(ctx) == {f"{ctx.base_iri}doc/{d.id}" for d in GOOD}
    assert {h.metadata["doc_iri"] for h in retrieve("web framework", ctx, mode="vector",
                                                    k=10)} == _documents(ctx)
    assert ctx.verify().ok  # nothing half-written for repair to remove


@pytest.mark.parametrize("make", BAD_DOCUMENTS.values(), ids=BAD_DOCUMENTS.keys())
def test_a_bad_document_fails_alone_and_the_run_commits_the_rest(ctx, make):
    bad = make()
    events = list(ingest([GOOD[0], bad, GOOD[1]], ctx=ctx, batch_size=64))
    failed = [e for e in events if isinstance(e, DocumentFailed)]
    assert len(failed) == 1
    assert failed[0].source.startswith("mem:b")  # names the document's source
    assert failed[0].reason  # and says why
    failed[0].source.encode("utf-8")  # printable, whatever the source held
    stats = IngestionStats()
    for event in events:
        stats.record(event)
    _assert_only_the_good_ones_committed(ctx, stats)


def test_the_failure_message_names_what_is_wrong(ctx):
    stats = ingest_all([Document("bad", "mem:bad", "caf\ud800")], ctx=ctx)
    [(source, reason)] = stats.failures
    assert source == "mem:bad"
    assert "'bad'" in reason and "text" in reason and "surrogate" in reason and "offset 3" in reason


def test_a_jsonl_record_with_an_escaped_surrogate_fails_alone(ctx, tmp_path):
    (tmp_path / "r.jsonl").write_text('{"id": "a", "text": "Fine."}\n'
                                      '{"id": "b", "text": "Bad \\ud800 escape."}\n'
                                      '{"id": "c", "text": "Fine too.", "n": 1' + "0" * 30 + '}\n')
    stats = ingest_all(tmp_path, ctx=ctx)
    assert (stats.ingested, [reason[:14] for _, reason in stats.failures]) == (2, ["document 'r.js"])
    assert ctx.verify().ok


def test_a_document_fixed_after_failing_is_then_ingested(ctx):
    assert ingest_all([Document("d", "mem:d", "x\ud800")], ctx=ctx).failed == 1
    assert ingest_all([Document("d", "mem:d", "x fixed")], ctx=ctx).ingested == 1
    assert ctx.verify().ok


def test_integers_beyond_64_bits_are_written_exactly_as_xsd_integer(ctx):
    big, negative = 2**80 + 1, -(2**70) - 3
    ingest_all([Document("n", "mem:n", "Numbers.", metadata={"big": big, "neg": negative,
                                                              "np": np.int64(-5)})], ctx=ctx)
    rows = ctx.kg.query(f"SELECT ?p (STR(?o) AS ?s) (DATATYPE(?o) AS ?t) WHERE {{ ?d ?p ?o "
                        f'FILTER(STRSTARTS(STR(?p), "{META}")) }}')
    written = {row["p"][len(META):]: (row["s"], row["t"]) for row in rows}
    assert written == {"big": ("1208925819614629174706177", XSD + "integer"),
                       "neg": ("-1180591620717411303427", XSD + "integer"),
                       "np": ("-5", XSD + "integer")}
    # The graph compares no xsd:integer past 64 bits; its text finds it exactly.
    ask = f"ASK {{ ?d <{META}big> ?v FILTER(STR(?v) = ?text) }}"
    assert ctx.kg.query(ask, {"text": str(big)}) is True
    assert ctx.kg.query(ask, {"text": str(big + 1)}) is False


def test_a_set_in_metadata_is_written_in_one_order_so_reingesting_skips_it(ctx):
    document = Document("s", "mem:s", "Tags.", metadata={"tags": {"zeta", "alpha", "mid"}})
    assert ingest_all([document], ctx=ctx).ingested == 1
    again = Document("s", "mem:s", "Tags.", metadata={"tags": {"mid", "zeta", "alpha"}})
    assert ingest_all([again], ctx=ctx).skipped == 1


# -- the embedder's output --------------------------------------------------------------------


class _PoisonEmbedder(MockEmbedder):
    """A MockEmbedder that returns a bad vector for any text holding a trigger word."""

    def embed_array(self, texts):
        rows = np.array(super().embed_array(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            if "nanword" in text:
                rows[i, 3] = math.nan
            elif "infword" in text:
                rows[i, 0] = -math.inf
            elif "hugeword" in text:
                rows[i, 1] = 1e300  # finite in float64, infinite as the stored float32
            elif "zeroword" in text:
                rows[i] = 0.0
        return rows


class _RaggedEmbedder(MockEmbedder):
    def embed_array(self, texts):
        rows = [np.asarray(r) for r in super().embed_array(texts)]
        return [r[:-1] if "shortword" in t else r for r, t in zip(rows, texts)]


@pytest.mark.parametrize("embedder, word", [
    (_PoisonEmbedder(dim=32), "nanword"), (_PoisonEmbedder(dim=32), "infword"),
    (_PoisonEmbedder(dim=32), "hugeword"), (_PoisonEmbedder(dim=32), "zeroword"),
    (_RaggedEmbedder(dim=32), "shortword"),
])
def test_a_bad_vector_fails_its_document_only_even_within_a_shared_batch(embedder, word):
    with Context.memory(embedder) as ctx:
        bad = Document("bad", "mem:bad", f"A second sentence. This one has {word} inside.")
        events = list(ingest([GOOD[0], bad, GOOD[1]], ctx=ctx, batch_size=64))
        failed = [e for e in events if isinstance(e, DocumentFailed)]
        assert [(e.source, e.doc_iri) for e in failed] == [("mem:bad", ctx.base_iri + "doc/bad")]
        assert "chunk" in failed[0].reason and "vector" in failed[0].reason
        assert _documents(ctx) == {f"{ctx.base_iri}doc/{d.id}" for d in GOOD}
        assert ctx.vectors.count() == len(_chunk_iris(ctx)) == 2
        assert ctx.verify().ok


# -- the chunker's output ---------------------------------------------------------------------


def _span(document: Document, start: int, end: int, position: int) -> Chunk:
    return Chunk(document.text[start:end], start, end, position)


BAD_CHUNKS = {
    "a repeated position": lambda d: [_span(d, 0, 4, 0), _span(d, 5, 9, 0)],
    "a skipped position": lambda d: [_span(d, 0, 4, 0), _span(d, 5, 9, 2)],
    "a chunk nested in the one before": lambda d: [_span(d, 0, 9, 0), _span(d, 2, 5, 1)],
    "a chunk inside the one before, at its end": lambda d: [_span(d, 0, 9, 0), _span(d, 5, 8, 1)],
    "spans out of order": lambda d: [_span(d, 5, 9, 0), _span(d, 0, 4, 1)],
    "an end past the text": lambda d: [Chunk(d.text, 0, len(d.text) + 5, 0)],
    "a negative start": lambda d: [Chunk(d.text[:4], -1, 4, 0)],
    "an empty span": lambda d: [Chunk("", 3, 3, 0)],
    "a float position": lambda d: [Chunk(d.text[:4], 0, 4, 0.5)],
    "a bool position": lambda d: [Chunk(d.text[:4], 0, 4, False)],
    "a str offset": lambda d: [Chunk(d.text[:4], "0", 4, 0)],
    "text not the span's": lambda d: [Chunk("abcd", 0, 4, 0)],
    "no chunks for a text": lambda d: [],
    "None": lambda d: None,
    "not a Chunk": lambda d: [("text", 0, 4, 0)],
    "a raising chunker": lambda d: 1 / 0,
}


class _ChunkerFor:
    """Chunks the document "bad" with ``make``, every other one as a single chunk."""

    def __init__(self, make) -> None:
        self.make = make

    def chunk(self, document: Document):
        if document.id == "bad":
            return self.make(document)
        return [Chunk(document.text, 0, len(document.text), 0)]


@pytest.mark.parametrize("make", BAD_CHUNKS.values(), ids=BAD_CHUNKS.keys())
def test_a_chunker_that_breaks_the_chunk_contract_fails_that_document_only(ctx, make):
    bad = Document("bad", "mem:bad", "Some text about web frameworks.")
    stats = ingest_all([GOOD[0], bad, GOOD[1]], ctx=ctx, chunker=_ChunkerFor(make))
    assert [source for source, _ in stats.failures] == ["mem:bad"]
    _assert_only_the_good_ones_committed(ctx, stats)


class _Overlapping:
    def chunk(self, document: Document) -> list[Chunk]:
        if not document.text.strip():
            return []
        return [_span(document, 0, 13, 0), _span(document, 8, 28, 1)]


def test_overlapping_chunks_that_advance_are_fine_and_a_blank_document_needs_none(ctx):
    stats = ingest_all([Document("o", "mem:o", "One two three four five six."),
                        Document("blank", "mem:blank", "  \n")], ctx=ctx, chunker=_Overlapping())
    assert (stats.ingested, stats.failed, stats.chunks) == (2, 0, 2)
    assert ctx.verify().ok


class _Returning:
    def __init__(self, made: object) -> None:
        self.made = made

    def chunk(self, document: Document) -> object:
        return self.made


@pytest.mark.parametrize(("made", "said"), [
    (None, "None"), (Chunk("One two.", 0, 8, 0), "one Chunk"), ("One two.", "one str")])
def test_a_chunker_returning_no_list_of_chunks_fails_its_document_saying_so(ctx, made, said):
    # These failed with Python's "'NoneType' object is not iterable", or, for a str, as
    # "chunk 0 is a str": the chunker's mistake was never named.
    events = list(ingest([Document("o", "mem:o", "One two.")], ctx=ctx, chunker=_Returning(made)))
    (failed,) = [e for e in events if isinstance(e, DocumentFailed)]
    assert f"_Returning.chunk() returned {said}, not a list of trails.ingest.Chunk" in (
        failed.reason)


class _Separators:
    """A splitter described by a list and a dict, as text splitters often are."""

    def __init__(self, separators: list[str], options: dict[str, int]) -> None:
        self.separators = separators
        self.options = options

    def chunk(self, document: Document) -> list[Chunk]:
        cut = document.text.find(self.separators[0]) + len(self.separators[0])
        return [_span(document, 0, cut, 0), _span(document, cut, len(document.text), 1)]


def test_a_chunker_whose_list_setting_changed_chunks_its_documents_again(ctx):
    # Only its number, string and boolean attributes described a chunker: new separators
    # were the same version, so every document was skipped as current and kept the chunks
    # of the old ones, in silence.
    text = "One two. Three four. Five six."
    first = ingest_all([Document("s", "mem:s", text)], ctx=ctx,
                       chunker=_Separators([". "], {"a": 1, "b": 2}))
    same = ingest_all([Document("s", "mem:s", text)], ctx=ctx,  # the same settings, reordered
                      chunker=_Separators([". "], {"b": 2, "a": 1}))
    changed = ingest_all([Document("s", "mem:s", text)], ctx=ctx,
                         chunker=_Separators(["four. "], {"a": 1, "b": 2}))
    assert (first.ingested, same.skipped, changed.ingested) == (1, 1, 1)
    assert sorted(ctx.vectors.get(ctx.vectors.all_ids())[i].metadata["text"]
                  for i in range(2)) == ["Five six.", "One two. Three four. "]


class _Slotted:
    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def chunk(self, document: Document) -> list[Chunk]:
        return [_span(document, 0, len(document.text), 0)]


def test_a_chunker_with_slots_is_read_and_described_by_them(ctx):
    # vars() has no slots: such a chunker stopped the run with "TypeError: vars() argument
    # must have __dict__ attribute".
    assert ingest_all([Document("s", "mem:s", "One two.")], ctx=ctx,
                      chunker=_Slotted(5)).ingested == 1
    assert ingest_all([Document("s", "mem:s", "One two.")], ctx=ctx,
                      chunker=_Slotted(6)).ingested == 1  # another setting: chunked again


def test_the_default_chunkers_always_pass_the_chunk_checks(ctx):
    from trails.ingest.checks import chunk_problem
    from trails.ingest.chunkers import SentenceChunker

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=st.sampled_from("ab .\n!?"), max_size=400),
           st.integers(1, 60), st.integers(0, 3))
    def check(text, max_chars, overlap):
        document = Document("d", "m", text)
        chunks = SentenceChunker(max_chars=max_chars, overlap=overlap).chunk(document)
        assert chunk_problem(document, chunks) is None

    check()


# -- arbitrary documents: the property ---------------------------------------------------------

_characters = st.characters(codec=None, exclude_categories=())
_texts = st.text(alphabet=_characters, max_size=30)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**100), max_value=2**100),
    st.floats(allow_nan=True, allow_infinity=True), _texts, st.dates(),
    st.datetimes(timezones=st.sampled_from([None, dt.UTC])),
    st.decimals(allow_nan=True, allow_infinity=True), st.binary(max_size=4),
    st.just(object()), st.builds(IRI, _texts))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_texts, inner, max_size=3)), max_leaves=8)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(_texts, _texts, st.one_of(st.none(), _texts),
                          st.dictionaries(_texts, _values, max_size=3)), max_size=4))
def test_any_documents_never_abort_a_run_nor_leave_anything_to_repair(fields):
    """Whatever the documents hold, the run ends, each one is ingested or failed (named),
    and the context is consistent: nothing reaches a commit that could fail it."""
    documents = [Document(f"doc-{i}{doc_id}", f"mem:{i}", text, title=title, metadata=meta)
                 for i, (doc_id, text, title, meta) in enumerate(fields)]
    with fresh_context(dim=16) as ctx:
        stats = ingest_all([*GOOD, *documents], ctx=ctx, batch_size=3)
        assert stats.ingested + stats.failed == len(GOOD) + len(documents)
        assert stats.ingested >= len(GOOD)
        assert len(_documents(ctx)) == stats.ingested
        assert ctx.verify().ok


# -- files: bounded, linear parsing ------------------------------------------------------------

BILLION_LAUGHS = textwrap.dedent("""\
    ---
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    ---
    body
    """)


@pytest.mark.parametrize("front, reason", [
    (BILLION_LAUGHS, "values once its aliases are expanded"),
    ("---\na: &a [1, *a]\n---\nbody", "inside its own anchor"),
    ("---\na: &a {b: *a}\n---\nbody", "inside its own anchor"),
    ("---\na: &a\n  b: [x, *a]\n---\nbody", "inside its own anchor"),
    ("---\na: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n---\nbody", "nests deeper"),
    ("---\n" + "- " * (MAX_DEPTH + 1) + "x\n---\nbody", "nests deeper"),
    ("---\na: " + "x" * 1_000_001 + "\n---\nbody", "characters long"),
    ("---\na: [" + "1," * MAX_VALUES + "1]\n---\nbody", "more than 100,000 values"),
])
def test_front_matter_beyond_the_limits_is_refused_before_it_is_built(front, reason):
    with pytest.raises(ValueError, match=reason):
        parse_markdown(front)


def test_front_matter_within_the_limits_keeps_its_aliases():
    levels = MAX_DEPTH - 1  # under the top-level mapping
    parsed = parse_markdown("---\ntags: &t [a, b]\nsame: *t\nnested: " + "[" * levels
                            + "]" * levels + "\n---\nbody")
    assert parsed.metadata["tags"] == parsed.metadata["same"] == ["a", "b"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab:-&*[]{},\n #!'\"?|>"), max_size=80))
def test_any_front_matter_parses_or_is_a_value_error(text):
    try:
        load_front_matter(text)
    except ValueError:
        pass


def _run_bounded(code: str, timeout: int = 240) -> str:
    """Run ``code`` in a fresh interpreter; it must finish within a generous timeout."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_hostile_files_fail_alone_and_the_folder_still_ingests(tmp_path):
    """A billion laughs, a deep YAML flow, 100,000 nested divs (1.1 MB) and a JSONL record
    nested past the recursion limit, among good files: the run finishes (in a subprocess,
    bounded by a generous timeout), the hostile Markdown and JSONL line fail alone, the HTML
    is read, and the good files are ingested."""
    (tmp_path / "good.md").write_text("# Good\n\nRails is a web framework.")
    (tmp_path / "laughs.md").write_text(BILLION_LAUGHS)
    (tmp_path / "flow.md").write_text("---\na: " + "[" * 400_000 + "]" * 400_000 + "\n---\nx")
    (tmp_path / "deep.html").write_text("<div>" * 100_000 + "deep text" + "</div>" * 100_000)
    (tmp_path / "records.jsonl").write_text(
        '{"id": "ok", "text": "A record."}\n' + "[" * 200_000 + "]" * 200_000 + "\n")
    (tmp_path / "long.md").write_text("# a" + " " * 1_000_000 + "b\n\nText.")
    out = _run_bounded(textwrap.dedent(f"""
        import json
        from trails.testing import fresh_context
        from trails.ingest import ingest_all
        with fresh_context(dim=16) as ctx:
            stats = ingest_all({str(tmp_path)!r}, ctx=ctx)
            print(json.dumps({{"ingested": stats.ingested, "failures": stats.failures,
                               "ok": ctx.verify().ok}}))
        """))
    result = __import__("json").loads(out)
    failed = sorted(Path(source).name for source, _ in result["failures"])
    assert failed == ["flow.md", "laughs.md", "records.jsonl:2"]
    assert result["ingested"] == 4  # good.md, deep.html, long.md, records.jsonl#ok
    assert result["ok"]


def test_deeply_nested_html_keeps_its_text():
    assert parse_html("<div>" * 2000 + "deep <b>text</b>" + "</div>" * 2000).text == "deep text"
    assert parse_html("<pre>" * 50 + " a\n  b" + "</pre>" * 50).text == "a\nb"


def test_unfinished_constructs_at_the_end_of_a_page_are_read_as_text():
    assert parse_html("<p>Before</p>" + "<a " * 3000).text.startswith("Before\n\n<a <a")
    assert parse_html("<p>Before</p><!-- never closed").text == "Before\n\n<!-- never closed"


# The previous HTML reader, on beautifulsoup4's tree: the oracle for the one-pass reader.
def _reference_html(text: str) -> tuple[str, str | None, dict[str, str]]:
    import re

    from bs4 import BeautifulSoup
    from bs4.element import Comment, NavigableString

    soup = BeautifulSoup(text, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else None
    meta: dict[str, str] = {}
    for tag in soup.find_all("meta"):
        name = str(tag.get("name") or tag.get("property") or "").lower()
        if name in {"author", "description", "keywords", "date", "article:published_time"} \
                and tag.get("content"):
            meta["date" if name == "article:published_time" else name] = str(tag["content"])
    for tag in soup.find_all(["title", "script", "style", "noscript", "template", "head",
                              "svg", "iframe"]):
        tag.decompose()
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    for string in soup.find_all(string=True):
        if type(string) is NavigableString and string.find_parent("pre") is None:
            string.replace_with(re.sub(r"\s+", " ", str(string)))
    for br in soup.find_all("br"):
        br.replace_with("\ue001")
    for tags, marker in (
            (["p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "ul", "ol",
              "dl", "section", "article", "header", "footer", "figure", "hr"], "\ue000"),
            (["div", "li", "tr", "dt", "dd", "figcaption", "main", "nav", "aside", "form"],
             "\ue001")):
        for tag in soup.find_all(tags):
            tag.insert_before(marker)
            tag.insert_after(marker)
    joined = re.sub(r"[\s\ue000\ue001]*[\ue000\ue001][\s\ue000\ue001]*",
                    lambda m: "\n\n" if "\ue000" in m.group() else "\n", soup.get_text())
    lines = [re.sub(r"[^\S\n]+", " ", line).strip() for line in joined.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(), title or None, meta


_TAGS = ["p", "div", "b", "pre", "br", "hr", "title", "script", "head", "li", "ul", "span",
         "h1", "svg", "table", "tr"]
_HTML_PIECES = st.one_of(
    st.sampled_from(_TAGS).map(lambda t: f"<{t}>"), st.sampled_from(_TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(_TAGS).map(lambda t: f"<{t}/>"),
    st.sampled_from(['<meta name="author" content="Ann">', "<!-- note -->", "&amp;", "&lt;",
                     '<meta property="article:published_time" content="2024-01-02">']),
    st.text(alphabet=" \n\tab.", max_size=6))


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_HTML_PIECES, max_size=25))
@example(["<title>", "<script>", "<p>", "</script>"])  # a script's code is no part of a title
def test_the_one_pass_html_reader_reads_as_the_tree_did(pieces):
    page = "".join(pieces)
    parsed = parse_html(page)
    assert (parsed.text, parsed.title, parsed.metadata) == _reference_html(page)


# -- base_iri ------------------------------------------------------------------------------------

BAD_BASES = ["not an iri", "", "http://x y/", "http://x/<a>", "http://x/#a#", "rel/path/",
             "trails://b\ud800/"]


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("base", BAD_BASES)
def test_a_bad_base_iri_creates_no_context(tmp_path, base):
    with pytest.raises(ConfigurationError, match="base_iri"):
        Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), base_iri=base)
    assert not (tmp_path / "kb").exists()
    with pytest.raises(ConfigurationError):
        Context.memory(MockEmbedder(dim=8), base_iri=base)


@pytest.mark.parametrize("base", [*BAD_BASES, 42])
def test_a_bad_base_iri_changes_nothing_in_an_existing_context(tmp_path, base):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all(GOOD, ctx=ctx)
    files = _snapshot(tmp_path / "kb")
    with pytest.raises(ConfigurationError):
        Context.open(tmp_path / "kb", base_iri=base)
    assert _snapshot(tmp_path / "kb") == files  # refused before a file was opened
    with Context.open(tmp_path / "kb") as ctx:
        graph, vectors = ctx.kg.dump(format="nq"), sorted(ctx.vectors.all_ids())
        with pytest.raises(ConfigurationError):
            list(ingest([Document("new", "mem:new", "New text.")], ctx=ctx, base_iri=base))
        assert (ctx.kg.dump(format="nq"), sorted(ctx.vectors.all_ids())) == (graph, vectors)


def test_a_recorded_base_iri_that_is_none_is_refused_on_open(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)):
        pass
    config = tmp_path / "kb" / "trails.json"
    config.write_text(config.read_text().replace("trails://local/", "not an iri"))
    with pytest.raises(ConfigurationError, match="trails.json"):
        Context.open(tmp_path / "kb")


# -- wrong arguments on the public API -----------------------------------------------------------

FILTER = "SELECT ?iri WHERE { ?iri a trails:Chunk }"


@pytest.mark.parametrize("call, argument", [
    (lambda c: retrieve(None, c), "query"),
    (lambda c: retrieve(b"bytes", c), "query"),
    (lambda c: retrieve("q\udcff", c), "query"),
    (lambda c: retrieve("q", c, k=0), "k"),
    (lambda c: retrieve("q", c, k=-1), "k"),
    (lambda c: retrieve("q", c, k=2**63), "k"),
    (lambda c: retrieve("q", c, k=10**5000), "k"),
    (lambda c: retrieve("q", c, k=True), "k"),
    (lambda c: retrieve("q", c, k=1.5), "k"),
    (lambda c: retrieve("q", c, k="3"), "k"),
    (lambda c: retrieve("q", c, scope=123), "scope"),
    (lambda c: retrieve("q", c, scope=[None]), "scope"),
    (lambda c: retrieve("q", c, scope=[]), "scope"),
    (lambda c: retrieve("q", c, scope="bad scope"), "scope"),
    (lambda c: retrieve("q", c, mode="x"), "mode"),
    (lambda c: retrieve("q", c, mode=None), "mode"),
    (lambda c: retrieve("q", c, sparql_filter=123), "sparql_filter"),
    (lambda c: retrieve("q", c, sparql_filter=FILTER, bindings=[("a", 1)]), "bindings"),
    (lambda c: retrieve("q", c, sparql_filter=FILTER, bindings={"not var": 1}), "binding name"),
    (lambda c: retrieve("q", c, sparql_filter=FILTER, bindings={1: 2}), "binding name"),
    (lambda c: retrieve("q", c, bindings={"a": 1}), "bindings"),
    (lambda c: retrieve("q", c, fusion=3), "fusion"),
    (lambda c: retrieve("q", c, fusion="max"), "fusion"),
    (lambda c: retrieve("q", c, steps="rerank"), "steps"),
    (lambda c: retrieve("q", c, messages="hello"), "messages"),
    (lambda c: retrieve("q", "not a context"), "ctx"),
    (lambda c: retrieve("q", c, embedder="mock"), "embedder"),
    (lambda c: VectorRetriever(c, k=0), "k"),
    (lambda c: VectorRetriever("ctx"), "ctx"),
    (lambda c: HybridRetriever(c, k=2**63), "k"),
    (lambda c: HybridRetriever(c, sparql_filter=FILTER, bindings=5), "bindings"),
    (lambda c: HybridRetriever(c, sparql_filter=123), "sparql_filter"),
    (lambda c: GraphRetriever(c, FILTER, scope=[None]), "scope"),
    (lambda c: VectorRetriever(c).retrieve(None), "query"),
    (lambda c: Document(123, "s", "t"), "id"),
    (lambda c: Document("i", "s", "t", metadata=[1, 2]), "metadata"),
    (lambda c: Document("i", "s", None), "text"),
    (lambda c: ingest_all([1, 2], ctx=c), "item 0"),
    (lambda c: ingest_all(42, ctx=c), "cannot load from int"),
    (lambda c: ingest_all(GOOD, ctx=c, batch_size=0), "batch_size"),
    (lambda c: ingest_all(GOOD, ctx=c, batch_size="8"), "batch_size"),
    (lambda c: ingest_all(GOOD, ctx=c, scope=3), "scope"),
    (lambda c: ingest_all(GOOD, ctx=c, scope="no spaces allowed"), "scope"),
    (lambda c: ingest_all(GOOD, ctx=c, chunker="sentences"), "chunker"),
    (lambda c: ingest_all(GOOD, ctx=c, prune="yes"), "prune"),
    (lambda c: ingest_all(GOOD, ctx="ctx"), "ctx"),
    (lambda c: FileLoader(42), "paths"),
    (lambda c: FileLoader(".", include=[1]), "include"),
])
def test_a_wrong_argument_is_an_invalid_argument_error_naming_it(ctx, call, argument):
    ingest_all(GOOD, ctx=ctx)
    with pytest.raises(InvalidArgumentError) as raised:
        call(ctx)
    assert argument in str(raised.value)


class _Rewriter:
    def rewrite(self, query, messages):
        return None


def _stranger(rankings):
    return [("urn:nobody-found-this", 1.0)]


Q_FILTER = "SELECT ?iri WHERE { ?iri schema:text ?t FILTER(CONTAINS(?t, ?q)) }"
TURN = [{"role": "user", "content": "what is Rails?"}]
VEC = Ranking("vector", [("x", 0.9)])


@pytest.mark.parametrize("call, argument", [
    (lambda c: HybridRetriever(c, bindings={"a": 1}), "sparql_filter"),
    (lambda c: HybridRetriever(c, query_variable="q"), "sparql_filter"),
    (lambda c: HybridRetriever(c, sparql_filter=Q_FILTER, query_variable="q",
                               bindings={"q": "x"}), "query_variable 'q'"),
    (lambda c: HybridRetriever(c, rewriter=_Rewriter()).retrieve("q", TURN), "rewriter"),
    (lambda c: CompositeRetriever([VectorRetriever(c)], fusion=_stranger).retrieve("Rails"),
     "fusion"),
    (lambda c: rrf([VEC], constant=-1), "RRF constant"),
    (lambda c: rrf([VEC], constant=math.nan), "RRF constant"),
    (lambda c: rrf([VEC], constant="60"), "RRF constant"),
    (lambda c: rrf([VEC], weights={"vector": "heavy"}), "weights['vector']"),
    (lambda c: rrf([VEC], weights={"vector": math.inf}), "weights['vector']"),
    (lambda c: weighted([VEC], weights=[("vector", 1.0)]), "weights"),
    (lambda c: weighted([VEC], normalize="rank"), "normalize"),
    (lambda c: GuardedFusion(center=(0.0,)), "centers"),
    (lambda c: mmr([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], scores=[1.0]), "scores"),
    (lambda c: check_messages([{"role": "user"}]), "messages"),
    (lambda c: check_messages([("user", "hi")]), "messages"),
    (lambda c: check_messages("hello"), "messages"),
    (lambda c: OpenAIQueryRewriter(api_key="k", timeout=0), "timeout"),
    (lambda c: OpenAIQueryRewriter(api_key="k", max_messages=0), "max_messages"),
    (lambda c: OpenAIQueryRewriter(api_key="k", max_retries=-1), "max_retries"),
    (lambda c: import_target("trails.errors"), "module:attribute"),
    (lambda c: make_searcher("bm42", c), "bm42"),
    (lambda c: SentenceChunker(max_chars=0), "max_chars"),
    (lambda c: SentenceChunker(max_tokens=10), "count_tokens"),
    (lambda c: TokenChunker(None, 0), "max_tokens"),
    (lambda c: RegexRedactor({}), "pattern"),
    (lambda c: RegexRedactor({"id": "("}), "pattern 'id'"),
    (lambda c: RegexRedactor({"id": "(?P<n>x)"}), "named groups"),
    (lambda c: RegexRedactor(replacement="{name}"), "replacement"),
    (lambda c: MockEmbedder(dim=0), "dim"),
    (lambda c: OpenAIEmbedder(api_key="k", batch_size=0), "batch_size"),
    (lambda c: OpenAIEmbedder(model="no-such-model", api_key="k"), "dim="),
    (lambda c: OpenAIEmbedder(model="text-embedding-3-small", api_key="k", dim=4096), "at most"),
    (lambda c: QdrantStore(dim=2, url="http://localhost:6333", path="q"), "at most one of"),
])
def test_a_retrievers_or_rankings_wrong_setting_is_an_invalid_argument_error_naming_it(
        ctx, call, argument):
    """Bad input to a retriever, a fusion, a step or a rewriter: the project's error (a
    ValueError too, so ``except ValueError`` still catches it), naming what was wrong."""
    ingest_all(GOOD, ctx=ctx)
    with pytest.raises(InvalidArgumentError) as raised:
        call(ctx)
    assert argument in str(raised.value)
    assert isinstance(raised.value, ValueError)


XSD = "http://www.w3.org/2001/XMLSchema#"
SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
         "FILTER(?d >= ?since) }")


@pytest.mark.parametrize("mode", ["hybrid", "graph"])
@pytest.mark.parametrize("lexical, kind", [
    ("2024-13-01", "date"), ("2024-02-30", "date"), ("2024-01-01", "dateTime"),
    ("1e5", "integer"), ("maybe", "boolean"), ("P1", "duration")])
def test_an_ill_typed_binding_is_refused_not_answered_with_nothing(ctx, mode, lexical, kind):
    """A literal its type cannot read compares with nothing: the filter selected no chunk."""
    ingest_all([Document("d", "s", "text about dates", metadata={"date": "2024-03-01"})],
               ctx=ctx)
    since = ox.Literal(lexical, datatype=ox.NamedNode(XSD + kind))
    with pytest.raises(InvalidArgumentError, match=f"'since'.*no xsd:{kind} value the graph"):
        retrieve("dates", ctx, mode=mode, sparql_filter=SINCE, bindings={"since": since})
    well_typed = ox.Literal("2024-01-01", datatype=ox.NamedNode(XSD + "date"))
    assert len(retrieve("dates", ctx, mode=mode, sparql_filter=SINCE,
                        bindings={"since": well_typed})) == 1


def test_an_update_stores_an_ill_typed_literal_as_given(ctx):
    """An update binds what it stores, exactly: RDF allows a literal its type cannot read."""
    odd = ox.Literal("2024-13-01", datatype=ox.NamedNode(XSD + "date"))
    ctx.kg.update("INSERT { <urn:x> <urn:p> ?v } WHERE {}", {"v": odd})
    assert ctx.kg.query('ASK { <urn:x> <urn:p> "2024-13-01"^^xsd:date }') is True


def test_a_wrong_type_is_also_a_type_error_and_a_wrong_value_also_a_value_error(ctx):
    with pytest.raises(TypeError):
        retrieve(None, ctx)
    with pytest.raises(ValueError):
        retrieve("q", ctx, k=0)
    assert issubclass(InvalidArgumentTypeError, InvalidArgumentError)


def test_an_iterable_that_is_no_list_fails_its_bad_items_alone(ctx):
    stats = ingest_all(iter([GOOD[0], 7, GOOD[1]]), ctx=ctx)
    assert (stats.ingested, stats.failures[0][0]) == (2, "item 1")


_ANYTHING = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(), st.text(alphabet=_characters, max_size=12), st.binary(max_size=4),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), st.integers(), max_size=2),
    st.just(object()), st.just(IRI("not an iri")), st.just(math.nan),
    st.just(10**5000))  # more digits than Python prints

_CALLS = {
    "retrieve": lambda c, v, w: retrieve(v, c, k=w),
    "retrieve k": lambda c, v, w: retrieve("web", c, k=v),
    "retrieve scope": lambda c, v, w: retrieve("web", c, scope=v),
    "retrieve mode": lambda c, v, w: retrieve("web", c, mode=v, sparql_filter=w),
    "retrieve filter": lambda c, v, w: retrieve("web", c, sparql_filter=v, bindings=w),
    "retrieve bindings": lambda c, v, w: retrieve("web", c, sparql_filter=FILTER + " VALUES ?x "
                                                  "{ 1 }", bindings={"x": v}),
    "retrieve fusion": lambda c, v, w: retrieve("web", c, fusion=v, steps=w),
    "retrieve messages": lambda c, v, w: retrieve("web", c, messages=v),
    "VectorRetriever": lambda c, v, w: VectorRetriever(c, k=v, scope=w).retrieve("web"),
    "HybridRetriever": lambda c, v, w: HybridRetriever(c, sparql_filter=v, bindings=w),
    "GraphRetriever": lambda c, v, w: GraphRetriever(c, FILTER, k=v).retrieve(w),
    "Document": lambda c, v, w: Document(v, "s", "t", title=w),
    "Document metadata": lambda c, v, w: Document("i", "s", "t", metadata=v),
    "ingest": lambda c, v, w: ingest_all(v, ctx=c),
    "ingest options": lambda c, v, w: ingest_all(GOOD, ctx=c, batch_size=v, scope=w),
    "ingest base": lambda c, v, w: ingest_all(GOOD, ctx=c, base_iri=v),
    "ingest metadata": lambda c, v, w: ingest_all([Document("m", "m", "t", metadata={"k": v})],
                                                  ctx=c),
    "apply_bindings": lambda c, v, w: apply_bindings("SELECT ?x WHERE { ?x ?p ?o }", {"x": v}),
    "bindings": lambda c, v, w: apply_bindings("SELECT ?x WHERE { ?x ?p ?o }", v),
}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(_CALLS)), _ANYTHING, _ANYTHING)
def test_any_value_at_a_public_entry_point_gives_a_result_or_a_trails_error(name, value, other):
    with fresh_context(dim=16) as ctx:
        try:
            _CALLS[name](ctx, value, other)
        except TrailsError:
            pass
        assert ctx.verify().ok


# -- SPARQL bindings ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [IRI("not an iri"), IRI("http://a b/"), IRI("http://x/<y>"),
                                   IRI(""), IRI("http://x/\ud800")])
def test_an_iri_binding_that_is_none_names_the_variable_and_the_value(ctx, value):
    with pytest.raises(InvalidArgumentError) as raised:
        ctx.kg.query("SELECT ?s WHERE { ?s ?p ?o }", {"s": value})
    message = str(raised.value)
    assert "binding 's'" in message and repr(str(value))[1:-1][:8] in message


def test_a_binding_of_no_rdf_type_names_the_variable(ctx):
    for value in (object(), Fraction(1, 3), b"x", [1], Decimal("NaN"), Decimal("1E+999999999"),
                  10**5000):
        with pytest.raises(InvalidArgumentError, match="binding 'v'"):
            ctx.kg.query("SELECT ?v WHERE { BIND(1 AS ?w) }", {"v": value})


def _bound(ctx: Context, value: object) -> tuple[str, str]:
    row = ctx.kg.query("SELECT (STR(?v) AS ?s) (DATATYPE(?v) AS ?t) WHERE { }", {"v": value})
    [(text, datatype)] = [(r["s"], r["t"]) for r in row]
    return text, datatype


@pytest.mark.parametrize("value, text, datatype", [
    (2**63 - 1, "9223372036854775807", "integer"),
    (-(2**63), "-9223372036854775808", "integer"),
    (np.int64(7), "7", "integer"),
    (math.nan, "NaN", "double"),
    (math.inf, "INF", "double"),
    (-math.inf, "-INF", "double"),
    (np.float32(0.5), "0.5", "double"),
    (True, "true", "boolean"),
    (Decimal("1E+2"), "100", "decimal"),
    (dt.datetime(2024, 5, 1, 10, 20, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
     "2024-05-01T10:20:30+02:00", "dateTime"),
    (dt.date(2024, 5, 1), "2024-05-01", "date"),
    (dt.time(10, 20), "10:20:00", "time"),
])
def test_python_values_bind_as_exact_xsd_terms(ctx, value, text, datatype):
    assert _bound(ctx, value) == (text, XSD + datatype)


@pytest.mark.parametrize("value, text, datatype", [
    (2**63, "9223372036854775808", "decimal"),  # past 64 bits: exact while a decimal holds it
    (-(2**64) - 1, "-18446744073709551617", "decimal"),
    (10**20, "100000000000000000000", "decimal"),
    (2**80, 1.2089258196146292e24, "double"),  # past a 128-bit decimal: the nearest double
    (-(10**40), -1e40, "double"),
    (10**400, math.inf, "double"),
    (Decimal("1E+30"), 1e30, "double"),
    (Decimal("-1E+400"), -math.inf, "double"),
    (Decimal("0.1234567890123456789012"), "0.123456789012345679", "decimal"),
])
def test_a_number_the_graph_cannot_hold_binds_as_the_nearest_one_it_compares(
        ctx, value, text, datatype):
    written, written_type = _bound(ctx, value)
    assert written_type == XSD + datatype
    assert (written if isinstance(text, str) else float(written)) == text


_HUGE = [2**63, 2**64, 10**20, 2**80, 10**40, 10**400, Decimal("1E+30"), Decimal("1E+400"),
         Decimal("9.0000000000000000000001"), 1e300, math.inf]


@pytest.mark.parametrize("value", _HUGE + [-v for v in _HUGE])
def test_a_bound_number_of_any_size_compares_in_a_filter(ctx, value):
    ingest_all(GOOD, ctx=ctx)
    text = "SELECT ?iri WHERE { ?iri a trails:Chunk FILTER(?n > 5) }"
    hits = retrieve("web", ctx, sparql_filter=text, bindings={"n": value}, k=5)
    assert len(hits) == (2 if value > 0 else 0)
    below = "SELECT ?iri WHERE { ?iri a trails:Chunk FILTER(?n < 5) }"
    assert len(retrieve("web", ctx, sparql_filter=below, bindings={"n": value}, k=5)) == (
        0 if value > 0 else 2)
    assert ctx.kg.query("ASK { FILTER(?n = ?n + 0) }", {"n": value}) is True


def test_a_big_int_binding_in_an_update_is_stored_exactly(ctx):
    ctx.kg.update("INSERT { <urn:x> <urn:n> ?n } WHERE { }", {"n": 2**80 + 1})
    [row] = ctx.kg.query("SELECT (STR(?n) AS ?s) (DATATYPE(?n) AS ?t) WHERE { <urn:x> <urn:n> ?n }")
    assert (row["s"], row["t"]) == (str(2**80 + 1), XSD + "integer")


def test_a_filter_binding_error_in_retrieve_names_the_binding(ctx):
    ingest_all(GOOD, ctx=ctx)
    with pytest.raises(InvalidArgumentError, match="binding 'd'"):
        retrieve("web", ctx, sparql_filter="SELECT ?iri WHERE { ?iri schema:isPartOf ?d }",
                 bindings={"d": IRI("no iri")})
    with pytest.raises(SparqlError):  # a valid binding in a broken filter is still a SparqlError
        retrieve("web", ctx, sparql_filter="SELECT ?iri WHERE { ?iri ?d", bindings={"d": 1})


class _Fingerprinted:
    def __init__(self, fingerprint: object) -> None:
        self._fingerprint = fingerprint

    @property
    def fingerprint(self) -> object:
        if isinstance(self._fingerprint, Exception):
            raise self._fingerprint
        return self._fingerprint

    def chunk(self, document: Document) -> list[Chunk]:
        return [_span(document, 0, len(document.text), 0)]


@pytest.mark.parametrize(("given", "error", "said"), [
    (ValueError("no settings yet"), InvalidArgumentError, "raised ValueError: no settings yet"),
    (AttributeError("self.size"), InvalidArgumentError, "raised AttributeError: self.size"),
    (42, InvalidArgumentTypeError, "gave int, not a str"),
])
def test_a_chunker_whose_fingerprint_fails_is_refused_naming_it_before_any_write(
        ctx, given, error, said):
    # The user's exception went through the run as it was; an AttributeError inside the
    # property, or a fingerprint that is no str, silently versioned documents by something else.
    with pytest.raises(error, match=said) as raised:
        ingest_all([Document("s", "mem:s", "One two.")], ctx=ctx,
                   chunker=_Fingerprinted(given))
    assert "_Fingerprinted.fingerprint" in str(raised.value)
    assert ctx.vectors.count() == 0
    assert ingest_all([Document("s", "mem:s", "One two.")], ctx=ctx,
                      chunker=_Fingerprinted("mine/1")).ingested == 1
