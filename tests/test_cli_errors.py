"""Every command answers hostile arguments with one line and a documented exit code.

1 for a user's mistake, 2 for a partial failure, 3 for a context whose files cannot be read
or written, 4 for a bug in trails; never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from trails.cli import app
from trails.cli import query as query_module

runner = CliRunner()


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli-errors")
    (root / "memo.md").write_text("---\ntitle: Memo\n---\nHarbour boats rest at the quay.\n")
    db = root / "kb"
    assert runner.invoke(app, ["--db", str(db), "init", "--model", "mock"]).exit_code == 0
    assert runner.invoke(app, ["--db", str(db), "ingest", str(root / "memo.md")]).exit_code == 0
    return db


HOSTILE = [
    ["query", "harbour", "-k", "99999999999999999999"],
    ["query", "harbour", "-k", "-1"],
    ["query", "harbour", "-k", "1e3"],
    ["query", "harbour", "--mode", "nonsense"],
    ["query", "harbour", "--scope", "no-such-scope"],
    ["query", "harbour", "--scope", "../../etc"],
    ["query", "harbour", "--bind", "x=1"],
    ["query", "harbour", "--mode", "hybrid", "--sparql", "SELECT ?iri WHERE { ?iri ?p }"],
    ["query", "harbour", "--mode", "hybrid", "--sparql",
     "SELECT ?iri WHERE { SERVICE <http://127.0.0.1:9/> { ?iri ?p ?o } }"],
    ["query", "harbour", "--mode", "hybrid", "--sparql",
     "SELECT ?iri WHERE { ?iri schema:isPartOf ?d }", "--bind", "d=<not an iri>"],
    ["query", "harbour", "--mode", "hybrid", "--sparql", "SELECT ?iri WHERE " + "{" * 5000],
    ["sparql", "SELECT * WHERE {"],
    ["sparql", "SELECT ?s WHERE { ?s ?p ?o }", "--scope", "123"],
    ["sparql", "DELETE WHERE { ?s ?p ?o }"],
    ["ingest", "/no/such/path"],
    ["ingest", "--base-iri", "not a base", "/no/such/path"],
    ["delete", "no-such-document.md"],
    ["load", "/no/such/file.ttl"],
    ["export", "-o", "/no/such/dir/out.ttl"],
    ["stats", "--unknown-option"],
    ["verify", "--repair", "extra-argument"],
]


@pytest.mark.parametrize("args", HOSTILE, ids=lambda a: " ".join(a)[:60])
def test_hostile_arguments_get_one_line_and_a_documented_code(kb, args):
    result = runner.invoke(app, ["--db", str(kb), *args])
    assert result.exit_code in (1, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1, result.output


def test_the_context_is_unharmed_after_them(kb):
    result = runner.invoke(app, ["--db", str(kb), "query", "harbour", "--json"])
    assert result.exit_code == 0 and "Harbour boats" in result.output
    assert runner.invoke(app, ["--db", str(kb), "verify"]).exit_code == 0


def test_a_bug_is_exit_4_in_one_line(kb, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a key that should have been there")

    monkeypatch.setattr(query_module, "retrieve", broken)
    result = runner.invoke(app, ["--db", str(kb), "query", "harbour"])
    assert result.exit_code == 4, result.output
    assert "internal error" in result.output and "KeyError" in result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1
