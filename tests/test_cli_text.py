"""What a user put in a document (a title, a passage, a literal, a query) reaches the terminal
as it is: the commands' tables and lines never read it as rich markup."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from trails.cli import app

runner = CliRunner()

# Closes a tag that was never opened (rich refuses to render it), then opens a style.
HOSTILE = "[/x] Brackets [red]alarm[/red] [bold]"


def trails(*args: object):
    # A wide terminal: table cells fold at its width, and the checks read them whole.
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "400"})


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "odd.md").write_text(f"---\ntitle: '{HOSTILE}'\n---\n{HOSTILE} rails elephant\n")
    db = tmp_path / "kb"
    for args in (("init", "--model", "mock:16"), ("ingest", notes, "--quiet")):
        result = trails("--db", db, *args)
        assert result.exit_code == 0, result.output
    return db


def test_query_prints_a_title_and_passage_with_brackets_as_they_are(kb):
    result = trails("--db", kb, "query", "rails", "--mode", "hybrid")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("[/x]") >= 2 and "[red]alarm[/red]" in result.stdout


def test_sparql_rows_print_a_literal_with_brackets_as_it_is(kb):
    result = trails("--db", kb, "sparql",
                    "SELECT ?t WHERE { ?d schema:name ?t }")
    assert result.exit_code == 0, result.output
    assert HOSTILE.strip() in result.stdout


def test_audit_show_prints_a_query_with_brackets_as_it_is(kb):
    answer = trails("--db", kb, "query", f"{HOSTILE} rails", "--mode", "hybrid", "--json")
    assert answer.exit_code == 0, answer.output
    run = json.loads(answer.stdout)["run_id"]
    assert run is not None
    shown = trails("--db", kb, "audit", "show", run)
    assert shown.exit_code == 0, shown.output
    assert "[/x] Brackets [red]alarm[/red]" in shown.stdout


def test_query_prints_a_note_quoting_a_binding_with_brackets_as_it_is(kb):
    # The filter matches nothing, so a note names the binding (brackets and all).
    result = trails("--db", kb, "query", "rails", "--sparql",
                    "SELECT ?iri WHERE { ?iri schema:isPartOf ?x }", "--bind", "x=urn:a[/y]")
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    assert "urn:a[/y]" in result.stdout


def test_the_query_table_shows_a_clean_snippet_cut_at_a_word(kb, tmp_path):
    long = tmp_path / "long"
    long.mkdir()
    (long / "long.md").write_text("## Heading\n\n" + "**rails** elephant " * 40 + "\n")
    assert trails("--db", kb, "ingest", long, "--quiet").exit_code == 0
    result = trails("--db", kb, "query", "rails elephant", "--json")
    hit = next(h for h in json.loads(result.stdout)["hits"] if h["source"].endswith("long.md"))
    table = trails("--db", kb, "query", "rails elephant")
    assert "## Heading" not in table.stdout and "**rails**" not in table.stdout
    assert "…" in table.stdout and hit["snippet"].startswith("## Heading")


# Clears the screen, sets the window title, colours what follows red; a carriage return
# would print "over" on top of what came before it on the line.
ESCAPES = "seal\x1b[2J\x1b]0;owned\x07 \x1b[31mred\rover\x9b1A"


def test_control_characters_a_searcher_recorded_reach_the_terminal_written_out(kb):
    # A query or caller recorded through any client reached the analyst's terminal raw in
    # trails audit and audit show: escape sequences could clear or repaint the listing.
    from trails import retrieve
    from trails.context import Context

    with Context.open(kb) as ctx:
        run = retrieve(ESCAPES, ctx, caller=f"eve{ESCAPES}").run_id
        ctx.audit.feedback(run, "down", note=f"note{ESCAPES}", caller="ann")
    listed = trails("--db", kb, "audit")
    shown = trails("--db", kb, "audit", "show", run)
    for result in (listed, shown):
        assert result.exit_code == 0, result.output
        assert not any(c in result.stdout for c in "\x1b\x07\r\x9b")
        assert "seal\\x1b[2J\\x1b]0;owned\\x07 \\x1b[31mred" in result.stdout
    assert "eve" in listed.stdout and "\\x9b1A" in shown.stdout
    assert ": noteseal\\x1b[2J" in shown.stdout  # the feedback line


RAW = ("\x1b", "\x07", "\x9b")  # what must never reach the terminal as it is


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A context holding a title and passage with escape sequences (C0 and C1), and a
    source whose file name holds one that fails to ingest."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "odd.jsonl").write_text(json.dumps(
        {"id": "odd", "title": f"T{ESCAPES}", "text": f"rails elephant {ESCAPES}"}) + "\n")
    (notes / "bad\x1b[2J.jsonl").write_text("{not json\n")
    db = tmp_path / "kb"
    assert trails("--db", db, "init", "--model", "mock:16").exit_code == 0
    ingested = trails("--db", db, "ingest", notes, "--quiet")
    assert ingested.exit_code == 2, ingested.output  # one document failed
    return db, ingested


def test_ingest_writes_out_the_escapes_in_a_failed_sources_name(hostile):
    _, ingested = hostile
    assert "bad\\x1b[2J.jsonl" in ingested.output  # the failure names its source
    assert not any(c in ingested.output for c in RAW)


def test_query_writes_out_the_escapes_a_note_quotes(hostile):
    # A binding that looks like an IRI gets a note quoting it; the note reached the terminal
    # raw (its --bind x=<...> part is not a repr).
    result = trails("--db", hostile[0], "query", "rails", "--sparql",
                    "SELECT ?iri WHERE { ?iri schema:isPartOf ?x }",
                    "--bind", "x=urn:a\x1b[2J\x9b1A")
    assert result.exit_code == 0, result.output
    assert "--bind x=<urn:a\\x1b[2J\\x9b1A>" in result.output
    assert not any(c in result.output for c in RAW)


def test_json_and_n_triples_escape_c1_controls_and_read_back_the_same(hostile):
    answer = trails("--db", hostile[0], "query", "rails", "--json")
    assert answer.exit_code == 0, answer.output
    assert not any(c in answer.stdout for c in RAW)
    (hit,) = [h for h in json.loads(answer.stdout)["hits"] if h["title"].startswith("T")]
    assert "\x9b1A" in hit["title"]  # the JSON still holds the text as recorded
    triples = trails("--db", hostile[0], "sparql",
                     "CONSTRUCT { <urn:a> <urn:b> ?t } WHERE { ?d schema:name ?t }")
    assert triples.exit_code == 0, triples.output
    assert not any(c in triples.stdout for c in RAW)
    (triple,) = ox.parse(triples.stdout.encode(), format=ox.RdfFormat.N_TRIPLES)
    assert triple.object.value.endswith("over\x9b1A")


def test_an_error_quoting_a_path_writes_its_escapes_out(tmp_path):
    result = trails("--db", tmp_path / "kb\x1b[2J\x9b1A", "audit")
    assert result.exit_code == 1
    assert "kb\\x1b[2J\\x9b1A holds no trails context" in result.output
    assert not any(c in result.output for c in RAW)
