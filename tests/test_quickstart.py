"""The README's quickstart runs verbatim and orders the Rails chunks above the elephant."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.DOTALL)


def test_readme_quickstart_prints_rails_chunks_above_the_elephant():
    block = _python_blocks((ROOT / "README.md").read_text())[0]
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.splitlines()
    assert len(out) == 3
    assert "Elephants" in out[-1]
    assert {line.split()[0] for line in out[:2]} == {"trails://app/Chunk/1", "trails://app/Chunk/3"}
    scores = [float(line.split()[1]) for line in out]
    assert scores == sorted(scores, reverse=True)


def test_readme_hybrid_example_finds_the_recent_document_and_not_the_older_one(capsys):
    block = _python_blocks((ROOT / "README.md").read_text())[1]
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - the README's own example
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("1 hits, mode=hybrid, ")
    assert out[1:] == ["trial.md 2024-03-05 The drug lowered blood pressure in most patients."]
