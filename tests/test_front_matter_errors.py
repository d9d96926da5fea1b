"""Every front-matter error says where it is and what to do; the project's own Markdown
(ADRs, docs) has valid front matter, since the README ingests it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trails.ingest.frontmatter import load_front_matter

ROOT = Path(__file__).resolve().parent.parent

BROKEN = {
    "a colon in a value": ("title: t\nstatus: accepted (amends ADR 9: FTS5)\n", 2, "quoted"),
    "a comment mark in a flow": ("tags: [a, b\n", 2, "quoted"),
    "an alias-like start": ("title: *draft\n", 1, "quoted"),
    "a tab indent": ("a:\n\tb: 1\n", 2, "spaces"),
    "an open quote": ('title: "unfinished\n', 2, "quoted"),
    "a stray at-sign": ("owner: @me\n", 1, "quoted"),
}


@pytest.mark.parametrize(("text", "line", "hint"), BROKEN.values(), ids=BROKEN.keys())
def test_every_front_matter_error_names_the_line_and_what_to_do(text, line, hint):
    with pytest.raises(ValueError) as caught:
        load_front_matter(text)
    message = str(caught.value)
    assert "\n" not in message
    assert f"at line {line}," in message
    assert hint in message


@pytest.mark.parametrize("path", sorted([*ROOT.glob("adr/*.md"), *ROOT.glob("docs/*.md"),
                                         ROOT / "README.md"]), ids=lambda p: p.name)
def test_the_projects_own_front_matter_parses(path):
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return
    header = text[4:text.index("\n---", 4)]
    assert isinstance(yaml.safe_load(header), dict)
    load_front_matter(header)
