"""In a real Jupyter kernel (nbclient runs a notebook): ``aretrieve`` awaited at the top level,
under the kernel's own running event loop, answers as ``retrieve`` does, and
``ingest_with_progress`` draws an HTML bar that ends at the true total, updated in place."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTES = 6

# The notes and the context go in the test's own directory (FOLDER), which pytest removes.
SETUP = f"""
import sys
sys.path.insert(0, {str(ROOT / "python")!r})
import asyncio, json, pathlib
from trails import HybridRetriever, aretrieve, retrieve
from trails.context import Context
from trails.ingest.progress import ingest_with_progress
from trails.testing import MockEmbedder
folder = pathlib.Path(FOLDER)
for i in range({NOTES}):
    (folder / f"n{{i}}.md").write_text(f"Note {{i}} on trains and timetables. Stop {{i * 3}}.")
ctx = Context.open(folder / "kb", embedder=MockEmbedder(dim=16))
"""
INGEST = "stats = ingest_with_progress(folder, ctx=ctx, every=0)\nstats.ingested"
AWAIT = """
asyncio.get_running_loop()  # the kernel's loop is running: asyncio.run would refuse here
queries = ["trains", "timetables", "stop 9", "nothing"]
retriever = HybridRetriever(ctx, k=3)
awaited = await asyncio.gather(*[aretrieve(q, ctx, mode="vector", k=3) for q in queries],
                               *[retriever.aretrieve(q) for q in queries])
blocking = [retrieve(q, ctx, mode="vector", k=3) for q in queries] + [
    retriever.retrieve(q) for q in queries]
print(json.dumps({"same": [[h.iri for h in a] == [h.iri for h in b]
                           for a, b in zip(awaited, blocking)],
                  "hits": sum(len(a) for a in awaited)}))
"""


def test_a_notebook_awaits_aretrieve_and_shows_an_html_progress_bar(tmp_path):
    notebook = nbformat.v4.new_notebook()
    setup = SETUP.replace("FOLDER", repr(str(tmp_path)))
    notebook.cells = [nbformat.v4.new_code_cell(source)
                      for source in (setup, INGEST, AWAIT, "ctx.close()")]
    nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3").execute()
    _, ingest_cell, await_cell, _ = notebook.cells
    bars = [o for o in ingest_cell.outputs if o.output_type == "display_data"]
    assert len(bars) == 1  # one output, updated in place through its display id
    bar = bars[0].data["text/html"]
    assert 'class="trails-progress"' in bar
    assert f"{NOTES}/{NOTES} documents" in bar and "width:100.0%" in bar
    result = [o for o in ingest_cell.outputs if o.output_type == "execute_result"]
    assert result[0].data["text/plain"] == str(NOTES)
    printed = json.loads("".join(o.text for o in await_cell.outputs if o.output_type == "stream"))
    assert printed["same"] == [True] * 8 and printed["hits"] > 0
