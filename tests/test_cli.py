"""The ``trails`` command: every command, its exit codes, its output shapes, and its docs.

Most tests call the CLI in-process with typer's CliRunner; the ones about exit codes,
tracebacks and a second process holding the context run the real command in subprocesses.
Contexts use ``--model mock:32`` so nothing loads a model.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _cli import run_trails as run_here
from conftest import ROOT
from trails.cli import app, make_embedder, parse_binding
from trails.kg import IRI

runner = CliRunner()

SINCE_FILTER = """
SELECT ?iri WHERE {
  ?iri schema:isPartOf ?doc .
  ?doc schema:dateCreated ?created .
  FILTER(?created >= ?since)
}
"""


def trails(*args: str, input: str | None = None, env: dict[str, str] | None = None):
    """Run ``trails ARGS`` in-process; stdout and stderr are kept apart."""
    return runner.invoke(app, [str(a) for a in args], input=input, env=env)


def run_trails(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``trails ARGS`` as a real process, the way a shell would."""
    return subprocess.run([sys.executable, "-m", "trails.cli", *map(str, args)], input=input,
                          capture_output=True, text=True, timeout=120, check=False)


def one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """Two dated Markdown notes (2023 and 2024) and a plain-text one."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "old.md").write_text(
        "---\ntitle: Old\ndate: 2023-05-01\n---\nRails is a web framework written in Ruby.\n")
    (folder / "new.md").write_text(
        "---\ntitle: New\ndate: 2024-06-01\n---\nRails 8 ships a new deployment tool.\n")
    (folder / "zoo.txt").write_text("Elephants are large mammals that live in herds.\n")
    return folder


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """An empty context made by ``trails init --model mock:32``."""
    path = tmp_path / "kb"
    result = trails("--db", path, "init", "--model", "mock:32")
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def kb(db: Path, notes: Path) -> Path:
    """The context with the notes ingested."""
    result = trails("--db", db, "ingest", notes, "--quiet")
    assert result.exit_code == 0, result.output
    return db


def since_file(tmp_path: Path) -> Path:
    path = tmp_path / "since.rq"
    path.write_text(SINCE_FILTER)
    return path


# ------------------------------------------------------------------------------- init

def test_init_creates_a_context_that_records_the_model(db):
    assert (db / "trails.json").is_file()
    stats = json.loads(trails("--db", db, "stats", "--json").stdout)
    assert stats["embedder"].startswith("trails-mock-bow")
    assert "dim=32" in stats["embedder"]
    assert stats["documents"] == 0


def test_init_again_is_a_no_op_but_refuses_another_model(db):
    again = trails("--db", db, "init")
    assert again.exit_code == 0
    assert "already holds a trails context" in again.stdout
    other = trails("--db", db, "init", "--model", "mock:16")
    assert other.exit_code == 1
    assert "dim=32" in one_line_error(other.stderr)


def test_init_refuses_a_directory_that_is_not_empty(tmp_path):
    (tmp_path / "something.txt").write_text("mine")
    result = trails("--db", tmp_path, "init", "--model", "mock:32")
    assert result.exit_code == 1
    assert "not an empty directory" in one_line_error(result.stderr)
    assert not (tmp_path / "trails.json").exists()


def test_db_and_model_come_from_the_environment(tmp_path):
    env = {"TRAILS_DB": str(tmp_path / "kb"), "TRAILS_MODEL": "mock:16"}
    assert trails("init", env=env).exit_code == 0
    stats = json.loads(trails("stats", "--json", env=env).stdout)
    assert "dim=16" in stats["embedder"]


def test_without_db_the_error_names_the_option_and_the_variable():
    result = trails("stats")
    assert result.exit_code == 1
    line = one_line_error(result.stderr)
    assert "--db" in line and "TRAILS_DB" in line


def test_a_directory_without_a_context_points_at_init(tmp_path):
    result = trails("--db", tmp_path / "missing", "query", "rails")
    assert result.exit_code == 1
    assert "trails --db" in one_line_error(result.stderr) and "init" in result.stderr


@pytest.mark.parametrize(("spec", "dim"), [("mock", 384), ("mock:8", 8)])
def test_model_specs(spec, dim):
    assert make_embedder(spec).dim == dim


@pytest.mark.parametrize("spec", ["mock:0", "mock:x", "no-such-model"])
def test_bad_model_specs_are_user_errors(tmp_path, spec):
    result = trails("--db", tmp_path / "kb", "init", "--model", spec)
    assert result.exit_code == 1
    one_line_error(result.stderr)
    assert not (tmp_path / "kb" / "trails.json").exists()


# ------------------------------------------------------------------------------- ingest

def test_ingest_prints_a_summary(db, notes):
    result = trails("--db", db, "ingest", notes)
    assert result.exit_code == 0, result.output
    assert "3 documents ingested, 0 skipped, 0 failed, 3 chunks in" in result.stdout
    assert result.stderr == ""


def test_an_undecodable_file_is_a_partial_failure_listed_at_the_end(db, notes):
    (notes / "broken.txt").write_bytes(b"\xff\xfd\x00bad")
    result = trails("--db", db, "ingest", notes)
    assert result.exit_code == 2
    assert "3 documents ingested, 0 skipped, 1 failed" in result.stdout
    [failure] = result.stderr.strip().splitlines()
    assert failure.startswith(str(notes / "broken.txt") + ": ")
    assert "UTF-8" in failure
    assert json.loads(trails("--db", db, "stats", "--json").stdout)["documents"] == 3


def test_reingesting_unchanged_files_reports_them_skipped(kb, notes):
    result = trails("--db", kb, "ingest", notes)
    assert result.exit_code == 0
    assert "0 documents ingested, 3 skipped, 0 failed, 0 chunks" in result.stdout


def test_ingest_into_a_scope_with_include(kb, notes):
    result = trails("--db", kb, "ingest", notes, "--scope", "team", "--include", "*.md")
    assert "2 documents ingested" in result.stdout
    assert json.loads(trails("--db", kb, "stats", "--json").stdout)["scopes"] == ["default", "team"]
    hits = json.loads(trails("--db", kb, "query", "elephants", "--scope", "team", "--json").stdout)["hits"]
    assert hits and all(h["metadata"]["scope"] == "team" for h in hits)
    assert not any("zoo" in h["iri"] for h in hits)


def test_a_missing_path_is_a_user_error_before_anything_runs(db, tmp_path):
    result = trails("--db", db, "ingest", tmp_path / "nope")
    assert result.exit_code == 1
    assert "does not exist" in one_line_error(result.stderr)


# ------------------------------------------------------------------------------- query

def test_query_prints_a_table_and_the_explanation(kb, notes):
    result = trails("--db", kb, "query", "Rails web framework", "-k", "2",
                    env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    header = next(line for line in out.splitlines() if "snippet" in line)
    assert [c.strip() for c in header.strip("┃│ ").split("┃")] == [
        "#", "score", "title", "date", "source", "iri", "snippet"]
    assert "Rails is a web framework written in Ruby." in out
    assert "trails://local/doc/old.md/" in out
    row = next(line for line in out.splitlines() if "trails://local/doc/old.md/" in line)
    assert "Old" in row and "2023-05-01" in row and "old.md" in row  # where the hit comes from
    assert out.strip().splitlines()[-1].startswith("2 hits, mode=hybrid, plan=")


def test_query_json_is_the_whole_result_and_nothing_else(kb, notes):
    result = trails("--db", kb, "query", "Rails", "--json", "--mode", "vector", "--k", "2")
    assert result.exit_code == 0
    answer = json.loads(result.stdout)  # the whole of stdout is JSON
    assert set(answer) == {"hits", "mode", "plan", "candidates", "exhaustive", "rankings",
                           "fusion_weights", "notes", "degraded", "filter_path", "run_id"}
    assert answer["mode"] == "vector" and answer["plan"] == "full-scan"
    assert answer["candidates"] is None and answer["exhaustive"] is True
    assert answer["filter_path"] is None  # no filter
    recorded = trails("--db", kb, "audit", "show", answer["run_id"], "--json")
    assert recorded.exit_code == 0 and json.loads(recorded.stdout)["query"] == "Rails"
    hits = answer["hits"]
    assert len(hits) == 2
    by_title = {"Old": ("old.md", "2023-05-01"), "New": ("new.md", "2024-06-01")}
    for hit in hits:
        assert set(hit) == {"iri", "score", "components", "document", "title", "date",
                            "source", "snippet", "admitted_by", "metadata"}
        assert hit["components"]["vector"] == hit["score"]  # vector mode: the cosine
        assert isinstance(hit["score"], float)
        assert hit["metadata"]["iri"] == hit["iri"]
        # provenance, as the notes were written (front matter, file names)
        name, date = by_title[hit["title"]]
        assert hit["date"] == date
        assert Path(hit["source"]).name == name and Path(hit["source"]).parent.name == "notes"
        assert hit["document"] == f"trails://local/doc/{name}"
        assert hit["iri"].startswith(hit["document"] + "/")
        assert hit["admitted_by"] is None  # not asked for (--why)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert "Rails" in hits[0]["snippet"]


def test_query_json_hybrid_carries_the_fusion(kb):
    answer = json.loads(trails("--db", kb, "query", "Rails deployment", "--json").stdout)
    assert answer["mode"] == "hybrid"
    assert answer["rankings"] == ["vector", "keyword"]
    assert set(answer["fusion_weights"]) == {"vector", "keyword"}
    rrf = json.loads(trails("--db", kb, "query", "Rails deployment", "--json",
                            "--fusion", "rrf").stdout)
    assert rrf["fusion_weights"] == {}
    with_why = json.loads(trails("--db", kb, "query", "Rails", "--json", "--sparql",
                                 SINCE_FILTER, "--bind", "since=2024-01-01", "--why").stdout)
    assert with_why["candidates"] >= 1
    assert [h["admitted_by"]["iri"] for h in with_why["hits"]] == [
        f"<{h['iri']}>" for h in with_why["hits"]]


def test_query_fusion_option(kb):
    def run(*fusion: str) -> list[dict]:
        result = trails("--db", kb, "query", "Rails routing", "--json", "--k", "3", *fusion)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["hits"]

    default, auto, none = run(), run("--fusion", "auto"), run("--fusion", "none")
    assert default == auto
    assert all("auto" in h["components"] for h in auto)
    assert all("auto" not in h["components"] and h["components"]["vector"] == h["score"]
               for h in none)
    assert all("rrf" in h["components"] for h in run("--fusion", "rrf"))
    assert trails("--db", kb, "query", "x", "--fusion", "magic").exit_code != 0


def test_bind_a_date_restricts_the_hybrid_candidates(kb, tmp_path):
    rq = since_file(tmp_path)

    def docs(since: str) -> set[str]:
        result = trails("--db", kb, "query", "Rails", "--sparql", rq, "--bind",
                        f"since={since}", "--json")
        assert result.exit_code == 0, result.output
        return {h["metadata"]["doc_iri"] for h in json.loads(result.stdout)["hits"]}

    assert docs("2024-01-01") == {"trails://local/doc/new.md"}
    assert docs("2000-01-01") == {"trails://local/doc/new.md", "trails://local/doc/old.md"}
    assert docs("2025-01-01") == set()


def test_the_filter_can_come_from_stdin(kb):
    result = trails("--db", kb, "query", "Rails", "--sparql", "-", "--bind", "since=2024-01-01",
                    "--json", input=SINCE_FILTER)
    assert result.exit_code == 0, result.output
    assert [h["metadata"]["doc_iri"] for h in json.loads(result.stdout)["hits"]] == [
        "trails://local/doc/new.md"]


@pytest.mark.parametrize("how", ["inline", "file", "stdin"])
def test_the_filter_is_inline_text_a_file_or_stdin_with_the_same_answer(kb, tmp_path, how):
    given = {"inline": (SINCE_FILTER, None), "file": (since_file(tmp_path), None),
             "stdin": ("-", SINCE_FILTER)}[how]
    result = trails("--db", kb, "query", "Rails", "--sparql", given[0], "--bind",
                    "since=2024-01-01", "--json", input=given[1])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["candidates"] == 1  # new.md has one chunk
    assert [h["document"] for h in answer["hits"]] == ["trails://local/doc/new.md"]


def test_a_missing_filter_file_is_named_not_parsed_as_sparql(kb, tmp_path):
    result = trails("--db", kb, "query", "Rails", "--sparql", tmp_path / "nowhere.rq")
    assert result.exit_code == 1
    message = one_line_error(result.stderr)
    assert "nowhere.rq" in message and "no such query file" in message


def test_a_query_on_an_empty_context_says_how_to_ingest(db):
    for args in ([], ["--json"]):
        result = trails("--db", db, "query", "anything", *args)
        assert result.exit_code == 0, result.output  # not an error: the answer is empty
        assert f"trails --db {db} ingest" in result.stderr
        assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["hits"] == []


def test_an_empty_answer_from_a_full_context_gives_no_ingest_hint(kb, tmp_path):
    result = trails("--db", kb, "query", "Rails", "--sparql", since_file(tmp_path),
                    "--bind", "since=2099-01-01", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["hits"] == []
    assert "ingest" not in result.stderr


def test_graph_mode_returns_the_filter_iris_without_scores(kb, tmp_path):
    result = trails("--db", kb, "query", "ignored", "--mode", "graph", "--sparql",
                    since_file(tmp_path), "--bind", "since=2024-01-01", "--json")
    assert result.exit_code == 0, result.output
    [hit] = json.loads(result.stdout)["hits"]
    assert hit["score"] is None and hit["metadata"]["doc_iri"] == "trails://local/doc/new.md"
    table = trails("--db", kb, "query", "x", "--mode", "graph", "--sparql",
                   since_file(tmp_path), "--bind", "since=2024-01-01")
    assert "mode=graph" in table.stdout


def test_graph_mode_without_a_filter_is_a_user_error(kb):
    result = trails("--db", kb, "query", "Rails", "--mode", "graph")
    assert result.exit_code == 1
    assert "mode='graph' needs a sparql_filter" in one_line_error(result.stderr)


def test_an_unknown_mode_is_a_user_error_listing_the_modes(kb):
    result = trails("--db", kb, "query", "Rails", "--mode", "fuzzy")
    assert result.exit_code == 1
    line = one_line_error(result.stderr)
    assert all(mode in line for mode in ("vector", "hybrid", "graph"))


def test_a_malformed_filter_is_a_user_error(kb, tmp_path):
    bad = tmp_path / "bad.rq"
    bad.write_text("SELECT ?iri WHERE { ?iri ")
    result = trails("--db", kb, "query", "Rails", "--sparql", bad)
    assert result.exit_code == 1
    one_line_error(result.stderr)


def test_a_bad_binding_is_a_user_error(kb, tmp_path):
    for binding in ("since", "since=2024-13-01", "since:when=2024-01-01", "nope=1"):
        result = trails("--db", kb, "query", "Rails", "--sparql", since_file(tmp_path),
                        "--bind", binding)
        assert result.exit_code == 1, binding
        one_line_error(result.stderr)


@pytest.mark.parametrize(("text", "expected"), [
    ("d=2024-01-01", dt.date(2024, 1, 1)),
    ("d=2024-01-01T10:30:00", dt.datetime(2024, 1, 1, 10, 30)),
    ("d=2024-01-01T10:30:00+02:00",
     dt.datetime(2024, 1, 1, 10, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
    ("n=42", 42),
    ("n=-7", -7),
    ("x=1.5", 1.5),
    ("x=1e3", 1000.0),
    ("b=true", True),
    ("b=false", False),
    ("i=<https://example.org/a>", IRI("https://example.org/a")),
    ("s=hello world", "hello world"),
    ("s=", ""),
    ("s=a=b", "a=b"),
    ("n:str=42", "42"),
    ("d:str=2024-01-01", "2024-01-01"),
    ("x:float=2", 2.0),
    ("i:iri=https://example.org/b", IRI("https://example.org/b")),
    ("d:datetime=2024-01-01", dt.datetime(2024, 1, 1)),
])
def test_parse_binding(text, expected):
    name, value = parse_binding(text)
    assert name == text.partition("=")[0].partition(":")[0]
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("text", ["novalue", "=1", "n:int=x", "b:bool=yes", "n:kind=1"])
def test_parse_binding_rejects(text):
    with pytest.raises(ValueError, match="--bind"):
        parse_binding(text)


# ------------------------------------------------------------------------------- sparql

SELECT_DATES = "SELECT ?doc ?date WHERE { ?doc schema:dateCreated ?date } ORDER BY ?date"


def test_sparql_select_table_and_json(kb):
    table = trails("--db", kb, "sparql", SELECT_DATES, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "trails://local/doc/old.md" in table.stdout and "2024-06-01" in table.stdout
    assert table.stdout.strip().endswith("2 rows")
    rows = json.loads(trails("--db", kb, "sparql", SELECT_DATES, "--json").stdout)
    date = "http://www.w3.org/2001/XMLSchema#date"
    assert rows == {"head": {"vars": ["doc", "date"]}, "results": {"bindings": [
        {"doc": {"type": "uri", "value": "trails://local/doc/old.md"},
         "date": {"type": "literal", "value": "2023-05-01", "datatype": date}},
        {"doc": {"type": "uri", "value": "trails://local/doc/new.md"},
         "date": {"type": "literal", "value": "2024-06-01", "datatype": date}}]}}


def test_sparql_ask_with_a_binding(kb):
    ask = "ASK { ?doc schema:dateCreated ?date FILTER(?date >= ?since) }"
    assert trails("--db", kb, "sparql", ask, "--bind", "since=2024-01-01").stdout == "true\n"
    assert trails("--db", kb, "sparql", ask, "--bind", "since=2025-01-01").stdout == "false\n"


def test_sparql_from_a_file_or_stdin_and_construct(kb, tmp_path):
    query = tmp_path / "construct.rq"
    query.write_text("CONSTRUCT { ?doc schema:dateCreated ?date } "
                     "WHERE { ?doc schema:dateCreated ?date }")
    lines = trails("--db", kb, "sparql", query).stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.endswith(" .") for line in lines)
    assert trails("--db", kb, "sparql", "-", input="ASK { ?s ?p ?o }").stdout == "true\n"


def test_a_missing_query_file_is_named(kb, tmp_path):
    result = trails("--db", kb, "sparql", tmp_path / "missing.rq")
    assert result.exit_code == 1
    assert "no such query file" in one_line_error(result.stderr)


def test_malformed_sparql_is_one_line_and_exit_1(kb):
    result = trails("--db", kb, "sparql", "SELEC ?x WHERE { ?x ?p ?o }")
    assert result.exit_code == 1
    assert "parse" in one_line_error(result.stderr)


# ------------------------------------------------------------------------------- stats, verify

def test_stats_table_and_json(kb):
    stats = json.loads(trails("--db", kb, "stats", "--json").stdout)
    assert stats["documents"] == 3 and stats["vectors"] == 3 and stats["scopes"] == ["default"]
    assert stats["quads"] > 0
    table = trails("--db", kb, "stats")
    assert table.exit_code == 0
    assert "documents" in table.stdout and "trails-mock-bow" in table.stdout


def test_verify_consistent_exits_0(kb):
    result = trails("--db", kb, "verify")
    assert result.exit_code == 0
    assert result.stdout.strip() == "consistent"
    report = json.loads(trails("--db", kb, "verify", "--json").stdout)
    assert report["ok"] is True and report["repaired"] is False


def test_verify_finds_and_repairs_inconsistencies_with_exit_2(kb):
    from trails.context import Context

    with Context.open(kb) as ctx:  # lose one chunk's vector behind the graph's back
        [chunk] = [h.id for h in ctx.vectors.search([1.0] * 32, 10) if "old.md" in h.id]
        ctx.vectors.delete(chunk)
    found = trails("--db", kb, "verify", "--json")
    assert found.exit_code == 2
    assert json.loads(found.stdout)["chunks_without_vectors"] == [chunk]
    repaired = trails("--db", kb, "verify", "--repair")
    assert repaired.exit_code == 2
    assert "(repaired: " in repaired.stdout
    assert trails("--db", kb, "verify").exit_code == 0


# ------------------------------------------------------------------------------- processes

def test_exit_codes_and_no_traceback_in_a_real_process(kb, notes, tmp_path):
    ok = run_trails("--db", kb, "query", "Rails", "--json", "-k", "1")
    assert ok.returncode == 0, ok.stderr
    assert len(json.loads(ok.stdout)["hits"]) == 1
    bad_mode = run_trails("--db", kb, "query", "Rails", "--mode", "fuzzy")
    assert bad_mode.returncode == 1
    one_line_error(bad_mode.stderr)
    bad_sparql = run_trails("--db", kb, "sparql", "SELECT ?x WHERE {")
    assert bad_sparql.returncode == 1
    one_line_error(bad_sparql.stderr)
    unknown_option = run_trails("--db", kb, "stats", "--frobnicate")
    assert unknown_option.returncode == 1
    one_line_error(unknown_option.stderr)
    (notes / "broken.txt").write_bytes(b"\xff\xfd\x00bad")
    partial = run_trails("--db", kb, "ingest", notes)
    assert partial.returncode == 2
    assert "1 failed" in partial.stdout and "Traceback" not in partial.stderr
    assert run_trails("--help").returncode == 0


_HOLD_OPEN = """
import sys, time
from trails.context import Context
ctx = Context.open(sys.argv[1])
print("ready", flush=True)
time.sleep(600)
"""


def test_read_only_commands_work_while_another_process_writes(kb, notes):
    """The commands run in this process (tests/_cli.py); the writer is another one."""
    writer = subprocess.Popen([sys.executable, "-c", _HOLD_OPEN, str(kb)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        query = run_here("--db", kb, "query", "Rails", "--json")
        assert query.returncode == 0, query.stderr
        assert len(json.loads(query.stdout)["hits"]) == 3
        stats = run_here("--db", kb, "stats", "--json")
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["documents"] == 3
        assert run_here("--db", kb, "sparql", "ASK { ?s ?p ?o }").stdout == "true\n"
        assert run_here("--db", kb, "verify").returncode == 0

        ingest = run_here("--db", kb, "ingest", notes)
        assert ingest.returncode == 1
        line = one_line_error(ingest.stderr)
        assert "another process" in line and "writing" in line
        assert ingest.stdout == ""
        repair = run_here("--db", kb, "verify", "--repair")
        assert repair.returncode == 1
        one_line_error(repair.stderr)
    finally:
        writer.kill()
        writer.wait(timeout=30)
    deadline = time.monotonic() + 30  # the lock is released when the writer is gone
    while run_here("--db", kb, "ingest", notes).returncode != 0:
        assert time.monotonic() < deadline, "the context stayed locked after the writer died"
        time.sleep(0.5)


# ------------------------------------------------------------------------------- help and docs

def test_the_console_script_points_at_main():
    [script] = importlib.metadata.entry_points(group="console_scripts", name="trails")
    assert script.value == "trails.cli.launch:main"


def test_every_command_has_help_with_an_example():
    overview = trails("--help")
    assert overview.exit_code == 0
    for command in ("init", "ingest", "query", "sparql", "stats", "verify"):
        assert command in overview.stdout
        text = trails(command, "--help").stdout
        assert "Example" in text and f"trails --db ./kb {command}" in text, command


def _gen_cli_docs():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "docs" / "gen_cli_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_cli_md_is_the_current_help_output():
    generated = _gen_cli_docs().render()
    checked_in = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert checked_in == generated, "docs/cli.md is stale: run python docs/gen_cli_docs.py"
    for command in ("init", "ingest", "query", "sparql", "stats", "verify"):
        assert f"$ trails {command} --help" in checked_in
    assert "\x1b[" not in checked_in and "\r" not in checked_in


def test_the_cli_imports_no_heavy_package():
    code = ("import sys, trails.cli; heavy = ['torch', 'sentence_transformers', 'transformers', "
            "'openai', 'qdrant_client']; print([m for m in heavy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_cli_is_a_package_of_small_modules_that_import_at_the_top():
    import ast

    import trails.cli

    package = Path(trails.cli.__file__).parent
    modules = sorted(package.glob("*.py"))
    assert {m.stem for m in modules} >= {"commands", "launch", "_common", "setup", "ingest",
                                         "query", "maintenance", "eval"}
    for module in modules:
        text = module.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 400, module.name
        tree = ast.parse(text)
        inner = [node.lineno for function in ast.walk(tree)
                 if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
                 for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)]
        assert inner == [], f"{module.name} imports inside functions at lines {inner}"
