"""Graph expansion steps: parent document, neighbouring chunks, the document's neighbourhood."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.ingest import ingest_all
from trails.ingest.chunkers import SentenceChunker
from trails.ingest.document import Document
from trails.kg import IRI
from trails.rank import Edge, Neighbourhood, ParentDocument, RecencyDecay
from trails.rank.expand import assemble
from trails.records import RetrievalHit

LONG = ("Rails is a web framework. Ruby gems are installed with bundler. Routing maps URLs. "
        "Controllers render views. Models talk to the database.")
PARAGRAPHS = "Paragraph one is long enough to fill a chunk.\n\n  Paragraph two is as long as that."
CHUNKER = SentenceChunker(max_chars=60, overlap=1)  # overlapping chunks of one or two sentences
META = "https://trails.dev/meta#"
SCHEMA = "https://schema.org/"
A, B, C = (IRI(f"trails://local/doc/{d}") for d in "abc")


@pytest.fixture
def corpus(ctx):
    ingest_all([
        Document("a", "mem", LONG, title="Rails",
                 metadata={"date": "2026-01-02", "author": "Ann", "cites": [B, C]}),
        Document("b", "mem", "Graph databases store triples.", title="Graphs",
                 metadata={"author": "Bob", "cites": A}),
        Document("c", "mem", PARAGRAPHS, metadata={"author": "Cy"}),
    ], ctx=ctx, chunker=CHUNKER)
    return ctx


def chunks(ctx, doc, scope="default"):
    """(iri, position, text) of a document's chunks, by position, straight from the graph."""
    rows = ctx.kg.query("SELECT ?c ?p ?t WHERE { ?c schema:isPartOf ?d ; schema:position ?p ; "
                        "schema:text ?t } ORDER BY ?p", {"d": doc}, scopes=[scope])
    return [(r["c"], r["p"], r["t"]) for r in rows]


def hits_of(ctx, doc, scope="default"):
    return [RetrievalHit(iri, 1.0 - p / 10, text[:10], {"scope": scope})
            for iri, p, text in chunks(ctx, doc, scope)]


def test_the_fixture_has_overlapping_chunks(corpus):
    texts = [t for _, _, t in chunks(corpus, A)]
    assert len(texts) == 4
    assert texts[1].endswith("Routing maps URLs.") and texts[2].startswith("Routing maps URLs.")


def test_document_text_is_rebuilt_whole(corpus):
    out = ParentDocument()("q", hits_of(corpus, A) + hits_of(corpus, B), corpus)
    texts = [h.metadata["document_text"] for h in out]
    assert texts == [LONG] * 4 + ["Graph databases store triples."]


def test_gaps_become_spaces_so_offsets_still_hold(corpus):
    hit = ParentDocument()("q", hits_of(corpus, C), corpus)[1]
    assert len(chunks(corpus, C)) == 2
    assert hit.metadata["document_text"] == PARAGRAPHS.replace("\n", " ")
    spans = corpus.kg.query("SELECT ?s ?e ?t WHERE { ?c schema:isPartOf ?d ; "
                            "trails:startOffset ?s ; trails:endOffset ?e ; schema:text ?t }",
                            {"d": C})
    assert [hit.metadata["document_text"][r["s"]:r["e"]] == r["t"] for r in spans] == [True, True]
    assert assemble([{"t": "b", "s": 4, "e": 5}, {"t": "a", "s": 1, "e": 2}]) == " a  b"
    assert assemble([{"t": "two", "p": 1}, {"t": "one", "p": 0}]) == "one\ntwo"  # no offsets


def test_only_the_hits_version_is_assembled(corpus):
    (first, *_) = chunks(corpus, A)
    stale = "trails://local/doc/a/v/0000/c/9"
    corpus.kg.update(f'INSERT DATA {{ <{stale}> schema:isPartOf <{A}> ; schema:text "STALE" ; '
                     f'schema:position 1 ; trails:version "0000" ; trails:startOffset 0 ; '
                     f'trails:endOffset 5 }}')
    hits = [RetrievalHit(first[0], 1.0, ""), RetrievalHit(stale, 0.5, "")]
    out = ParentDocument()("q", hits, corpus)
    assert out[0].metadata["document_text"] == LONG
    assert out[1].metadata["document_text"] == "STALE"
    near = ParentDocument("neighbours")("q", [RetrievalHit(first[0], 1.0, "")], corpus)
    assert "STALE" not in [n["text"] for n in near[0].metadata["neighbours"]]


def test_neighbours_window(corpus):
    rows = chunks(corpus, A)
    hits = hits_of(corpus, A)
    out = ParentDocument("neighbours", window=1)("q", hits, corpus)
    expected = [[{"iri": i, "text": t, "position": p} for i, p, t in rows[max(0, q - 1):q + 2]]
                for q in range(len(rows))]
    assert [h.metadata["neighbours"] for h in out] == expected
    assert [len(h.metadata["neighbours"]) for h in out] == [2, 3, 3, 2]
    alone = ParentDocument("neighbours", window=0)("q", hits[1:2], corpus)
    assert alone[0].metadata["neighbours"] == [
        {"iri": rows[1][0], "text": rows[1][2], "position": 1}]
    wide = ParentDocument("neighbours", window=2)("q", hits[:1], corpus)
    assert [n["position"] for n in wide[0].metadata["neighbours"]] == [0, 1, 2]


def test_hits_outside_the_graph_and_other_scopes_get_nothing(corpus):
    ingest_all([Document("secret", "mem", "Hidden text here.", metadata={"author": "Eve"})],
               ctx=corpus, scope="legal")
    secret_doc = IRI("trails://local/scope/legal/doc/secret")
    (secret,) = hits_of(corpus, secret_doc, scope="legal")
    smuggled = RetrievalHit(secret.iri, 1.0, "", {"scope": "default"})
    nowhere = RetrievalHit("trails://local/nowhere", 1.0, "", {})
    hits = [secret, smuggled, nowhere]
    docs = ParentDocument()("q", hits, corpus)
    assert [h.metadata["document_text"] for h in docs] == ["Hidden text here.", None, None]
    near = ParentDocument("neighbours")("q", hits, corpus)
    assert [len(h.metadata["neighbours"]) for h in near] == [1, 0, 0]
    facts = Neighbourhood(["meta:author"])("q", hits, corpus)
    assert [h.metadata["neighbourhood"] for h in facts] == [
        [Edge(secret_doc, META + "author", "Eve")], [], []]


def test_neighbourhood_of_the_document(corpus):
    hit = hits_of(corpus, A)[2]
    (out,) = Neighbourhood()("q", [hit], corpus)
    assert out.metadata["neighbourhood"] == [
        Edge(A, SCHEMA + "dateCreated", dt.date(2026, 1, 2)),
        Edge(A, SCHEMA + "name", "Rails"),
        Edge(A, META + "author", "Ann"),
        Edge(A, META + "cites", B),
        Edge(A, META + "cites", C),
        Edge(A, META + "date", "2026-01-02"),
    ]  # no rdf:type, no trails: bookkeeping; sorted by predicate then object
    assert isinstance(out.metadata["neighbourhood"][3].object, IRI)
    (only,) = Neighbourhood(["meta:author", "schema:name"])("q", [hit], corpus)
    assert only.metadata["neighbourhood"] == [
        Edge(A, SCHEMA + "name", "Rails"), Edge(A, META + "author", "Ann")]
    (book,) = Neighbourhood(["trails:chunkCount"])("q", [hit], corpus)
    assert book.metadata["neighbourhood"] == [Edge(A, "https://trails.dev/ns#chunkCount", 4)]


def test_depth_follows_the_same_predicates_without_looping(corpus):
    hit = hits_of(corpus, A)[0]
    (one,) = Neighbourhood(["meta:cites"], depth=1)("q", [hit], corpus)
    assert one.metadata["neighbourhood"] == [Edge(A, META + "cites", B), Edge(A, META + "cites", C)]
    (two,) = Neighbourhood(["meta:cites", "meta:author"], depth=2)("q", [hit], corpus)
    assert two.metadata["neighbourhood"] == [
        Edge(A, META + "author", "Ann"), Edge(A, META + "cites", B), Edge(A, META + "cites", C),
        Edge(B, META + "author", "Bob"), Edge(B, META + "cites", A),  # A is not visited again
        Edge(C, META + "author", "Cy"),
    ]
    (five,) = Neighbourhood(["meta:cites", "meta:author"], depth=5)("q", [hit], corpus)
    assert five.metadata["neighbourhood"] == two.metadata["neighbourhood"]


@pytest.mark.timeout(60)
def test_a_huge_depth_stops_where_the_graph_ends(corpus):
    # A caller (a /retrieve body) picks the depth: the walk must end with the edges it
    # reaches, not count out 10**18 empty hops holding a worker thread.
    hit = hits_of(corpus, A)[0]
    (deep,) = Neighbourhood(["meta:cites", "meta:author"], depth=10**18)("q", [hit], corpus)
    assert deep.metadata["neighbourhood"] == [
        Edge(A, META + "author", "Ann"), Edge(A, META + "cites", B), Edge(A, META + "cites", C),
        Edge(B, META + "author", "Bob"), Edge(B, META + "cites", A), Edge(C, META + "author", "Cy"),
    ]


def test_expansion_changes_no_order_score_or_store(corpus):
    before = (corpus.vectors.count(), len(corpus.kg))
    plain = retrieve("ruby rails", corpus, mode="vector", k=5)
    steps = [ParentDocument(), ParentDocument("neighbours"), Neighbourhood(depth=2)]
    out = retrieve("ruby rails", corpus, mode="vector", k=5, steps=steps)
    def seen(hits):
        return [(h.iri, h.score, h.components) for h in hits]

    assert seen(out) == seen(plain)
    assert all({"document_text", "neighbours", "neighbourhood"} <= h.metadata.keys() for h in out)
    assert all("document_text" not in h.metadata for h in plain)  # the input hits are untouched
    assert (corpus.vectors.count(), len(corpus.kg)) == before


def test_graph_mode_runs_the_expansion_steps_and_refuses_the_scoring_ones(corpus):
    """Graph mode ran no step at all: a parent-document step asked for came back without
    its text, silently. Expansion applies to graph hits as to ranked ones; a scoring step
    says graph hits have no score."""
    chosen = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc meta:author 'Ann' }"
    plain = retrieve("q", corpus, mode="graph", sparql_filter=chosen, k=3)
    out = retrieve("q", corpus, mode="graph", sparql_filter=chosen, k=3,
                   steps=[ParentDocument(), Neighbourhood(["meta:author"])])
    assert [h.iri for h in out] == [h.iri for h in plain] and len(out) == 3
    assert [h.metadata["document_text"] for h in out] == [LONG] * 3
    assert [h.metadata["neighbourhood"] for h in out] == [[Edge(A, META + "author", "Ann")]] * 3
    with pytest.raises(InvalidArgumentError, match="graph mode"):
        retrieve("q", corpus, mode="graph", sparql_filter=chosen, steps=[RecencyDecay()])


def test_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        ParentDocument("page")
    with pytest.raises(ValueError, match="window"):
        ParentDocument("neighbours", window=-1)
    with pytest.raises(ValueError, match="depth"):
        Neighbourhood(depth=0)
    with pytest.raises(ValueError, match="prefix"):
        Neighbourhood(["foaf:name"])
    with pytest.raises(Exception, match="ctx"):
        ParentDocument()("q", [], None)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.permutations(range(6)), st.integers(0, 6), st.integers(0, 3), st.integers(1, 3))
def test_expansion_keeps_the_hits(corpus, order, size, window, depth):
    pool = hits_of(corpus, A) + hits_of(corpus, B) + hits_of(corpus, C)
    hits = [pool[i] for i in order[:size]]
    steps = (ParentDocument(), ParentDocument("neighbours", window), Neighbourhood(depth=depth))
    for step in steps:
        out = step("q", hits, corpus)
        assert [(h.iri, h.score, h.snippet) for h in out] == [
            (h.iri, h.score, h.snippet) for h in hits]


@pytest.mark.parametrize("mode, field", [("document", "document_text"), ("neighbours", "neighbours")])
def test_min_score_expands_only_the_hits_at_or_above_it(corpus, mode, field):
    """The data flow's parent-document step: only a hit whose (rerank) score reaches the
    threshold gets its parent; the others pass through untouched, in their places."""
    hits = hits_of(corpus, A)  # scores 1.0, 0.9, 0.8, 0.7
    graphless = RetrievalHit("https://ex.org/unscored", None, "", {"scope": "default"})
    out = ParentDocument(mode, min_score=0.8)("q", [*hits, graphless], corpus)
    assert [h.iri for h in out] == [h.iri for h in hits] + [graphless.iri]
    assert [field in h.metadata for h in out] == [True, True, True, False, False]
    assert out[3] == hits[3] and out[4] == graphless
    if mode == "document":
        assert out[0].metadata["document_text"] == LONG


@pytest.mark.parametrize("bad", [float("nan"), "0.8", True])
def test_min_score_must_be_a_number(bad):
    with pytest.raises(ValueError, match="min_score"):
        ParentDocument(min_score=bad)
