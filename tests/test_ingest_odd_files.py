"""A newcomer's own folder: files in other encodings, odd names, types ingest does not read.

Each case here once did something unhelpful: a UTF-16 file saved by a Windows editor failed
as "not UTF-8" though its byte order mark says what it is; a file name that is no UTF-8
failed with advice about the text's encoding; a broken PDF printed pypdf's bare "EOF marker
not found" on stderr, naming no file; and a folder's .docx and .csv files were left out
without a word.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import trails
from _cli import run_trails
from trails import MockEmbedder
from trails.context import Context
from trails.ingest import ingest_all
from trails.ingest.decoding import decode
from trails.ingest.document import Document, LoadFailure
from trails.ingest.loaders import FileLoader
from trails.ingest.unread import unread_note

PACKAGES = Path(trails.__file__).resolve().parent.parent  # the trails under test

# Text without "\r" (line endings are normalised), a BOM character, or a NUL (binary data
# after a UTF-16/32 mark; and a UTF-16 mark followed by a NUL is UTF-32's mark).
TEXT = st.text(st.characters(blacklist_categories=("Cs",),
                             blacklist_characters="\r\ufeff\x00"))


def _loaded(folder: Path) -> dict[str, Document | LoadFailure]:
    return {(item.id if isinstance(item, Document) else item.source): item
            for item in FileLoader(folder).load()}


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32",
                                      "utf-32-le", "utf-32-be"])
def test_a_file_with_a_utf16_or_utf32_byte_order_mark_is_read(tmp_path, encoding):
    bom = {"utf-16-le": "\ufeff", "utf-16-be": "\ufeff", "utf-32-le": "\ufeff",
           "utf-32-be": "\ufeff"}.get(encoding, "")  # the plain codecs write their own
    (tmp_path / "notes.txt").write_bytes((bom + "Ça va?\r\nOui.").encode(encoding))
    loaded = _loaded(tmp_path)["notes.txt"]
    assert isinstance(loaded, Document)
    assert loaded.text == "Ça va?\nOui."


def test_markdown_saved_as_utf16_keeps_its_front_matter(tmp_path):
    (tmp_path / "a.md").write_bytes("---\ntitle: Été\n---\n# H\nBody.".encode("utf-16"))
    loaded = _loaded(tmp_path)["a.md"]
    assert isinstance(loaded, Document)
    assert (loaded.title, loaded.text) == ("Été", "# H\nBody.")


def test_a_utf16_mark_before_bytes_that_are_no_utf16_fails_naming_utf16(tmp_path):
    (tmp_path / "odd.txt").write_bytes(b"\xff\xfeA\x00\x00\xd8")  # a lone high surrogate
    loaded = _loaded(tmp_path)[str(tmp_path / "odd.txt")]
    assert isinstance(loaded, LoadFailure)
    assert "not UTF-16 text" in loaded.reason
    assert "byte order mark" in loaded.reason and "convert the file to UTF-8" in loaded.reason


@pytest.mark.parametrize("data", [b"\xff\xfe\x00\x00\x00\x00binary", b"\xff\xfeA\x00\x00\x00"])
def test_binary_data_after_what_looks_a_utf16_mark_fails_as_no_text(tmp_path, data):
    (tmp_path / "blob.txt").write_bytes(data)  # the first: a UTF-32 mark, then a NUL
    loaded = _loaded(tmp_path)[str(tmp_path / "blob.txt")]
    assert isinstance(loaded, LoadFailure)
    assert loaded.reason.startswith(("not UTF-32 text (byte 0x00 at offset 4, though",
                                     "not UTF-16 text (byte 0x00 at offset 4, though"))


def test_latin1_still_fails_naming_the_byte_and_offset(tmp_path):
    (tmp_path / "latin1.txt").write_bytes("Café".encode("latin-1"))
    loaded = _loaded(tmp_path)[str(tmp_path / "latin1.txt")]
    assert isinstance(loaded, LoadFailure)
    assert loaded.reason == ("not UTF-8 text (byte 0xe9 at offset 3); convert the file to "
                             "UTF-8 first")


@given(TEXT, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"]))
def test_decoding_gives_back_the_text_whatever_encoding_marks_it(text, encoding):
    assert decode(text.encode(encoding)) == text


@given(TEXT)
def test_utf8_is_never_read_as_utf16(text):
    # UTF-8 never holds 0xFF or 0xFE, so no UTF-8 file starts with another encoding's mark.
    assert decode(text.encode("utf-8")) == text


@pytest.mark.skipif(sys.platform != "linux", reason="a file system that keeps any byte name")
def test_a_file_name_that_is_no_utf8_fails_asking_to_rename_it(tmp_path):
    (tmp_path / "good.md").write_text("fine")
    with open(os.fsencode(tmp_path) + b"/caf\xe9.md", "w") as file:
        file.write("text")
    loaded = list(FileLoader(tmp_path).load())
    failures = [item for item in loaded if isinstance(item, LoadFailure)]
    assert [d.id for d in loaded if isinstance(d, Document)] == ["good.md"]
    assert len(failures) == 1
    assert failures[0].reason.startswith("the file name is not UTF-8 (b'")
    assert "caf\\xe9.md'); rename it" in failures[0].reason


@pytest.mark.skipif(sys.platform != "linux", reason="a file system that keeps any byte name")
def test_the_cli_names_the_file_whose_name_is_no_utf8_and_ingests_the_rest(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("fine")
    with open(os.fsencode(folder) + b"/caf\xe9.md", "w") as file:
        file.write("text")
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    result = run_trails("--db", tmp_path / "kb", "ingest", folder, "-q")
    assert result.returncode == 2
    assert result.stdout.startswith("1 documents ingested, 0 skipped, 1 failed")
    assert "caf\\udce9.md: failed: the file name is not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.process
def test_a_broken_pdf_prints_nothing_but_its_failure(tmp_path):
    pytest.importorskip("pypdf")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    # A process of its own: pytest's log capture would hide what a user sees.
    code = ("import sys; from trails.ingest.loaders import FileLoader; "
            "[print(f.reason) for f in FileLoader(sys.argv[1]).load()]")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(PACKAGES)})
    assert done.stdout.startswith("cannot parse PDF: ")
    assert done.stderr == ""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.md", "b.txt", "c.csv", "d.docx", "e.docx", "README", "f.CSV"):
        (folder / name).write_text("some text")
    (folder / ".hidden.docx").write_text("hidden")
    (folder / "skip").mkdir()
    (folder / "skip" / "g.docx").write_text("excluded")
    return folder


def test_the_loader_counts_the_files_it_left_out_for_their_type(tmp_path):
    loader = FileLoader(_folder(tmp_path), exclude=["skip"])
    assert sorted(d.id for d in loader.load()) == ["a.md", "b.txt"]
    assert dict(loader.unread) == {".csv": 2, ".docx": 2, "": 1}
    loader.count()  # a second walk counts afresh
    assert dict(loader.unread) == {".csv": 2, ".docx": 2, "": 1}


def test_include_leaves_nothing_out_for_its_type(tmp_path):
    loader = FileLoader(_folder(tmp_path), include=["*.md"])
    assert [d.id for d in loader.load()] == ["a.md"]
    assert not loader.unread


def test_trails_ingest_notes_the_files_left_out_for_their_type(tmp_path):
    folder = _folder(tmp_path)
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    result = run_trails("--db", tmp_path / "kb", "ingest", folder, "--exclude", "skip", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("2 documents ingested, 0 skipped, 0 failed, 2 chunks")
    assert result.stderr.splitlines() == [(
        "note: 5 files left out, of types ingest does not read: 2 .csv, 2 .docx, 1 with no "
        "suffix; to read text files of another type, name every pattern to read with "
        "--include (--include '*.md' --include '*.csv'): include replaces the types read by "
        "default")]
    as_json = run_trails("--db", tmp_path / "kb", "ingest", folder, "--exclude", "skip",
                         "--json")
    assert json.loads(as_json.stdout)["left_out"] == {"": 1, ".csv": 2, ".docx": 2}


def test_trails_ingest_says_nothing_more_when_every_file_is_read(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("text")
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    result = run_trails("--db", tmp_path / "kb", "ingest", folder, "-q")
    assert (result.returncode, result.stderr) == (0, "")
    as_json = run_trails("--db", tmp_path / "kb", "ingest", folder, "--json")
    assert json.loads(as_json.stdout)["left_out"] == {}


def test_the_note_counts_many_types_together_past_six():
    note = unread_note({f".x{i}": 1 for i in range(8)} | {".csv": 5})
    assert note is not None
    assert note.startswith("note: 13 files left out, of types ingest does not read: 5 .csv, "
                           "1 .x0, 1 .x1, 1 .x2, 1 .x3, 1 .x4, 3 of 3 other types; ")


def test_a_renamed_file_is_a_new_document_and_the_old_one_goes_with_prune(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "old.md").write_text("Some text about rivers.")
    with Context.memory(MockEmbedder(dim=8)) as ctx:
        ingest_all(folder, ctx=ctx)
        (folder / "old.md").rename(folder / "new.md")
        stats = ingest_all(folder, ctx=ctx)
        assert (stats.ingested, stats.pruned) == (1, 0)
        ids = "SELECT ?id WHERE { ?d <https://trails.dev/ns#documentId> ?id } ORDER BY ?id"
        assert [row["id"] for row in ctx.kg.query(ids)] == ["new.md", "old.md"]
        stats = ingest_all(folder, ctx=ctx, prune=True)
        assert (stats.skipped, stats.pruned) == (1, 1)
        assert [row["id"] for row in ctx.kg.query(ids)] == ["new.md"]


def test_a_warning_about_a_jsonl_record_names_the_record(tmp_path):
    (tmp_path / "notes.jsonl").write_text('{"id": "a", "text": "Fine."}\n'
                                          '{"id": "b", "text": " "}\n'
                                          '{"id": "c", "text": "Dated.", "date": "2024-13-01"}\n')
    with Context.memory(MockEmbedder(dim=8)) as ctx:
        stats = ingest_all(tmp_path, ctx=ctx)
    assert stats.ingested == 3
    assert [(Path(source).name, message.split(": ")[0]) for source, message in stats.warnings] \
        == [("notes.jsonl", "document 'notes.jsonl#b'"), ("notes.jsonl", "document 'notes.jsonl#c'")]
    assert stats.warnings[0][1].startswith("document 'notes.jsonl#b': no text: ")
    assert stats.warnings[1][1].startswith("document 'notes.jsonl#c': date: '2024-13-01' is not")


def test_a_warning_about_a_markdown_file_is_as_before(tmp_path):
    (tmp_path / "empty.md").write_text("")
    with Context.memory(MockEmbedder(dim=8)) as ctx:
        stats = ingest_all(tmp_path, ctx=ctx)
    [(source, message)] = stats.warnings
    assert (Path(source).name, message.split(":")[0]) == ("empty.md", "no text")
