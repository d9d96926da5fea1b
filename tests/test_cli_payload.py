"""``trails init --payload``, ``trails verify`` on a narrowed allowlist, ``trails query
--min-score``: the command line over the payload allowlist and the score threshold."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trails.cli import app
from trails.config import read_config

runner = CliRunner()
AUTHOR = "Zorbulon Quixtavern"


def trails(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "old.md").write_text(f"---\ntitle: Old\nauthor: {AUTHOR}\ndate: 2023-05-01\n---\n"
                                  "Rails is a web framework written in Ruby.\n")
    (notes / "zoo.txt").write_text("Elephants are large mammals that live in herds.\n")
    db = tmp_path / "kb"
    made = trails("--db", db, "init", "--model", "mock:32", "--payload", "author, title")
    assert made.exit_code == 0, made.output
    assert "vector payload allowlist recorded: author, title" in made.stdout
    assert trails("--db", db, "ingest", notes, "--quiet").exit_code == 0
    return db


def stored_metadata(db: Path) -> list[dict]:
    """Each chunk row's JSON as it is on disk, with its document (a column)."""
    with sqlite3.connect(db / "vectors.db") as connection:
        return [{**json.loads(m), "doc_iri": d} for d, m in connection.execute(
            "SELECT doc_iri, metadata FROM items WHERE doc_iri IS NOT NULL")]


def test_init_records_the_allowlist_and_ingest_follows_it(kb):
    assert read_config(kb).payload == ["author", "title"]
    rows = stored_metadata(kb)
    old = [m for m in rows if m["doc_iri"].endswith("old.md")]
    assert old and all(m["author"] == AUTHOR and m["title"] == "Old" and "date" not in m
                       and "source" not in m for m in old)


def test_narrowing_it_on_an_existing_context_then_verify_and_repair(kb):
    narrowed = trails("--db", kb, "init", "--payload", "")
    assert narrowed.exit_code == 0, narrowed.output
    assert "allowlist recorded: none" in narrowed.stdout
    assert "trails verify --repair" in narrowed.stdout  # vectors were stored before
    assert read_config(kb).payload == []
    found = trails("--db", kb, "verify", "--json")
    assert found.exit_code == 2
    assert len(json.loads(found.stdout)["payload_outside_allowlist"]) == len(stored_metadata(kb))
    assert trails("--db", kb, "verify", "--repair").exit_code == 2
    assert trails("--db", kb, "verify").exit_code == 0
    assert not any({"author", "title"} & set(m) for m in stored_metadata(kb))
    # A hit still names its document: the title comes from the graph.
    hits = json.loads(trails("--db", kb, "query", "Rails", "--json", "--mode", "vector",
                             "-k", "1").stdout)["hits"]
    assert hits[0]["metadata"]["title"] == "Old"
    assert hits[0]["metadata"]["date"] == "2023-05-01"


@pytest.mark.parametrize("bad", ["text", "a.b", "iri,title"])
def test_a_bad_payload_field_is_a_user_error_and_changes_nothing(kb, bad):
    result = trails("--db", kb, "init", "--payload", bad)
    assert result.exit_code == 1
    assert "--payload" in result.stderr
    assert read_config(kb).payload == ["author", "title"]


def test_query_min_score_drops_hits_and_says_so(kb):
    every = json.loads(trails("--db", kb, "query", "Rails", "--json", "--mode", "vector").stdout)["hits"]
    assert len(every) == 2
    cut = (every[0]["score"] + every[1]["score"]) / 2
    result = trails("--db", kb, "query", "Rails", "--json", "--mode", "vector",
                    "--min-score", cut)
    assert result.exit_code == 0, result.output
    assert [h["iri"] for h in json.loads(result.stdout)["hits"]] == [every[0]["iri"]]
    assert "dropped 1 of 2 hits" in result.stderr
    table = trails("--db", kb, "query", "Rails", "--mode", "vector", "--min-score", cut)
    assert "dropped 1 of 2 hits" in table.stdout


@pytest.mark.parametrize("args, message", [
    (("--min-score", "nan"), "NaN"),
    (("--mode", "graph", "--sparql", "-", "--min-score", "0.1"), "no score")])
def test_query_min_score_refusals_are_user_errors(kb, args, message):
    result = runner.invoke(app, ["--db", str(kb), "query", "Rails", *args],
                           input="SELECT ?c WHERE { ?c a trails:Chunk }")
    assert result.exit_code == 1, result.output
    assert message in result.stderr and "Traceback" not in result.output
