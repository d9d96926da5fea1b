"""trails:similarity(?chunk, "text") inside SPARQL: the same numbers as retrieve(), in one query."""

from __future__ import annotations

import datetime as dt

import pyoxigraph as ox
import pytest

from trails import retrieve
from trails.context import Context
from trails.errors import DimensionMismatchError, EmbeddingError, SparqlError
from trails.ingest import Document, ingest_all
from trails.ingest.chunkers import SentenceChunker
from trails.kg import OxigraphGraph
from trails.kg.sparql import SIMILARITY, uses_similarity
from trails.vector.embedders.mock import MockEmbedder
from trails.vector.stores.sqlite_vec import SqliteVecStore

DOCS = [
    ("rails", "2024-05-01", ("Rails is a web framework written in Ruby. Rails routing maps URLs to "
                             "controllers. Active Record maps database tables to Ruby classes.")),
    ("gems", "2023-01-10", ("Ruby gems are installed with bundler. A Gemfile lists the gems of an "
                            "application. Bundler resolves gem versions.")),
    ("graphs", "2024-11-30", ("Graph databases store triples. SPARQL queries match graph patterns. "
                              "A Rails application can talk to a graph database too.")),
    ("elephants", "2022-06-15", "Elephants are grey and very large. Elephants remember water holes."),
    ("vectors", "2025-02-02", ("Vectors and embeddings power semantic search. Cosine similarity "
                               "compares two embeddings of text.")),
    ("undated", None, "Routing tables in networks forward packets between routers."),
]
QUERIES = ["rails routing", "ruby gems bundler", "graph database triples", "elephants",
           "semantic search with embeddings", "zebra"]

CHUNKS_SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
                "FILTER(?d >= ?since) }")
RANKED = """
    SELECT ?c ?s WHERE {{
      ?c a trails:Chunk .
      {where}
      BIND(trails:similarity(?c, {text}) AS ?s)
    }} ORDER BY DESC(?s) ?c LIMIT {k}"""


@pytest.fixture
def corpus(ctx):
    documents = [Document(id=name, source=f"{name}.md", text=text,
                          metadata={} if date is None else {"date": date})
                 for name, date, text in DOCS]
    stats = ingest_all(documents, ctx=ctx, chunker=SentenceChunker(max_chars=80, overlap=0))
    assert stats.ingested == len(DOCS) and stats.chunks > len(DOCS)
    return ctx


def pairs(result) -> list[tuple[str, float]]:
    return [(h.iri, h.score) for h in result]


def ranked(ctx, text: str, k: int, where: str = "", bindings=None, **options):
    rows = ctx.kg.query(RANKED.format(where=where, text=text, k=k), bindings, **options).rows
    return [(row["c"], row["s"]) for row in rows]


def assert_same(got, expected):
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-6)


# -- the same ranking as retrieve() ----------------------------------------------------------


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("k", [1, 3, 100])
def test_order_by_similarity_is_vector_retrieval(corpus, query, k):
    expected = pairs(retrieve(query, corpus, mode="vector", k=k))
    assert expected  # every chunk has a vector: never empty
    bound = ranked(corpus, "?q", k, bindings={"q": query})
    inline = ranked(corpus, '"' + query + '"', k)
    assert_same(bound, expected)
    assert_same(inline, expected)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("since", [dt.date(2023, 6, 1), dt.date(2024, 6, 1), dt.date(2030, 1, 1)])
def test_a_date_filter_in_the_same_query_is_hybrid_retrieval(corpus, query, since):
    expected = pairs(retrieve(query, corpus, k=5, sparql_filter=CHUNKS_SINCE, fusion=None,
                              bindings={"since": since}))
    where = "?c schema:isPartOf ?doc . ?doc schema:dateCreated ?d FILTER(?d >= ?since)"
    got = ranked(corpus, "?q", 5, where, bindings={"q": query, "since": since})
    assert_same(got, expected)
    if since.year == 2030:
        assert got == []


def test_a_threshold_filter_keeps_exactly_the_close_chunks(corpus):
    everything = pairs(retrieve("rails routing", corpus, mode="vector", k=100))
    close = [(i, s) for i, s in everything if s > 0.3]
    assert 0 < len(close) < len(everything)
    rows = corpus.kg.query(
        "SELECT ?c WHERE { ?c a trails:Chunk FILTER(trails:similarity(?c, ?q) > 0.3) }",
        {"q": "rails routing"}).column("c")
    assert sorted(rows) == sorted(i for i, _ in close)


def test_a_retrieval_filter_can_order_by_meaning(corpus):
    """Graph mode keeps the filter's order: here the order is the similarity."""
    query = "ruby gems bundler"
    filter_ = ("SELECT ?iri WHERE { ?iri a trails:Chunk } "
               "ORDER BY DESC(trails:similarity(?iri, ?q)) ?iri")
    graph = retrieve(query, corpus, mode="graph", k=4, sparql_filter=filter_,
                     bindings={"q": query})
    vector = retrieve(query, corpus, mode="vector", k=4)
    assert [h.iri for h in graph] == [h.iri for h in vector]
    assert all(h.score is None for h in graph)


def test_joins_and_aggregates_over_similarity(corpus):
    """Best chunk per document, documents ordered by it: one query, no Python glue."""
    rows = corpus.kg.query("""
        SELECT ?doc (MAX(?s) AS ?best) WHERE {
          ?c schema:isPartOf ?doc BIND(trails:similarity(?c, ?q) AS ?s)
        } GROUP BY ?doc ORDER BY DESC(?best)""", {"q": "elephants"}).rows
    top = retrieve("elephants", corpus, mode="vector", k=1)[0]
    assert rows[0]["doc"] == top.metadata["doc_iri"]
    assert rows[0]["best"] == pytest.approx(top.score, abs=1e-6)
    assert len(rows) == len(DOCS)


# -- values that are not chunks --------------------------------------------------------------


def test_anything_without_a_live_vector_is_unbound(corpus):
    doc = "trails://local/doc/rails"
    corpus.vectors.add_many(["trails://local/staged"], [corpus.embedder.embed("rails")],
                            [{"snippet": "staged"}], pending=True)
    rows = corpus.kg.query(
        f'SELECT ?x ?s WHERE {{ VALUES ?x {{ <{doc}> <trails://nope> <trails://local/staged> '
        f'"a literal" 42 }} BIND(trails:similarity(?x, "rails") AS ?s) }}').rows
    assert [row["s"] for row in rows] == [None] * 5


def test_the_value_is_an_xsd_double(corpus):
    raw = corpus.kg.query('SELECT ?s WHERE { ?c a trails:Chunk '
                          'BIND(trails:similarity(?c, "rails") AS ?s) } LIMIT 1').raw
    value = raw[0]["s"]
    assert isinstance(value, ox.Literal)
    assert value.datatype == ox.NamedNode("http://www.w3.org/2001/XMLSchema#double")
    assert -1.0 <= float(value.value) <= 1.0


def test_scopes_confine_the_vectors_too(ctx):
    ingest_all([Document(id="memo", source="memo.md", text="Rails routing memo.")], ctx=ctx,
               scope="legal")
    chunk = ctx.vectors.all_ids()[0]
    query = (f'SELECT ?s WHERE {{ VALUES ?c {{ <{chunk}> }} '
             f'BIND(trails:similarity(?c, "rails routing") AS ?s) }}')
    assert ctx.kg.query(query, scopes=["default"]).rows == [{"s": None}]
    inside = ctx.kg.query(query, scopes=["legal"]).rows[0]["s"]
    expected = retrieve("rails routing", ctx, mode="vector", scope="legal")[0].score
    assert inside == pytest.approx(expected, abs=1e-6)
    assert ctx.kg.query(query).rows[0]["s"] == pytest.approx(expected, abs=1e-6)


# -- caching -----------------------------------------------------------------------------


def test_each_text_is_embedded_once_and_each_vector_read_once_per_query(corpus, monkeypatch):
    reads: list[list[str]] = []
    get = corpus.vectors.get
    monkeypatch.setattr(corpus.vectors, "get", lambda ids: reads.append(list(ids)) or get(ids))
    chunks = len(corpus.vectors.all_ids())
    before = corpus.embedder.batches
    corpus.kg.query("""SELECT ?c ?s WHERE { ?c a trails:Chunk
                         BIND(trails:similarity(?c, "rails") AS ?s)
                         FILTER(trails:similarity(?c, "rails") > -2) }
                       ORDER BY DESC(trails:similarity(?c, "rails"))
                                DESC(trails:similarity(?c, "ruby"))""")
    assert corpus.embedder.batches - before == 2  # two distinct texts
    assert len(reads) == chunks and all(len(ids) == 1 for ids in reads)
    assert sorted(ids[0] for ids in reads) == sorted(corpus.vectors.all_ids())
    corpus.kg.query('SELECT ?c WHERE { ?c a trails:Chunk } ORDER BY trails:similarity(?c, "rails")')
    assert corpus.embedder.batches - before == 3  # a new query embeds again: no stale cache


# -- errors raise ------------------------------------------------------------------------


@pytest.mark.parametrize("call, word", [
    ("trails:similarity(?c)", "2 arguments"),
    ('trails:similarity(?c, "a", "b")', "2 arguments"),
    ("trails:similarity(?c, <https://x/not-text>)", "query text"),
])
def test_misuse_raises_instead_of_going_unbound(corpus, call, word):
    with pytest.raises(SparqlError, match=word):
        corpus.kg.query(f"SELECT ?c WHERE {{ ?c a trails:Chunk BIND({call} AS ?s) }}")


def test_an_embedding_failure_raises_out_of_the_query(corpus, monkeypatch):
    def fail(texts):
        raise EmbeddingError("the embedding service is down")

    monkeypatch.setattr(corpus.embedder, "embed_batch", fail)
    with pytest.raises(EmbeddingError, match="down"):
        corpus.kg.query('SELECT ?c WHERE { ?c a trails:Chunk } '
                        'ORDER BY DESC(trails:similarity(?c, "rails"))')
    with pytest.raises(EmbeddingError, match="down"):
        corpus.kg.select_iris('SELECT ?c WHERE { ?c a trails:Chunk } '
                              'ORDER BY DESC(trails:similarity(?c, "rails"))')


def test_an_embedder_of_another_dimension_is_refused(tmp_path):
    store = SqliteVecStore(":memory:", dim=8)
    store.add("trails://c", [1.0] * 8)
    ctx = Context(OxigraphGraph(), store, MockEmbedder(dim=4))
    with pytest.raises(DimensionMismatchError):
        ctx.kg.query('SELECT ?s WHERE { BIND(trails:similarity(<trails://c>, "x") AS ?s) }')
    ctx.close()


def test_a_graph_outside_a_context_has_no_similarity():
    kg = OxigraphGraph()
    with pytest.raises(SparqlError, match="not supported"):
        kg.query('SELECT ?s WHERE { BIND(trails:similarity(<trails://c>, "x") AS ?s) }')
    assert SIMILARITY not in kg.functions


def test_a_persisted_context_reopens_with_similarity(tmp_path):
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=32)) as ctx:
        ingest_all([Document(id="a", source="a.md", text="Rails routing.")], ctx=ctx)
    with Context.open(tmp_path / "ctx") as ctx:
        (row,) = ctx.kg.query('SELECT ?s WHERE { ?c a trails:Chunk '
                              'BIND(trails:similarity(?c, "rails routing") AS ?s) }').rows
        assert row["s"] == pytest.approx(
            retrieve("rails routing", ctx, mode="vector")[0].score, abs=1e-6)


# -- the function registry ---------------------------------------------------------------


def test_register_function_plain_and_per_query():
    kg = OxigraphGraph()
    kg.register_function("https://x/twice", lambda t: ox.Literal(2 * int(t.value)))
    made: list[object] = []

    def factory(scopes):
        made.append(scopes)
        return lambda: ox.Literal(len(made))

    kg.register_function("https://x/count", factory, per_query=True)
    assert kg.functions == {"https://x/twice", "https://x/count"}
    assert kg.query("SELECT ?v WHERE { BIND(<https://x/twice>(21) AS ?v) }").rows == [{"v": 42}]
    assert kg.query("SELECT ?v WHERE { BIND(<https://x/count>() AS ?v) }",
                    scopes=["legal"]).rows == [{"v": 2}]
    assert made == [None, ["legal"]]  # one factory call per query, with the query's scopes
    assert kg.select_iris("SELECT ?i WHERE { ?i ?p ?o } ORDER BY <https://x/count>()") == []
    with pytest.raises(TypeError):
        kg.register_function("https://x/bad", 42)  # type: ignore[arg-type]


def test_a_failing_registered_function_raises_its_own_error():
    kg = OxigraphGraph()
    kg.update("INSERT DATA { <https://x/a> <https://x/p> 1 }")
    kg.register_function("https://x/boom", lambda *terms: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        kg.query("SELECT ?v WHERE { ?s ?p ?o BIND(<https://x/boom>(?o) AS ?v) }")
    assert kg.query("SELECT ?o WHERE { ?s ?p ?o }").rows == [{"o": 1}]  # the next query runs


# -- a remote endpoint cannot call back into Python ---------------------------------------


@pytest.mark.parametrize("text", [
    'SELECT ?c WHERE { ?c ?p ?o } ORDER BY DESC(trails:similarity(?c, "x"))',
    'PREFIX t: <https://trails.dev/ns#> SELECT ?c WHERE { ?c ?p ?o FILTER(t:similarity(?c, "x") > 0) }',
    'SELECT ?c WHERE { ?c ?p ?o } ORDER BY <https://trails.dev/ns#similarity>(?c, "x")',
])
def test_the_remote_endpoint_refuses_similarity_before_any_request(text):
    pytest.importorskip("httpx")
    from trails.kg.remote import SparqlEndpointGraph

    kg = SparqlEndpointGraph("http://127.0.0.1:9/query", timeout=0.5)
    requests: list[object] = []
    kg.client.event_hooks["request"].append(requests.append)
    for call in (kg.query, kg.select_iris):
        with pytest.raises(SparqlError, match="OxigraphGraph"):
            call(text)
    assert requests == []
    kg.close()


def test_the_lexical_check_ignores_strings_comments_and_other_prefixes():
    assert not uses_similarity('SELECT ?c WHERE { ?c ?p "trails:similarity(?c, 1)" }')
    assert not uses_similarity("SELECT ?c WHERE { ?c ?p ?o } # trails:similarity(?c)")
    assert not uses_similarity("SELECT ?c WHERE { ?c ex:similarity ?o }")
    assert uses_similarity("SELECT ?c WHERE { } ORDER BY trails:similarity(?c, ?q)")


def _renamed_copy(ctx, ids) -> Context:
    """A context with ctx's graph and vectors, each row stored under the id ids(n) and naming
    its chunk in metadata["iri"] (the trails.vector design's back-reference)."""
    rows = ctx.vectors.get(ctx.vectors.all_ids())
    store = SqliteVecStore(":memory:", dim=ctx.embedder.dim)
    for n, row in enumerate(rows):
        store.add(ids(n, row.id), row.vector, {**row.metadata, "iri": row.id})
    kg = OxigraphGraph()
    kg.load(ctx.kg.dump(format="nquads"), format="nquads")
    return Context(kg, store, ctx.embedder)


@pytest.mark.parametrize("ids", [lambda n, iri: f"vec-{n}",
                                 lambda n, iri: iri + "#row",
                                 lambda n, iri: f"vec-{(n + 1) % 10**6}"])
def test_similarity_finds_a_chunk_by_its_back_reference_whatever_the_row_id(corpus, ids):
    copy = _renamed_copy(corpus, ids)
    for text in ('"rails routing"', '"elephants"'):
        by_iri = ranked(corpus, text, 50)
        by_reference = ranked(copy, text, 50)
        assert by_iri and all(score is not None for _, score in by_iri)
        assert by_reference == by_iri


def test_a_row_named_by_a_chunk_id_but_referring_elsewhere_is_not_that_chunk(corpus):
    # Each row's id is another chunk's IRI: every value must follow metadata["iri"], not the id.
    iris = sorted(corpus.vectors.all_ids())
    shifted = dict(zip(iris, iris[1:] + iris[:1], strict=True))
    copy = _renamed_copy(corpus, lambda n, iri: shifted[iri])
    assert ranked(copy, '"rails routing"', 50) == ranked(corpus, '"rails routing"', 50)
