"""The project speaks of itself: no text in it names a folder of one particular machine or the
tooling it was made with, so a reader elsewhere never meets a path that is not theirs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Written in pieces so that this file does not match itself.
FORBIDDEN = re.compile("|".join([
    "/" + "work/",          # the folder these machines keep projects in
    r"\." + "mirror/",      # where repositories were copied to
    "tool " + "library",    # the tooling beside the project
]))


def tracked_texts() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in listed
            if name.endswith((".py", ".md", ".toml", ".txt", ".ttl", ".json", ".yml", ".cfg"))
            or name in ("Makefile", ".ci/run")]


def test_no_text_names_a_machine_folder_or_the_tooling() -> None:
    found = []
    for path in tracked_texts():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "\n".join(found)


def test_the_pattern_finds_what_it_is_for() -> None:
    assert FORBIDDEN.search("MIRRORS = Path('/" + "work/.mirror')")
    assert FORBIDDEN.search("the tool " + "library's fetch")
    assert not FORBIDDEN.search("a git clone of the repository, given with --git-dir")
