"""``trails query`` through a running ``trails serve``: the same answer, printed the same way,
as the command answering in its own process; and back to its own process whenever the service
cannot answer (gone, killed, --local, an option it does not forward)."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _cli import run_trails
from service_support import ALPHA_DOCS, seeded_context
from trails import Context
from trails.ingest import Document, ingest_all
from trails.service.discovery import SERVICE_FILE, read_service
from trails.testing import MockEmbedder

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "TRAILS_CALLER": "cli-user"}
FILTER = "SELECT ?c WHERE { ?c schema:isPartOf ?d . ?d schema:name ?n . FILTER(?n != ?skip) }"


def trails(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The console script's code path (trails.cli.launch), run here: the service is the other
    process these tests are about, the command that asks it needs no interpreter of its own."""
    return run_trails(*args, input=stdin, env={"TRAILS_CALLER": "cli-user"})


def trails_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The same, as a new process: the console script asking the service end to end."""
    return subprocess.run([sys.executable, "-m", "trails.cli", *args], capture_output=True,
                          text=True, env=ENV, timeout=120, check=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A context served by a real ``trails serve`` process (which also answers the host name
    search.internal); yields its directory and the process."""
    db = tmp_path_factory.mktemp("served") / "kb"
    seeded_context(db).close()
    process = subprocess.Popen([sys.executable, "-m", "trails.cli", "--db", str(db), "serve",
                                "--port", "0", "--log-level", "warning",
                                "--allowed-host", "search.internal"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        deadline = time.monotonic() + 90
        while read_service(db) is None:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "service.json never appeared"
            time.sleep(0.05)
        while True:  # ready: a query goes through the service (its caller says so)
            out = trails("--db", str(db), "query", "glaciers", "--json")
            if out.returncode == 0 and json.loads(out.stdout)["run_id"] and _caller(
                    db, json.loads(out.stdout)["run_id"]).startswith("local:"):
                break
            assert time.monotonic() < deadline, out.stderr
            time.sleep(0.1)
        yield db, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)


def _caller(db: Path, run_id: str) -> str:
    """Who the audit trail says ran ``run_id`` (a reader sees the service's pending log)."""
    with Context.open(db, read_only=True) as ctx:
        for record in [*ctx.audit.pending(), *ctx.audit.activities()]:
            if record.run_id == run_id:
                return record.caller
    raise AssertionError(f"run {run_id} is not recorded")


def without_run_ids(answer: dict) -> dict:
    return {key: value for key, value in answer.items() if key != "run_id"}


@pytest.mark.parametrize("options", [
    ["--scope", "alpha"],
    ["--mode", "vector", "-k", "3", "--scope", "beta"],
    ["--scope", "alpha", "--fusion", "rrf"],
    ["--scope", "alpha", "--scope", "beta", "--min-score", "0.01"],
    ["--sparql", FILTER, "--bind", "skip=a2", "--scope", "alpha", "--why"],
])
def test_a_query_through_the_service_answers_as_the_local_command(served, options):
    db, _ = served
    through = trails("--db", str(db), "query", "glaciers meadows", *options, "--json")
    local = trails("--db", str(db), "query", "glaciers meadows", *options, "--json", "--local")
    assert through.returncode == 0 and local.returncode == 0, (through.stderr, local.stderr)
    via_service, here = json.loads(through.stdout), json.loads(local.stdout)
    assert without_run_ids(via_service) == without_run_ids(here)
    # As printed, not only equal as Python values: a rank came back 1.0 for 1 (1 == 1.0).
    assert json.dumps(without_run_ids(via_service), sort_keys=True) == json.dumps(
        without_run_ids(here), sort_keys=True)
    assert via_service["hits"], "the seeded context answers every one of these"
    assert _caller(db, via_service["run_id"]) == f"local:{getpass.getuser()}"
    assert _caller(db, here["run_id"]) == "cli-user"


def test_a_past_now_is_answered_as_the_local_command_answers_it(served):
    """The service refuses a ``now`` before its clock (a key must not see again what
    retention removed); the terminal's user owns the directory and may look back, so the
    same command answers the same whether or not a service runs."""
    db, _ = served
    options = ["--scope", "alpha", "--now", "2020-01-01T00:00:00+00:00", "--json"]
    through = trails("--db", str(db), "query", "glaciers meadows", *options)
    local = trails("--db", str(db), "query", "glaciers meadows", *options, "--local")
    assert through.returncode == local.returncode == 0, (through.stderr, local.stderr)
    assert without_run_ids(json.loads(through.stdout)) == without_run_ids(
        json.loads(local.stdout))
    assert json.loads(through.stdout)["hits"]


def test_the_table_is_the_same_through_the_service(served):
    db, _ = served
    through = trails_process("--db", str(db), "query", "glaciers", "--scope", "alpha")
    local = trails_process("--db", str(db), "query", "glaciers", "--scope", "alpha", "--local")
    assert through.returncode == local.returncode == 0
    assert through.stdout == local.stdout
    assert ALPHA_DOCS["a1"].split()[0] in through.stdout
    assert "recorded as run" in through.stderr


def test_a_filter_read_from_a_file_and_from_stdin(served, tmp_path):
    db, _ = served
    query_file = tmp_path / "filter.rq"
    query_file.write_text(FILTER)
    from_file = trails("--db", str(db), "query", "glaciers", "--sparql", str(query_file),
                       "--bind", "skip=a1", "--scope", "alpha", "--json")
    from_stdin = trails("--db", str(db), "query", "glaciers", "--sparql", "-", "--bind",
                        "skip=a1", "--scope", "alpha", "--json", stdin=FILTER)
    assert from_file.returncode == from_stdin.returncode == 0, from_file.stderr
    hits = [h["document"] for h in json.loads(from_file.stdout)["hits"]]
    assert hits and all(not doc.endswith("/a1") for doc in hits)
    assert without_run_ids(json.loads(from_stdin.stdout)) == without_run_ids(
        json.loads(from_file.stdout))


@pytest.mark.parametrize("options, message", [
    (["--sparql", "SELECT ?c WHERE { ?c ?p "], "SPARQL"),
    (["--scope", "nosuchscope"], "nosuchscope"),
    (["--mode", "graph"], "mode='graph' needs a sparql_filter selecting the IRIs to return"),
    # Refused by the request (trails.SearchRequest), here and in the service alike.
    (["-k", "three"], "k must be an int from 1 to 1000000, got str 'three'"),
    (["-k", "0"], "k must be an int from 1 to 1000000, got 0"),
    (["--min-score", "nan"], "min_score must be a number, got NaN"),
    (["--fallback", "retry"], "fallback must be 'auto'"),
    (["--now", "yesterday"], "now='yesterday' is no ISO 8601 date-time"),
])
def test_mistakes_fail_the_same_way_through_the_service(served, options, message):
    db, _ = served
    through = trails("--db", str(db), "query", "glaciers", *options)
    local = trails("--db", str(db), "query", "glaciers", *options, "--local")
    assert through.returncode == local.returncode == 1
    for run in (through, local):
        assert run.stderr.startswith("Error: ") and message in run.stderr
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_a_killed_service_leaves_the_command_answering_here(tmp_path):
    db = tmp_path / "kb"
    seeded_context(db).close()
    process = subprocess.Popen([sys.executable, "-m", "trails.cli", "--db", str(db), "serve",
                                "--port", "0", "--log-level", "warning"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    deadline = time.monotonic() + 90
    while read_service(db) is None:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.kill()  # no clean-up: service.json stays, naming a dead process
    process.wait()
    assert (db / SERVICE_FILE).exists()
    answer = trails("--db", str(db), "query", "glaciers", "--scope", "alpha", "--json")
    assert answer.returncode == 0, answer.stderr
    result = json.loads(answer.stdout)
    assert result["hits"][0]["snippet"] == ALPHA_DOCS["a1"]
    assert _caller(db, result["run_id"]) == "cli-user"


def test_a_filter_from_stdin_and_a_large_k_go_through_the_service(served):
    """k above what HTTP used to cap (1,000): one request model, one limit (ADR 0043), so the
    service answers it as Python would, with the filter the command read from stdin."""
    db, _ = served
    answer = trails("--db", str(db), "query", "glaciers", "--sparql", "-", "--bind",
                    "skip=a1", "--scope", "alpha", "-k", "5000", "--json", stdin=FILTER)
    assert answer.returncode == 0, answer.stderr
    result = json.loads(answer.stdout)
    assert result["candidates"] is not None and result["hits"]
    assert all(not h["document"].endswith("/a1") for h in result["hits"])
    assert _caller(db, result["run_id"]) == f"local:{getpass.getuser()}"  # the service's


def test_serve_answers_its_own_and_allowed_hosts_only(served):
    import httpx

    db, _ = served
    info = read_service(db)
    assert info is not None
    with httpx.Client(base_url=info.url, timeout=30) as http:
        statuses = {host: http.get("/health", headers={"Host": host}).status_code
                    for host in ("search.internal", "evil.example", "localhost")}
    assert statuses == {"search.internal": 200, "evil.example": 421, "localhost": 200}


def test_serve_refuses_an_allowed_host_that_is_no_host_name(tmp_path):
    db = tmp_path / "kb"
    seeded_context(db).close()
    out = trails("--db", str(db), "serve", "--port", "0", "--allowed-host", "http://x/")
    assert out.returncode != 0
    assert "no host name" in out.stderr and "Traceback" not in out.stderr


def test_a_query_of_the_empty_default_scope_names_the_scopes_through_the_service(served):
    """The seeded context's documents are in alpha and beta: a query without --scope reads
    the default scope, and says where the documents are, in its own process or not."""
    db, _ = served
    through = trails("--db", str(db), "query", "glaciers", "--json")
    local = trails("--db", str(db), "query", "glaciers", "--json", "--local")
    note = ("note: the default scope, which a search naming no scope reads, holds no "
            "documents; this context's are in the scopes alpha, beta (scope='alpha', "
            "--scope alpha)")
    for answer in (through, local):
        assert answer.returncode == 0, answer.stderr
        assert json.loads(answer.stdout)["hits"] == []
        assert note in answer.stderr, answer.stderr
    assert _caller(db, json.loads(through.stdout)["run_id"]).startswith("local:")


@pytest.mark.parametrize("options", [[], ["--read-only"]], ids=["writable", "read-only"])
def test_a_second_serve_of_a_served_directory_is_refused_naming_the_first(served, options):
    """One service per directory: a second (even read-only, which would answer from the data
    as it was when it opened) is refused naming the one that serves it, and leaves the first's
    service.json in place, which `trails query` and the write commands read."""
    db, process = served
    before = read_service(db)
    second = subprocess.run([sys.executable, "-m", "trails.cli", "--db", str(db), "serve",
                             "--port", "0", "--log-level", "warning", *options],
                            capture_output=True, text=True, env=ENV, timeout=60, check=False)
    assert second.returncode == 1, second.stderr
    line = second.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: ") and "Traceback" not in second.stderr
    assert f"already served by `trails serve` (pid {process.pid}, {before.url})" in line
    assert read_service(db) == before


def test_serve_on_a_port_in_use_is_a_user_error_naming_the_port(tmp_path):
    """uvicorn's own exit (3, its startup failure) left the command: the code trails gives a
    context whose files cannot be read or written, with no line of trails' own."""
    db = tmp_path / "kb"
    seeded_context(db).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = trails("--db", str(db), "serve", "--port", str(port), "--log-level", "warning")
    assert out.returncode == 1, out.stderr
    error = out.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: ") and f"127.0.0.1:{port}" in error, out.stderr
    assert "--port 0" in error and "Traceback" not in out.stderr
    assert read_service(db) is None
    with Context.open(db) as ctx:  # let go of: the next writer opens it
        assert ctx.vectors.count() == 4


@pytest.mark.parametrize("command", [
    ["delete", "trails://local/doc/a1"], ["verify", "--repair"], ["prune", "--expired"],
    ["link"], ["ingest", "{db}/trails.json"]])
def test_a_write_beside_a_running_service_says_how_instead_of_waiting(served, command):
    """Every writing command, while `trails serve` holds the context: one line naming the
    service and how to write (stop it, or the HTTP call), never "wait for it to finish"."""
    db, process = served
    answer = trails("--db", str(db), *[part.format(db=db) for part in command])
    assert answer.returncode == 1, answer.stderr
    error = answer.stderr.strip()
    assert "wait for it to finish" not in error and "Traceback" not in error
    assert f"pid {process.pid}" in error and "/ingest" in error and len(error.splitlines()) == 1


def test_the_console_script_loads_no_engine_before_it_asks_the_service():
    """What ``trails`` imports before it knows whether a service answers: no store, model,
    array or HTTP package (the service path's speed is that it loads none of them)."""
    heavy = ("numpy", "httpx", "pydantic", "onnxruntime", "tokenizers", "torch", "typer",
             "trails.context", "trails.kg.oxigraph", "trails.kg.base", "trails.vector",
             "trails.ingest", "trails.retrieval")
    probe = ("import sys, trails.cli.launch; "
             f"print(' '.join(m for m in {heavy!r} if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=ENV,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == []


def test_a_copy_of_a_served_context_answers_from_the_copy(served, tmp_path):
    """`cp -a kb kb2` while kb is served copies its service.json: `trails --db kb2 query`
    went to kb's service and answered from kb (another context, without a word), even after
    kb2 was changed."""
    db, _ = served
    copy = tmp_path / "kb2"
    with Context.open(copy, embedder=MockEmbedder(dim=32)) as ctx:  # the copy, since changed
        ingest_all([Document(id="c1", source="c1", text="Glaciers calve icebergs.")],
                   ctx=ctx, scope="alpha")
    shutil.copy2(db / SERVICE_FILE, copy / SERVICE_FILE)
    assert read_service(copy) is None  # the service serves another directory
    out = trails("--db", str(copy), "query", "glaciers", "--scope", "alpha", "--json")
    assert out.returncode == 0, out.stderr
    assert [hit["source"] for hit in json.loads(out.stdout)["hits"]] == ["c1"]
    assert read_service(db) is not None  # the served directory still finds its service


def test_serve_beside_another_writer_says_so_as_the_other_commands_do(tmp_path):
    """A writer that is no service (an ingest under way): `trails serve` says to wait for it,
    in the command line's words, not the Python API's ("open this one with read_only=True")."""
    db = tmp_path / "kb"
    seeded_context(db).close()
    with Context.open(db, embedder=MockEmbedder(dim=32)):  # the other writer, this process
        second = subprocess.run([sys.executable, "-m", "trails.cli", "--db", str(db), "serve",
                                 "--port", "0", "--log-level", "warning"],
                                capture_output=True, text=True, env=ENV, timeout=60,
                                check=False)
    assert second.returncode == 1, second.stderr
    line = second.stderr.strip().splitlines()[-1]
    assert line == (f"Error: {db} is open for writing in another process (one writer at a "
                    "time); wait for it to finish. Read-only commands (query, sparql, stats, "
                    "verify) work meanwhile.")
