"""The notebook HTML of every object, rendered in a real headless chromium and checked on the
DOM the browser built: rows and cells, score bars whose drawn width follows the score, marks
on the query's terms, and no script of a hostile document ever running. Each test saves a
screenshot (PNG) beside its temporary files.

Needs Debian's chromium and chromium-driver (``make test`` installs them as root; see the
Makefile's ``chromium`` target) and selenium (the dev extra).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trails import Context, MockEmbedder, ingest_all, retrieve
from trails.records import RetrievalHit, RetrievalResult

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in trails[dev]")
By = pytest.importorskip("selenium.webdriver.common.by").By

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="needs Debian's chromium and chromium-driver: apt-get install -y chromium "
           "chromium-driver (make test installs them when run as root)")

PAGE = ('<!doctype html><html><head><meta charset="utf-8"><title>trails</title></head>'
        '<body>{}</body></html>')
# Set by any script a hostile document might smuggle in; read back through the driver.
PWNED = "return window.__pwned === undefined && document.title === 'trails'"


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1200,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def render(browser, markup: str, tmp_path: Path, name: str) -> Path:
    """Load ``markup`` as a page, screenshot it; the PNG's path."""
    page = tmp_path / f"{name}.html"
    page.write_text(PAGE.format(markup), encoding="utf-8")
    browser.get(page.as_uri())
    shot = tmp_path / f"{name}.png"
    assert browser.save_screenshot(str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    return shot


def cells(browser, css: str) -> list[list[str]]:
    return [[td.text for td in row.find_elements(By.CSS_SELECTOR, ":scope > td")]
            for row in browser.find_elements(By.CSS_SELECTOR, css)]


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fusion.md").write_text(
        "---\ntitle: Fusion weights\ndate: 2024-05-01\n---\n## Auto fusion\n\n"
        "Auto fusion weighs each ranking by its evidence of quality.\n")
    (folder / "chunks.md").write_text(
        "---\ntitle: Chunking\ndate: 2023-01-09\n---\nSentences are packed into chunks "
        "that fit the embedder's token limit, and fusion never sees half a sentence.\n")
    (folder / "evil.md").write_text(
        '---\ntitle: "<script>window.__pwned=1</script>"\n---\n'
        '<img src=x onerror="window.__pwned=1"> fusion payload <b onmouseover="x">text</b>\n')
    return folder


def test_a_result_renders_with_rows_bars_marks_and_no_script(browser, tmp_path, docs):
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=64)) as ctx:
        ingest_all(str(docs), ctx=ctx)
        result = retrieve("fusion quality", ctx, k=3)
    render(browser, result._repr_html_(), tmp_path, "result")
    assert browser.execute_script(PWNED)
    rows = browser.find_elements(By.CSS_SELECTOR, "table.trails-hits > tbody > tr")
    assert len(rows) == 3
    titles = [r.find_element(By.CSS_SELECTOR, ".trails-title").text for r in rows]
    assert sorted(titles) == sorted(["Fusion weights", "Chunking",
                                     "<script>window.__pwned=1</script>"])
    assert browser.find_elements(By.TAG_NAME, "script") == []
    evil = rows[titles.index("<script>window.__pwned=1</script>")]
    assert evil.find_element(By.CSS_SELECTOR, ".trails-passage").text == (
        '<img src=x onerror="window.__pwned=1"> fusion payload <b onmouseover="x">text</b>')
    assert browser.find_elements(By.TAG_NAME, "img") == []
    # Each bar's drawn width is the score's share of the best score (1 px of rounding).
    best = max(h.score for h in result)
    for row, one in zip(rows, result, strict=True):
        bar = row.find_element(By.CSS_SELECTOR, ".trails-bar")
        fill = row.find_element(By.CSS_SELECTOR, ".trails-bar-fill")
        assert abs(fill.size["width"] - bar.size["width"] * one.score / best) <= 1.0
        assert fill.size["width"] > 0
    marks = {m.text.casefold() for m in browser.find_elements(By.TAG_NAME, "mark")}
    assert marks == {"fusion", "quality"}
    assert f"run {result.run_id}" in browser.find_element(By.CSS_SELECTOR, ".trails-explain").text


def test_the_detail_row_opens_on_the_score_components(browser, tmp_path):
    one = RetrievalHit("https://example.org/doc/1/c/0", 0.42, "a passage", {"title": "T"},
                       {"vector": 0.6, "vector_rank": 2.0, "keyword": 1.5})
    render(browser, one._repr_html_(), tmp_path, "hit-closed")
    detail = browser.find_element(By.CSS_SELECTOR, ".trails-detail table")
    assert not detail.is_displayed()  # closed until asked
    assert (browser.find_element(By.CSS_SELECTOR, ".trails-bar").get_attribute("title")
            == "vector 0.6000, vector_rank 2, keyword 1.5000")
    browser.find_element(By.CSS_SELECTOR, ".trails-detail summary").click()
    assert detail.is_displayed()
    assert cells(browser, ".trails-detail tbody tr") == [
        ["vector", "0.600000"], ["vector_rank", "2"], ["keyword", "1.500000"]]
    link = browser.find_element(By.CSS_SELECTOR, "a.trails-iri")
    assert link.get_attribute("href") == "https://example.org/doc/1/c/0"
    assert link.text == "…/example.org/doc/1/c/0"
    browser.save_screenshot(str(tmp_path / "hit-open.png"))
    assert (tmp_path / "hit-open.png").stat().st_size > 0


def test_a_context_and_its_ingest_totals_render_as_tables(browser, tmp_path, docs):
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=64)) as ctx:
        stats = ingest_all(str(docs), ctx=ctx)
        render(browser, ctx._repr_html_(), tmp_path, "context")
        shown = dict(cells(browser, ".trails-summary tbody tr"))
        assert shown["documents"] == "3" and shown["scopes"] == "default"
        assert shown["vector store"] == "SqliteVecStore"
    render(browser, stats._repr_html_(), tmp_path, "stats")
    shown = dict(cells(browser, ".trails-summary tbody tr"))
    assert shown["ingested"] == "3" and shown["failed"] == "0"
    assert browser.execute_script(PWNED)


def test_select_rows_and_construct_triples_render_as_tables(browser, tmp_path, ctx):
    ctx.kg.update('INSERT DATA { <https://e.org/a> <https://e.org/p> "<script>window.__pwned=1'
                  '</script>" . <https://e.org/b> <https://e.org/p> "two" }')
    rows = ctx.kg.query("SELECT ?s ?o WHERE { ?s <https://e.org/p> ?o } ORDER BY ?s")
    render(browser, rows._repr_html_(), tmp_path, "select")
    assert cells(browser, ".trails-rows tbody tr") == [
        ["https://e.org/a", "<script>window.__pwned=1</script>"], ["https://e.org/b", "two"]]
    assert len(browser.find_elements(By.CSS_SELECTOR, ".trails-rows tbody a")) == 2
    assert browser.execute_script(PWNED)
    triples = ctx.kg.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    render(browser, triples._repr_html_(), tmp_path, "construct")
    assert len(cells(browser, ".trails-rows tbody tr")) == 2
    assert [th.text for th in browser.find_elements(By.CSS_SELECTOR, ".trails-rows th")] == [
        "subject", "predicate", "object"]
    assert browser.execute_script(PWNED)


def test_an_empty_result_renders_its_message(browser, tmp_path):
    empty = RetrievalResult([], mode="vector", plan="full-scan", candidates=None,
                            exhaustive=True, query="nothing here")
    render(browser, empty._repr_html_(), tmp_path, "empty")
    assert browser.find_element(By.CSS_SELECTOR, ".trails-empty").text == "No hits."
    assert browser.find_element(By.CSS_SELECTOR, ".trails-query").text == "nothing here"


# The widths of the box, of what it holds, and of the page, in CSS pixels.
WIDTHS = ("const box = document.querySelector('.trails-box');"
          "return [box.clientWidth, box.scrollWidth, document.documentElement.scrollWidth,"
          " window.innerWidth];")


def test_a_title_source_and_query_of_one_very_long_word_stay_within_the_box(browser, tmp_path):
    word = "W" * 3000
    one = RetrievalHit("https://e.org/d/1", 0.5, f"A passage. {word}",
                       {"title": word, "source": f"files/{word}.md"})
    result = RetrievalResult([one], mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True, notes=[f"a note quoting {word}"], query=word)
    for name, markup in (("long-result", result._repr_html_()),
                         ("long-hit", one._repr_html_())):
        render(browser, markup, tmp_path, name)
        box, inside, page, window = browser.execute_script(WIDTHS)
        # The words wrap inside the box (at most 60em): no table wider than it, no page
        # scrolling sideways.
        assert inside <= box and page <= window, (name, box, inside, page, window)
        title = browser.find_element(By.CSS_SELECTOR, ".trails-title")
        # A label is one line of 120 characters at most (its start, then an ellipsis): a
        # title of a page of text made every display of the result that long.
        assert title.text.replace("\n", "") == "W" * 119 + "\u2026"


def test_a_huge_result_renders_200_rows_and_the_count_of_the_rest(browser, tmp_path):
    hits = [RetrievalHit(f"https://e.org/d/{i}", 1.0 - i / 1000, f"Passage {i}.",
                         {"title": f"Doc {i}"}) for i in range(230)]
    result = RetrievalResult(hits, mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True, query="passage")
    render(browser, result._repr_html_(), tmp_path, "huge")
    rows = browser.find_elements(By.CSS_SELECTOR, ".trails-hits > tbody > tr")
    assert len(rows) == 200
    assert rows[-1].find_element(By.CSS_SELECTOR, ".trails-title").text == "Doc 199"
    more = browser.find_element(By.CSS_SELECTOR, ".trails-more")
    assert more.text == "… 30 more hits" and more.is_displayed()


# -- under the notebooks' own stylesheets -------------------------------------------------------

VENDOR = Path(__file__).resolve().parent / "vendor" / "notebook-css"
# Each notebook's stylesheet, and the element its output cell wraps an HTML output in.
NOTEBOOKS = {
    "jupyterlab": ("jupyterlab-rendermime-base.css",
                   ('<div class="jp-OutputArea-output jp-RenderedHTMLCommon jp-RenderedHTML" '
                    'data-mime-type="text/html">{}</div>')),
    "classic": ("nbclassic-style.min.css",
                '<div class="output_subarea output_html rendered_html output_result">{}</div>'),
}
# What a cell of each table looks like wherever it renders, read back from the browser.
CELL_STYLE = """
return Array.from(document.querySelectorAll('.trails-box td, .trails-box th')).map(c => {
  const s = getComputedStyle(c);
  return [c.closest('table').className, s.textAlign, s.verticalAlign, s.borderBottomStyle];
});"""
TABLE_MARGIN = """
return Array.from(document.querySelectorAll('.trails-box table')).map(
  t => getComputedStyle(t).marginLeft);"""


def every_object(tmp_path, docs) -> dict[str, str]:
    """The HTML of each kind of object trails shows in a notebook."""
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=64)) as ctx:
        stats = ingest_all(str(docs), ctx=ctx)
        result = retrieve("fusion quality", ctx, k=3)
        ctx.kg.update('INSERT DATA { <https://e.org/a> <https://e.org/p> 12 }')
        shown = {"result": result._repr_html_(), "hit": result[0]._repr_html_(),
                 "context": ctx._repr_html_(), "stats": stats._repr_html_(),
                 "select": ctx.kg.query("SELECT ?s ?o WHERE { ?s <https://e.org/p> ?o }")
                 ._repr_html_(),
                 "construct": ctx.kg.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 3")
                 ._repr_html_()}
    return shown


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS))
def test_every_table_reads_left_aligned_under_the_notebooks_own_css(
        browser, tmp_path, docs, notebook):
    sheet, cell = NOTEBOOKS[notebook]
    css = (VENDOR / sheet).read_text(encoding="utf-8")
    for kind, markup in every_object(tmp_path, docs).items():
        page = tmp_path / f"{notebook}-{kind}.html"
        page.write_text(f'<!doctype html><html><head><meta charset="utf-8"><title>trails</title>'
                        f'<style>{css}</style></head><body>{cell.format(markup)}</body></html>',
                        encoding="utf-8")
        browser.get(page.as_uri())
        browser.save_screenshot(str(tmp_path / f"{notebook}-{kind}.png"))
        styles = browser.execute_script(CELL_STYLE)
        assert styles, kind
        # Text and numbers alike start at the left of their column, at the top of the row,
        # with trails' own rule under each row: the notebook's right-aligned, centred,
        # borderless cells never win.
        assert {(align, valign, border) for _, align, valign, border in styles} == {
            ("left", "top", "solid")}, (notebook, kind, styles)
        assert set(browser.execute_script(TABLE_MARGIN)) == {"0px"}, (notebook, kind)
        assert browser.execute_script(PWNED)
