"""A scope named twice is the same scope: the dataset of a query (its default graph, the merge
of its scopes' graphs) holds each graph once. Oxigraph answers each solution once per listed
copy of a graph, so ``scope=["alpha"] * n`` multiplied every count and joined its patterns
n ways (a search with 100 copies ran for minutes)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from trails import retrieve
from trails.ingest import Document, ingest_all
from trails.scopes import dataset_options, normalize_scopes
from trails.testing import fresh_context


@pytest.fixture
def ctx():
    context = fresh_context()
    ingest_all([Document("a", "a", "Alpine glaciers retreat every summer."),
                Document("b", "b", "Alpacas graze on high meadows.")], ctx=context, scope="alpha")
    yield context
    context.close()


def test_a_repeated_scope_counts_each_triple_once(ctx):
    once = ctx.kg.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", scopes=["alpha"])
    twice = ctx.kg.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", scopes=["alpha", "alpha"])
    assert int(twice.rows[0]["n"]) == int(once.rows[0]["n"]) > 0


def test_a_repeated_scope_gives_each_candidate_once(ctx):
    chunks = "SELECT ?iri WHERE { ?iri a trails:Chunk }"
    hits = retrieve("glaciers", ctx, mode="graph", k=50, sparql_filter=chunks,
                    scope=["alpha"] * 8)
    assert hits.candidates == 2
    assert len(hits) == 2


def test_scopes_are_kept_once_in_their_order():
    assert normalize_scopes(["beta", "alpha", "beta", "alpha"]) == ["beta", "alpha"]
    options = dataset_options(["alpha", "default", "alpha", "default"])
    assert options["default_graph"] == [ox.NamedNode("urn:trails:scope:alpha"), ox.DefaultGraph()]
    assert options["named_graphs"] == [ox.NamedNode("urn:trails:scope:alpha")]
