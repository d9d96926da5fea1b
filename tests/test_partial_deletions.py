"""A deletion of several documents that stops on an error says which it had deleted: `trails
delete a b c` or `trails prune --expired` failing on the second document reported only the
error, as though nothing had been deleted, and --json printed nothing at all."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from trails.cli import app
from trails.context import Context
from trails.errors import StorageError
from trails.ingest import Document, ingest_all, retention
from trails.vector.embedders.mock import MockEmbedder

A, B, C = (f"trails://local/doc/{name}" for name in "abc")
FULL = "the disk is full writing vectors.db; free space and run it again"


@pytest.fixture
def kb(tmp_path):
    root = tmp_path / "kb"
    with Context.open(root, embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all([Document(name, name, f"Minutes {name}.", metadata={"expires": "2001-01-01"})
                    for name in "abc"], ctx=ctx)
    return root


def documents(root) -> list[str]:
    with Context.open(root, read_only=True) as ctx:
        return sorted(ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d"))


@pytest.fixture
def second_fails(monkeypatch):
    """Deleting B fails (a full disk): A, deleted before it, is gone; C is never reached."""
    real = retention.delete_recorded

    def failing(ctx, document, **kwargs):
        if document == B:
            raise StorageError(FULL)
        return real(ctx, document, **kwargs)

    monkeypatch.setattr(retention, "delete_recorded", failing)
    real_delete = Context.delete_document

    def failing_delete(self, iri, **kwargs):
        if iri == B:
            raise StorageError(FULL)
        return real_delete(self, iri, **kwargs)

    monkeypatch.setattr(Context, "delete_document", failing_delete)


def trails(root, *args):
    return CliRunner().invoke(app, ["--db", str(root), *args])


def error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_prune_expired_stopping_part_way_names_what_it_deleted(kb, second_fails):
    with Context.open(kb) as ctx, pytest.raises(StorageError) as raised:
        ctx.prune_expired()
    assert str(raised.value) == FULL  # the error itself, unchanged
    assert raised.value.__notes__ == [
        (f"Deleted before it stopped: 1 document ({A}); not deleted: {B}, {C}. Fix the error "
         "and run it again for the rest.")]
    assert documents(kb) == [B, C]


def test_prune_expired_failing_on_the_first_document_adds_nothing(kb, monkeypatch):
    def failing(ctx, document, **kwargs):
        raise StorageError(FULL)

    monkeypatch.setattr(retention, "delete_recorded", failing)
    with Context.open(kb) as ctx, pytest.raises(StorageError) as raised:
        ctx.prune_expired()
    assert not getattr(raised.value, "__notes__", None)
    assert documents(kb) == [A, B, C]


def test_cli_prune_stopping_part_way_names_what_it_deleted(kb, second_fails):
    result = trails(kb, "prune", "--expired")
    assert result.exit_code == 3  # a storage error's code, as before
    line = error_line(result)
    assert FULL in line and f"Deleted before it stopped: 1 document ({A}); not deleted: {B}, {C}" \
        in line
    assert f"deleted {A}" not in result.stdout  # said once, in the error
    assert documents(kb) == [B, C]


def test_cli_prune_json_stopping_part_way_lists_what_it_deleted(kb, second_fails):
    result = trails(kb, "prune", "--expired", "--json")
    assert result.exit_code == 3
    printed = json.loads(result.stdout)
    assert printed["dry_run"] is False
    assert printed["documents"] == [{"iri": A, "expires": "2001-01-01T00:00:00+00:00"}]
    assert printed["error"]["type"] == "StorageError" and printed["error"]["exit_code"] == 3
    message = printed["error"]["message"]
    assert FULL in message and f"not deleted: {B}, {C}" in message
    assert A in error_line(result)


def test_cli_delete_stopping_part_way_names_what_it_deleted(kb, second_fails):
    result = trails(kb, "delete", A, B, C)
    assert result.exit_code == 3
    assert result.stdout.splitlines() == [f"deleted {A}"]
    line = error_line(result)
    assert FULL in line and f"Deleted before it stopped: 1 document ({A}); not deleted: {B}, {C}" \
        in line
    assert documents(kb) == [B, C]


def test_cli_delete_json_stopping_part_way_lists_what_it_deleted(kb, second_fails):
    result = trails(kb, "delete", A, B, C, "--json")
    assert result.exit_code == 3
    printed = json.loads(result.stdout)
    assert printed["deleted"] == [A] and printed["not_deleted"] == [B, C]
    assert printed["all_triples"] is False and FULL in printed["error"]["message"]
    assert printed["error"] == {"type": "StorageError", "exit_code": 3,
                                "message": printed["error"]["message"]}
    assert documents(kb) == [B, C]


def test_cli_delete_failing_first_says_nothing_was_deleted(kb, second_fails):
    result = trails(kb, "delete", B, A, "--json")
    assert result.exit_code == 3
    printed = json.loads(result.stdout)
    assert printed["deleted"] == [] and printed["not_deleted"] == [B, A]
    assert printed["error"]["message"] == FULL
    assert documents(kb) == [A, B, C]
    assert "Deleted before it stopped" not in error_line(result)
