"""`trails --version` prints the installed version and exits 0, without a context."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys


def test_version_prints_the_installed_version(tmp_path):
    done = subprocess.run([sys.executable, "-m", "trails.cli", "--version"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"trails {importlib.metadata.version('trails')}\n"
