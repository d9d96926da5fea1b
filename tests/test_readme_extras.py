"""The README's list of extras names every extra pyproject.toml declares."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_extra_is_in_the_readme():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    readme = (ROOT / "README.md").read_text()
    missing = sorted(name for name in extras if f"trails[{name}]" not in readme)
    assert not missing, f"extras the README does not name: {missing}"
