"""Ingestion end to end: events and batching, minted IRIs and triples, vectors, upserts,
embedding and sanitizer failures, deletion, embedder consistency and ``verify()``.

Every expected value is written out here or computed from the files the test wrote, never by
the code under test. Crash safety (SIGKILL mid-ingest) lives in ``test_crash_safety.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyoxigraph as ox
import pytest

from trails import retrieve
from trails.context import Context
from trails.errors import ConfigurationError, DimensionMismatchError, EmbeddingModelMismatchError
from trails.ingest import (
    BatchEmbedded,
    Document,
    DocumentFailed,
    DocumentIngested,
    DocumentSkipped,
    DocumentStarted,
    DocumentWarning,
    EmbeddingFailed,
    IngestionStats,
    aingest,
    ingest,
    ingest_all,
)
from trails.ingest.formats import parse_markdown
from trails.kg.base import KnowledgeGraph, NQuadsGraph
from trails.kg.oxigraph import OxigraphGraph
from trails.testing import MockEmbedder, fresh_context

BASE = "trails://local/"
SCHEMA = "https://schema.org/"
TRAILS = "https://trails.dev/ns#"
META = "https://trails.dev/meta#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

ALPHA_BODY = "Alpha is the first letter of the Greek alphabet. It opens every list of letters.\n"
GAMMA_BODY = "# Gamma rays\n\nGamma rays carry the most energy. Lead shields stop them.\n"
BETA_TEXT = "Beta follows alpha. Beta is the second letter."


def _write_folder(folder: Path) -> Path:
    """a.md (front matter), b.txt, b_bad.txt (not UTF-8), c.md (heading title)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.md").write_text(f"---\ntitle: Alpha\ndate: 2024-05-01\n---\n{ALPHA_BODY}")
    (folder / "b.txt").write_text(BETA_TEXT)
    (folder / "b_bad.txt").write_bytes(b"\xff\xfd broken \xc3\x28 bytes")
    (folder / "c.md").write_text(GAMMA_BODY)
    return folder


@pytest.fixture
def mem():
    ctx = fresh_context(dim=32)
    yield ctx
    ctx.close()


def _iri(doc_id: str) -> str:
    return f"{BASE}doc/{doc_id}"


def _objects(ctx: Context, subject: str, predicate: str) -> list[ox.Literal | ox.NamedNode]:
    """Objects of (subject, predicate) in any graph, as pyoxigraph terms (datatypes kept)."""
    return [q.object for q in ctx.kg.store.quads_for_pattern(
        ox.NamedNode(subject), ox.NamedNode(predicate), None, None)]


def _one(ctx: Context, subject: str, predicate: str) -> ox.Literal | ox.NamedNode:
    found = _objects(ctx, subject, predicate)
    assert len(found) == 1, f"{subject} {predicate}: {found}"
    return found[0]


def _typed(term: ox.Literal, datatype: str) -> str:
    assert isinstance(term, ox.Literal), term
    assert term.datatype.value == XSD + datatype, f"{term} is not xsd:{datatype}"
    return term.value


def _chunk_iris(ctx: Context, doc: str) -> set[str]:
    return {q.subject.value for q in ctx.kg.store.quads_for_pattern(
        None, ox.NamedNode(SCHEMA + "isPartOf"), ox.NamedNode(doc), None)}


def _mentions(ctx: Context, iris: set[str]) -> list[ox.Quad]:
    """Every quad (any graph) with one of ``iris`` as subject or object."""
    return [q for q in ctx.kg.store
            if q.subject.value in iris or (isinstance(q.object, ox.NamedNode)
                                           and q.object.value in iris)]


def _shape(event) -> tuple:
    """An event without its timing, for comparing two runs."""
    fields = {k: v for k, v in dataclasses.asdict(event).items() if k != "seconds"}
    return (type(event).__name__, tuple(sorted(fields.items())))


# ------------------------------------------------------------------------------- events


def test_folder_yields_started_batches_failure_and_ingested_events(mem, tmp_path):
    folder = _write_folder(tmp_path / "kb")
    started = time.perf_counter()
    events = list(ingest(folder, ctx=mem))
    wall = time.perf_counter() - started

    good = [_iri("a.md"), _iri("b.txt"), _iri("c.md")]
    assert [e.doc_iri for e in events if isinstance(e, DocumentStarted)] == good
    ingested = {e.doc_iri: e for e in events if isinstance(e, DocumentIngested)}
    assert set(ingested) == set(good)
    assert not any(e.replaced for e in ingested.values())
    for doc in good:  # started before ingested
        first = next(i for i, e in enumerate(events) if isinstance(e, DocumentStarted) and e.doc_iri == doc)
        done = next(i for i, e in enumerate(events) if isinstance(e, DocumentIngested) and e.doc_iri == doc)
        assert first < done
        assert ingested[doc].source == str(folder / doc.rsplit("/", 1)[-1])

    failed = [e for e in events if isinstance(e, DocumentFailed)]
    assert len(failed) == 1
    assert failed[0].source == str(folder / "b_bad.txt")
    assert "UTF-8" in failed[0].reason
    # the failure sits between b.txt and c.md, and c.md was still ingested after it
    assert events.index(failed[0]) < max(events.index(e) for e in ingested.values())

    batches = [e for e in events if isinstance(e, BatchEmbedded)]
    assert batches
    graph_chunks = len(mem.kg.query("SELECT ?c WHERE { ?c a trails:Chunk }"))
    assert sum(b.chunks for b in batches) == sum(e.chunks for e in ingested.values()) == graph_chunks
    chars = len(ALPHA_BODY.strip()) + len(BETA_TEXT) + len(GAMMA_BODY.strip())
    total_tokens = sum(b.tokens for b in batches)
    assert chars / 8 <= total_tokens <= chars  # a token is a few characters
    assert all(0 <= b.seconds <= wall for b in batches)


@pytest.mark.parametrize("text", ["", "  \n\t \n"])
def test_a_document_without_text_is_recorded_with_a_warning(mem, text):
    """An empty file (or a scanned PDF with no text layer) was ingested with no chunk and no
    word said, so it could never be a hit and nothing told why."""
    events = list(ingest([Document("empty", "empty.md", text), Document("full", "full.md",
                                                                        "Some words.")], ctx=mem))
    warned = {e.source: e.message for e in events if isinstance(e, DocumentWarning)}
    assert list(warned) == ["empty.md"] and warned["empty.md"].startswith("no text:")
    assert "no search will find it" in warned["empty.md"]
    assert [e.chunks for e in events if isinstance(e, DocumentIngested)] == [0, 1]


def test_ingest_all_totals(mem, tmp_path):
    folder = _write_folder(tmp_path / "kb")
    stats = ingest_all(folder, ctx=mem)
    assert isinstance(stats, IngestionStats)
    assert (stats.ingested, stats.skipped, stats.failed) == (3, 0, 1)
    assert stats.chunks == mem.vectors.count() == 3  # each file is one short chunk
    assert stats.tokens > 0
    assert 0 <= stats.embed_seconds <= stats.seconds
    assert [source for source, _ in stats.failures] == [str(folder / "b_bad.txt")]
    assert "3 documents ingested" in stats.summary()

    again = ingest_all(folder, ctx=mem)
    assert (again.ingested, again.skipped, again.failed, again.chunks, again.tokens) == (0, 3, 1, 0, 0)


def test_unchanged_documents_are_skipped_without_embedding(tmp_path):
    folder = _write_folder(tmp_path / "kb")
    embedder = MockEmbedder(dim=32)
    with fresh_context(embedder=embedder) as ctx:
        ingest_all(folder, ctx=ctx)
        calls = embedder.batches
        vectors = sorted(ctx.vectors.all_ids())
        events = list(ingest(folder, ctx=ctx))
        skipped = [e.doc_iri for e in events if isinstance(e, DocumentSkipped)]
        assert skipped == [_iri("a.md"), _iri("b.txt"), _iri("c.md")]
        assert all(e.reason == "unchanged" for e in events if isinstance(e, DocumentSkipped))
        assert not [e for e in events if isinstance(e, (BatchEmbedded, DocumentIngested))]
        assert embedder.batches == calls
        assert sorted(ctx.vectors.all_ids()) == vectors


def test_changed_document_is_reported_as_replaced(mem, tmp_path):
    folder = _write_folder(tmp_path / "kb")
    ingest_all(folder, ctx=mem)
    (folder / "b.txt").write_text("Beta was rewritten. It now talks about boats.")
    events = list(ingest(folder, ctx=mem))
    ingested = [e for e in events if isinstance(e, DocumentIngested)]
    assert [(e.doc_iri, e.replaced) for e in ingested] == [(_iri("b.txt"), True)]
    assert {e.doc_iri for e in events if isinstance(e, DocumentSkipped)} == {_iri("a.md"), _iri("c.md")}


# --------------------------------------------------------------------------- graph writes

NQ = '<https://x/a> <https://x/p> "1" .\n<https://x/b> <https://x/p> "2" <https://x/g> .\n'


def test_the_graph_loads_nquads_whole_or_not_at_all(tmp_path):
    graph = OxigraphGraph()
    assert isinstance(graph, NQuadsGraph)
    graph.load_nquads(NQ)
    assert len(graph) == 2
    with pytest.raises(SyntaxError):  # a bad second line: the first is not added either
        graph.load_nquads('<https://x/c> <https://x/p> "3" .\n<https://x/d> <https://x/p> oops .\n')
    assert len(graph) == 2
    OxigraphGraph(tmp_path / "kg").close()
    read_only = OxigraphGraph(tmp_path / "kg", read_only=True)
    with pytest.raises(ConfigurationError, match="read-only"):
        read_only.load_nquads(NQ)
    assert len(read_only) == 0
    read_only.close()


class QuadsOnlyGraph:
    """The embedded graph without its N-Quads fast path, as a SPARQL endpoint graph is."""

    def __init__(self, inner: OxigraphGraph) -> None:
        self.inner = inner
        self.extended = 0

    def __getattr__(self, name):
        if name == "load_nquads":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __len__(self) -> int:
        return len(self.inner)

    def extend(self, quads) -> None:
        self.extended += 1
        self.inner.extend(quads)


def test_a_graph_without_nquads_loading_gets_the_same_triples_as_quads(tmp_path):
    folder = _write_folder(tmp_path / "kb")
    with fresh_context() as fast, fresh_context() as plain:
        graph = QuadsOnlyGraph(plain.kg)
        assert isinstance(graph, KnowledgeGraph) and not isinstance(graph, NQuadsGraph)
        plain.kg = graph
        assert ingest_all(folder, ctx=fast).ingested == ingest_all(folder, ctx=plain).ingested == 3
        assert graph.extended > 0  # chunk and document triples went in as quads
        assert set(graph.inner.store) == set(fast.kg.store)


def _one_sentence_docs(n: int) -> list[Document]:
    return [Document(id=f"d{i:02d}", source=f"mem:{i}", text=f"Word{i} appears here alone.")
            for i in range(n)]


def test_batches_are_cut_at_batch_size():
    embedder = MockEmbedder(dim=32)
    with fresh_context(embedder=embedder) as ctx:
        events = list(ingest(_one_sentence_docs(12), ctx=ctx, batch_size=5))
    sizes = [e.chunks for e in events if isinstance(e, BatchEmbedded)]
    assert sizes == [5, 5, 2]
    assert embedder.batches == 3
    assert sum(isinstance(e, DocumentIngested) for e in events) == 12


class WordTokens(MockEmbedder):
    """A MockEmbedder with a tokenizer: one token per whitespace-separated word."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_batches_are_cut_at_max_batch_tokens():
    embedder = WordTokens(dim=32)
    docs = _one_sentence_docs(12)  # four words each
    assert all(len(d.text.split()) == 4 for d in docs)
    with fresh_context(embedder=embedder) as ctx:
        events = list(ingest(docs, ctx=ctx, batch_size=64, max_batch_tokens=10))
        assert ctx.vectors.count() == 12
    batches = [e for e in events if isinstance(e, BatchEmbedded)]
    assert [(b.chunks, b.tokens) for b in batches] == [(2, 8)] * 6
    assert embedder.batches == 6


def test_a_chunk_over_the_token_budget_is_embedded_alone():
    embedder = MockEmbedder(dim=32)  # no tokenizer: tokens are estimated from characters
    with fresh_context(embedder=embedder) as ctx:
        events = list(ingest(_one_sentence_docs(7), ctx=ctx, batch_size=64, max_batch_tokens=1))
        assert ctx.vectors.count() == 7
    assert [e.chunks for e in events if isinstance(e, BatchEmbedded)] == [1] * 7
    assert embedder.batches == 7


def test_batch_settings_must_be_positive(mem):
    with pytest.raises(ValueError):
        ingest_all(_one_sentence_docs(1), ctx=mem, batch_size=0)
    with pytest.raises(ValueError):
        ingest_all(_one_sentence_docs(1), ctx=mem, max_batch_tokens=0)


def test_aingest_yields_the_same_events_as_ingest(tmp_path):
    folder = _write_folder(tmp_path / "kb")

    async def collect(ctx: Context) -> list:
        return [event async for event in aingest(folder, ctx=ctx, batch_size=2)]

    with fresh_context(dim=32) as one, fresh_context(dim=32) as two:
        sync_events = list(ingest(folder, ctx=one, batch_size=2))
        async_events = asyncio.run(collect(two))
        assert [_shape(e) for e in async_events] == [_shape(e) for e in sync_events]
        assert sum(isinstance(e, DocumentIngested) for e in async_events) == 3
        assert sorted(two.vectors.all_ids()) == sorted(one.vectors.all_ids())
        again = asyncio.run(collect(two))
        assert sum(isinstance(e, DocumentSkipped) for e in again) == 3


def test_a_repeated_document_id_in_one_run_fails_the_repeat(mem):
    first = Document(id="x", source="mem:1", text="The first text of x.")
    second = Document(id="x", source="mem:2", text="A second, different text of x.")
    events = list(ingest([first, second], ctx=mem))
    failed = [e for e in events if isinstance(e, DocumentFailed)]
    assert [(e.source, e.doc_iri) for e in failed] == [("mem:2", _iri("x"))]
    assert "same document id" in failed[0].reason
    assert [e.source for e in events if isinstance(e, DocumentIngested)] == ["mem:1"]
    assert mem.verify().ok
    assert [h.snippet for h in retrieve("text", mem, mode="vector")] == [first.text]
    stats = ingest_all([second], ctx=mem)  # in its own run it replaces the first
    assert stats.ingested == 1
    assert [h.snippet for h in retrieve("text", mem, mode="vector")] == [second.text]
    assert mem.verify().ok


def test_empty_document_is_ingested_with_no_chunks(mem):
    events = list(ingest([Document(id="empty", source="mem:empty", text="")], ctx=mem))
    done = [e for e in events if isinstance(e, DocumentIngested)]
    assert [(e.doc_iri, e.chunks) for e in done] == [(_iri("empty"), 0)]
    assert _typed(_one(mem, _iri("empty"), TRAILS + "chunkCount"), "integer") == "0"
    assert mem.verify().ok
    again = list(ingest([Document(id="empty", source="mem:empty", text="")], ctx=mem))
    assert any(isinstance(e, DocumentSkipped) for e in again)


# ------------------------------------------------------------------------------- minting

SUBPROCESS_INGEST = """
import json, sys
from trails.context import Context
from trails.ingest import ingest_all
from trails.vector import MockEmbedder
with Context.open(sys.argv[1], embedder=MockEmbedder(dim=32)) as ctx:
    ingest_all(sys.argv[2], ctx=ctx)
    docs = ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")
    print(json.dumps({"docs": sorted(docs), "chunks": sorted(ctx.vectors.all_ids())}))
"""


def test_document_iris_are_deterministic_across_processes(tmp_path):
    folder = tmp_path / "kb"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a b.md").write_text("Spaces in names are escaped. The IRI stays stable.")
    (folder / "top.txt").write_text("A file at the top of the folder.")
    with Context.open(tmp_path / "here", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all(folder, ctx=ctx)
        docs = sorted(ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d"))
        chunks = sorted(ctx.vectors.all_ids())
    assert docs == [f"{BASE}doc/sub/a%20b.md", f"{BASE}doc/top.txt"]

    out = subprocess.run([sys.executable, "-c", SUBPROCESS_INGEST, str(tmp_path / "there"),
                          str(folder)], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    other = json.loads(out.stdout.strip().splitlines()[-1])
    assert other["docs"] == docs
    assert other["chunks"] == chunks
    assert all(c.startswith(tuple(f"{d}/v/" for d in docs)) for c in chunks)


def _long_body(sentences: int) -> str:
    return " ".join(f"Sentence number {i} describes topic{i % 7} in some detail here."
                    for i in range(sentences))


def test_chunk_triples(mem, tmp_path):
    body = _long_body(60) + "\n"  # ~3600 characters: several chunks
    (tmp_path / "long.md").write_text(f"---\ntitle: Long\n---\n{body}")
    ingest_all(tmp_path / "long.md", ctx=mem)
    doc = _iri("long.md")
    chunks = _chunk_iris(mem, doc)
    assert len(chunks) >= 3
    assert _typed(_one(mem, doc, TRAILS + "chunkCount"), "integer") == str(len(chunks))

    positions = []
    for chunk in chunks:
        assert _one(mem, chunk, RDF_TYPE) == ox.NamedNode(TRAILS + "Chunk")
        assert _one(mem, chunk, SCHEMA + "isPartOf") == ox.NamedNode(doc)
        text = _typed(_one(mem, chunk, SCHEMA + "text"), "string")
        start = int(_typed(_one(mem, chunk, TRAILS + "startOffset"), "integer"))
        end = int(_typed(_one(mem, chunk, TRAILS + "endOffset"), "integer"))
        position = int(_typed(_one(mem, chunk, SCHEMA + "position"), "integer"))
        assert text == body[start:end] and text.strip() == text and text
        assert chunk.endswith(f"/c/{position}")
        positions.append((position, start))
    positions.sort()
    assert [p for p, _ in positions] == list(range(len(chunks)))
    assert [s for _, s in positions] == sorted(s for _, s in positions)  # in text order
    covered = "".join(body[s:e] for s, e in [(int(_objects(mem, c, TRAILS + "startOffset")[0].value),
                                               int(_objects(mem, c, TRAILS + "endOffset")[0].value))
                                              for c in chunks])
    assert set(re.findall(r"topic\d", covered)) == set(re.findall(r"topic\d", body))


def test_document_triples_and_dates(mem, tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "dated.md").write_text(f"---\ntitle: Alpha\ndate: 2024-05-01\n---\n{ALPHA_BODY}")
    (folder / "created.md").write_text("---\ncreated: 2023-02-03\n---\nCreated on a date.\n")
    (folder / "stamped.md").write_text("---\ncreated: 2024-05-01T10:20:30\n---\nWith a time.\n")
    (folder / "plain.txt").write_text(BETA_TEXT)
    (folder / "heading.md").write_text(GAMMA_BODY)
    assert ingest_all(folder, ctx=mem).ingested == 5

    dated = _iri("dated.md")
    assert _one(mem, dated, RDF_TYPE) == ox.NamedNode(TRAILS + "Document")
    assert _typed(_one(mem, dated, SCHEMA + "name"), "string") == "Alpha"
    assert _typed(_one(mem, dated, TRAILS + "source"), "string") == str(folder / "dated.md")
    assert _typed(_one(mem, dated, TRAILS + "documentId"), "string") == "dated.md"
    assert _typed(_one(mem, dated, SCHEMA + "dateCreated"), "date") == "2024-05-01"
    expected_hash = hashlib.sha256(ALPHA_BODY.encode("utf-8")).hexdigest()
    assert _typed(_one(mem, dated, TRAILS + "contentHash"), "string") == expected_hash
    assert _typed(_one(mem, dated, TRAILS + "chunkCount"), "integer") == "1"
    assert _typed(_one(mem, dated, TRAILS + "scope"), "string") == "default"

    assert _typed(_one(mem, _iri("created.md"), SCHEMA + "dateCreated"), "date") == "2023-02-03"
    assert _typed(_one(mem, _iri("stamped.md"), SCHEMA + "dateCreated"),
                  "dateTime") == "2024-05-01T10:20:30Z"  # no offset: UTC
    assert _objects(mem, _iri("plain.txt"), SCHEMA + "dateCreated") == []
    assert _typed(_one(mem, _iri("plain.txt"), SCHEMA + "name"), "string") == "plain.txt"
    assert _typed(_one(mem, _iri("heading.md"), SCHEMA + "name"), "string") == "Gamma rays"
    assert _typed(_one(mem, _iri("plain.txt"), TRAILS + "contentHash"),
                  "string") == hashlib.sha256(BETA_TEXT.encode()).hexdigest()

    # the dates are real xsd:date values: SPARQL compares them as dates
    newer = mem.kg.query("SELECT ?d WHERE { ?d schema:dateCreated ?when "
                         "FILTER(?when >= \"2024-01-01\"^^xsd:date) }").column("d")
    assert newer == [dated]


def test_user_metadata_is_typed_under_the_meta_prefix(mem, tmp_path):
    (tmp_path / "m.md").write_text(
        "---\nauthor: Ann Lee\nrating: 4\nscore: 2.5\ndraft: true\npublished: 2022-12-31\n"
        "tags: [red, blue]\nodd key!: x\n---\nMetadata test body.\n")
    ingest_all(tmp_path / "m.md", ctx=mem)
    doc = _iri("m.md")
    assert _typed(_one(mem, doc, META + "author"), "string") == "Ann Lee"
    assert _typed(_one(mem, doc, META + "rating"), "integer") == "4"
    assert float(_typed(_one(mem, doc, META + "score"), "double")) == 2.5
    assert _typed(_one(mem, doc, META + "draft"), "boolean") == "true"
    assert _typed(_one(mem, doc, META + "published"), "date") == "2022-12-31"
    assert sorted(_typed(t, "string") for t in _objects(mem, doc, META + "tags")) == ["blue", "red"]
    assert _typed(_one(mem, doc, META + "odd%20key%21"), "string") == "x"  # percent-encoded
    # typed literals compare as numbers in a retrieval filter
    hits = retrieve("metadata", mem, mode="graph",
                    sparql_filter="SELECT ?iri WHERE { ?iri meta:rating ?r FILTER(?r > 3 && ?r < 10) }")
    assert [h.iri for h in hits] == [doc]


def test_vector_ids_and_metadata(mem, tmp_path):
    long_sentence = "Snippet " + " ".join(f"word{i}" for i in range(80)) + "."
    assert len(long_sentence) > 280
    (tmp_path / "s.txt").write_text(long_sentence)
    (tmp_path / "t.txt").write_text(_long_body(40))
    ingest_all(tmp_path, ctx=mem)
    stored = mem.vectors.get(mem.vectors.all_ids())
    assert len(stored) == mem.vectors.count() >= 3
    graph_chunks = set(mem.kg.query("SELECT ?c WHERE { ?c a trails:Chunk }").column("c"))
    assert {s.id for s in stored} == graph_chunks
    for vector in stored:
        text = _typed(_one(mem, vector.id, SCHEMA + "text"), "string")
        doc = _one(mem, vector.id, SCHEMA + "isPartOf").value
        assert vector.metadata["iri"] == vector.id
        assert vector.metadata["doc_iri"] == doc
        assert vector.metadata["snippet"] == text[:280]
        assert vector.metadata["scope"] == "default"
        assert len(vector.vector) == 32
    by_doc = {s.metadata["doc_iri"]: s for s in stored if s.metadata["doc_iri"] == _iri("s.txt")}
    assert by_doc[_iri("s.txt")].metadata["snippet"] == long_sentence[:280]


# ------------------------------------------------------------------------------- upserts


def test_a_changed_file_replaces_its_version_in_graph_and_vectors(mem, tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text(_long_body(50))
    ingest_all(path, ctx=mem)
    doc = _iri("doc.txt")
    old = _chunk_iris(mem, doc)
    assert len(old) >= 2 and {v.id for v in mem.vectors.get(old)} == old

    new_text = "A short replacement about zebras. Zebras have stripes."
    path.write_text(new_text)
    events = list(ingest(path, ctx=mem))
    assert [(e.doc_iri, e.replaced) for e in events if isinstance(e, DocumentIngested)] == [(doc, True)]

    new = _chunk_iris(mem, doc)
    assert len(new) == 1 and not new & old
    assert _mentions(mem, old) == []
    assert mem.vectors.get(old) == []
    assert {v.id for v in mem.vectors.get(new)} == new
    assert _typed(_one(mem, doc, TRAILS + "contentHash"), "string") == \
        hashlib.sha256(new_text.encode()).hexdigest()
    assert _typed(_one(mem, doc, TRAILS + "chunkCount"), "integer") == "1"
    assert mem.verify().ok
    hits = retrieve("zebras stripes", mem, mode="vector", k=50)
    assert [h.snippet for h in hits] == [new_text]


MARKER = "POISON"


class PoisonEmbedder(MockEmbedder):
    """Fails any batch that contains a text with the marker, like an API refusing an input."""

    def embed_batch(self, texts):
        if any(MARKER in t for t in texts):
            raise RuntimeError("the embedding service refused the input")
        return super().embed_batch(texts)


def test_failed_embedding_keeps_the_previous_version_and_others_ingest(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    for name, text in {"a.txt": "Apples are red.", "b.txt": "Bananas are yellow.",
                       "c.txt": "Cherries are dark."}.items():
        (folder / name).write_text(text)
    with fresh_context(embedder=PoisonEmbedder(dim=32)) as ctx:
        ingest_all(folder, ctx=ctx)
        old_b = _chunk_iris(ctx, _iri("b.txt"))
        (folder / "b.txt").write_text(f"Bananas turned {MARKER} overnight.")
        (folder / "c.txt").write_text("Cherries were replaced by plums.")
        (folder / "d.txt").write_text(f"A new {MARKER} document.")
        (folder / "e.txt").write_text("Elderberries are new here.")
        events = list(ingest(folder, ctx=ctx))  # default batch size: all in one batch

        failed = [e for e in events if isinstance(e, EmbeddingFailed)]
        assert sorted(iri for e in failed for iri in e.doc_iris) == [_iri("b.txt"), _iri("d.txt")]
        assert all("refused" in e.reason for e in failed)
        done = {e.doc_iri: e.replaced for e in events if isinstance(e, DocumentIngested)}
        assert done == {_iri("c.txt"): True, _iri("e.txt"): False}

        # b keeps its whole previous version; d left nothing behind
        assert _chunk_iris(ctx, _iri("b.txt")) == old_b
        assert {v.id for v in ctx.vectors.get(old_b)} == old_b
        assert _typed(_one(ctx, _iri("b.txt"), TRAILS + "contentHash"), "string") == \
            hashlib.sha256(b"Bananas are yellow.").hexdigest()
        assert _mentions(ctx, {_iri("d.txt")}) == []
        assert [h.snippet for h in retrieve("Bananas are yellow.", ctx, mode="vector", k=1)] == ["Bananas are yellow."]
        assert ctx.verify().ok

        stats = ingest_all(folder, ctx=ctx)  # the same run again: b and d fail again only
        assert (stats.ingested, stats.skipped, stats.failed) == (0, 3, 2)


def _redact_emails(document: Document) -> Document:
    return dataclasses.replace(
        document, text=re.sub(r"[\w.]+@[\w.]+\.\w+", "[EMAIL]", document.text))


async def _redact_emails_async(document: Document) -> Document:
    await asyncio.sleep(0)
    return _redact_emails(document)


@pytest.mark.parametrize("sanitizer", [_redact_emails, _redact_emails_async], ids=["sync", "async"])
def test_sanitizer_runs_before_chunking(mem, tmp_path, sanitizer):
    raw = "Write to ann.lee@example.org about the invoice. Or call Ann on Monday."
    (tmp_path / "mail.txt").write_text(raw)
    ingest_all(tmp_path / "mail.txt", ctx=mem, sanitizer=sanitizer)
    redacted = "Write to [EMAIL] about the invoice. Or call Ann on Monday."
    doc = _iri("mail.txt")
    texts = [_typed(_one(mem, c, SCHEMA + "text"), "string") for c in _chunk_iris(mem, doc)]
    assert texts == [redacted]
    assert _typed(_one(mem, doc, TRAILS + "contentHash"), "string") == \
        hashlib.sha256(redacted.encode()).hexdigest()
    assert [v.metadata["snippet"] for v in mem.vectors.get(mem.vectors.all_ids())] == [redacted]
    assert not any("example.org" in str(q.object) for q in mem.kg.store)
    assert mem.kg.query("ASK { ?c schema:text ?t FILTER(CONTAINS(?t, \"@\")) }") is False


def test_async_sanitizer_under_aingest(mem, tmp_path):
    (tmp_path / "mail.txt").write_text("Mail bob@example.com today.")

    async def run() -> list:
        return [e async for e in aingest(tmp_path / "mail.txt", ctx=mem,
                                         sanitizer=_redact_emails_async)]

    events = asyncio.run(run())
    assert sum(isinstance(e, DocumentIngested) for e in events) == 1
    assert [v.metadata["snippet"] for v in mem.vectors.get(mem.vectors.all_ids())] == \
        ["Mail [EMAIL] today."]


def test_async_sanitizer_from_sync_code_inside_a_running_event_loop(mem, tmp_path):
    """As in a notebook: plain ingest_all called where an event loop is already running."""
    (tmp_path / "mail.txt").write_text("Mail bob@example.com today.")

    async def notebook_cell() -> IngestionStats:
        return ingest_all(tmp_path / "mail.txt", ctx=mem, sanitizer=_redact_emails_async)

    assert asyncio.run(notebook_cell()).ingested == 1
    assert [v.metadata["snippet"] for v in mem.vectors.get(mem.vectors.all_ids())] == \
        ["Mail [EMAIL] today."]


def test_a_failing_sanitizer_fails_only_that_document(mem, tmp_path):
    (tmp_path / "ok.txt").write_text("This one is fine.")
    (tmp_path / "secret.txt").write_text("TOP SECRET material.")

    def picky(document: Document) -> Document:
        if "SECRET" in document.text:
            raise PermissionError("refusing classified text")
        return document

    events = list(ingest(tmp_path, ctx=mem, sanitizer=picky))
    failed = [e for e in events if isinstance(e, DocumentFailed)]
    assert [f.source for f in failed] == [str(tmp_path / "secret.txt")]
    assert "refusing classified text" in failed[0].reason
    assert [e.doc_iri for e in events if isinstance(e, DocumentIngested)] == [_iri("ok.txt")]
    assert mem.kg.query("ASK { ?c schema:text ?t FILTER(CONTAINS(?t, \"SECRET\")) }") is False


def test_delete_document_removes_every_trace(mem, tmp_path):
    (tmp_path / "keep.txt").write_text(_long_body(30))
    (tmp_path / "drop.txt").write_text(_long_body(40))
    ingest_all(tmp_path, ctx=mem)
    drop, keep = _iri("drop.txt"), _iri("keep.txt")
    chunks = _chunk_iris(mem, drop)
    kept = _chunk_iris(mem, keep)
    assert len(chunks) >= 2

    assert mem.delete_document(drop) is True
    assert _mentions(mem, chunks | {drop}) == []
    assert mem.vectors.get(chunks) == []
    assert not [r for r in mem.vectors.managed_rows() if r[1] == drop]
    assert drop not in mem.vectors.current_versions()
    assert _chunk_iris(mem, keep) == kept and {v.id for v in mem.vectors.get(kept)} == kept
    assert mem.verify().ok
    assert {h.metadata["doc_iri"] for h in retrieve("topic1", mem, mode="vector", k=100)} == {keep}
    assert mem.delete_document(drop) is False

    stats = ingest_all(tmp_path, ctx=mem)  # the next ingest writes it again
    assert (stats.ingested, stats.skipped) == (1, 1)
    assert len(_chunk_iris(mem, drop)) == len(chunks)


# ------------------------------------------------------------------------------- embedders


@pytest.fixture
def seeded(tmp_path):
    """A persisted context built with MockEmbedder(dim=32, seed=1), closed, and its sources."""
    folder = _write_folder(tmp_path / "kb")
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=32, seed=1)) as ctx:
        ingest_all(folder, ctx=ctx)
    return tmp_path / "ctx", folder


def test_another_embedder_can_open_and_query_but_not_retrieve_or_ingest(seeded):
    directory, folder = seeded
    with Context.open(directory, embedder=MockEmbedder(dim=32, seed=2)) as ctx:
        assert ctx.kg.query("ASK { ?c a trails:Chunk }") is True
        before = (sorted(ctx.vectors.all_ids()), len(ctx.kg))
        for call in (lambda: retrieve("alpha", ctx, mode="vector"),
                     lambda: retrieve("alpha", ctx, mode="hybrid",
                                      sparql_filter="SELECT ?iri WHERE { ?iri a trails:Chunk }"),
                     lambda: ingest_all(folder, ctx=ctx),
                     lambda: list(ingest([Document(id="n", source="n", text="New.")], ctx=ctx))):
            with pytest.raises(EmbeddingModelMismatchError) as caught:
                call()
            message = str(caught.value)
            assert "seed=1" in message and "seed=2" in message
            assert "original embedder" in message or "re-ingest" in message
        assert (sorted(ctx.vectors.all_ids()), len(ctx.kg)) == before  # nothing was written

    with Context.open(directory) as ctx:  # the recorded embedder comes back by itself
        assert ctx.embedder.identity == MockEmbedder(dim=32, seed=1).identity
        best = retrieve(ALPHA_BODY.strip(), ctx, mode="vector", k=1)[0]  # its own text: cosine 1
        assert best.metadata["doc_iri"] == _iri("a.md") and best.score == pytest.approx(1.0)


def test_another_dimension_is_refused_with_a_way_out(seeded):
    directory, _ = seeded
    with pytest.raises(DimensionMismatchError) as caught:  # refused at open: it would write
        Context.open(directory, embedder=MockEmbedder(dim=16, seed=1))
    message = str(caught.value)
    assert "32" in message and "16" in message and "use an embedder of dimension 32" in message
    with Context.open(directory, embedder=MockEmbedder(dim=16, seed=1), read_only=True) as ro, \
            pytest.raises(DimensionMismatchError, match="use the embedder the store was built"):
        retrieve("alpha", ro, mode="vector")


# ------------------------------------------------------------------------------- verify()


WALRUS = "Walruses rest on the ice. They dive for clams."


@pytest.fixture
def verified(mem, tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "one.txt").write_text(_long_body(40))
    (folder / "two.txt").write_text(WALRUS)
    ingest_all(folder, ctx=mem)
    report = mem.verify()
    assert report.ok and report.summary() == "consistent"
    return mem, folder


def _restored(ctx: Context, folder: Path) -> None:
    """verify(repair=True) fixes it; the next ingest brings everything back."""
    assert ctx.verify(repair=True).repaired
    assert ctx.verify().ok, ctx.verify().summary()
    ingest_all(folder, ctx=ctx)
    assert ctx.verify().ok
    best = retrieve(WALRUS, ctx, mode="vector", k=1)[0]
    assert best.metadata["doc_iri"] == _iri("two.txt") and best.score == pytest.approx(1.0)
    assert {h.metadata["doc_iri"] for h in retrieve("topic3", ctx, mode="vector", k=200)} == \
        {_iri("one.txt"), _iri("two.txt")}
    assert ctx.vectors.count() == len(ctx.kg.query("SELECT ?c WHERE { ?c a trails:Chunk }"))


def test_verify_reports_a_missing_vector(verified):
    ctx, folder = verified
    lost = min(_chunk_iris(ctx, _iri("one.txt")))
    assert ctx.vectors.delete(lost)
    report = ctx.verify()
    assert not report.ok
    assert report.chunks_without_vectors == [lost]
    recorded = int(_one(ctx, _iri("one.txt"), TRAILS + "chunkCount").value)
    assert report.count_mismatches == [(_iri("one.txt"), recorded, recorded - 1, recorded)]
    assert report.stale_chunks == report.uncommitted_vectors == report.vectors_without_chunks == []
    _restored(ctx, folder)


def test_verify_reports_a_stray_chunk_triple(verified):
    ctx, folder = verified
    stray = f"{_iri('two.txt')}/v/0000000000000000/c/0"
    ctx.kg.update(f'INSERT DATA {{ <{stray}> a trails:Chunk ; schema:isPartOf <{_iri("two.txt")}> ;'
                  ' trails:version "0000000000000000" ; schema:text "stray" }')
    report = ctx.verify()
    assert report.stale_chunks == [stray]
    assert report.chunks_without_vectors == report.uncommitted_vectors == []
    assert report.count_mismatches == []
    _restored(ctx, folder)
    assert _mentions(ctx, {stray}) == []


def test_verify_reports_staged_vectors(verified):
    ctx, folder = verified
    doc = _iri("two.txt")
    staged = [f"{doc}/v/1111111111111111/c/{i}" for i in range(2)]
    ctx.vectors.add_many(staged, np.ones((2, 32)), [
        {"iri": s, "doc_iri": doc, "version": "1111111111111111", "scope": "default"} for s in staged],
        pending=True)
    assert {h.iri for h in retrieve("walruses", ctx, mode="vector", k=100)}.isdisjoint(staged)
    report = ctx.verify()
    assert report.uncommitted_vectors == sorted(staged)
    assert report.chunks_without_vectors == report.stale_chunks == report.vectors_without_chunks == []
    _restored(ctx, folder)
    assert ctx.vectors.get(staged) == []


def test_verify_reports_vectors_whose_chunks_are_gone(verified):
    ctx, folder = verified
    chunk = min(_chunk_iris(ctx, _iri("two.txt")))
    ctx.kg.update(f"DELETE WHERE {{ <{chunk}> ?p ?o }}")
    report = ctx.verify()
    assert report.vectors_without_chunks == [chunk]
    assert [m[0] for m in report.count_mismatches] == [_iri("two.txt")]
    _restored(ctx, folder)


def test_verify_reports_a_graph_behind_its_record(verified):
    ctx, folder = verified
    doc = _iri("two.txt")
    ctx.kg.update(f'DELETE WHERE {{ <{doc}> trails:currentVersion ?v }} ; '
                  f'INSERT DATA {{ <{doc}> trails:currentVersion "0123456789abcdef" }}')
    report = ctx.verify()
    assert report.graph_behind == [doc]
    assert report.chunks_without_vectors == report.stale_chunks == []
    _restored(ctx, folder)
    assert _typed(_one(ctx, doc, TRAILS + "currentVersion"), "string") != "0123456789abcdef"


def test_verify_on_a_persisted_context_after_reopening(tmp_path):
    folder = _write_folder(tmp_path / "kb")
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all(folder, ctx=ctx)
        lost = ctx.vectors.all_ids()[0]
        ctx.vectors.delete(lost)
    with Context.open(tmp_path / "ctx") as ctx:
        assert ctx.verify().chunks_without_vectors == [lost]
        ctx.verify(repair=True)
    with Context.open(tmp_path / "ctx") as ctx:
        assert ctx.verify().ok
        assert ingest_all(folder, ctx=ctx).ingested == 1
        assert ctx.verify().ok and ctx.vectors.count() == 3


# -- a document's title: explicit, else its metadata's, else its id's tail -------------------

@pytest.mark.parametrize(("title", "metadata", "shown"), [
    (None, {"title": "From metadata"}, "From metadata"),
    ("Explicit", {"title": "From metadata"}, "Explicit"),  # title= wins over metadata
    (None, {"title": 2024}, "2024"),  # a YAML or JSON number is still a name
    (None, {"title": "  "}, "note-7"),  # blank: none given, the id's tail
    (None, {}, "note-7"),
])
def test_a_title_in_metadata_names_the_document_in_the_graph_and_its_hits(
        tmp_path, title, metadata, shown):
    document = Document(id="notes/note-7", source="notes/note-7", title=title,
                        metadata=metadata, text="Agreement on fusion weights was reached.")
    assert document.title == (None if shown == "note-7" else shown)
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=16)) as ctx:
        assert ingest_all([document], ctx=ctx).ingested == 1
        names = {str(row["name"]) for row in ctx.kg.query(
            "SELECT ?name WHERE { ?doc schema:name ?name }")}
        assert names == {shown}
        hits = retrieve("fusion weights", ctx, k=1)
        assert [hit.title for hit in hits] == [shown]


def test_front_matter_title_is_the_title_and_an_explicit_one_wins(tmp_path):
    (tmp_path / "a.md").write_text("---\ntitle: Front\n---\n# Heading\n\nBody text here.\n")
    parsed = parse_markdown((tmp_path / "a.md").read_text())
    document = parsed.to_document("a.md", "a.md")
    assert document.title == "Front"
    assert dataclasses.replace(document, title="Explicit").title == "Explicit"
