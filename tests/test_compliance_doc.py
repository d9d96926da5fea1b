"""docs/compliance.md runs as written: its Python blocks in order in one namespace (their
asserts are the expected answers), its console commands through the real `trails` command
between them, against a fresh directory and the packaged model."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

from conftest import ROOT

DOC = ROOT / "docs" / "compliance.md"
BLOCK = re.compile(r"```(python|console)\n(.*?)```", re.DOTALL)


def test_the_compliance_walkthrough_runs_as_written(tmp_path, monkeypatch):
    blocks = BLOCK.findall(DOC.read_text())
    assert [kind for kind, _ in blocks].count("python") >= 4
    monkeypatch.setenv("TRAILS_CALLER", "doc-reader")
    namespace: dict[str, object] = {"workdir": str(tmp_path)}
    evidence = None
    ran: list[list[str]] = []
    for kind, code in blocks:
        if kind == "python":
            exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - the doc's own code
            evidence = namespace.get("evidence", evidence)
            continue
        (tmp_path / "since.rq").write_text(str(evidence))
        for line in code.splitlines():
            if not line.startswith("$ trails "):
                continue
            words = [str(namespace["run"]) if w == "RUN" else w
                     for w in shlex.split(line[len("$ trails "):])]
            done = subprocess.run([sys.executable, "-m", "trails.cli", *words], cwd=tmp_path, check=False,
                                  capture_output=True, text=True, timeout=300,
                                  env={**os.environ, "TRAILS_CALLER": "doc-reader", "COLUMNS": "400"})
            assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
            assert "Traceback" not in done.stderr
            ran.append(words)
            if "--why" in words:
                assert "?created=2024-03-12" in done.stdout.replace("\n", "")
            if words[2:4] == ["audit", "show"]:
                assert "analyst@example.org" in done.stdout
    assert [" ".join(w[2:4]) for w in ran] == [
        "query pump seal failure", "audit --since", "audit --since", "audit show",
        "audit feedback", "audit feedback"]
