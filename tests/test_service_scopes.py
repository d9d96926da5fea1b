"""A key never sees a scope it does not grant: whatever a request asks for (scopes, filters
naming the other scope's graph, FROM and FROM NAMED, SERVICE, datasets, updates), no answer
from ``/retrieve`` or ``/sparql`` holds an IRI or a text of that scope."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service_support import BETA_DOCS, bearer, keys, seeded_context
from trails.service.app import create_app

pytestmark = pytest.mark.timeout(300)

BETA_GRAPH = "urn:trails:scope:beta"
BETA_IRIS = "trails://local/scope/beta/"
# Graph patterns that reach for beta's triples in every way a query text can.
PATTERNS = [
    "?c ?p ?o",
    f"GRAPH <{BETA_GRAPH}> {{ ?c ?p ?o }}",
    "GRAPH ?g { ?c ?p ?o }",
    f"GRAPH ?g {{ ?c ?p ?o }} FILTER(?g = <{BETA_GRAPH}>)",
    f"SERVICE <{BETA_GRAPH}> {{ ?c ?p ?o }}",
    "SERVICE <http://127.0.0.1:9/sparql> { ?c ?p ?o }",
    f"?c <https://schema.org/text> \"{BETA_DOCS['b1']}\"",
    "?c <https://schema.org/isPartOf> <trails://local/scope/beta/doc/b1>",
]
DATASETS = ["", f" FROM <{BETA_GRAPH}>", f" FROM NAMED <{BETA_GRAPH}>",
            f" FROM <{BETA_GRAPH}> FROM NAMED <{BETA_GRAPH}>"]
SCOPES = st.sampled_from([None, ["alpha"], ["beta"], ["alpha", "beta"], ["default"],
                          ["default", "alpha"]])


@pytest.fixture
def client(tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    with TestClient(create_app(ctx, keys())) as test_client:
        yield test_client
    ctx.close()


def _no_beta(response, asked: str = "") -> None:
    """Nothing of beta in the answer. A note may quote the caller's own filter back (an IRI
    it names that the searched scopes hold nowhere), which tells nothing of beta: each IRI
    the caller wrote is taken out of the notes before they are read."""
    text = response.text
    assert response.status_code != 500, text
    assert not any(doc in text for doc in BETA_DOCS.values()), text
    if response.status_code == 200:
        if asked and "notes" in response.json():
            answer = response.json()
            notes = " ".join(answer.pop("notes"))
            for iri in re.findall(r"<([^<>]*)>", asked):
                notes = notes.replace(f"<{iri}>", "")
            text = json.dumps(answer) + notes
        assert BETA_IRIS not in text, text


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=st.sampled_from(PATTERNS), dataset=st.sampled_from(DATASETS), scopes=SCOPES,
       mode=st.sampled_from(["hybrid", "graph", "vector"]),
       query=st.sampled_from(["beehives", "beetles bark", "glaciers", "orchard dawn"]))
def test_retrieve_never_answers_from_an_ungranted_scope(client, pattern, dataset, scopes,
                                                        mode, query):
    body = {"query": query, "mode": mode, "k": 10,
            "filter": f"SELECT ?c{dataset} WHERE {{ {pattern} }}" if mode != "vector" else None}
    if scopes is not None:
        body["scopes"] = scopes
    response = client.post("/retrieve", json=body, headers=bearer("alpha-reader"))
    _no_beta(response, body["filter"] or "")
    if scopes is not None and "alpha" not in scopes:
        assert response.status_code in (400, 403)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=st.sampled_from(PATTERNS), dataset=st.sampled_from(DATASETS),
       form=st.sampled_from(["SELECT * {dataset} WHERE {{ {p} }}",
                             "SELECT ?c (COUNT(*) AS ?n) {dataset} WHERE {{ {p} }} GROUP BY ?c",
                             "CONSTRUCT {{ ?c ?p ?o }} {dataset} WHERE {{ {p} }}",
                             "DESCRIBE ?c {dataset} WHERE {{ {p} }}",
                             "INSERT {{ <urn:x> <urn:y> ?o }} WHERE {{ {p} }}",
                             "DELETE WHERE {{ {p} }}"]),
       named=st.sampled_from([[], [BETA_GRAPH], ["urn:trails:scope:alpha"]]),
       method=st.sampled_from(["GET", "POST"]))
def test_sparql_never_answers_from_an_ungranted_scope(client, pattern, dataset, form, named,
                                                      method):
    query = form.format(dataset=dataset, p=pattern)
    params = [("query", query)] + [(name, graph) for graph in named
                                   for name in ("default-graph-uri", "named-graph-uri")]
    headers = {**bearer("alpha-reader"), "Accept": "application/n-triples, "
               "application/sparql-results+json;q=0.9"}
    if method == "GET":
        response = client.get("/sparql", params=params, headers=headers)
    else:
        response = client.post("/sparql", data=dict(params), headers=headers)
    _no_beta(response)
    if form.startswith(("INSERT", "DELETE")):
        assert response.status_code == 403


@pytest.mark.parametrize("ask", [
    f"ASK {{ GRAPH <{BETA_GRAPH}> {{ ?s ?p ?o }} }}",
    f"ASK FROM <{BETA_GRAPH}> {{ ?c <https://schema.org/text> \"{BETA_DOCS['b1']}\" }}",
    f"ASK {{ ?c <https://schema.org/text> \"{BETA_DOCS['b2']}\" }}",
    "ASK { ?c <https://schema.org/isPartOf> <trails://local/scope/beta/doc/b2> }",
])
def test_ask_about_an_ungranted_scope_answers_false(client, ask):
    response = client.get("/sparql", params={"query": ask}, headers=bearer("alpha-reader"))
    assert response.status_code == 200
    assert response.json()["boolean"] is False
    granted = client.get("/sparql", params={"query": ask}, headers=bearer("admin"))
    assert granted.json()["boolean"] is True  # the same question, asked by a key that may


def test_a_caller_of_the_service_cannot_see_an_expired_document_again_by_a_past_now(tmp_path):
    """"Expired means gone": a key's request judging expiries at a moment already past would
    show what retention removed from its answers. The service refuses it; a later moment,
    or none, is fine; the owner's Python API may still look back."""
    import datetime as dt

    from fastapi.testclient import TestClient

    from trails.context import Context
    from trails.ingest import Document, ingest_all
    from trails.retrieval.retrieve import retrieve
    from trails.service.app import create_app
    from trails.vector import MockEmbedder

    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("memo", "memo.md", "Alpine memo about the merger.",
                             metadata={"expires": "2020-01-01"})], ctx=ctx)
        then = dt.datetime(2019, 6, 1, tzinfo=dt.UTC)
        assert len(retrieve("Alpine memo", ctx, now=then)) == 1  # the owner may look back
        assert len(retrieve("Alpine memo", ctx)) == 0
    with Context.open(root, embedder=MockEmbedder(dim=16)) as ctx:
        client = TestClient(create_app(ctx, None))
        past = client.post("/retrieve", json={"query": "Alpine memo",
                                              "now": "2019-06-01T00:00:00+00:00"})
        assert past.status_code == 400, past.text
        assert "before the service's clock" in past.json()["message"]
        later = client.post("/retrieve", json={"query": "Alpine memo",
                                               "now": "2100-01-01T00:00:00+00:00"})
        assert later.status_code == 200 and later.json()["hits"] == [], later.text
        plain = client.post("/retrieve", json={"query": "Alpine memo"})
        assert plain.status_code == 200 and plain.json()["hits"] == [], plain.text
