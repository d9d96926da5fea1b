"""What a notebook and a terminal show of trails objects: hits and results, a context, ingest
totals, SELECT rows and CONSTRUCT triples; and a result as a DataFrame.

The HTML is parsed (BeautifulSoup, html.parser) and checked element by element; the text a
person reads is compared with what was ingested, never with what the display computed.
tests/test_display_browser.py renders the same HTML in a real headless chromium.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import unicodedata

import pytest
from bs4 import BeautifulSoup
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trails import Context, MockEmbedder, ingest_all, retrieve
from trails.display.markup import short_iri
from trails.display.snippets import markdown_text, marked, plain_snippet, query_terms
from trails.errors import MissingExtraError
from trails.ingest import Document
from trails.ingest.events import DocumentFailed, DocumentIngested, IngestionStats
from trails.kg import Triples
from trails.records import RetrievalHit, RetrievalResult
from trails.retrieval.retrievers import (
    CompositeRetriever,
    HybridRetriever,
    RerankedRetriever,
    VectorRetriever,
)

HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '"><img src=x onerror="window.__pwned=1">',
    "' onmouseover='window.__pwned=1",
    "javascript:window.__pwned=1",
    "</td></tr></table><script>window.__pwned=1</script>",
    "<style>*{display:none}</style>",
]


def soup_of(markup: str) -> BeautifulSoup:
    return BeautifulSoup(markup, "html.parser")


def assert_inert(markup: str) -> None:
    """No element that runs code: no script, no event attribute, links only to http(s)."""
    tree = soup_of(markup)
    assert tree.find("script") is None
    assert len(tree.find_all("style")) <= 1  # the display's own stylesheet, nothing more
    for element in tree.find_all(True):
        for name, value in element.attrs.items():
            assert not name.lower().startswith("on"), (element.name, name)
            if name in ("href", "src"):
                assert str(value).lower().startswith(("http://", "https://")), value


def hit(iri: str = "https://example.org/doc/1/c/0", score: float | None = 0.5, **metadata):
    return RetrievalHit(iri, score, metadata.pop("snippet", "A passage."), metadata,
                        metadata.pop("components", {"vector": 0.5}))


# -- a result in a notebook ------------------------------------------------------------------


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fusion.md").write_text(
        "---\ntitle: Fusion weights\ndate: 2024-05-01\n---\n## Auto fusion\n\n"
        "**Auto fusion** weighs each ranking by its evidence of quality, so a poor ranking "
        "cannot drag a good one down.\n")
    (folder / "chunks.md").write_text(
        "---\ntitle: Chunking\ndate: 2023-01-09\n---\n# Chunks\n\nSentences are packed into "
        "chunks that fit the embedder's token limit.\n")
    return folder


def test_a_result_shows_each_hit_with_title_date_source_passage_and_iri(ctx, docs):
    ingest_all(str(docs), ctx=ctx)
    result = retrieve("auto fusion quality", ctx, k=2)
    tree = soup_of(result._repr_html_())
    rows = tree.select("table.trails-hits > tbody > tr")
    assert len(rows) == 2
    first = rows[0]
    assert first.select_one(".trails-title").get_text() == "Fusion weights"
    meta = first.select_one(".trails-meta").get_text()
    assert "2024-05-01" in meta and str(docs / "fusion.md") in meta
    passage = first.select_one(".trails-passage").get_text()
    assert passage.startswith("Auto fusion Auto fusion weighs")  # markup gone from the start
    assert "#" not in passage and "**" not in passage
    link = first.select_one(".trails-iri")
    assert link["title"] == result[0].iri
    assert rows[1].select_one(".trails-title").get_text() == "Chunking"
    explain = tree.select_one(".trails-explain").get_text()
    assert "auto fusion quality" in explain and "2 hits" in explain


def test_the_query_terms_are_marked_and_only_they(ctx, docs):
    ingest_all(str(docs), ctx=ctx)
    result = retrieve("Fusion QUALITY of ranking", ctx, k=1)
    passage = soup_of(result._repr_html_()).select_one(".trails-passage")
    marks = [m.get_text() for m in passage.find_all("mark")]
    assert sorted({m.casefold() for m in marks}) == ["fusion", "quality", "ranking"]
    # Every occurrence is marked: the unmarked text holds none of the terms as a word.
    for m in passage.find_all("mark"):
        m.decompose()
    assert not re.search(r"\b(fusion|quality|ranking)\b", passage.get_text(), re.IGNORECASE)


def test_retrieve_gives_the_result_its_query_through_every_path(tmp_path, docs):
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=64)) as ctx:
        ingest_all(str(docs), ctx=ctx)
        result = retrieve("chunks", ctx, k=1)  # recorded: the audit trail rebuilds the result
        assert result.query == "chunks" and result.run_id
        html = result._repr_html_()
        assert soup_of(html).select_one(".trails-run").get_text() == f"run {result.run_id}"
        assert f"(run {result.run_id})" in str(result)
        keep = lambda query, hits, ctx: hits[:1]
        reranked = RerankedRetriever(HybridRetriever(ctx, k=2), steps=[keep])
        assert reranked.retrieve("chunks").query == "chunks"
        composite = CompositeRetriever([HybridRetriever(ctx, k=2), VectorRetriever(ctx, k=2)])
        assert composite.retrieve("chunks").query == "chunks"


def test_score_bars_are_as_long_as_each_score_is_of_the_best():
    result = RetrievalResult([hit("https://e.org/a", 0.8), hit("https://e.org/b", 0.2),
                              hit("https://e.org/c", None)],
                             mode="hybrid", plan="full-scan", candidates=None, exhaustive=True)
    bars = soup_of(result._repr_html_()).select("table.trails-hits > tbody > tr")
    fills = [row.select_one(".trails-bar-fill") for row in bars]
    assert fills[0]["style"] == "width:100.0%"
    assert fills[1]["style"] == "width:25.0%"
    assert fills[2] is None and "no score" in bars[2].get_text()


def test_components_show_on_hover_and_in_a_detail_row_with_the_admitting_solution():
    one = RetrievalHit("https://e.org/c", 0.41, "text", {},
                       {"vector": 0.61, "vector_rank": 3.0, "keyword": 2.5},
                       admitted_by={"doc": "<https://e.org/doc>", "year": '"2024"'})
    row = soup_of(one._repr_html_())
    assert row.select_one(".trails-bar")["title"] == "vector 0.6100, vector_rank 3, keyword 2.5000"
    detail = {tr.find_all("td")[0].get_text(): tr.find_all("td")[1].get_text()
              for tr in row.select(".trails-detail tbody tr")}
    assert detail == {"vector": "0.610000", "vector_rank": "3", "keyword": "2.500000",
                      "?doc": "https://e.org/doc", "?year": '"2024"'}
    assert row.select_one(".trails-detail a")["href"] == "https://e.org/doc"


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_text_in_every_field_stays_text(payload):
    one = RetrievalHit(f"https://e.org/{payload}", 0.5, f"{payload} passage {payload}",
                       {"title": payload, "source": payload, "date": payload,
                        "doc_iri": payload},
                       {payload: 0.5}, admitted_by={"x": f"<{payload}>", "y": payload})
    result = RetrievalResult([one], mode="hybrid", plan=payload, candidates=1, exhaustive=True,
                             notes=[payload], run_id=payload, query=payload)
    for markup in (one._repr_html_(), result._repr_html_()):
        assert_inert(markup)
        assert soup_of(markup).select_one(".trails-title").get_text() == payload


def test_a_hit_made_by_hand_with_odd_values_still_displays_what_it_has():
    # A custom retriever or step may leave the snippet None or put a non-number in the
    # components: the display shows what there is instead of raising from a repr.
    odd = RetrievalHit("https://e.org/c", 0.25, None, {"title": 7, "date": 20240101},
                       {"vector": 0.25, "note": None, "flag": "boosted"})
    result = RetrievalResult([odd], mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True, query="anything")
    tree = soup_of(result._repr_html_())
    assert tree.select_one(".trails-title").get_text() == "7"
    assert tree.select_one(".trails-passage").get_text() == ""
    assert tree.select_one(".trails-bar")["title"] == "vector 0.2500, note None, flag boosted"
    cells = [td.get_text() for td in tree.select(".trails-components td")]
    assert cells == ["vector", "0.250000", "note", "None", "flag", "boosted"]
    assert soup_of(odd._repr_html_()).select_one(".trails-title").get_text() == "7"
    assert str(result).splitlines()[1] == " 1. 0.2500  7"
    assert repr(odd) == "<RetrievalHit 0.2500 '7' https://e.org/c>"
    assert result.to_pandas()["snippet"].tolist() == [""]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=st.text(max_size=40), text=st.text(max_size=300), query=st.text(max_size=30))
@example(title="", text="\uf900", query="")  # NFC rewrites U+F900: a CI run found it
def test_any_title_passage_and_query_round_trip_as_text(title, text, query):
    one = RetrievalHit("https://e.org/c", 1.0, text, {"title": title} if title else {})
    result = RetrievalResult([one], mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True, query=query)
    markup = result._repr_html_()
    assert_inert(markup)
    tree = soup_of(markup)
    if title.strip():  # HTML parsers normalise whitespace characters (a tab, a CR)
        assert tree.select_one(".trails-title").get_text().split() == shown(title).split()
    assert (tree.select_one(".trails-passage").get_text().split()
            == shown(plain_snippet(text)).split())


# Embeddings, overrides and isolates: the characters that reorder the text after them.
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def shown(text: str) -> str:
    """``text`` as the display shows it: each bidirectional control written out."""
    return "".join(f"\\u{ord(c):04x}" if c in BIDI else c for c in text)


def _strings(tree: BeautifulSoup) -> list[str]:
    """Every text node and attribute value of ``tree``."""
    values = [str(node) for node in tree.find_all(string=True)]
    for element in tree.find_all(True):
        values += [" ".join(v) if isinstance(v, list) else str(v)
                   for v in element.attrs.values()]
    return values


_BIDI_TEXT = st.lists(st.sampled_from([*BIDI, "exe.txt", " ", "<b>", "\u05d0\u05d1",
                                       "\u200f", "run"]), min_size=1, max_size=10).map("".join)


@settings(max_examples=100)
@given(text=_BIDI_TEXT)
@example(text="invoice \u202egpj.exe")
def test_bidirectional_controls_in_any_field_are_shown_not_obeyed(text):
    one = RetrievalHit(f"https://e.org/{text}", 0.5, f"{text} passage",
                       {"title": text, "source": text, "mentions": [f"https://e.org/{text}"]},
                       {text: 0.5}, admitted_by={"x": f"<https://e.org/{text}>", "y": text})
    result = RetrievalResult([one], mode="hybrid", plan="full-scan", candidates=1,
                             exhaustive=True, notes=[text], run_id=text, query=text)
    for markup in (one._repr_html_(), result._repr_html_()):
        assert_inert(markup)
        tree = soup_of(markup)
        leaked = [value for value in _strings(tree) if any(c in BIDI for c in value)]
        assert leaked == []
        # (HTML parsers fold runs of whitespace)
        assert tree.select_one(".trails-title").get_text().split() == shown(text).split()
    line = soup_of(result._repr_html_()).select_one(".trails-explain").get_text()
    assert line.split()[:len(shown(text).split()) + 1] == [*shown(text).split(), "—"]


def test_a_document_ingested_with_script_in_title_and_text_never_becomes_markup(ctx, tmp_path):
    (tmp_path / "evil.md").write_text(
        '---\ntitle: "<script>window.__pwned=1</script>"\n---\n'
        '<img src=x onerror="window.__pwned=1"> the evil payload text.\n')
    ingest_all(str(tmp_path / "evil.md"), ctx=ctx)
    result = retrieve("evil payload", ctx, k=1)
    for markup in (result._repr_html_(), result[0]._repr_html_(), ctx._repr_html_(),
                   ctx.kg.query("SELECT ?s ?p ?o WHERE { ?s ?p ?o }")._repr_html_(),
                   ctx.kg.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")._repr_html_()):
        assert_inert(markup)
    assert (soup_of(result._repr_html_()).select_one(".trails-title").get_text()
            == "<script>window.__pwned=1</script>")


def test_only_http_iris_become_links():
    for iri in ("javascript:alert(1)", "data:text/html,<b>x</b>", "urn:x:y"):
        shown = soup_of(hit(iri)._repr_html_()).select_one(".trails-iri")
        assert shown.name == "code" and shown["title"] == iri
    link = soup_of(hit("https://e.org/x")._repr_html_()).select_one(".trails-iri")
    assert link.name == "a" and link["href"] == "https://e.org/x"
    assert link["rel"] == ["noopener", "noreferrer"]


def test_an_empty_result_says_so():
    result = RetrievalResult([], mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True, query="nothing")
    tree = soup_of(result._repr_html_())
    assert tree.select_one(".trails-empty").get_text() == "No hits."
    assert tree.find("table") is None


def _many(count: int) -> RetrievalResult:
    hits = [hit(f"https://e.org/d/{i}", 1.0 - i / 1000, title=f"Doc {i}") for i in range(count)]
    return RetrievalResult(hits, mode="vector", plan="full-scan", candidates=None,
                           exhaustive=True, query="doc")


def test_a_huge_result_draws_200_hits_and_counts_the_rest():
    tree = soup_of(_many(250)._repr_html_())
    titles = [b.get_text() for b in tree.select("tbody .trails-title")]
    assert titles == [f"Doc {i}" for i in range(200)]
    assert tree.select_one(".trails-more").get_text() == "… 50 more hits"
    assert soup_of(_many(200)._repr_html_()).select_one(".trails-more") is None


def test_a_huge_result_prints_20_hits_and_counts_the_rest():
    lines = str(_many(25)).splitlines()
    ranked = [line for line in lines if re.match(r" ?\d+\. ", line)]
    assert [line.split("  ")[1] for line in ranked] == [f"Doc {i}" for i in range(20)]
    assert lines[-1] == "… 5 more hits"
    assert "more hits" not in str(_many(20))


def test_the_repr_of_a_huge_result_shows_20_hits_and_counts_the_rest():
    shown = repr(_many(25))
    assert shown.count("<RetrievalHit ") == 20 and "'Doc 19'" in shown and "'Doc 20'" not in shown
    assert shown.endswith(", … 5 more]>")
    assert repr(_many(20)).endswith("'Doc 19' https://e.org/d/19>]>")


def test_a_title_or_source_spanning_lines_prints_on_the_hit_s_first_line():
    one = hit("https://e.org/c", 0.5, title="Release\nnotes\t 2024", source="a\r\nb.md")
    lines = str(one).splitlines()
    assert lines[0] == "0.5000  Release notes 2024  (a b.md)"
    assert lines[1:] == ["      A passage.", "      https://e.org/c"]


def test_a_title_or_source_of_a_page_s_length_is_cut_in_every_display():
    # A title holding a page's text made a hit's repr, text and HTML that long, and a
    # result's ten hits a megabyte: a notebook echoing it froze.
    title = "Annual report " + "figures " * 12_500
    source = "exports/" + "nested/" * 700 + "report.md"
    one = hit("https://e.org/c", 0.5, title=title, source=source)
    shown = {"repr": repr(one), "text": str(one), "html": one._repr_html_()}
    assert {form: len(text) < 4_000 for form, text in shown.items()} == dict.fromkeys(shown, True)
    first_line = shown["text"].splitlines()[0]
    assert first_line.startswith("0.5000  Annual report figures figures")
    assert "…  (…" in first_line and first_line.endswith("nested/report.md)")
    assert repr(one).startswith("<RetrievalHit 0.5000 'Annual report figures")
    assert "…' https://e.org/c>" in repr(one)
    many = RetrievalResult([hit(f"https://e.org/{i}", 0.5, title=title, source=source)
                            for i in range(10)], mode="vector", plan="full-scan",
                           candidates=10, exhaustive=True)
    assert len(repr(many)) < 4_000 and len(str(many)) < 8_000
    assert len(many._repr_html_()) < 20_000


@pytest.mark.parametrize("length", [119, 120, 121])
def test_a_title_is_cut_only_past_the_label_s_length(length):
    title = "t" * length
    label = repr(hit("https://e.org/c", 0.5, title=title)).split("'")[1]
    assert label == (title if length <= 120 else "t" * 119 + "…")


def test_text_forms_read_well(ctx, docs):
    ingest_all(str(docs), ctx=ctx)
    result = retrieve("chunks token limit", ctx, k=1)
    lines = str(result).splitlines()
    assert lines[0].startswith("'chunks token limit': 1 hits, mode=hybrid")
    assert lines[1] == f" 1. {result[0].score:.4f}  Chunking  (2023-01-09 · {docs / 'chunks.md'})"
    assert lines[2].strip().startswith("Chunks Sentences are packed into chunks")
    assert lines[3].strip() == result[0].iri
    assert repr(result[0]) == f"<RetrievalHit {result[0].score:.4f} 'Chunking' {result[0].iri}>"
    # The doctested repr of a result stays what it was.
    assert repr(result).startswith("<RetrievalResult 1 hits, mode=hybrid")


# -- snippets --------------------------------------------------------------------------------

WORDS = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), min_size=1,
                 max_size=80)


@given(words=WORDS, limit=st.integers(min_value=20, max_value=200))
def test_a_snippet_is_whole_words_within_its_limit_with_an_ellipsis_when_cut(words, limit):
    text = " ".join(words)
    snippet = plain_snippet(text, limit=limit)
    if len(text) <= limit:
        assert snippet == text
        return
    assert snippet.endswith("…") and len(snippet) <= limit + 1
    kept = snippet[:-1].split(" ")
    if len(words[0]) <= limit:  # only a first word longer than the limit is cut inside
        assert kept == words[: len(kept)]
    else:
        assert kept == [words[0][:limit]]


@pytest.mark.parametrize(("text", "start"), [
    ("---\n## Heading\n\nBody", "Heading Body"),
    ("> quoted **bold** line", "quoted bold line"),
    ("- item one\n- item two", "item one item two"),
    ("1. first step", "first step"),
    ("```python\ncode here", "code here"),
    ("| a | b |", "a | b |"),
    ("#hashtag stays", "#hashtag stays"),  # no space after '#': not a heading
    ("Intro text.\n\n## Context\n\nMore", "Intro text. Context More"),  # a heading inside
    ("`__init__` runs **first**", "__init__ runs first"),  # "__" is no emphasis in code
])
def test_markdown_markup_is_stripped_from_the_start(text, start):
    assert plain_snippet(text) == start


@pytest.mark.parametrize(("text", "shown"), [
    ("The *Agreement* holds", "The Agreement holds"),
    ("The _Agreement_ holds", "The Agreement holds"),
    ("See [ADR 10](../adr/0010-fusion.md) for why", "See ADR 10 for why"),
    ("See <https://e.org/x> too", "See https://e.org/x too"),
    ("A ![the diagram](img/d.png) shows it", "A the diagram shows it"),
    ("Call `retrieve(ctx, k=5)` first", "Call retrieve(ctx, k=5) first"),
    ("Old ~~wrong~~ text", "Old wrong text"),
    ("Intro.\n\n### A *deep* heading\n\nBody", "Intro. A deep heading Body"),
    ("Escaped \\*stars\\* stay", "Escaped *stars* stay"),
    ("__init__ runs before __call__", "__init__ runs before __call__"),
    ("<b>tags</b> are text", "<b>tags</b> are text"),
    ("| a | b |\n|---|---|\n| 1 | 2 |", "a b 1 2"),
])
def test_markdown_is_shown_as_its_plain_text(text, shown):
    assert plain_snippet(text) == shown


# Words, each alone or inside one Markdown construct (a link's text may be several words).
_plain_words = st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=9), min_size=1,
                        max_size=4)
_constructs = st.lists(st.tuples(st.sampled_from(
    ["{}", "*{}*", "**{}**", "_{}_", "`{}`", "[{}](https://e.org/a_b*c)", "![{}](i.png)",
     "~~{}~~"]), _plain_words), min_size=1, max_size=40)


@given(parts=_constructs, limit=st.integers(min_value=10, max_value=200),
       prefix=st.integers(min_value=1, max_value=2000))
def test_a_snippet_of_markdown_is_whole_words_and_never_cut_inside_a_construct(
        parts, limit, prefix):
    text = " ".join(form.format(" ".join(words)) for form, words in parts)
    words = [w for _, group in parts for w in group]
    for whole, source in ((True, text), (False, text[:prefix])):
        snippet = plain_snippet(source, limit=limit, whole=whole)
        assert not set(snippet) & set("*_`[]()!~"), snippet  # no markup, opened or closed
        shown = snippet.removesuffix("…").split()
        assert shown == words[:len(shown)]  # whole words, from the start, in order
        assert len(snippet) <= limit + 1
        if whole and len(" ".join(words)) > limit or not whole:
            assert snippet.endswith("…") or not snippet


def test_a_stored_snippet_cut_mid_word_and_mid_link_ends_on_a_word_with_an_ellipsis(tmp_path):
    text = ("Fusion weights were settled in [ADR 10](../adr/0010-fusion-weights.md) after "
            "*long* debate. ") * 6
    stored = text[:280]  # what ingest stores: the chunk's first 280 characters
    assert not stored.endswith((" ", ".")) or "](" in stored[-40:]
    bare = RetrievalHit("https://e.org/d/c/0", 0.5, stored, {"title": "T"})
    full = RetrievalHit("https://e.org/d/c/0", 0.5, stored, {"title": "T", "text": text})
    result = RetrievalResult([bare], mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True, query="fusion")
    html_passage = soup_of(result._repr_html_()).select_one(".trails-passage").get_text()
    text_passage = str(result).splitlines()[2].strip()
    framed = result.to_pandas()["snippet"][0] if _has("pandas") else html_passage
    for shown in (html_passage, text_passage, framed):
        assert shown.endswith("…"), shown
        assert not set(shown) & set("*[]()`"), shown
        body = shown.removesuffix("…").split()
        assert body and body[-1] in markdown_text(text).replace(".", "").split()
    # With the chunk's whole text at hand, the passage is cut from it, not from the snippet.
    assert plain_snippet(text) in soup_of(RetrievalResult(
        [full], mode="vector", plan="full-scan", candidates=None, exhaustive=True,
        query=None)._repr_html_()).select_one(".trails-passage").get_text() + "…"


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def test_ingested_markdown_shows_its_words_without_markup_everywhere(ctx, tmp_path):
    folder = tmp_path / "md"
    folder.mkdir()
    body = " ".join(f"The *Agreement* on [ADR {n}](../adr/00{n}.md) uses `fusion`." for n in
                    range(40))
    (folder / "a.md").write_text(f"---\ntitle: A\n---\n## **Heading**\n\n{body}\n")
    ingest_all(str(folder), ctx=ctx)
    result = retrieve("agreement fusion", ctx, k=1)
    html_passage = soup_of(result._repr_html_()).select_one(".trails-passage").get_text()
    for shown in (html_passage, str(result).splitlines()[2]):
        assert "Agreement" in shown and shown.endswith("…")
        assert not set(shown) & set("*[]()`#"), shown


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_accented_and_non_latin_words_are_marked_in_either_unicode_form(form):
    text = unicodedata.normalize(form, "Über die naïve Straße nach 東京, 日本語 ok")
    # Words compare as the keyword index folds them: lower-cased ("STRAẞE" is "straße";
    # "strasse" would not be, and the index would not match it either).
    shown = soup_of(marked(text, query_terms("über NAÏVE STRAẞE 日本語")))
    marks = [m.get_text() for m in shown.find_all("mark")]
    assert [unicodedata.normalize("NFC", m) for m in marks] == ["Über", "naïve", "Straße", "日本語"]
    assert shown.get_text() == text  # shown as written, never rewritten to another form


def test_characters_that_normalisation_rewrites_are_shown_as_written():
    # U+F900 (a CJK compatibility ideograph) is U+8C48 in NFC: marking must not change it.
    text = "\uf900 and caf\u0065\u0301"
    shown = soup_of(marked(text, query_terms("café")))
    assert shown.get_text() == text
    assert [m.get_text() for m in shown.find_all("mark")] == ["caf\u0065\u0301"]


def test_marking_escapes_around_the_marks():
    assert marked("a<b>fusion</b>", {"fusion", "b"}) == (
        "a&lt;<mark>b</mark>&gt;<mark>fusion</mark>&lt;/<mark>b</mark>&gt;")


@pytest.mark.parametrize(("iri", "shown"), [
    ("https://trails.dev/id/doc/abc/v/05b443424e5938a2/c/4", "…/05b443424e5938a2/c/4"),
    ("https://schema.org/name", "https://schema.org/name"),
    ("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "…/22-rdf-syntax-ns#type"),
])
def test_iris_are_shortened_to_the_segments_that_tell_them_apart(iri, shown):
    assert short_iri(iri) == shown


# -- context, ingest totals, SELECT rows, CONSTRUCT triples ---------------------------------


def summary(markup: str) -> dict[str, str]:
    return {tr.find_all("td")[0].get_text(): tr.find_all("td")[1].get_text()
            for tr in soup_of(markup).select(".trails-summary tbody tr")}


def test_a_context_shows_its_stores_counts_scopes_and_embedder(tmp_path, docs):
    with Context.open(tmp_path / "ctx", embedder=MockEmbedder(dim=64)) as ctx:
        ingest_all(str(docs), ctx=ctx)
        ingest_all(str(docs / "chunks.md"), ctx=ctx, scope="team")
        shown = summary(ctx._repr_html_())
        assert shown["directory"] == str(tmp_path / "ctx")
        assert shown["graph"] == "OxigraphGraph" and shown["vector store"] == "SqliteVecStore"
        assert shown["embedder"].startswith("trails-mock-bow")
        assert shown["documents"] == "3" and shown["scopes"] == "default, team"
        assert shown["audit"] == "recording searches"
        assert "documents     3" in str(ctx)
    assert summary(ctx._repr_html_())["state"] == "closed"  # a closed context still shows


def test_a_context_of_many_scopes_names_20_and_counts_the_rest():
    with Context.memory(MockEmbedder(dim=16)) as ctx:
        names = [f"s{i:02d}" for i in range(25)]
        for name in names:
            ingest_all([Document(id=name, source=name, text="x")], ctx=ctx, scope=name)
        scopes = ctx.stats()["scopes"]
        expected = ", ".join(scopes[:20]) + ", … and 5 more"
        assert summary(ctx._repr_html_())["scopes"] == expected
        assert f"scopes        {expected}" in str(ctx)


def test_ingest_totals_show_counts_and_each_failure(tmp_path):
    stats = IngestionStats()
    stats.record(DocumentIngested("https://e.org/d", "a.md", chunks=4, version="v", replaced=False))
    stats.record(DocumentFailed("<b>bad.md</b>", "not UTF-8"))
    shown = summary(stats._repr_html_())
    assert shown["ingested"] == "1" and shown["failed"] == "1" and shown["chunks"] == "4"
    assert shown["failure 1"] == "<b>bad.md</b>: not UTF-8"
    assert soup_of(stats._repr_html_()).select_one(".trails-explain").get_text().startswith(
        "1 documents ingested, 0 skipped, 1 failed")
    assert "failure 1" in str(stats)


def test_select_rows_are_a_table_of_terms(ctx):
    ctx.kg.update('INSERT DATA { <https://e.org/a> <https://e.org/p> "one" . '
                  '<https://e.org/b> <https://e.org/p> "2"^^<http://www.w3.org/2001/XMLSchema#integer> . '
                  '<https://e.org/c> <https://e.org/p> "P1D"^^<http://www.w3.org/2001/XMLSchema#duration> . '
                  '<https://e.org/b> <https://e.org/q> "deux"@fr }')
    result = ctx.kg.query("SELECT ?s ?o ?x WHERE { ?s <https://e.org/p> ?o "
                          "OPTIONAL { ?s <https://e.org/q> ?x } } ORDER BY ?s")
    tree = soup_of(result._repr_html_())
    assert [th.get_text() for th in tree.select("thead th")] == ["?s", "?o", "?x"]
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in tree.select("tbody tr")]
    assert rows == [["https://e.org/a", "one", "unbound"],
                    ["https://e.org/b", "2", "deux @fr"],
                    ["https://e.org/c", "P1D ^^duration", "unbound"]]
    assert tree.select_one("tbody a")["href"] == "https://e.org/a"
    assert tree.select_one(".trails-explain").get_text() == "3 rows"
    assert str(result).splitlines()[:2] == ["3 rows", "?s  ?o  ?x"]


def test_long_select_results_draw_200_rows_and_count_the_rest(ctx):
    values = " ".join(f"({i})" for i in range(250))
    result = ctx.kg.query(f"SELECT ?i WHERE {{ VALUES (?i) {{ {values} }} }}")
    tree = soup_of(result._repr_html_())
    assert len(tree.select("tbody tr")) == 200
    assert tree.select_one("p.trails-meta").get_text() == "… 50 more rows"


def test_construct_returns_triples_shown_as_a_table(ctx):
    ctx.kg.update('INSERT DATA { <https://e.org/a> <https://e.org/p> "one", "two" }')
    triples = ctx.kg.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } ORDER BY ?o")
    assert isinstance(triples, Triples) and isinstance(triples, list) and len(triples) == 2
    tree = soup_of(triples._repr_html_())
    assert [th.get_text() for th in tree.select("thead th")] == ["subject", "predicate", "object"]
    rows = sorted([td.get_text() for td in tr.find_all("td")] for tr in tree.select("tbody tr"))
    assert rows == [["https://e.org/a", "https://e.org/p", "one"],
                    ["https://e.org/a", "https://e.org/p", "two"]]
    assert str(triples).splitlines()[0] == "2 triples"


# -- DataFrames ------------------------------------------------------------------------------

COLUMNS = ["rank", "iri", "score", "components", "title", "date", "source", "snippet",
           "document"]


def test_to_pandas_has_one_row_per_hit_in_rank_order(ctx, docs):
    ingest_all(str(docs), ctx=ctx)
    result = retrieve("fusion chunks", ctx, k=2)
    frame = result.to_pandas()
    assert list(frame.columns) == COLUMNS
    assert frame["rank"].tolist() == [1, 2]
    assert frame["iri"].tolist() == [h.iri for h in result]
    assert frame["score"].tolist() == [h.score for h in result]
    assert frame["components"].tolist() == [h.components for h in result]
    assert sorted(frame["title"]) == ["Chunking", "Fusion weights"]
    assert sorted(frame["date"]) == ["2023-01-09", "2024-05-01"]
    assert sorted(frame["source"]) == sorted([str(docs / "chunks.md"), str(docs / "fusion.md")])
    assert frame["document"].tolist() == [h.document for h in result]


def test_to_polars_has_the_same_rows(ctx, docs):
    ingest_all(str(docs), ctx=ctx)
    result = retrieve("fusion chunks", ctx, k=2)
    frame = result.to_polars()
    assert frame.columns == COLUMNS
    assert frame["iri"].to_list() == [h.iri for h in result]
    assert frame["score"].to_list() == [h.score for h in result]
    first = frame["components"].to_list()[0]
    assert {k: v for k, v in first.items() if v is not None} == result[0].components


def test_polars_frames_keep_their_column_types_whatever_the_hits_hold(ctx, docs):
    pl = pytest.importorskip("polars")
    ingest_all(str(docs), ctx=ctx)
    found = retrieve("fusion chunks", ctx, k=2).to_polars()
    bare = RetrievalResult([RetrievalHit("urn:x:1", 0.5, "text", {}, {"vector": 0.5})],
                           mode="vector", plan="full-scan", candidates=None,
                           exhaustive=True).to_polars()
    empty = RetrievalResult([], mode="vector", plan="full-scan", candidates=None,
                            exhaustive=True).to_polars()
    expected = {"rank": pl.Int64, "iri": pl.String, "score": pl.Float64, "title": pl.String,
                "date": pl.String, "source": pl.String, "snippet": pl.String,
                "document": pl.String}
    for frame in (found, bare, empty):
        assert {n: t for n, t in frame.schema.items() if n != "components"} == expected
    both = pl.concat([found.drop("components"), bare.drop("components"),
                      empty.drop("components")])
    assert both["iri"].to_list() == [*found["iri"].to_list(), "urn:x:1"]


def test_empty_results_give_empty_frames_with_every_column():
    empty = RetrievalResult([], mode="vector", plan="full-scan", candidates=None,
                            exhaustive=True)
    assert list(empty.to_pandas().columns) == COLUMNS and len(empty.to_pandas()) == 0
    assert empty.to_polars().columns == COLUMNS and empty.to_polars().height == 0


@pytest.mark.parametrize(("module", "method"), [("pandas", "to_pandas"), ("polars", "to_polars")])
def test_a_missing_dataframe_library_names_the_pip_command(monkeypatch, module, method):
    monkeypatch.setitem(sys.modules, module, None)  # import now fails as if not installed
    result = RetrievalResult([hit()], mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True)
    with pytest.raises(MissingExtraError, match=re.escape(f'pip install "trails[{module}]"')):
        getattr(result, method)()


def test_a_hit_with_a_datetime_date_keeps_it_in_frames():
    when = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)
    one = RetrievalHit("https://e.org/c", 0.5, "t", {"date": when.isoformat()})
    result = RetrievalResult([one], mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True)
    assert result.to_pandas()["date"].tolist() == ["2024-05-01T12:30:00+00:00"]


@given(scores=st.lists(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), min_size=1,
                       max_size=12))
def test_every_bar_is_its_score_over_the_best_score(scores):
    hits = [hit(f"https://e.org/{i}", score) for i, score in enumerate(scores)]
    result = RetrievalResult(hits, mode="vector", plan="full-scan", candidates=None,
                             exhaustive=True)
    bars = soup_of(result._repr_html_()).select(".trails-bar")
    assert len(bars) == len(scores)
    best = max(scores)
    for bar, score in zip(bars, scores, strict=True):
        expected = score / best if best > 0 else 0.0
        assert abs(float(bar["data-fraction"]) - expected) <= 5e-5
        width = float(bar.select_one(".trails-bar-fill")["style"].removeprefix("width:")
                      .removesuffix("%"))
        assert abs(width - 100 * expected) <= 0.05
