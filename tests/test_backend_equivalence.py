"""The same API on real servers gives the same answers: one corpus (dates, a property, a
taxonomy of user classes, two scopes, a deleted document, a changed one re-ingested, an expired
one) in the embedded default and in a context on each server (``oxigraph serve`` and Virtuoso 7
as the graph, PostgreSQL with pgvector as the store), and ``retrieve()`` compared across them:
hits and their order, scores, candidates, notes, fusion weights, ``admitted_by`` and
``explain()`` (but for the plan's and the filter path's names, which say which engine answered).

What differs by design is asserted as the refusal it is: ``oxigraph serve`` cannot confine a
query to the default scope with another (ConfigurationError), Virtuoso refuses ``GRAPH`` in a
scoped filter (UnsafeFilterError). The keyword queries use words without another form a
stemmer would fold into them: the embedded store's BM25 stems (Porter), PostgreSQL's does not
(ADR 26). Each server test is skipped where its server cannot start.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import time

import pyoxigraph as ox
import pytest

from pg_support import pg_server
from trails.context import Context
from trails.errors import (
    ConfigurationError,
    EndpointUnavailableError,
    MissingExtraError,
    SparqlError,
    UnboundVariableError,
    UnsafeFilterError,
)
from trails.ingest import Document, ingest_all
from trails.kg.oxigraph import OxigraphGraph
from trails.scopes import scope_graph
from trails.vector import MockEmbedder, SqliteVecStore, retrieve

httpx = pytest.importorskip("httpx")
from trails.kg import SparqlEndpointGraph
from trails.testing.servers.oxigraph import OxigraphServer

DIM = 32
EX = "https://ex.org/"
TOPICS = ["rails routing", "graph databases", "vector search", "tax law", "sparql filters",
          "ruby gems", "knowledge graphs", "court rulings", "river deltas", "patent claims"]
STATUS = ["draft", "final", "filed"]
CLASSES = ["Memo", "Note", "Brief", "Filing", "Record", "Letter"]
TAXONOMY = [("Memo", "Note"), ("Note", "Record"), ("Brief", "Filing"), ("Filing", "Record"),
            ("Letter", "Record")]
SINCE = {"since": dt.date(2024, 5, 1)}
FILTERS = {
    "chunks since": (("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
                     "FILTER(?d >= ?since) }"), SINCE),
    "documents since": ("SELECT ?doc WHERE { ?doc schema:dateCreated ?d FILTER(?d >= ?since) }",
                        SINCE),
    "equality": ('SELECT ?doc WHERE { ?doc meta:status ?s FILTER(?s = "final") }', {}),
    "bound value": ("SELECT ?doc WHERE { ?doc meta:status ?s }", {"s": "filed"}),
    "date range": ("SELECT ?doc WHERE { ?doc schema:dateCreated ?d FILTER(?d >= ?a && ?d < ?b) }",
                   {"a": dt.date(2024, 3, 1), "b": dt.date(2024, 9, 1)}),
    "taxonomy": ("SELECT ?doc WHERE { ?doc a ?type . ?type rdfs:subClassOf* <https://ex.org/Note> }",
                 {}),
    "taxonomy path": ("SELECT ?doc WHERE { ?doc a/rdfs:subClassOf+ <https://ex.org/Filing> }", {}),
    "not exists": (('SELECT ?doc WHERE { ?doc a trails:Document '
                   'FILTER NOT EXISTS { ?doc meta:status "draft" } }'), {}),
    "another resource": (("SELECT ?doc WHERE { ?doc schema:dateCreated ?d . "
                         "?claim <https://ex.org/filed> ?c FILTER(?d >= ?c) }"), {}),
    "unbound": (("SELECT ?doc WHERE { ?doc a trails:Document OPTIONAL { ?doc meta:reviewer ?r } "
                "FILTER(!BOUND(?r)) }"), {}),
    "number": ("SELECT ?doc WHERE { ?doc meta:rank ?r FILTER(?r > 2) }", {}),
    "union": ('SELECT ?doc WHERE { { ?doc meta:status "final" } UNION { ?doc meta:rank 0 } }', {}),
    "nothing": ('SELECT ?doc WHERE { ?doc meta:status "nope" }', {}),
    "typed string": ('SELECT ?doc WHERE { ?doc meta:status "final"^^xsd:string }', {}),
    "ordered": ("SELECT ?doc WHERE { ?doc meta:status ?s ; meta:rank ?r } ORDER BY ?s DESC(?r) ?doc",
                {}),
}
QUERIES = ["tax law court", "vector search rewritten"]
MODES = [("vector", "auto"), ("hybrid", None), ("hybrid", "auto"), ("hybrid", "rrf"),
         ("graph", "auto")]
SCOPES = [None, "legal", ["default", "legal"]]
EXPIRED_BY = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def documents() -> list[tuple[str | None, Document]]:
    found = []
    for i in range(44):
        metadata: dict[str, object] = {"date": dt.date(2024, 1, 1) + dt.timedelta(days=9 * i),
                                       "status": STATUS[i % 3], "rank": i % 5}
        if i % 4 == 0:
            metadata["reviewer"] = f"r{i % 3}"
        if i == 7:
            metadata["expires"] = "2024-02-01T00:00:00Z"
        text = (f"{TOPICS[i % 10].capitalize()} in document {i}. " * (1 + i % 3)
                + f"It covers {TOPICS[(i * 7 + 3) % 10]} and {TOPICS[(i + 5) % 10]} as well.")
        found.append(("legal" if i >= 32 else None,
                      Document(id=f"d{i:02d}", source=f"d{i}.md", title=f"Doc {i}", text=text,
                               metadata=metadata)))
    return found


def build(ctx: Context) -> Context:
    """The corpus, with user triples (a taxonomy, a class per document, a claim's date),
    one document deleted and one re-ingested with new text."""
    for scope in (None, "legal"):
        stats = ingest_all([d for s, d in documents() if s == scope], ctx=ctx, scope=scope)
        assert stats.ingested == (32 if scope is None else 12), stats.summary()
    quads = []
    for scope in ("default", "legal"):
        graph = scope_graph(scope)
        quads += [ox.Quad(ox.NamedNode(EX + a), ox.NamedNode(
            "http://www.w3.org/2000/01/rdf-schema#subClassOf"), ox.NamedNode(EX + b), graph)
            for a, b in TAXONOMY]
        quads.append(ox.Quad(ox.NamedNode(EX + "claim1"), ox.NamedNode(EX + "filed"), ox.Literal(
            "2024-06-15", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#date")), graph))
    for scope, doc in documents():
        iri = f"trails://local/{'' if scope is None else 'scope/legal/'}doc/{doc.id}"
        quads.append(ox.Quad(ox.NamedNode(iri), ox.NamedNode(
            "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
            ox.NamedNode(EX + CLASSES[int(doc.id[1:]) % 6]), scope_graph(scope or "default")))
    ctx.kg.extend(quads)
    assert ctx.delete_document("trails://local/doc/d03")
    changed = documents()[5][1]
    changed = Document(id=changed.id, source=changed.source, title=changed.title,
                       text="Changed: vector search rewritten for graph databases.",
                       metadata=changed.metadata)
    assert ingest_all([changed], ctx=ctx).ingested == 1
    return ctx


def embedded() -> Context:
    embedder = MockEmbedder(dim=DIM)
    return Context(OxigraphGraph(), SqliteVecStore(":memory:", dim=DIM, embedder=embedder.identity),
                   embedder)


def answer(ctx: Context, query: str, mode: str, fusion, k: int, scope, name: str):
    """What a caller sees of one retrieve(), or the class of what it raised."""
    text, bindings = FILTERS[name]
    try:
        found = retrieve(query, ctx=ctx, mode=mode, fusion=fusion, k=k, scope=scope, why=True,
                         sparql_filter=None if mode == "vector" else text,
                         bindings=None if mode == "vector" else bindings, fallback=None)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc).__name__
    hits = [(h.iri, None if h.score is None else round(h.score, 9), h.admitted_by) for h in found]
    if mode == "graph" and "ORDER BY" not in text:  # no order asked for: the engine's own
        hits = sorted(hits, key=str) if k >= (found.candidates or 0) else len(hits)
    explained = re.sub(r"(plan|filter)=[\w+-]+, ", "", found.explain())
    return {"hits": hits, "candidates": found.candidates, "notes": found.notes,
            "rankings": found.rankings, "exhaustive": found.exhaustive, "explain": explained,
            "weights": {n: round(w, 9) for n, w in found.fusion_weights.items()}}


def compare(reference: Context, other: Context, refused=lambda scope, name: None) -> int:
    """Every filter, mode, scope, k and query on both; the number of answers compared."""
    compared = 0
    for name in FILTERS:
        for scope in SCOPES:
            for mode, fusion in MODES:
                for k in (3, 50):
                    for query in QUERIES:
                        expected = refused(scope, name) or answer(reference, query, mode, fusion,
                                                                  k, scope, name)
                        got = answer(other, query, mode, fusion, k, scope, name)
                        assert got == expected, (name, scope, mode, fusion, k, query)
                        compared += 1
    return compared


def errors(ctx: Context) -> dict[str, str]:
    bad = {"syntax": "SELECT ?doc WHERE { ?doc meta:status ",
           "prefix": "SELECT ?doc WHERE { ?doc foo:bar ?x }",
           "unbound": "SELECT ?doc WHERE { ?doc meta:status ?s FILTER(?s = ?missing) }",
           "two variables": "SELECT ?doc ?s WHERE { ?doc meta:status ?s }",
           "update": "INSERT DATA { <a:b> <a:c> <a:d> }"}
    found = {}
    for name, text in bad.items():
        for mode in ("hybrid", "graph"):
            try:
                retrieve("anything", ctx=ctx, mode=mode, sparql_filter=text, fallback=None)
                found[f"{name} {mode}"] = "answered"
            except SparqlError as exc:
                found[f"{name} {mode}"] = type(exc).__name__
    return found


BAD_FILTERS = {"syntax hybrid": "SparqlError", "syntax graph": "SparqlError",
               "prefix hybrid": "SparqlError", "prefix graph": "SparqlError",
               "unbound hybrid": UnboundVariableError.__name__,
               "unbound graph": UnboundVariableError.__name__,
               "two variables hybrid": "UnsafeFilterError", "two variables graph": "UnsafeFilterError",
               "update hybrid": "UnsafeFilterError", "update graph": "UnsafeFilterError"}


def same_answers_and_upkeep(other: Context, refused=lambda scope, name: None) -> None:
    reference = build(embedded())
    try:
        build(other)
        assert other.verify().ok and reference.verify().ok
        assert compare(reference, other, refused) == len(FILTERS) * 3 * 5 * 2 * 2
        assert errors(reference) == errors(other) == BAD_FILTERS
        expired = [e.iri for e in other.prune_expired(now=EXPIRED_BY)]
        assert expired == [e.iri for e in reference.prune_expired(now=EXPIRED_BY)] == [
            "trails://local/doc/d07"]
        assert other.verify().ok and reference.verify().ok
        for scope in SCOPES:
            assert answer(other, "tax law court", "hybrid", "auto", 50, scope, "chunks since") == (
                refused(scope, "chunks since")
                or answer(reference, "tax law court", "hybrid", "auto", 50, scope, "chunks since"))
    finally:
        reference.close()
        other.close()


def not_with_the_default_scope(scope, name):
    """oxigraph serve cannot name its default graph beside another in the protocol."""
    return ConfigurationError.__name__ if isinstance(scope, list) else None


def oxigraph(location) -> OxigraphServer:
    try:
        return OxigraphServer(location)
    except MissingExtraError as exc:
        pytest.skip(f"oxigraph serve is not installed: {exc}")


@pytest.fixture(scope="module")
def oxigraph_server(tmp_path_factory):
    with oxigraph(tmp_path_factory.mktemp("equivalence-oxigraph")) as running:
        yield running


@pytest.fixture(scope="module")
def virtuoso_server(tmp_path_factory):
    if shutil.which("virtuoso-t") is None:
        pytest.skip("Virtuoso 7 is not installed (no virtuoso-t on PATH)")
    from trails.testing.servers.virtuoso import VirtuosoServer

    with VirtuosoServer(tmp_path_factory.mktemp("equivalence-virtuoso")).start() as running:
        yield running


def test_a_graph_on_oxigraph_serve_answers_as_the_embedded_one(oxigraph_server):
    kg = SparqlEndpointGraph(oxigraph_server.query_url)
    kg.update("DROP ALL")
    embedder = MockEmbedder(dim=DIM)
    same_answers_and_upkeep(Context(kg, SqliteVecStore(":memory:", dim=DIM,
                                                       embedder=embedder.identity), embedder),
                            not_with_the_default_scope)


def test_a_store_on_postgresql_answers_as_the_embedded_one():
    from trails.vector.stores.pgvector import PgVectorStore

    embedder = MockEmbedder(dim=DIM)
    store = PgVectorStore(pg_server().new_schema(), dim=DIM, embedder=embedder.identity)
    same_answers_and_upkeep(Context(OxigraphGraph(), store, embedder))


def test_both_halves_on_servers_answer_as_the_embedded_context(oxigraph_server):
    from trails.vector.stores.pgvector import PgVectorStore

    kg = SparqlEndpointGraph(oxigraph_server.query_url)
    kg.update("DROP ALL")
    embedder = MockEmbedder(dim=DIM)
    store = PgVectorStore(pg_server().new_schema(), dim=DIM, embedder=embedder.identity)
    same_answers_and_upkeep(Context(kg, store, embedder), not_with_the_default_scope)


def test_a_graph_on_virtuoso_answers_as_the_embedded_one(virtuoso_server):
    kg = SparqlEndpointGraph(virtuoso_server.query_url, dialect="virtuoso")
    embedder = MockEmbedder(dim=DIM)
    ctx = Context(kg, SqliteVecStore(":memory:", dim=DIM, embedder=embedder.identity), embedder)
    with pytest.raises(UnsafeFilterError, match="cannot use GRAPH on Virtuoso"):
        retrieve("tax", ctx=ctx, sparql_filter="SELECT ?doc WHERE { GRAPH ?g { ?doc ?p ?o } }")
    same_answers_and_upkeep(ctx)


def test_a_graph_server_that_is_down_is_an_error_in_every_mode(tmp_path):
    embedder = MockEmbedder(dim=DIM)
    with oxigraph(tmp_path / "graph") as server:
        kg = SparqlEndpointGraph(server.query_url, timeout=3.0)
        ctx = Context(kg, SqliteVecStore(":memory:", dim=DIM, embedder=embedder.identity),
                      embedder)
        assert ingest_all([d for s, d in documents()[:4]], ctx=ctx).ingested == 4
        server.stop()
        text, bindings = FILTERS["documents since"]
        for mode in ("vector", "hybrid", "graph"):
            started = time.monotonic()
            with pytest.raises(EndpointUnavailableError, match="SPARQL endpoint"):
                retrieve("tax law", ctx=ctx, mode=mode, fallback="auto",
                         sparql_filter=None if mode == "vector" else text,
                         bindings=None if mode == "vector" else bindings)
            assert time.monotonic() - started < 10, mode
        ctx.close()
