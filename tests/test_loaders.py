"""Loaders: the pure format parsers on strings, and FileLoader on real files in tmp_path."""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

import pytest

from trails._lazy import OPTIONAL_MODULES
from trails.errors import MissingExtraError
from trails.ingest.document import Document, LoadFailure
from trails.ingest.loaders import (
    FileLoader,
    load,
    parse_html,
    parse_jsonl_record,
    parse_markdown,
    parse_pdf,
    parse_text,
)

ROOT = Path(__file__).resolve().parent.parent


def make_pdf(lines: list[str], title: str = "Hand made", author: str = "Ann") -> bytes:
    """A minimal one-page PDF with a real text layer, written by hand (no PDF library)."""
    ops = [b"BT /F1 12 Tf 72 720 Td"]
    for i, line in enumerate(lines):
        ops.append((b"" if i == 0 else b"0 -16 Td ") + b"(" + line.encode("latin-1") + b") Tj")
    content = b"\n".join([*ops, b"ET"])
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
         b"/Resources << /Font << /F1 5 0 R >> >> >>"),
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (%s) /Author (%s) /CreationDate (D:20240501120000Z) >>"
        % (title.encode(), author.encode()),
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


# --------------------------------------------------------------------------- parsers

def test_parse_text_keeps_text():
    parsed = parse_text("  hello\nworld ")
    assert parsed.text == "  hello\nworld "
    assert (parsed.title, parsed.metadata, parsed.media_type) == (None, {}, "text/plain")


def test_markdown_front_matter_becomes_metadata_with_dates():
    text = ("---\ntitle: The Guide\ndate: 2024-05-01\ncreated: 2024-05-01 10:30:00\n"
            "updated: '2024-06-01'\ntags: [a, b]\n---\n# Heading\n\nBody text.\n")
    parsed = parse_markdown(text)
    assert parsed.title == "The Guide"
    assert parsed.metadata["date"] == dt.date(2024, 5, 1)
    assert isinstance(parsed.metadata["created"], dt.datetime)
    assert parsed.metadata["updated"] == "2024-06-01"  # quoted in YAML: kept as a string
    assert parsed.metadata["tags"] == ["a", "b"]
    assert parsed.text == "# Heading\n\nBody text.\n"
    assert parsed.media_type == "text/markdown"


def test_markdown_title_from_first_h1_outside_code_fences():
    text = "Intro line\n\n```bash\n# not a title\n```\n## Sub\n# Real Title #\n"
    parsed = parse_markdown(text)
    assert parsed.title == "Real Title"
    assert parsed.metadata == {}
    assert parsed.text == text


def test_markdown_without_title():
    assert parse_markdown("just text").title is None
    assert parse_markdown("---\n---\nbody").text == "body"


def test_markdown_rule_later_in_text_is_not_front_matter():
    text = "Para\n\n---\n\nkey: value\n---\n"
    assert parse_markdown(text).text == text


@pytest.mark.parametrize("front", ["---\nkey: [unclosed\n---\nx", "---\n- a list\n---\nx"])
def test_markdown_bad_front_matter_is_a_value_error(front):
    with pytest.raises(ValueError, match="front matter"):
        parse_markdown(front)


def test_html_visible_text_title_and_meta():
    html = """<!doctype html><html><head><title> My  Page </title>
      <meta name="author" content="Ann"><meta property="article:published_time"
      content="2024-01-02"><style>body {color: red}</style>
      <script>var secret = "x";</script></head>
      <body><!-- hidden comment --><h1>Welcome</h1><p>Hello <b>bold</b> and
      <a href="#">link</a> &amp; more.</p><noscript>enable js</noscript>
      <ul><li>one</li><li>two</li></ul><script>alert(1)</script>
      <div>a<br>b</div><pre>keep
  this</pre></body></html>"""
    parsed = parse_html(html)
    assert parsed.title == "My Page"
    assert parsed.metadata == {"author": "Ann", "date": "2024-01-02"}
    assert parsed.text == "Welcome\n\nHello bold and link & more.\n\none\ntwo\n\na\nb\n\nkeep\nthis"
    for hidden in ("secret", "color", "alert", "comment", "enable js"):
        assert hidden not in parsed.text
    assert parsed.media_type == "text/html"


def test_html_without_title():
    assert parse_html("<p>x</p>").title is None


def test_jsonl_record_fields():
    parsed = parse_jsonl_record({"id": 7, "text": "Body", "title": "T", "lang": "en"})
    assert (parsed.key, parsed.text, parsed.title) == ("7", "Body", "T")
    assert parsed.metadata == {"id": 7, "title": "T", "lang": "en"}


def test_jsonl_record_custom_fields_and_errors():
    parsed = parse_jsonl_record({"doc": "x", "body": "B"}, text_field="body", id_field="doc")
    assert (parsed.key, parsed.text, parsed.title) == ("x", "B", None)
    with pytest.raises(ValueError, match=r"'text'.*\['body', 'doc'\]"):
        parse_jsonl_record({"doc": "x", "body": "B"})
    with pytest.raises(ValueError, match="object"):
        parse_jsonl_record(["not", "a", "dict"])


def test_parse_pdf_reads_text_layer_and_info():
    pytest.importorskip("pypdf")
    parsed = parse_pdf(make_pdf(["Hello PDF world.", "Second line."]))
    assert "Hello PDF world." in parsed.text and "Second line." in parsed.text
    assert parsed.title == "Hand made"
    assert parsed.metadata["author"] == "Ann"
    assert parsed.metadata["pages"] == 1
    assert parsed.metadata["created"].year == 2024
    assert parsed.media_type == "application/pdf"


def test_parse_pdf_without_text_is_a_value_error():
    pypdf = pytest.importorskip("pypdf")
    import io

    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ValueError, match="no extractable text"):
        parse_pdf(buffer.getvalue())


def test_parse_pdf_without_pypdf_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)  # makes `import pypdf` fail
    with pytest.raises(MissingExtraError, match=r'pip install "trails\[pdf\]"'):
        parse_pdf(b"%PDF-1.4")


def test_pdf_extra_is_declared():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert OPTIONAL_MODULES["pypdf"] == ("pypdf", "pdf")
    assert any(dep.startswith("pypdf") for dep in extras["pdf"])
    assert "pdf" in extras["all"][0]


# --------------------------------------------------------------------------- FileLoader

@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A small knowledge base with one file of every kind."""
    root = tmp_path / "kb"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "node_modules").mkdir()
    (root / "notes.txt").write_text("Plain notes.\n")
    (root / "docs" / "guide.md").write_text("---\ntitle: Guide\ndate: 2024-05-01\n---\nHi.\n")
    (root / "docs" / "deep" / "page.html").write_text(
        "<title>Page</title><script>x()</script><p>Visible.</p>")
    (root / "records.jsonl").write_text(
        '{"id": "a", "text": "First."}\n\n{"text": "No id."}\n{bad json\n'
        '{"id": "a", "text": "Dup."}\n{"id": 3, "text": "Third.", "title": "T3"}\n')
    (root / "data.csv").write_text("a,b\n1,2\n")
    (root / ".hidden" / "secret.txt").write_text("hidden")
    (root / ".dotfile.txt").write_text("hidden")
    (root / "node_modules" / "junk.md").write_text("junk")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    return root


def by_id(items):
    return {item.id: item for item in items if isinstance(item, Document)}


def failures(items):
    return [item for item in items if isinstance(item, LoadFailure)]


def test_folder_ids_are_relative_posix_paths_sorted(kb):
    items = list(FileLoader(kb, exclude=["node_modules"]).load())
    docs = by_id(items)
    # Files in sorted order; a JSONL file's records in line order.
    assert list(docs) == ["docs/deep/page.html", "docs/guide.md", "notes.txt",
                          "records.jsonl#a", "records.jsonl#L3", "records.jsonl#3"]
    guide = docs["docs/guide.md"]
    assert guide.source == str(kb / "docs" / "guide.md")
    assert (guide.title, guide.text, guide.media_type) == ("Guide", "Hi.\n", "text/markdown")
    assert guide.metadata["date"] == __import__("datetime").date(2024, 5, 1)
    assert docs["docs/deep/page.html"].text == "Visible."
    assert docs["records.jsonl#3"].title == "T3"
    assert docs["records.jsonl#a"].text == "First."  # the duplicate did not replace it


def test_failures_are_reported_and_loading_goes_on(kb):
    reasons = {f.source: f.reason for f in failures(FileLoader(kb).load())}
    jsonl = str(kb / "records.jsonl")
    assert "not UTF-8" in reasons[str(kb / "latin1.txt")]
    assert "0xe9" in reasons[str(kb / "latin1.txt")]
    assert reasons[f"{jsonl}:4"].startswith("line 4 is not JSON (")
    assert "duplicate id 'records.jsonl#a'" in reasons[f"{jsonl}:5"]


def test_hidden_unknown_and_excluded_files_are_skipped(kb):
    ids = set(by_id(FileLoader(kb, exclude=["node_modules", "*.jsonl"]).load()))
    assert ids == {"docs/deep/page.html", "docs/guide.md", "notes.txt"}
    assert "node_modules/junk.md" in by_id(FileLoader(kb).load())


def test_a_hidden_entry_is_read_when_an_include_pattern_spells_its_dot(kb):
    (kb / ".github" / "sub").mkdir(parents=True)
    (kb / ".github" / "ci.md").write_text("ci")
    (kb / ".github" / "sub" / "deep.md").write_text("deep")
    (kb / ".notes.md").write_text("notes")
    (kb / "docs" / ".draft.md").write_text("draft")

    def ids(*include):
        return set(by_id(FileLoader(kb, include=list(include)).load()))

    # A "*" never reads a hidden file or folder, as in a shell.
    assert ids("*.md") == {"docs/guide.md", "node_modules/junk.md"}
    assert ids(".notes.md") == {".notes.md"}
    assert ids("*.md", ".notes.md") == {"docs/guide.md", "node_modules/junk.md", ".notes.md"}
    assert ids(".github/*.md") == {".github/ci.md", ".github/sub/deep.md"}
    assert ids(".*.md") == {".notes.md", "docs/.draft.md"}
    assert ids("docs/.draft.md") == {"docs/.draft.md"}
    # A pattern naming one hidden folder opens no other.
    assert ids(".hidden/*") == {".hidden/secret.txt"}
    assert ids(".github/*") == {".github/ci.md", ".github/sub/deep.md"}
    # Exclude still wins.
    assert set(by_id(FileLoader(kb, include=[".github/*.md"], exclude=["sub"]).load())) == {
        ".github/ci.md"}
    assert not {i for i in ids() if i.startswith(".") or "/." in i}


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges there")
def test_a_link_out_of_the_folder_is_skipped_with_a_warning_not_read(tmp_path):
    """A folder holding a link to a file outside it (a key, a password file) read that file
    into the index, while a link to a folder was passed over in silence."""
    outside = tmp_path / "secret.txt"
    outside.write_text("password=hunter2")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "far.md").write_text("Far away.")
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "guide.md").write_text("The guide.")
    (folder / "leak.txt").symlink_to(outside)
    (folder / "sub" / "again.md").symlink_to(folder / "guide.md")  # inside: read
    (folder / "far").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    loaded = list(FileLoader(folder).load())
    docs = {d.id: d.text for d in loaded if isinstance(d, Document)}
    assert docs == {"guide.md": "The guide.", "sub/again.md": "The guide."}
    skipped = {f.source: f.reason for f in loaded if isinstance(f, LoadFailure)}
    assert set(skipped) == {str(folder / "leak.txt"), str(folder / "far")}
    assert all(f.skipped for f in loaded if isinstance(f, LoadFailure))
    assert f"link to the file {outside.resolve()}, not followed" in skipped[str(folder / "leak.txt")]
    assert "folders behind links are not walked" in skipped[str(folder / "far")]
    # Named by itself, a link is the caller's choice: it is read.
    assert [d.text for d in FileLoader(folder / "leak.txt").load()] == ["password=hunter2"]


def test_include_limits_files_and_reads_unknown_suffixes_as_text(kb):
    docs = by_id(FileLoader(kb, include=["*.csv", "docs/*"]).load())
    assert set(docs) == {"data.csv", "docs/deep/page.html", "docs/guide.md"}
    assert docs["data.csv"].text == "a,b\n1,2\n"
    assert docs["docs/deep/page.html"].text == "Visible."  # parsed by suffix all the same
    assert set(by_id(FileLoader(kb, include="**/guide.md").load())) == {"docs/guide.md"}


def test_a_folder_that_gives_no_file_says_so(kb, tmp_path):
    # A typo in include (or an empty folder) must not read as a run with nothing to do.
    typo = list(FileLoader(kb, include=["*.mdx"], exclude=["*.bak"]).load())
    assert len(typo) == 1 and typo[0].source == str(kb) and typo[0].skipped
    # The 8 files of the walk: notes, guide, page, records, data.csv, latin1, junk, .dotfile.
    assert "none of its 8 files matches include ['*.mdx']" in typo[0].reason
    assert "exclude ['*.bak']" in typo[0].reason
    (tmp_path / "empty").mkdir()
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "a.csv").write_text("a,b\n")
    [empty] = FileLoader(tmp_path / "empty").load()
    assert empty.skipped and "the folder is empty" in empty.reason
    [unknown] = FileLoader(tmp_path / "csv").load()
    assert unknown.skipped and "none of its 1 files is of a type ingest reads" in unknown.reason
    assert FileLoader(tmp_path / "empty").count() == 0  # a warning, not a document to come
    assert not [f for f in FileLoader(kb).load() if isinstance(f, LoadFailure) and f.skipped]


def test_an_include_typo_is_a_warning_of_the_run(kb):
    from trails.ingest import ingest_all
    from trails.testing import fresh_context

    with fresh_context(dim=8) as ctx:
        stats = ingest_all(kb, ctx=ctx, include=["*.mdx"])
    assert (stats.ingested, stats.failed) == (0, 0)
    assert [source for source, _ in stats.warnings] == [str(kb)]
    assert "no file to load" in stats.problems()[0]


def test_single_file_id_is_its_name_or_relative_to_root(kb):
    guide = kb / "docs" / "guide.md"
    assert [d.id for d in FileLoader(guide).load()] == ["guide.md"]
    assert [d.id for d in FileLoader(str(guide), root=kb).load()] == ["docs/guide.md"]
    assert set(by_id(FileLoader(kb / "docs", root=kb).load())) == {
        "docs/deep/page.html", "docs/guide.md"}


def test_ids_and_hashes_do_not_depend_on_the_working_directory(kb, monkeypatch):
    first = [(d.id, d.hash) for d in by_id(FileLoader(kb).load()).values()]
    monkeypatch.chdir(kb.parent)
    second = [(d.id, d.hash) for d in by_id(FileLoader("kb").load()).values()]
    assert first == second


def test_crlf_and_bom_are_normalised(tmp_path):
    (tmp_path / "win.txt").write_bytes(b"\xef\xbb\xbfline one\r\nline two\rend")
    (doc,) = FileLoader(tmp_path / "win.txt").load()
    assert doc.text == "line one\nline two\nend"


def test_explicit_file_with_unknown_suffix_is_read_as_text(tmp_path):
    (tmp_path / "notes.rst").write_text("Title\n=====\n")
    assert [d.text for d in FileLoader(tmp_path / "notes.rst").load()] == ["Title\n=====\n"]


def test_same_id_from_two_folders_is_a_failure(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "README.md").write_text(name)
    items = list(FileLoader([tmp_path / "a", tmp_path / "b"]).load())
    assert [d.text for d in items if isinstance(d, Document)] == ["a"]
    assert "pass root=" in failures(items)[0].reason
    ids = set(by_id(FileLoader([tmp_path / "a", tmp_path / "b"], root=tmp_path).load()))
    assert ids == {"a/README.md", "b/README.md"}


def test_a_file_named_twice_loads_once(kb):
    items = list(FileLoader([kb / "docs", kb / "docs" / "guide.md"], root=kb).load())
    assert [d.id for d in items] == ["docs/deep/page.html", "docs/guide.md"]


def test_paths_outside_root_are_rejected(kb, tmp_path):
    with pytest.raises(ValueError, match="not inside root"):
        FileLoader(tmp_path, root=kb)


def test_missing_path_broken_link_and_fifo_are_failures(tmp_path):
    (tmp_path / "ok.txt").write_text("fine")
    (tmp_path / "broken.txt").symlink_to(tmp_path / "nowhere.txt")
    os.mkfifo(tmp_path / "pipe.txt")  # reading it would block forever: must be refused
    items = list(FileLoader([tmp_path, tmp_path / "missing.md"]).load())
    assert [d.id for d in items if isinstance(d, Document)] == ["ok.txt"]
    reasons = {Path(f.source).name: f.reason for f in failures(items)}
    assert "broken link" in reasons["broken.txt"]
    assert "not a regular file" in reasons["pipe.txt"]
    assert "no such file" in reasons["missing.md"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads files whatever their mode; the FIFO test covers this path")
def test_unreadable_file_is_a_failure(tmp_path):
    path = tmp_path / "locked.txt"
    path.write_text("secret")
    path.chmod(0)
    try:
        (failure,) = FileLoader(path).load()
    finally:
        path.chmod(0o644)
    assert failure == LoadFailure(str(path), "permission denied")


def test_permission_error_is_a_failure_even_when_running_as_root(tmp_path, monkeypatch):
    """Root reads files whatever their mode, so the chmod tests below skip there; this one
    raises the same PermissionError that a real read would."""
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "b.txt").write_text("y")

    def refuse(path: Path) -> bytes:
        if path.name == "a.txt":
            raise PermissionError(13, "Permission denied", str(path))
        return original(path)

    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", refuse)
    items = list(FileLoader(tmp_path).load())
    assert items[0] == LoadFailure(str(tmp_path / "a.txt"), "permission denied")
    assert items[1].text == "y"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root lists folders whatever their mode")
def test_unlistable_folder_is_a_failure(tmp_path):
    (tmp_path / "open.txt").write_text("fine")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        items = list(FileLoader(tmp_path).load())
    finally:
        locked.chmod(0o755)
    assert [d.id for d in items if isinstance(d, Document)] == ["open.txt"]
    assert failures(items) == [LoadFailure(str(locked), "permission denied")]


def test_pdf_files_load_and_bad_pdfs_fail(tmp_path):
    pytest.importorskip("pypdf")
    (tmp_path / "good.pdf").write_bytes(make_pdf(["Quarterly report text."]))
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    items = list(FileLoader(tmp_path).load())
    (doc,) = [d for d in items if isinstance(d, Document)]
    assert (doc.id, doc.title, doc.media_type) == ("good.pdf", "Hand made", "application/pdf")
    assert "Quarterly report text." in doc.text
    (failure,) = failures(items)
    assert failure.source == str(tmp_path / "bad.pdf")


def test_pdf_without_pypdf_fails_that_file_only(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)
    (tmp_path / "a.pdf").write_bytes(make_pdf(["x"]))
    (tmp_path / "b.txt").write_text("still loaded")
    items = list(FileLoader(tmp_path).load())
    assert [d.id for d in items if isinstance(d, Document)] == ["b.txt"]
    assert 'pip install "trails[pdf]"' in failures(items)[0].reason


def test_jsonl_custom_fields(tmp_path):
    (tmp_path / "r.jsonl").write_text('{"key": "k1", "body": "B"}\n')
    (doc,) = FileLoader(tmp_path / "r.jsonl", jsonl_text_field="body",
                        jsonl_id_field="key").load()
    assert (doc.id, doc.text, doc.source) == ("r.jsonl#k1", "B", str(tmp_path / "r.jsonl"))


# --------------------------------------------------------------------------- load()

def test_load_accepts_paths_loaders_and_documents(kb):
    guide = kb / "docs" / "guide.md"
    assert [d.id for d in load(guide)] == ["guide.md"]
    assert [d.id for d in load(str(guide))] == ["guide.md"]
    assert [d.id for d in load([guide, kb / "notes.txt"])] == ["guide.md", "notes.txt"]
    assert [d.id for d in load(kb / "docs", include=["*.md"])] == ["guide.md"]
    assert [d.id for d in load(FileLoader(guide))] == ["guide.md"]
    doc = Document("x", "memory", "text")
    assert list(load(doc)) == [doc]
    assert list(load(iter([doc]))) == [doc]
    assert list(load([])) == []


def test_load_rejects_bad_sources():
    with pytest.raises(ValueError, match="a path, a list of paths, a Loader"):
        load(42)
    with pytest.raises(ValueError, match="apply to paths only"):
        load([Document("x", "m", "t")], include=["*.md"])
    with pytest.raises(ValueError, match="list holding int"):  # a list is checked at once
        load([Document("x", "m", "t"), 3])


def test_docstring_examples():
    import doctest

    from trails.ingest import loaders

    assert doctest.testmod(loaders).failed == 0


def test_a_trails_context_inside_the_folder_is_skipped_with_a_warning(tmp_path):
    """`trails --db kb ingest .` walked the context's own directory: its audit log (the
    searches people ran, their callers; rejected.txt, readers' pending .jsonl files) became
    documents anyone could retrieve, kept past the audit trail's retention."""
    from trails.context import Context
    from trails.ingest import ingest_all
    from trails.testing import MockEmbedder

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("A note about tides.")
    kb = tmp_path / "kb"
    with Context.open(kb, embedder=MockEmbedder(dim=16)) as ctx:
        (kb / "audit").mkdir(exist_ok=True)
        (kb / "audit" / "rejected.txt").write_text('{"query": "salary of alice"}\n')
        (kb / "audit" / "123-abcd.jsonl").write_text('{"text": "salary of alice"}\n')
        stats = ingest_all(tmp_path, ctx=ctx)
        sources = sorted(str(s) for s in ctx.kg.query(
            "SELECT ?s WHERE { ?d a trails:Document ; trails:source ?s }").column("s"))
        assert [s.rsplit("/", 2)[-2:] for s in sources] == [["notes", "a.md"]]
        assert stats.ingested == 1
    loaded = list(FileLoader(tmp_path).load())
    skipped = [f for f in loaded if isinstance(f, LoadFailure)]
    assert [f.source for f in skipped] == [str(kb)] and skipped[0].skipped
    assert "trails context" in skipped[0].reason
    # The context's folder given itself is skipped too, said so.
    only = list(FileLoader(kb).load())
    assert [type(f) for f in only] == [LoadFailure] and only[0].skipped


def test_a_trails_context_whose_lock_file_was_removed_is_still_skipped(tmp_path):
    """A context without ``trails-writer.lock`` (deleted, as ADR 44 expects it may be; or a
    context copied without it) was walked as documents: its audit log's pending searches
    (``audit/<pid>-<token>.jsonl``) were read as JSONL records."""
    from trails.context import Context
    from trails.testing import MockEmbedder

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("A note about tides.")
    kb = tmp_path / "kb"
    Context.open(kb, embedder=MockEmbedder(dim=16)).close()
    (kb / "audit").mkdir(exist_ok=True)
    (kb / "audit" / "123-abcd.jsonl").write_text('{"text": "salary of alice"}\n')
    (kb / "trails-writer.lock").unlink()
    loaded = list(FileLoader(tmp_path).load())
    assert [d.text for d in loaded if isinstance(d, Document)] == ["A note about tides."]
    skipped = [f for f in loaded if isinstance(f, LoadFailure)]
    assert [f.source for f in skipped] == [str(kb)] and "trails context" in skipped[0].reason
    # A folder of documents that merely holds a file named trails.json is walked as before.
    (tmp_path / "hikes").mkdir()
    (tmp_path / "hikes" / "trails.json").write_text('{"routes": []}')
    (tmp_path / "hikes" / "b.md").write_text("A route.")
    texts = [d.text for d in FileLoader(tmp_path / "hikes").load() if isinstance(d, Document)]
    assert texts == ["A route."]


def test_a_file_deleted_after_the_folder_was_listed_is_named_as_such(tmp_path):
    """Not "a broken link?": the file was there when the folder was listed, and is gone."""
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(f"text of {name}")
    loaded = FileLoader(tmp_path).load()
    first = next(loaded)
    (tmp_path / "b.txt").unlink()  # between the listing and its read
    rest = list(loaded)
    assert isinstance(first, Document) and first.id == "a.txt"
    reasons = {Path(f.source).name: f.reason for f in failures(rest)}
    assert "deleted or moved after the folder was listed" in reasons["b.txt"], reasons
    assert "broken link" not in reasons["b.txt"]
