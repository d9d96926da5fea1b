"""The console script's reader of plain queries (trails.cli.launch): it forwards to a service
exactly the queries the full command line would run with the same options, and nothing else."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest
import typer
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run_trails
from service_support import bearer, keys, seeded_context
from trails import Context
from trails.cli import app, launch
from trails.cli.launch import answer_through_service, service_request
from trails.service.app import create_app
from trails.testing import MockEmbedder

COMMAND = typer.main.get_command(app)
# click's usage errors (typer >= 0.20 vendors click), and the Exit that --help raises.
REFUSALS = tuple(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError") + (
    typer.Exit,)


def parsed_by_the_command_line(argv: list[str]) -> dict | None:
    """What the typer command reads from argv: (db, its parameters), or None if it refuses."""
    try:
        root = COMMAND.make_context("trails", list(argv), resilient_parsing=False)
        name, command, rest = COMMAND.resolve_command(root, [*root._protected_args, *root.args])
        sub = command.make_context(name, rest, parent=root)
    except REFUSALS:
        return None
    params = dict(sub.params)
    params["db"] = str(root.params["db"]) if root.params.get("db") is not None else None
    return params


def test_a_plain_query_is_read_with_its_options():
    db, options = service_request(["--db", "kb", "query", "how to deploy", "-k", "3",
                                   "--scope", "a", "--scope=b", "--bind", "since=2024-01-01",
                                   "--json", "--why", "--mode=vector"])
    assert db == "kb"
    assert options == {"text": "how to deploy", "k": "3", "scopes": ["a", "b"],
                       "bindings": ["since=2024-01-01"], "json": True, "why": True,
                       "mode": "vector"}


def test_the_directory_can_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("TRAILS_DB", "from-env")
    assert service_request(["query", "x"])[0] == "from-env"
    assert service_request(["--db=flag", "query", "x"])[0] == "flag"


@given(st.sampled_from([
    ["--db", "kb", "query", "x", "--local"],
    ["--db", "kb", "query", "x", "--caller", "ana"],  # the service records its key's label
    ["--db", "kb", "query", "x", "--help"],
    ["--db", "kb", "query", "--help"],
    ["--db", "kb", "sparql", "SELECT * {}"],
    ["--db", "kb", "ingest", "docs/"],
    ["query", "x"],  # no directory
    ["--db", "kb", "query"],
    ["--db", "kb", "query", "two", "texts"],
    ["--db", "kb", "query", "x", "--mode", "vector", "--mode", "hybrid"],
    ["--db", "kb", "query", "x", "-k5"],
    ["--db", "kb", "query", "x", "--unknown"],
    ["--db", "kb", "query", "x", "--sparql"],
    ["-h"],
    [],
]))
def test_anything_but_a_plain_query_goes_to_the_full_command_line(argv):
    assert service_request(argv) is None
    assert answer_through_service(argv) is None


def test_without_a_running_service_the_query_is_answered_here(tmp_path):
    assert answer_through_service(["--db", str(tmp_path), "query", "x"]) is None
    (tmp_path / "service.json").write_text('{"url": "http://127.0.0.1:9", "pid": 999999999, '
                                          '"token": "t"}')
    assert answer_through_service(["--db", str(tmp_path), "query", "x"]) is None


WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1,
                max_size=12)
OPTION = st.one_of(
    st.tuples(st.sampled_from(["--mode"]), st.sampled_from(["vector", "hybrid", "graph"])),
    st.tuples(st.sampled_from(["-k", "--k"]), st.integers(1, 50).map(str)),
    st.tuples(st.just("--scope"), st.sampled_from(["a", "b", "c"])),
    st.tuples(st.just("--bind"), st.sampled_from(["since=2024-01-01", "n=3", "s:str=x"])),
    st.tuples(st.just("--fusion"), st.sampled_from(["auto", "rrf", "weighted", "none"])),
    st.tuples(st.just("--min-score"), st.sampled_from(["0.1", "0.5", "1"])),
    st.tuples(st.just("--sparql"), st.just("SELECT ?iri WHERE { ?iri ?p ?o }")),
    st.tuples(st.just("--fallback"), st.sampled_from(["auto", "skip", "none"])),
    st.tuples(st.just("--now"), st.just("2026-01-01T00:00:00+00:00")),
    st.just(("--json",)), st.just(("--why",)),
)


@settings(max_examples=150, deadline=None)
@given(text=WORDS.filter(lambda w: not w.startswith("-")), options=st.lists(OPTION, max_size=6),
       inline=st.booleans(), at=st.integers(0, 6))
def test_what_is_forwarded_is_what_the_command_line_would_run(text, options, inline, at):
    groups: list[list[str]] = []
    for option in options:
        if len(option) == 2 and inline and option[0].startswith("--"):
            groups.append([f"{option[0]}={option[1]}"])
        else:
            groups.append(list(option))
    groups.insert(min(at, len(groups)), [text])  # the text goes between options, anywhere
    argv = ["--db", "kb", "query", *(token for group in groups for token in group)]
    forwarded = service_request(argv)
    expected = parsed_by_the_command_line(argv)
    if forwarded is None:  # declining is always safe; it happens for repeated single options
        names = [option[0] for option in options if option[0] not in ("--scope", "--bind")]
        names = ["-k" if name == "--k" else name for name in names]
        # and for a --now before the clock, which the service refuses and the owner may ask
        past = [value for name, *value in options if name == "--now" and _past(*value)]
        assert expected is None or len(set(names)) < len(names) or past
        return
    assert expected is not None, argv
    db, got = forwarded
    assert db == expected["db"]
    assert got["text"] == expected["text"]
    assert got.get("mode", "hybrid") == expected["mode"]
    assert got.get("k", "10") == expected["k"]
    assert got["scopes"] == expected["scope"] and got["bindings"] == expected["bind"]
    assert got.get("fusion", "auto") == expected["fusion"]
    assert got.get("fallback", "auto") == expected["fallback"]
    assert got.get("filter") == expected["sparql"] and got.get("now") == expected["now"]
    assert got.get("min_score") == expected["min_score"]
    assert bool(got.get("json")) == expected["as_json"]
    assert bool(got.get("why")) == expected["why"]
    assert expected["local"] is False


def _past(text: str) -> bool:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return moment.utcoffset() is not None and moment < dt.datetime.now(dt.UTC)


def test_a_service_file_naming_another_host_is_not_followed(tmp_path):
    """The token and the query go only to loopback: a planted service.json naming another
    host (with a live pid: this process's) leaves the command to answer in its own process."""
    for url in ("http://192.0.2.1:8000", "https://127.0.0.1:8000", "http://example.org"):
        (tmp_path / "service.json").write_text(json.dumps(
            {"version": 1, "url": url, "pid": os.getpid(), "token": "t", "started": ""}))
        assert answer_through_service(["--db", str(tmp_path), "query", "x"]) is None


def _answered_by(app_client, label: str):
    """A stand-in for the service's client that asks ``app_client`` (the service's app)."""
    class Through:
        def __init__(self, _info: object) -> None:
            self.asked = 0

        def health(self) -> dict:
            return {"status": "ready"}

        def retrieve(self, body: dict) -> dict:
            answer = app_client.post("/retrieve", headers=bearer(label), json=body)
            assert answer.status_code == 200, answer.text
            ASKED.append(body["query"])
            return answer.json()

    return Through


ASKED: list[str] = []


@pytest.mark.parametrize(("seeded", "label", "noted"), [
    (False, "admin", True),
    (True, "admin", False),  # documents, and no hits for this filter: no such note
    (False, "alpha-reader", False),  # a key of one scope is not told of the others
])
def test_an_empty_context_is_noted_through_a_service_as_in_this_process(
        tmp_path, monkeypatch, seeded, label, noted):
    # Only the command answering in its own process printed the note.
    db = tmp_path / "kb"
    (seeded_context(db) if seeded else Context.open(db, embedder=MockEmbedder(dim=32))).close()
    options = ["--sparql", "SELECT ?iri WHERE { ?iri schema:isPartOf <urn:none> }"]
    local = run_trails("--db", db, "query", "glaciers", *options, "--local")
    ASKED.clear()
    with Context.open(db, embedder=MockEmbedder(dim=32)) as ctx, \
            TestClient(create_app(ctx, keys())) as client:
        monkeypatch.setattr(launch, "read_service", lambda _db: object())
        monkeypatch.setattr(launch, "ServiceClient", _answered_by(client, label))
        through = run_trails("--db", db, "query", "glaciers", *options)
    assert ASKED == ["glaciers"]  # the service answered it
    assert local.returncode == through.returncode == 0, (local.stderr, through.stderr)
    note = (f"note: this context holds no documents yet; add some with `trails --db {db} "
            "ingest PATH...` (files or folders: .md .txt .html .jsonl .pdf)")
    assert (note in local.stderr) is (not seeded)
    assert (note in through.stderr) is noted
    if label == "admin":  # a key of every scope: the same answer as here
        assert through.stdout == local.stdout
