"""What a user put in a document (a title, a passage, a literal, a query) reaches the terminal
as it is: the commands' tables and lines never read it as rich markup."""

from __future__ import annotations

import json
from pathlib import Path

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
