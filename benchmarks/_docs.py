"""docs/benchmarks.md is shared: each benchmark owns one region between its own markers."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def write_region(name: str, body: str, *, after: str | None = None, doc: Path = DOC) -> None:
    """Replace the ``<!-- name:start -->`` ... ``<!-- name:end -->`` region of ``doc``
    (docs/benchmarks.md unless told) with ``body``, leaving every other region alone. A new
    region goes right after the region named ``after`` when there is one, else at the end."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip(chr(10))}\n{end}"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    anchor = f"<!-- {after}:end -->" if after else None
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end):]
    elif anchor and anchor in text:
        at = text.index(anchor) + len(anchor)
        text = text[:at] + "\n\n" + block + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
