"""One search, one answer, one explanation: the same request asked of ``retrieve()``,
``POST /retrieve``, the MCP ``retrieve`` tool, ``trails query --json`` and a replay of its
audit record gives the same hits (in order, with their scores and, under ``why``, what
admitted them) and the same account of how they were found (plan, filter path, candidates,
rankings, fusion weights) and of why a list is short or empty (its notes). The words a note
must hold are written here; the surfaces are compared with each other (ADR 0043)."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import json
import sys
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from fastapi.testclient import TestClient

from _cli import run_trails
from service_support import bearer, keys
from trails import Context, ingest_all, retrieve
from trails.ingest.document import Document
from trails.kg.terms import IRI
from trails.retrieval.replay import replay
from trails.service.app import create_app
from trails.service.mcp import build_server, chosen_key
from trails.vector.embedders.mock import MockEmbedder

XSD = "http://www.w3.org/2001/XMLSchema#"
DOCS = {"news": [("n1", "Alpine glaciers retreat every summer.", dt.date(2024, 3, 1), 12, "A1"),
                 ("n2", "Alpine meadows bloom in spring.", dt.date(2025, 6, 1), 3, "A2")],
        "legal": [("l1", "Alpine treaty signed by ministers.", dt.date(2023, 1, 1), 40, "L1"),
                  ("l2", "Legal notes on glacier water rights.", dt.date(2024, 9, 9), 7, "L2")]}
BOTH = ["news", "legal"]
N1 = "trails://local/scope/news/doc/n1"

SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d meta:published ?p . "
         "FILTER(?p >= ?since) }")
PAGES = "SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d meta:pages ?n . FILTER(?n > ?min) }"
CODE = "SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d meta:code ?c . FILTER(?c = ?code) }"
DOC = "SELECT ?iri WHERE { ?iri schema:isPartOf ?d . FILTER(?d = ?doc) }"
TYPO = "SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d meta:publishd ?p }"
QUOTED = 'SELECT ?iri WHERE { ?iri schema:isPartOf ?d . ?d meta:pages "12" }'
NAMED = "SELECT ?iri WHERE { GRAPH ?g { ?iri schema:isPartOf ?d } }"


def _binding(python: Any, http: Any, mcp: Any, cli: str) -> dict[str, Any]:
    """One binding as each surface spells it (None: the surface cannot spell it; the
    terminal's is what follows the name in ``--bind``)."""
    return {"python": python, "http": http, "mcp": mcp, "cli": cli}


DATE = _binding(dt.date(2024, 1, 1), {"type": "literal", "value": "2024-01-01",
                                      "datatype": XSD + "date"}, "2024-01-01", "=2024-01-01")
PLAIN_DATE = {"type": "literal", "value": "2024-01-01"}
# (id, the request as JSON spells it without its bindings, its bindings, words its notes hold)
CASES: list[tuple[str, dict[str, Any], dict[str, dict[str, Any]], list[str]]] = [
    ("vector", {"mode": "vector", "k": 3}, {}, []),
    ("hybrid auto", {"fusion": "auto"}, {}, []),
    ("hybrid rrf", {"fusion": "rrf", "k": 2}, {}, []),
    ("no fusion", {"fusion": "none"}, {}, []),
    ("one scope", {"scopes": ["news"]}, {}, []),
    ("now", {"now": "2100-01-01T00:00:00+00:00"}, {}, []),
    ("min_score", {"min_score": 0.99}, {}, ["min_score 0.99 dropped 3 of 4 hits"]),
    ("date why", {"filter": SINCE, "why": True}, {"since": DATE}, []),
    ("int graph why", {"filter": PAGES, "mode": "graph", "why": True, "k": 2},
     {"min": _binding(5, 5, 5, "=5")}, []),
    ("string", {"filter": CODE}, {"code": _binding("A1", "A1", "A1", "=A1")}, []),
    ("iri", {"filter": DOC, "why": True},
     {"doc": _binding(IRI(N1), {"type": "uri", "value": N1}, f"<{N1}>", f"=<{N1}>")}, []),
    ("misspelt predicate", {"filter": TYPO}, {}, ["did you mean meta:published?"]),
    ("literal of the wrong type", {"filter": QUOTED}, {}, ['asks for "12", a string',
                                                            "write 12 in its place"]),
    ("GRAPH on the default scope", {"filter": NAMED, "scopes": ["default"]}, {},
     ["GRAPH ?g { ... } matches only named graphs", "drop the GRAPH clause"]),
    ("number bound as a string", {"filter": PAGES}, {"min": _binding("5", "5", "5", ":str=5")},
     ["?min is bound to a string", "bind a number"]),
    # A string that reads as a date, given as a JSON string and as a plain literal term (the
    # MCP tool reads a bare "2024-01-01" as the date itself: it says "string" with a term).
    ("date bound as a string", {"filter": SINCE},
     {"since": _binding("2024-01-01", "2024-01-01", PLAIN_DATE, ":str=2024-01-01")},
     ["?since is bound to a string", "binding 'since' is the string '2024-01-01'"]),
    ("date bound as a plain literal", {"filter": SINCE},
     {"since": _binding("2024-01-01", PLAIN_DATE, PLAIN_DATE, ":str=2024-01-01")},
     ["binding 'since' is the string '2024-01-01', which never compares with a date"]),
    ("IRI bound as a plain literal", {"filter": DOC},
     {"doc": _binding(N1, {"type": "literal", "value": N1}, {"type": "literal", "value": N1},
                      f"={N1}")},
     [f"binding 'doc' is the string '{N1}', which never matches an IRI"]),
]


def _seed(directory: Path) -> Context:
    ctx = Context.open(directory, embedder=MockEmbedder(dim=64))
    for scope, docs in DOCS.items():
        ingest_all([Document(id=name, source=name, text=text, metadata={
            "published": published, "pages": pages, "code": code})
            for name, text, published, pages, code in docs], ctx=ctx, scope=scope)
    return ctx


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory) -> Any:
    """The context searched in this process, over HTTP and by the MCP tool, and a directory
    holding the same documents for ``trails query``."""
    pytest.importorskip("mcp")
    root = tmp_path_factory.mktemp("parity")
    _seed(root / "cli").close()
    ctx = _seed(root / "kb")
    with TestClient(create_app(ctx, keys())) as client:
        yield ctx, client, build_server(ctx, chosen_key(None, None, None)), root / "cli"
    ctx.close()


def _answer(data: dict[str, Any]) -> dict[str, Any]:
    """What must be the same everywhere: the hits and how they were found, scores rounded."""
    def number(value: float | None) -> float | None:
        return None if value is None else round(value, 9)
    return {
        "hits": [(hit["iri"], number(hit["score"]), hit.get("admitted_by"))
                 for hit in data["hits"]],
        **{name: data[name] for name in ("mode", "plan", "candidates", "exhaustive",
                                         "rankings", "notes", "degraded", "filter_path")},
        "fusion_weights": {name: number(w) for name, w in data["fusion_weights"].items()}}


def _cli_options(request: dict[str, Any], bound: dict[str, str]) -> list[str]:
    options: list[str] = []
    for name, value in request.items():
        if name == "filter":
            options += ["--sparql", value]
        elif name == "scopes":
            options += [flag for scope in value for flag in ("--scope", scope)]
        elif name == "why":
            options += ["--why"]
        elif name == "min_score":
            options += ["--min-score", str(value)]
        else:
            options += [f"--{name}", str(value)]
    for name, spelt in bound.items():  # "=VALUE" or ":TYPE=VALUE"
        options += ["--bind", name + spelt]
    return options


def _everywhere(surfaces: Any, request: dict[str, Any],
                bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ctx, client, server, db = surfaces
    request = {"scopes": BOTH, **request}
    bound = {way: {name: value[way] for name, value in bindings.items()}
             for way in ("python", "http", "mcp", "cli")}
    python = retrieve("alpine", ctx, **{
        {"filter": "sparql_filter", "scopes": "scope"}.get(name, name):
        None if value == "none" else value for name, value in request.items()},
        **({"bindings": bound["python"]} if bindings else {}))
    answers = {"python": _answer(python.to_dict()),
               "replay": _answer(replay(ctx, str(python.run_id)).result.to_dict())}
    http = client.post("/retrieve", headers=bearer("admin"), json={
        "query": "alpine", **request, **({"bindings": bound["http"]} if bindings else {})})
    assert http.status_code == 200, http.text
    answers["http"] = _answer(http.json())
    if None not in bound["mcp"].values():
        tool = asyncio.run(server.call_tool("retrieve", {
            "query": "alpine", **request, **({"bindings": bound["mcp"]} if bindings else {})}))
        assert not tool.is_error, tool.content
        answers["mcp"] = _answer(tool.structured_content)
    terminal = run_trails("--db", db, "query", "alpine",
                          *_cli_options(request, bound["cli"]), "--json")
    assert terminal.returncode == 0, terminal.stderr
    answers["terminal"] = _answer(json.loads(terminal.stdout))
    # --json keeps stdout for the JSON; each note is a line on stderr too.
    assert [line for line in terminal.stderr.splitlines() if line.startswith("note: ")] == [
        f"note: {note}" for note in answers["terminal"]["notes"]]
    return answers


@pytest.mark.parametrize(("request_", "bindings", "words"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_search_gets_the_same_answer_and_explanation_on_every_surface(
        surfaces, request_, bindings, words):
    answers = _everywhere(surfaces, request_, bindings)
    python = answers.pop("python")
    for way, answer in answers.items():
        assert answer == python, way
    notes = " | ".join(python["notes"])
    assert all(word in notes for word in words), notes
    if not words:
        assert python["notes"] == [] and python["hits"], python
    if request_.get("why") and request_.get("mode") != "vector":
        assert all(admitted for _, _, admitted in python["hits"])


def test_the_table_of_trails_query_ends_with_the_notes(surfaces):
    """Without --json the notes end the explanation under the table, on stdout."""
    db = surfaces[3]
    shown = run_trails("--db", db, "query", "alpine", "--scope", "news", "--scope", "legal",
                       "--sparql", TYPO, env={"COLUMNS": "400"})
    assert shown.returncode == 0, shown.stderr
    assert "did you mean meta:published?" in " ".join(shown.stdout.split())
    assert "note:" not in shown.stderr


def test_an_iri_binding_that_is_no_iri_is_refused_in_the_same_words_everywhere(surfaces):
    ctx, client, server, db = surfaces
    words = "binding 'doc' = 'not an iri': IRI('not an iri') is not an absolute IRI"
    with pytest.raises(Exception) as python:
        retrieve("alpine", ctx, sparql_filter=DOC, bindings={"doc": IRI("not an iri")},
                 scope=BOTH)
    http = client.post("/retrieve", headers=bearer("admin"), json={
        "query": "alpine", "filter": DOC, "scopes": BOTH,
        "bindings": {"doc": {"type": "uri", "value": "not an iri"}}})
    with pytest.raises(Exception) as tool:
        asyncio.run(server.call_tool("retrieve", {"query": "alpine", "filter": DOC,
                                                  "scopes": BOTH,
                                                  "bindings": {"doc": "<not an iri>"}}))
    terminal = run_trails("--db", db, "query", "alpine", "--sparql", DOC, "--scope", "news",
                          "--bind", "doc=<not an iri>")
    assert type(python.value).__name__ == "InvalidArgumentError" and words in str(python.value)
    assert http.status_code == 400
    assert http.json()["error"] == "InvalidArgumentError" and words in http.json()["message"]
    assert words in str(tool.value)
    assert terminal.returncode == 1 and terminal.stderr.startswith(f"Error: {words}")


def test_an_ill_typed_literal_binding_is_shown_as_sparql_writes_it(surfaces):
    client = surfaces[1]
    refused = client.post("/retrieve", headers=bearer("admin"), json={
        "query": "alpine", "filter": SINCE, "scopes": BOTH,
        "bindings": {"since": {"type": "literal", "value": "2024-13-01",
                               "datatype": XSD + "date"}}})
    assert refused.status_code == 400
    assert refused.json()["message"].startswith(
        f"binding 'since' = \"2024-13-01\"^^<{XSD}date>: '2024-13-01' is no xsd:date value")


# Why a binding that is no value of its type is refused, and how to write one: the same on
# every surface, after the words each surface names the binding in.
ILL_TYPED = ("'{text}' is no xsd:{kind} value the graph can read, so every comparison with it "
             "would fail and the filter would select nothing; write it as XML Schema does (a "
             "date 2024-01-31, a dateTime 2024-01-31T09:00:00Z, a number 42 or 4.2; an integer "
             "within 64 bits)")


@pytest.mark.parametrize(("text", "kind"), [("2024-13-01", "date"),
                                            ("2024-13-01T09:00:00", "dateTime")])
def test_a_binding_that_is_no_value_of_its_type_is_refused_for_the_same_reason_everywhere(
        surfaces, text, kind):
    ctx, client, server, db = surfaces
    words = ILL_TYPED.format(text=text, kind=kind)
    literal = f'"{text}"^^<{XSD}{kind}>'
    with pytest.raises(Exception) as python:
        retrieve("alpine", ctx, sparql_filter=SINCE, scope=BOTH,
                 bindings={"since": ox.Literal(text, datatype=ox.NamedNode(XSD + kind))})
    http = client.post("/retrieve", headers=bearer("admin"), json={
        "query": "alpine", "filter": SINCE, "scopes": BOTH, "bindings": {"since": {
            "type": "literal", "value": text, "datatype": XSD + kind}}})
    with pytest.raises(Exception) as tool:
        asyncio.run(server.call_tool("retrieve", {"query": "alpine", "filter": SINCE,
                                                  "scopes": BOTH, "bindings": {"since": text}}))
    terminal = run_trails("--db", db, "query", "alpine", "--sparql", SINCE, "--scope", "news",
                          "--bind", f"since={text}")
    assert str(python.value) == f"binding 'since' = {literal}: {words}"
    assert http.status_code == 400 and http.json()["message"] == str(python.value)
    assert str(tool.value).endswith(f"binding 'since' = '{text}': {words}")
    assert terminal.returncode == 1 and "Traceback" not in terminal.stderr
    assert terminal.stderr.strip() == f"Error: --bind 'since={text}': {words}"


@pytest.mark.parametrize(("option", "kind"), [("n:int=twelve", "integer"),
                                              ("n:float=x1", "double"),
                                              ("n:bool=yes", "boolean")])
def test_a_typed_bind_option_that_is_no_value_of_its_type_says_so_as_a_literal_would(
        surfaces, option, kind):
    db = surfaces[3]
    terminal = run_trails("--db", db, "query", "alpine", "--sparql", PAGES, "--bind", option)
    text = option.partition("=")[2]
    assert terminal.returncode == 1
    assert terminal.stderr.strip() == (f"Error: --bind '{option}': "
                                       + ILL_TYPED.format(text=text, kind=kind))


@pytest.mark.parametrize("filter_", [
    "SELECT ?iri ?d WHERE { ?iri schema:isPartOf ?d }", "ASK { ?s ?p ?o }"])
def test_a_filter_refused_over_http_leaves_nothing_to_drop_in_another_thread(
        surfaces, monkeypatch, filter_):
    """The service searches in a worker thread; a refused filter's traceback held the
    parsed query's solutions, which pyoxigraph cannot drop from another thread (an error
    printed on the server's stderr, and the solutions leaked)."""
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    for _ in range(3):
        refused = surfaces[1].post("/retrieve", headers=bearer("admin"), json={
            "query": "alpine", "filter": filter_})
        assert refused.status_code == 400
        assert refused.json()["error"] == "UnsafeFilterError"
    gc.collect()
    assert [str(u.exc_value) for u in unraisable] == []
