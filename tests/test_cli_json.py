"""``--json`` on every command: stdout holds one JSON document and nothing else, with what
the command did, checked against what the context holds afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
import typer
from typer.testing import CliRunner

from trails.cli import app
from trails.context import Context
from trails.ingest import Document, ingest_all

runner = CliRunner()


def trails(*args, input: str | None = None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def json_of(result) -> object:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # the whole of stdout, or this raises


def _commands(group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group (typer may vendor its own click)
            found.append((*prefix, name))  # a group that runs on its own (trails audit)
            found += _commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


# Commands that run until stopped and print no result: a server's output is its log and its
# protocol (HTTP, MCP over stdio), and `trails keys` only groups `keys add`.
SERVERS = {("serve",), ("mcp",), ("keys",)}
COMMANDS = [c for c in _commands(typer.main.get_command(app)) if c not in SERVERS]


def test_the_commands_are_the_ones_this_file_knows():
    assert {" ".join(c) for c in COMMANDS} == {
        "init", "ingest", "query", "sparql", "stats", "verify", "delete", "prune", "load",
        "export", "eval", "audit", "audit show", "audit feedback", "replay", "link", "keys add"}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_json(command):
    root = typer.main.get_command(app)
    found = root
    for name in command:
        found = found.commands[name]  # type: ignore[attr-defined]
    options = {o for p in found.params for o in getattr(p, "opts", ())}
    assert "--json" in options, f"trails {' '.join(command)} has no --json"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("---\ntitle: Alpha\ndate: 2024-02-03\n---\nRails routing.\n")
    (folder / "b.md").write_text("Ruby gems and bundler.\n")
    (folder / "c.jsonl").write_text('{"id": "x", "text": "Elephants remember."}\n\n'
                                    '{"id": "y", "text": "Graphs hold triples."}\n')
    (folder / "bad.txt").write_bytes(b"\xff\xfd not utf-8 \xff")
    return folder


def test_init_json_describes_the_new_context_and_then_the_existing_one(tmp_path):
    db = tmp_path / "kb"
    made = json_of(trails("--db", db, "init", "--model", "mock:16", "--json"))
    assert made["created"] is True and made["directory"] == str(db)
    recorded = json.loads((db / "trails.json").read_text())
    assert made["base_iri"] == recorded["base_iri"] == "trails://local/"
    assert made["embedder"].startswith("trails-mock-bow") and "dim=16" in made["embedder"]
    assert (made["graph"], made["vectors"]) == ("oxigraph", "sqlite-vec")
    again = json_of(trails("--db", db, "init", "--json"))
    assert again == {**made, "created": False}


def test_init_json_with_mapping_retention_and_payload_is_one_document(tmp_path, notes):
    db = tmp_path / "kb"
    made = json_of(trails("--db", db, "init", "--model", "mock:16", "--map-metadata",
                          "author=schema:author", "--retention", "tmp=P30D", "--payload",
                          "title,date", "--json"))
    recorded = json.loads((db / "trails.json").read_text())
    assert made["created"] is True
    with Context.open(db, read_only=True) as opened:
        assert made["metadata_predicates"] == dict(opened.metadata_predicates)
        assert made["metadata_predicates"]["author"] == "https://schema.org/author"
        assert made["retention"] == dict(opened.retention) == {"tmp": "P30D"}
        assert made["payload"] == list(opened.payload_fields)
    assert set(made["payload"]) == {"title", "date"} and "payload_stale_vectors" not in made
    assert recorded["base_iri"] == made["base_iri"]
    # Once vectors are stored, another allowlist says they may hold other fields.
    assert trails("--db", db, "ingest", notes / "a.md", "--quiet").exit_code == 0
    again = json_of(trails("--db", db, "init", "--payload", "title", "--retention",
                           "old=P1D", "--json"))
    assert again["created"] is False and again["payload"] == ["title"]
    assert again["retention"] == {"tmp": "P30D", "old": "P1D"}
    assert again["payload_stale_vectors"] is True
    said = trails("--db", db, "init", "--payload", "title,source")
    assert said.exit_code == 0, said.output
    assert said.stdout.splitlines()[1:] == [
        "vector payload allowlist recorded: title, source",
        ("vectors stored before may hold other fields: run `trails verify` to list them, "
         "`trails verify --repair` to remove them")]


def test_ingest_json_is_the_runs_totals_and_no_progress_on_stdout(tmp_path, notes):
    db = tmp_path / "kb"
    trails("--db", db, "init", "--model", "mock:16")
    result = trails("--db", db, "ingest", notes, "--json")
    assert result.exit_code == 2  # bad.txt fails, the others are committed
    totals = json.loads(result.stdout)
    assert (totals["ingested"], totals["skipped"], totals["failed"]) == (4, 0, 1)
    assert totals["interrupted"] is False
    [failure] = totals["failures"]
    assert failure["source"].endswith("bad.txt") and failure["reason"]
    with Context.open(db, read_only=True) as ctx:
        assert ctx.stats()["documents"] == 4
        assert ctx.vectors.count() == totals["chunks"]
    again = json.loads(trails("--db", db, "ingest", notes, "--json").stdout)
    assert (again["ingested"], again["skipped"], again["chunks"]) == (0, 4, 0)


def test_delete_json_names_what_was_deleted(tmp_path, notes):
    db = tmp_path / "kb"
    trails("--db", db, "init", "--model", "mock:16")
    trails("--db", db, "ingest", notes / "a.md", notes / "b.md", "--quiet")
    gone = "trails://local/doc/a.md"
    answer = json_of(trails("--db", db, "delete", gone, gone, "--json"))
    assert answer == {"deleted": [gone], "all_triples": False}
    with Context.open(db, read_only=True) as ctx:
        assert ctx.stats()["documents"] == 1


def test_delete_refuses_a_node_typed_document_by_hand(tmp_path, notes):
    """Typed trails:Document by a user, it is no document trails wrote: deleting it deleted
    nothing, and the command said "deleted" all the same."""
    db = tmp_path / "kb"
    trails("--db", db, "init", "--model", "mock:16")
    trails("--db", db, "ingest", notes / "a.md", "--quiet")
    facts = tmp_path / "typed.ttl"
    facts.write_text("<urn:typed> a <https://trails.dev/ns#Document> ; <urn:p> 1 .\n")
    assert trails("--db", db, "load", facts).exit_code == 0
    refused = trails("--db", db, "delete", "urn:typed", "trails://local/doc/a.md")
    assert refused.exit_code == 1, refused.output
    assert "not a document of this context: urn:typed" in refused.output
    assert "deleted" not in refused.output
    with Context.open(db, read_only=True) as ctx:
        assert ctx.stats()["documents"] == 1  # nothing deleted, a.md either
    assert json_of(trails("--db", db, "delete", "trails://local/doc/a.md", "--json")) == {
        "deleted": ["trails://local/doc/a.md"], "all_triples": False}


def test_load_and_export_json(tmp_path):
    db = tmp_path / "kb"
    trails("--db", db, "init", "--model", "mock:16")
    facts = tmp_path / "facts.ttl"
    facts.write_text("<urn:a> <urn:p> 1 . <urn:a> <urn:p> 2 . <urn:b> <urn:q> <urn:a> .\n")
    loaded = json_of(trails("--db", db, "load", facts, "--json"))
    assert loaded == {"files": [{"file": str(facts), "quads": 3}], "quads": 3}
    exported = json_of(trails("--db", db, "export", "--format", "nquads", "--json"))
    assert exported["format"] == "nq" and exported["output"] is None
    quads = set(ox.parse(exported["data"].encode(), format=ox.RdfFormat.N_QUADS))
    assert {str(q.subject) for q in quads if str(q.predicate) in ("<urn:p>", "<urn:q>")} == {
        "<urn:a>", "<urn:b>"}
    target = tmp_path / "out.ttl"
    to_file = json_of(trails("--db", db, "export", "-o", target, "--json"))
    assert to_file["data"] is None and to_file["output"] == str(target)
    assert len(list(ox.parse(path=str(target)))) == 3  # default scope, as turtle


def test_every_command_with_json_prints_one_json_document_and_nothing_else(tmp_path, notes):
    """Each command in a typical run, with the options that make it say more (a mapping, a
    payload, a filter, --why): stdout parses whole as JSON. eval has its own test
    (tests/test_eval.py)."""
    db = tmp_path / "kb"
    facts = tmp_path / "facts.ttl"
    facts.write_text("<urn:a> <urn:p> 1 .\n")
    filter_ = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc }"
    ran: list[str] = []

    def run(*args: object) -> object:
        result = trails("--db", db, *args, "--json")
        assert result.exit_code == 0, (args, result.output)
        ran.append(" ".join(map(str, args[:2])) if args[0] == "audit" and len(args) > 1
                   else str(args[0]))
        return json.loads(result.stdout)

    run("init", "--model", "mock:16", "--map-metadata", "author=schema:author",
        "--retention", "tmp=P30D", "--payload", "title,date,source")
    run("ingest", notes / "a.md", notes / "b.md", notes / "c.jsonl")
    answer = run("query", "rails routing", "--sparql", filter_, "--why", "--min-score", "-1")
    assert isinstance(answer, dict) and answer["run_id"]
    run("sparql", "SELECT ?d ?t WHERE { ?d a trails:Document OPTIONAL { ?d schema:name ?t } }")
    run("sparql", "ASK { ?d a trails:Document }")
    run("sparql", "CONSTRUCT { ?d a trails:Document } WHERE { ?d a trails:Document }")
    run("stats")
    run("verify")
    run("load", facts)
    run("export")
    run("audit")
    run("audit", "show", answer["run_id"])
    run("audit", "feedback", answer["run_id"], "--down", "--note", "stale")
    run("replay", answer["run_id"])
    run("prune", "--expired", "--dry-run")
    run("delete", "trails://local/doc/a.md")
    linked = run("link")
    assert isinstance(linked, dict)
    added = run("keys", "add", "analyst", "--keys", tmp_path / "keys.toml", "--scope", "public")
    ran[-1] = "keys add"
    assert isinstance(added, dict) and added["label"] == "analyst"
    assert added["sha256"] in (tmp_path / "keys.toml").read_text()
    assert added["secret"] not in (tmp_path / "keys.toml").read_text()
    assert {" ".join(c) for c in COMMANDS} - set(ran) == {"eval"}


def test_audit_feedback_json_is_the_record_written(tmp_path):
    db = tmp_path / "kb"
    json_of(trails("--db", db, "init", "--model", "mock:16", "--json"))
    with Context.open(db) as ctx:
        ingest_all([Document(id="a", source="a", text="Rails routing.")], ctx=ctx)
    run = json_of(trails("--db", db, "query", "rails", "--json"))["run_id"]
    given = json_of(trails("--db", db, "audit", "feedback", run, "--up", "--note", "ok",
                           "--json"))
    assert (given["kind"], given["run"], given["rating"], given["note"]) == (
        "feedback", run, "up", "ok")
    with Context.open(db) as ctx:
        assert [f.run_id for f in ctx.audit.feedback_on(run)] == [given["run_id"]]
