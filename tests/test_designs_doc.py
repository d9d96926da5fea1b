"""docs/designs.md runs as written: its Python blocks in order in one namespace (their asserts
are the expected answers)."""

from __future__ import annotations

import re

from conftest import ROOT

DOC = ROOT / "docs" / "designs.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def test_the_design_mapping_runs_as_written():
    blocks = BLOCK.findall(DOC.read_text())
    assert len(blocks) >= 6
    namespace: dict[str, object] = {}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - the doc's own code


COMMAND = re.compile(r"`(trails (?:[a-z]+ )*?[a-z]+(?: [A-Z]+)?(?: [^`]*)?)`")


def test_every_command_the_mapping_names_takes_the_options_it_shows():
    from _cli import run_trails

    named = 0
    for line in COMMAND.findall(DOC.read_text()):
        words = [w for w in line.split() if w not in ("\\|", "|", "...")]
        path = [w for w in words[1:3] if re.fullmatch(r"[a-z]+", w)]
        options = {w.split("=")[0] for w in words if w.startswith("--")}
        if not options:
            continue
        shown = run_trails(*path, "--help", env={"COLUMNS": "300"})
        assert shown.returncode == 0, (line, shown.stderr)
        for option in options:
            named += 1
            assert re.search(rf"{re.escape(option)}\b", shown.stdout), (line, option)
    assert named >= 6
