"""A trails.json that cannot be looked at (a folder this process may not enter, a network
share whose handle went stale, an I/O error) is a StorageError, never "no context here":
read as absent, Context.open created a context over the existing one and wrote a new
trails.json of defaults, losing its settings (retention rules, audit levels, payload)."""

from __future__ import annotations

import errno
import io
import os

import pytest

from trails.config import CONFIG_FILE, read_config
from trails.context import Context
from trails.errors import StorageError
from trails.testing import MockEmbedder


@pytest.fixture
def kb(tmp_path):
    directory = tmp_path / "kb"
    Context.open(directory, embedder=MockEmbedder(dim=8), retention={"tmp": "P30D"}).close()
    return directory


def refuse(monkeypatch, target: str, error: int, *, reading: bool) -> None:
    """os.stat (and, with ``reading``, opening) of ``target`` fails with ``error``."""
    stat, opened = os.stat, io.open

    def failing(path, *args, **kwargs):
        if os.fspath(path) == target:
            raise OSError(error, os.strerror(error), target)
        return stat(path, *args, **kwargs)

    def failing_open(path, *args, **kwargs):
        if not isinstance(path, int) and os.fspath(path) == target:
            raise OSError(error, os.strerror(error), target)
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", failing)
    if reading:
        monkeypatch.setattr(io, "open", failing_open)


@pytest.mark.parametrize("error", [errno.EACCES, errno.ESTALE, errno.EIO])
def test_a_trails_json_that_cannot_be_read_is_a_storage_error_and_stays(kb, monkeypatch,
                                                                        error):
    before = (kb / CONFIG_FILE).read_bytes()
    refuse(monkeypatch, str(kb / CONFIG_FILE), error, reading=True)
    with pytest.raises(StorageError, match=CONFIG_FILE):
        read_config(kb)
    with pytest.raises(StorageError):
        Context.open(kb, embedder=MockEmbedder(dim=8))
    monkeypatch.undo()
    assert (kb / CONFIG_FILE).read_bytes() == before
    with Context.open(kb) as ctx:
        assert ctx.retention == {"tmp": "P30D"}


@pytest.mark.parametrize("error", [errno.EACCES, errno.ESTALE])
def test_a_trails_json_whose_stat_fails_is_read_all_the_same(kb, monkeypatch, error):
    refuse(monkeypatch, str(kb / CONFIG_FILE), error, reading=False)
    config = read_config(kb)
    assert config is not None and config.retention == {"tmp": "P30D"}
