"""The framework adapters' examples (examples/langchain_retriever.py,
examples/llamaindex_retriever.py) run as a user runs them, and say what they claim."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT


def run_example(name: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    run = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.splitlines()


def _hits(lines: list[str]) -> list[str]:
    return [line for line in lines if line.split(" ", 1)[0].replace(".", "").isdigit()]


@pytest.mark.parametrize("name, extra", [("langchain_retriever.py", "langchain_core"),
                                         ("llamaindex_retriever.py", "llama_index.core")])
def test_the_example_retrieves_only_what_its_filter_admits(name, extra):
    pytest.importorskip(extra)
    lines = run_example(name)
    hits = _hits(lines)
    # Three notes; the filter admits the two dated 2024 and leaves out the 2023 one.
    assert len(hits) == 2
    assert {h.split()[2] for h in hits} == {"Rivers", "Tea"}
    assert not any("Deltas" in line or "2023-" in line for line in lines)
    assert {h.split()[1] for h in hits} == {"2024-05-01", "2024-08-09"}
    assert "notes/rivers.md): Rivers carry sediment to their deltas." in lines[0] + lines[1]
    (last,) = [line for line in lines if line.startswith("async")]
    assert last.endswith("['Tea']")


def test_the_llamaindex_example_shows_a_model_the_text_and_provenance_only():
    pytest.importorskip("llama_index.core")
    (shown,) = [line for line in run_example("llamaindex_retriever.py")
                if line.startswith("for the model:")]
    assert "Green tea is steamed" in shown and "title: Tea" in shown
    assert "date: 2024-08-09" in shown and "trails://" not in shown
