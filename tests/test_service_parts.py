"""The service's parts that need no server: service.json discovery, the status of each
error, steps by name, and the loopback rule."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trails import Context, ingest_all
from trails.audit.records import DeletionRecord
from trails.errors import (
    AuthenticationError,
    ContextDamagedError,
    ContextLockedError,
    EndpointUnavailableError,
    InvalidArgumentError,
    PermissionDeniedError,
    ReadOnlyServiceError,
    SparqlError,
    StorageError,
    UnknownDocumentError,
    UnsafeFilterError,
)
from trails.ingest.document import Document
from trails.rank import MMR, RecencyDecay
from trails.service.discovery import (
    SERVICE_FILE,
    ServiceInfo,
    read_service,
    remove_service,
    write_service,
)
from trails.service.problems import error_body, status_of
from trails.service.runner import is_loopback
from trails.service.steps import build_steps
from trails.vector.embedders.mock import MockEmbedder

PYTHON = Path(__file__).resolve().parent.parent / "python"


def _info(pid: int, token: str = "trails_token") -> ServiceInfo:
    return ServiceInfo(url="http://127.0.0.1:1234", pid=pid, token=token,
                       started="2026-01-01T00:00:00+00:00")


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# -- service.json ------------------------------------------------------------------------------

def test_service_json_round_trips_with_mode_0600(tmp_path):
    info = _info(pid=os.getpid())
    path = write_service(tmp_path, info)
    assert path == tmp_path / SERVICE_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {
        "version": 1, "url": "http://127.0.0.1:1234", "pid": info.pid, "token": "trails_token",
        "started": "2026-01-01T00:00:00+00:00", "directory": str(tmp_path.resolve()),
        "identity": [tmp_path.stat().st_dev, tmp_path.stat().st_ino]}
    assert read_service(tmp_path) == info
    assert [p.name for p in tmp_path.iterdir()] == [SERVICE_FILE]  # no temporary left


@pytest.mark.parametrize("content", [
    None, "", "{", "[]", '{"version": 2, "url": "u", "pid": 1, "token": "t", "started": "s"}',
    '{"version": 1, "url": "u", "pid": "1", "token": "t", "started": "s"}',
    '{"version": 1, "url": "u", "pid": true, "token": "t", "started": "s"}',
    '{"version": 1, "pid": 1, "token": "t", "started": "s"}',
])
def test_read_service_is_none_for_an_absent_or_malformed_file(tmp_path, content):
    if content is not None:
        (tmp_path / SERVICE_FILE).write_text(content)
    assert read_service(tmp_path) is None


def test_read_service_is_none_for_another_directorys_file(tmp_path):
    """A copy of a served directory holds its service.json: that service serves the other."""
    served, copy = tmp_path / "kb", tmp_path / "kb2"
    served.mkdir(), copy.mkdir()
    (served / "link").symlink_to(served, target_is_directory=True)
    write_service(served, _info(pid=os.getpid()))
    (copy / SERVICE_FILE).write_bytes((served / SERVICE_FILE).read_bytes())
    assert read_service(copy) is None
    assert read_service(served / "link") == read_service(served) == _info(pid=os.getpid())
    legacy = {**_info(pid=os.getpid()).to_dict()}  # written before the directory was
    (copy / SERVICE_FILE).write_text(json.dumps(legacy))
    assert read_service(copy) == _info(pid=os.getpid())


def test_a_moved_served_directory_finds_its_service_and_a_copy_renamed_to_its_name_does_not(
        tmp_path):
    """The service serves the directory it opened, wherever it is moved meanwhile: ``mv kb
    kb-old`` while served still finds it, and a copy put under the old name (``cp -a kb kb2;
    mv kb kb-old; mv kb2 kb``) is another context, whose queries must not go to that service."""
    served, copy, moved = tmp_path / "kb", tmp_path / "kb2", tmp_path / "kb-old"
    served.mkdir()
    write_service(served, _info(pid=os.getpid()))
    shutil.copytree(served, copy)
    served.rename(moved)
    assert read_service(moved) == _info(pid=os.getpid())
    copy.rename(served)  # the copy now has the served directory's former name
    assert read_service(served) is None
    assert read_service(moved) == _info(pid=os.getpid())


def test_read_service_is_none_when_the_process_is_gone(tmp_path):
    write_service(tmp_path, _info(pid=_dead_pid()))
    assert read_service(tmp_path) is None


def test_remove_service_removes_only_its_own_file(tmp_path):
    ours, newer = _info(pid=10, token="a"), _info(pid=10, token="b")
    write_service(tmp_path, newer)
    assert remove_service(tmp_path, ours) is False
    assert (tmp_path / SERVICE_FILE).exists()
    assert remove_service(tmp_path, newer) is True
    assert not (tmp_path / SERVICE_FILE).exists()
    assert remove_service(tmp_path, newer) is False


def test_discovery_imports_nothing_heavy():
    code = ("import sys; import trails.service.discovery; "
            "heavy = [m for m in ('fastapi', 'uvicorn', 'pyoxigraph', 'numpy', 'trails.context') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(PYTHON)}).stdout
    assert out.strip() == "[]"


# -- statuses ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("error", "status"), [
    (AuthenticationError("x"), 401), (PermissionDeniedError("x"), 403),
    (UnknownDocumentError("x"), 404), (ContextLockedError("x"), 409),
    (ReadOnlyServiceError("x"), 409), (EndpointUnavailableError("x"), 503),
    (StorageError("x"), 503), (ContextDamagedError("x"), 503), (SparqlError("x"), 400),
    (UnsafeFilterError("x"), 400), (InvalidArgumentError("x"), 400), (ValueError("x"), 400),
    (SyntaxError("x"), 400), (KeyError("x"), 500), (RuntimeError("secret path"), 500),
])
def test_each_error_has_its_status(error, status):
    assert status_of(error) == status


def test_a_bug_answers_its_class_and_not_its_message():
    body = error_body(RuntimeError("/home/someone/secret"))
    assert body["error"] == "InternalError" and "secret" not in body["message"]
    assert error_body(SparqlError("bad\n  query")) == {"error": "SparqlError",
                                                       "message": "bad query"}


# -- steps -------------------------------------------------------------------------------------

def test_steps_are_built_by_name_with_their_options():
    mmr, recency = build_steps([("mmr", {"lambda_": 0.3}), ("recency", {"horizon_days": 9})])
    assert isinstance(mmr, MMR) and mmr.lambda_ == 0.3
    assert isinstance(recency, RecencyDecay) and recency.horizon_days == 9


@pytest.mark.parametrize("spec", [("os.system", {}), ("mmr", {"now": 1}),
                                  ("mmr", {"lambda_": "x"}), ("rerank", {}),
                                  ("neighbourhood", {"depth": 0})])
def test_bad_steps_are_invalid_arguments(spec):
    with pytest.raises(InvalidArgumentError):
        build_steps([spec])


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("127.8.9.10", True), ("0.0.0.0", False), ("192.168.1.2", False), ("example.org", False),
])
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


def test_delete_document_records_the_caller_it_is_given(tmp_path):
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document(id="gone", source="gone", text="To be deleted.")], ctx=ctx)
        iri = ctx.kg.select_iris("SELECT ?d WHERE { ?d a trails:Document }")[0]
        assert ctx.delete_document(iri, caller="janitor") is True
        deletions = [r for r in ctx.audit.pending() if isinstance(r, DeletionRecord)]
    assert [(r.caller, r.documents) for r in deletions] == [("janitor", [iri])]
