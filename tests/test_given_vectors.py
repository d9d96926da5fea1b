"""Documents that come with their chunks and vectors (the plugin design's
``embedding_source``): stored as given, checked against the context's embedder, never
embedded again."""

from __future__ import annotations

import numpy as np
import pytest

from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.ingest import ingest, ingest_all
from trails.ingest.chunkers import SentenceChunker
from trails.ingest.document import Chunk, Document
from trails.ingest.events import BatchEmbedded, DocumentFailed, DocumentIngested
from trails.testing import fresh_context
from trails.vector import MockEmbedder
from trails.vector.embedders.base import EmbedderIdentity

TEXT = "Rails is a web framework. Elephants are large mammals."


class CountingEmbedder(MockEmbedder):
    """A MockEmbedder that counts the texts it embeds."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__(dim=dim, seed=3)
        self.texts: list[str] = []

    def embed_array(self, texts):
        self.texts += list(texts)
        return super().embed_array(texts)


class FixedEmbedder(MockEmbedder):
    """The embedder's identity, embedding every query as one vector."""

    def __init__(self, like, vector) -> None:
        super().__init__(dim=like.dim, seed=3)
        self._vector = vector

    def embed(self, text):
        return list(self._vector)

    def embed_array(self, texts):
        return np.array([self._vector] * len(texts), dtype=np.float32)


def given(embedder, vectors, **options) -> Document:
    chunks = [Chunk("Rails is a web framework.", 0, 25, 0, vector=vectors[0]),
              Chunk("Elephants are large mammals.", 26, 54, 1, vector=vectors[1])]
    return Document("d", "mem", TEXT, chunks=chunks,
                    embedded_by=options.pop("embedded_by", embedder.identity), **options)


def test_given_vectors_are_stored_and_nothing_is_embedded():
    embedder = CountingEmbedder()
    ctx = fresh_context(embedder=embedder)
    vectors = [[1, 0, 0, 0, 0, 0, 0, 0], [0, 3, 4, 0, 0, 0, 0, 0]]
    events = list(ingest([given(embedder, vectors)], ctx=ctx))
    assert embedder.texts == [] and not [e for e in events if isinstance(e, BatchEmbedded)]
    (done,) = [e for e in events if isinstance(e, DocumentIngested)]
    assert done.chunks == 2
    stored = {row.metadata["text"]: row.vector for row in ctx.vectors.get(ctx.vectors.all_ids())}
    assert np.allclose(stored["Rails is a web framework."], vectors[0])
    assert np.allclose(stored["Elephants are large mammals."], [0, 0.6, 0.8, 0, 0, 0, 0, 0])
    (top,) = retrieve("anything", ctx, mode="vector", k=1,
                      embedder=FixedEmbedder(embedder, [0, 0.6, 0.8, 0, 0, 0, 0, 0]))
    assert top.snippet.startswith("Elephants are large mammals.")


def test_chunks_without_vectors_are_embedded_and_given_chunks_replace_the_chunker():
    embedder = CountingEmbedder()
    ctx = fresh_context(embedder=embedder)
    document = given(embedder, [[1, 0, 0, 0, 0, 0, 0, 0], None])
    ingest_all([document], ctx=ctx)
    assert embedder.texts == ["Elephants are large mammals."]
    assert ctx.vectors.count() == 2


@pytest.mark.parametrize("problem, change", [
    ("dimension", {"vectors": [[1.0] * 4, [1.0] * 4]}),
    ("embedder", {"embedded_by": EmbedderIdentity(model="another-model", dim=8)}),
    ("embedded_by", {"embedded_by": None}),
    ("NaN", {"vectors": [[float("nan")] * 8, [1.0] * 8]}),
])
def test_vectors_that_do_not_fit_fail_their_document_and_keep_the_old_version(problem, change):
    embedder = CountingEmbedder()
    ctx = fresh_context(embedder=embedder)
    ingest_all([Document("d", "mem", "Old text.")], ctx=ctx)
    before = sorted(ctx.vectors.all_ids())
    vectors = change.pop("vectors", [[1.0] * 8, [1.0] * 8])
    events = list(ingest([given(embedder, vectors, **change)], ctx=ctx))
    (failed,) = [e for e in events if isinstance(e, DocumentFailed)]
    assert problem.lower() in failed.reason.lower()
    assert sorted(ctx.vectors.all_ids()) == before


class PricedEmbedder(CountingEmbedder):
    """An embedder that declares its price, as a remote API's would."""

    price_per_million_tokens = 20.0


def test_batch_events_name_their_documents_with_a_per_document_batch_index():
    """The runtime's BatchIngested(document_id, batch_index): batch_index counts each
    document's own batches from 0, and a batch names every document it embedded."""
    embedder = PricedEmbedder()
    ctx = fresh_context(embedder=embedder)
    docs = [Document("a", "mem", "One. Two. Six. Ten. Red."),
            Document("b", "mem", "Yes. No.")]
    chunker = SentenceChunker(max_chars=5, overlap=0)  # one sentence per chunk
    batches = [e for e in ingest(docs, ctx=ctx, chunker=chunker, batch_size=2)
               if isinstance(e, BatchEmbedded)]
    a, b = "trails://local/doc/a", "trails://local/doc/b"
    assert [(e.doc_iris, e.batch_index, e.chunks) for e in batches] == [
        ((a,), (0,), 2), ((a,), (1,), 2), ((a, b), (2, 0), 2), ((b,), (1,), 1)]
    for event in batches:
        assert event.cost == pytest.approx(event.tokens * 20.0 / 1_000_000)
        assert event.tokens > 0


def test_an_embedder_without_a_price_reports_no_cost():
    ctx = fresh_context(embedder=CountingEmbedder())
    (event,) = [e for e in ingest([Document("a", "mem", "One.")], ctx=ctx)
                if isinstance(e, BatchEmbedded)]
    assert event.cost is None and event.doc_iris == ("trails://local/doc/a",)


@pytest.mark.parametrize("chunks", [
    [Chunk("Something else.", 0, 15, 0, vector=[1.0] * 8)],
    [Chunk("Rails is a web framework.", 0, 25, 1, vector=[1.0] * 8)],
    [],
])
def test_given_chunks_that_do_not_fit_the_text_are_named_as_the_documents_own(chunks):
    """A document that brings its own chunks used no chunker: its failure says the given
    chunks are wrong, not a chunker, and stores nothing."""
    embedder = CountingEmbedder()
    ctx = fresh_context(embedder=embedder)
    document = Document("d", "mem", TEXT, chunks=chunks, embedded_by=embedder.identity)
    (failed,) = [e for e in ingest([document], ctx=ctx) if isinstance(e, DocumentFailed)]
    assert failed.reason.startswith("document 'd': its given chunks: ")
    assert "chunker" not in failed.reason and ctx.vectors.count() == 0


@pytest.mark.parametrize("price", ["20", float("nan"), -1.0, True])
def test_a_price_that_is_no_price_is_refused_before_anything_is_written(price):
    """An embedder declaring a price that cannot price tokens would report no cost, or a
    wrong one: ingest refuses it by name first."""
    embedder = CountingEmbedder()
    embedder.price_per_million_tokens = price
    ctx = fresh_context(embedder=embedder)
    with pytest.raises(InvalidArgumentError, match="price_per_million_tokens"):
        list(ingest([Document("a", "mem", "One.")], ctx=ctx))
    assert ctx.vectors.count() == 0 and embedder.texts == []


def stored(ctx) -> dict[str, list[float]]:
    return {row.metadata["text"]: [float(x) for x in row.vector]
            for row in ctx.vectors.get(ctx.vectors.all_ids())}


def test_new_vectors_for_the_same_text_replace_the_old_ones():
    embedder = CountingEmbedder()
    ctx = fresh_context(embedder=embedder)
    first = [[1, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0]]
    second = [[0, 0, 1, 0, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0, 0, 0]]
    ingest_all([given(embedder, first)], ctx=ctx)
    stats = ingest_all([given(embedder, second)], ctx=ctx)
    assert (stats.ingested, stats.skipped) == (1, 0)
    assert stored(ctx) == {"Rails is a web framework.": second[0],
                           "Elephants are large mammals.": second[1]}
    assert ingest_all([given(embedder, second)], ctx=ctx).skipped == 1  # the same: current
    # Chunks given without vectors now are embedded here: a version of its own, too.
    assert ingest_all([given(embedder, [None, None])], ctx=ctx).ingested == 1
    assert embedder.texts == ["Rails is a web framework.", "Elephants are large mammals."]
    assert ctx.vectors.count() == 2


@pytest.mark.parametrize("bad, problem", [
    ([0.0] * 8, "all-zero"), ([float("inf")] + [1.0] * 7, "infinity"),
    ([1.0] * 7, "shape"), ("abcdefgh", "no vector of numbers"),
    # An int no float holds (from a JSON reader keeping big numbers exact) raised an
    # OverflowError out of the whole run.
    ([10**400] + [1.0] * 7, "beyond float32")])
def test_a_bad_vector_for_an_unchanged_text_fails_its_document_not_skips_it(bad, problem):
    embedder = CountingEmbedder()
    ctx = fresh_context(embedder=embedder)
    good = [[1, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0]]
    ingest_all([given(embedder, good)], ctx=ctx)
    events = list(ingest([given(embedder, [bad, good[1]])], ctx=ctx))
    (failed,) = [e for e in events if isinstance(e, DocumentFailed)]
    assert problem in failed.reason and "chunk 0" in failed.reason
    assert stored(ctx) == {"Rails is a web framework.": good[0],
                           "Elephants are large mammals.": good[1]}


def test_a_given_chunk_longer_than_the_model_reads_is_named_in_a_warning():
    # The retrieval runtime design drops a chunk over the model's token limit and says so;
    # trails embedded a given chunk of 1,500 words silently, though all-MiniLM-L6-v2 reads
    # only its first 256 word pieces: the rest could never be found.
    from trails.context import Context
    from trails.ingest.events import DocumentWarning
    from trails.vector import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    long_text = " ".join(f"word{i}" for i in range(1500))
    short = "A short chunk."
    text = short + " " + long_text
    chunks = [Chunk(short, 0, len(short), 0), Chunk(long_text, len(short) + 1, len(text), 1)]
    with Context.memory(embedder) as ctx:
        events = list(ingest([Document("big", "big", text, chunks=chunks)], ctx=ctx))
    warnings = [e.message for e in events if isinstance(e, DocumentWarning)]
    assert len(warnings) == 1 and "chunk 1" in warnings[0] and "chunk 0" not in warnings[0]
    assert "254" in warnings[0]  # 256 word pieces less [CLS] and [SEP]
    assert [e.chunks for e in events if isinstance(e, DocumentIngested)] == [2]  # still stored


def test_a_custom_chunkers_chunk_longer_than_the_model_reads_is_named_in_a_warning():
    # The same over-long chunk, made by the caller's own chunker rather than given, was
    # embedded cut short with no warning at all.
    from trails.context import Context
    from trails.ingest.events import DocumentWarning
    from trails.vector import SentenceTransformerEmbedder

    class WholeParagraphs:
        def chunk(self, document):
            first = document.text.index(" ")
            return [Chunk(document.text[:first], 0, first, 0),
                    Chunk(document.text[first + 1:], first + 1, len(document.text), 1)]

    text = "Short. " + " ".join(f"word{i}" for i in range(1500))
    with Context.memory(SentenceTransformerEmbedder()) as ctx:
        events = list(ingest([Document("big", "big", text)], ctx=ctx, chunker=WholeParagraphs()))
        quiet = list(ingest([Document("small", "small", "Short. Also short.")], ctx=ctx,
                            chunker=WholeParagraphs()))
    warnings = [e.message for e in events if isinstance(e, DocumentWarning)]
    assert len(warnings) == 1 and "chunk 1" in warnings[0] and "chunk 0" not in warnings[0]
    assert "254" in warnings[0] and "chunker" in warnings[0]  # whose chunks, and the limit
    assert [e.chunks for e in events if isinstance(e, DocumentIngested)] == [2]  # still stored
    assert not [e for e in quiet if isinstance(e, DocumentWarning)]


def test_a_chunk_of_whitespace_only_is_named_in_a_warning_given_or_chunked():
    # A blank chunk was stored and embedded without a word: it holds nothing to find, and a
    # hit on it (its vector is the empty text's) shows no text.
    from trails.ingest.events import DocumentWarning

    class WithGaps:
        def chunk(self, document):
            return [Chunk("x", 0, 1, 0), Chunk("   ", 1, 4, 1), Chunk("y", 4, 5, 2)]

    text = "x   y"
    ctx = fresh_context(embedder=MockEmbedder(dim=8, seed=3))
    given = list(ingest([Document("a", "a", text, chunks=WithGaps().chunk(None))], ctx=ctx))
    chunked = list(ingest([Document("b", "b", text)], ctx=ctx, chunker=WithGaps()))
    for events, whose in ((given, ""), (chunked, "chunker: ")):
        (warning,) = [e.message for e in events if isinstance(e, DocumentWarning)]
        assert warning.startswith(whose + "chunk 1 (1 of 3 chunks): whitespace only"), warning
        assert [e.chunks for e in events if isinstance(e, DocumentIngested)] == [3]


def test_text_that_no_chunk_holds_is_named_in_a_warning_given_or_chunked():
    # A chunker that kept only the first sentence (or given chunks with a gap) lost the rest
    # of the text in silence: only chunks are embedded and indexed, so no search finds it.
    from trails.ingest.events import DocumentWarning

    class FirstSentenceOnly:
        def chunk(self, document):
            end = document.text.index(".") + 1
            return [Chunk(document.text[:end], 0, end, 0)]

    text = "Keep this. Lose this one.  "
    ctx = fresh_context(embedder=MockEmbedder(dim=8, seed=3))
    given = list(ingest([Document("a", "a", text, chunks=FirstSentenceOnly().chunk(
        Document("a", "a", text)))], ctx=ctx))
    chunked = list(ingest([Document("b", "b", text)], ctx=ctx, chunker=FirstSentenceOnly()))
    whole = list(ingest([Document("c", "c", text)], ctx=ctx, chunker=SentenceChunker()))
    for events, whose in ((given, ""), (chunked, "chunker: ")):
        (warning,) = [e.message for e in events if isinstance(e, DocumentWarning)]
        # The gap runs from the end of the chunk to the end of the text; 17 of its characters
        # are the lost sentence and the spaces around it.
        assert warning.startswith(whose + "characters [10, 27) (17 of 27) are in no chunk"), (
            warning)
        assert [e.chunks for e in events if isinstance(e, DocumentIngested)] == [1]
    assert not [e for e in whole if isinstance(e, DocumentWarning)]
