"""examples/demo.py (``make demo``) run as a newcomer runs it, on a tree of its own: a document
that fails is named with its reason, never only counted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs

pytestmark = needs("sentence_transformers", reason="the demo runs the local model")

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo.py"


@pytest.mark.slow
def test_the_demo_names_each_failed_document_and_why(tmp_path):
    (tmp_path / "examples").mkdir()
    shutil.copy(DEMO, tmp_path / "examples" / "demo.py")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "filters.md").write_text(
        "---\ntitle: Filters\ndate: 2024-05-01\n---\nResults stay exact when filtering: the "
        "SPARQL filter runs first, then exact ranking.\n")
    (tmp_path / "adr").mkdir()
    # An unquoted ": " in a value: not YAML.
    (tmp_path / "adr" / "0099-broken.md").write_text(
        "---\ntitle: Broken\nstatus: Accepted: superseded later\n---\nBody.\n")
    (tmp_path / "adr" / "0100-not-utf8.md").write_bytes(b"caf\xe9 au lait\n")
    run = subprocess.run([sys.executable, str(tmp_path / "examples" / "demo.py")],
                         check=False, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "2 failed" in run.stdout
    failures = [line for line in run.stdout.splitlines() if "failed:" in line]
    assert any("0099-broken.md" in line and "front matter" in line for line in failures), \
        run.stdout
    assert any("0100-not-utf8.md" in line and "UTF-8" in line for line in failures), run.stdout
