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
