"""A path given to ingest() that names nothing is refused at the call, saying what to do.

A str source is read as a path: text meant to be ingested (``ingest_all("Rails is ...")``)
failed as a file not found, with no word of how to ingest text; a text long enough was the
file system's bare ``OSError``; and ``""`` read the whole working directory.
"""

from __future__ import annotations

import asyncio

import pytest

from trails.errors import InvalidArgumentError
from trails.ingest import aingest, ingest, ingest_all
from trails.testing import fresh_context

PROSE = "Rails is a web framework.\nIt is written in Ruby and favours convention."
HOW_TO = ('If it is the text to ingest, not a path, pass it as a Document: '
          'ingest_all(Document(id="note-1", source="notes", text=...), ctx=ctx)')


@pytest.fixture
def mem():
    ctx = fresh_context(dim=32)
    yield ctx
    ctx.close()


@pytest.mark.parametrize("call", [ingest, ingest_all, aingest])
def test_text_given_as_the_source_is_refused_naming_it_and_how_to_ingest_text(mem, call):
    with pytest.raises(InvalidArgumentError) as caught:
        call(PROSE, ctx=mem)
    message = str(caught.value)
    assert message.startswith("cannot ingest 'Rails is a web framework.\\nIt is written in "
                              "Ruby and favours convention.': no such file or folder "
                              "(relative to the working directory, ")
    assert message.endswith(HOW_TO)
    assert mem.vectors.count() == 0


def test_a_text_too_long_to_be_a_file_name_is_no_os_error(mem):
    with pytest.raises(InvalidArgumentError, match=r"^cannot ingest 'xxxx.*no such file or "
                                                   r"folder.*pass it as a Document"):
        ingest_all("x" * 5000, ctx=mem)


def test_a_missing_path_is_refused_naming_it(mem, tmp_path):
    missing = tmp_path / "notes" / "guide.md"
    with pytest.raises(InvalidArgumentError) as caught:
        ingest_all(missing, ctx=mem)
    assert str(caught.value) == (f"cannot ingest {str(missing)!r}: no such file or folder; "
                                 "check the path")


def test_a_missing_path_among_several_is_refused_before_anything_is_written(mem, tmp_path):
    (tmp_path / "a.md").write_text("Alpha is here.")
    with pytest.raises(InvalidArgumentError, match="cannot ingest .*typo.md': no such file"):
        ingest_all([tmp_path / "a.md", str(tmp_path / "typo.md")], ctx=mem)
    assert mem.vectors.count() == 0


def test_a_glob_pattern_is_refused_naming_include(mem, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Alpha is here.")
    with pytest.raises(InvalidArgumentError) as caught:
        ingest_all("docs/*.md", ctx=mem)
    assert str(caught.value).endswith(
        'A source path is no glob pattern: give the folder and the pattern as include=, '
        'e.g. ingest_all("docs", include=["*.md"], ctx=ctx)')
    assert "relative to the working directory" in str(caught.value)
    assert ingest_all("docs", include=["*.md"], ctx=mem).ingested == 1


def test_an_empty_path_does_not_read_the_working_directory(mem, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "private.md").write_text("Not meant to be ingested.")
    with pytest.raises(InvalidArgumentError,
                       match='^cannot ingest "": an empty path names no file; for the '
                             'working directory pass "."$'):
        ingest_all("", ctx=mem)
    assert mem.vectors.count() == 0


def test_real_paths_a_broken_link_and_documents_are_ingested_as_before(mem, tmp_path):
    (tmp_path / "a.md").write_text("Alpha is here.")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("Beta is here.")
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    assert ingest_all(tmp_path / "a.md", ctx=mem).ingested == 1
    assert ingest_all(str(tmp_path / "sub"), ctx=mem).ingested == 1
    broken = ingest_all([tmp_path / "gone.md"], ctx=mem)  # names something: the loader's case
    assert (broken.ingested, broken.failed) == (0, 1)

    async def drain():
        return [e async for e in aingest(tmp_path / "sub", ctx=mem)]

    assert [type(e).__name__ for e in asyncio.run(drain())] == ["DocumentStarted",
                                                                   "DocumentSkipped"]
