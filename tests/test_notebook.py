"""examples/quickstart.ipynb, executed in a real Jupyter kernel (nbclient): every cell runs,
none writes to stderr (no model-loading noise), and the outputs show what the notebook
promises: the ingested decision records' titles in the search results' HTML, SELECT rows and
CONSTRUCT triples as tables, and the exported DataFrame and CSV.

The notebook uses the packaged model (ONNX int8 on the CPU); the titles checked are the
ADRs' own front matter titles, read from the files here, not from trails.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from conftest import ROOT, needs

nbformat = pytest.importorskip("nbformat", reason="nbformat is in trails[dev]")
nbclient = pytest.importorskip("nbclient", reason="nbclient is in trails[dev]")

pytestmark = [pytest.mark.slow,
              needs("sentence_transformers", reason="the notebook embeds with trails[local-model]"),
              needs("pandas", reason="the notebook exports with trails[pandas]")]

NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"


def adr_title(number: str) -> str:
    path = next((ROOT / "adr").glob(f"{number}-*.md"))
    front = path.read_text().split("---")[1]
    return str(yaml.safe_load(front)["title"])


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook after a run, from a copy in a temporary directory below the checkout's
    examples/ folder layout (the notebook finds docs/ and adr/ by walking up from its cwd)."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:  # whatever outputs were saved, the run makes its own
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "TMPDIR")}
    # The kernel imports this checkout's trails whether or not it is installed, and makes
    # its temporary context directory under pytest's.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), *([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else [])])
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("kernel-tmp"))
    try:
        nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}}
                                ).execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return notebook


def code_cells(notebook):
    return [c for c in notebook.cells if c.cell_type == "code"]


def html_of(cell) -> BeautifulSoup:
    shown = [o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {})]
    assert len(shown) == 1, cell.source
    return BeautifulSoup(shown[0], "html.parser")


def cell_with(notebook, text: str):
    return next(c for c in code_cells(notebook) if text in c.source)


def test_every_cell_runs_without_writing_to_stderr(executed):
    for cell in code_cells(executed):
        assert cell.execution_count is not None
        streams = [o for o in cell.outputs if o["output_type"] == "stream"]
        assert all(o["name"] == "stdout" for o in streams), (cell.source, streams)
        assert not [o for o in cell.outputs if o["output_type"] == "error"]


def test_the_ingest_cell_shows_the_ten_decision_records(executed):
    tree = html_of(cell_with(executed, "stats = ingest_all(decisions"))
    summary = {tr.find_all("td")[0].get_text(): tr.find_all("td")[1].get_text()
               for tr in tree.select(".trails-summary tbody tr")}
    assert summary["ingested"] == "10" and summary["failed"] == "0"


def test_the_context_cell_shows_both_scopes(executed):
    shown = next(c for c in code_cells(executed) if c.source.strip() == "ctx")
    summary = {tr.find_all("td")[0].get_text(): tr.find_all("td")[1].get_text()
               for tr in html_of(shown).select(".trails-summary tbody tr")}
    assert summary["documents"] == "13"  # 3 guides + 10 decision records
    assert summary["scopes"] == "decisions, guides"


def test_the_scoped_search_shows_the_fusion_decisions_with_marked_terms(executed):
    tree = html_of(cell_with(executed, 'result = retrieve("how are keyword'))
    titles = [t.get_text() for t in tree.select(".trails-title")]
    assert len(titles) == 5
    # Only the decisions scope answers, and the two fusion ADRs lead.
    decisions = {adr_title(f"{n:04d}") for n in range(1, 11)}
    assert set(titles) <= decisions
    assert {titles[0], titles[1]} <= {adr_title("0009"), adr_title("0010")}
    sources = [m.get_text() for m in tree.select(".trails-meta") if "adr/" in m.get_text()]
    assert len(sources) == 5 and all(re.search(r"adr/00(0\d|10)-", s) for s in sources)
    marked = {m.get_text().casefold() for m in tree.find_all("mark")}
    assert marked and marked <= {"how", "keyword", "vector", "rankings", "fused"}
    assert tree.select_one(".trails-run") is not None  # the search was recorded


def test_the_filtered_search_keeps_only_titles_with_the_word(executed):
    tree = html_of(cell_with(executed, "filtered = retrieve("))
    titles = [t.get_text() for t in tree.select(".trails-title")]
    assert titles and all("exact" in t.casefold() for t in titles)
    printed = "".join(o.get("text", "") for o in cell_with(executed, "print(filtered)").outputs)
    assert printed.startswith("'exact scoring of the candidates': ")
    assert titles[0] in printed.splitlines()[1]


def test_sparql_cells_show_rows_and_triples_as_tables(executed):
    counts = html_of(cell_with(executed, "COUNT(?doc)"))
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in counts.select("tbody tr")]
    assert rows == [["decisions", "10"], ["guides", "3"]]
    listing = html_of(cell_with(executed, "SELECT ?title ?date ?doc"))
    titles = [tr.find_all("td")[0].get_text() for tr in listing.select("tbody tr")]
    assert titles == sorted(adr_title(f"{n:04d}") for n in range(1, 11))[:5]
    triples = html_of(cell_with(executed, "CONSTRUCT"))
    assert [th.get_text() for th in triples.select("thead th")] == [
        "subject", "predicate", "object"]
    objects = {tr.find_all("td")[2].get_text() for tr in triples.select("tbody tr")}
    # Only titles with the word "fusion": ADR 10's; ADR 9's says "fuses".
    assert adr_title("0010") in objects and adr_title("0009") not in objects


def test_the_export_cell_shows_the_frame_and_wrote_the_csv(executed):
    cell = cell_with(executed, "frame = result.to_pandas()")
    table = html_of(cell)
    header = [th.get_text() for th in table.select("thead th")]
    assert header[1:] == ["rank", "score", "title", "date", "source"]
    assert len(table.select("tbody tr")) == 5
    context_cell = cell_with(executed, "ctx = Context.open(")
    directory = Path(re.search(r"<Context (\S+) ", context_cell.outputs[0]["data"]["text/plain"])
                     .group(1)).parent
    with (directory / "hits.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["rank"] for r in rows] == ["1", "2", "3", "4", "5"]
    assert {r["title"] for r in rows} <= {adr_title(f"{n:04d}") for n in range(1, 11)}
