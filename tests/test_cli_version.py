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


def test_python_dash_m_trails_in_a_fresh_process_is_the_command_too(tmp_path):
    """``python -m trails``, what one types after ``pip install trails`` without the script on
    PATH, runs the same command as ``trails`` (it used to say the package cannot be run)."""
    done = subprocess.run([sys.executable, "-m", "trails", "--version"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"trails {importlib.metadata.version('trails')}\n"
    missing = subprocess.run([sys.executable, "-m", "trails", "--db", str(tmp_path / "none"),
                              "stats"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120, check=False)
    assert missing.returncode == 1
    assert "holds no trails context" in missing.stderr
    assert "Traceback" not in missing.stderr
